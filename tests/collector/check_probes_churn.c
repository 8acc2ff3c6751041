/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Uprobes that come and go with their library files, through the real
 * collector: 200 distinct copies of the fake driver, each loaded by
 * short-lived processes, are each probed while mapped (every process's
 * allocation is measured) and detached once no process maps them, so the
 * link count stays bounded; and a collector holding a few hundred uprobe
 * links exits promptly on SIGTERM; a forked child keeps its parent's file
 * probed.  Needs root (BPF).
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "tests/collector/tu_probes.h"
#include "tests/support/testutil.h"

/*
 * Each uprobe attach and close takes the kernel's event_mutex, and each
 * close holds it through an RCU-tasks-trace grace period (tens of ms on
 * these machines), for every process on the node: 200 files of 32 links
 * hold it for minutes.  `make test` runs 20 files in waves of 5, which
 * show the same thing; `make churn` runs the full size (ZERNEL_CHURN_FILES,
 * and ZERNEL_CHURN_SIGTERM_FILES for the prompt exit).
 */
#define CHURN_FILES		20
#define CHURN_SIGTERM_FILES	8
#define CHURN_WAVE		5	/* processes alive at once */

/* A count from the environment, a multiple of step, else the default. */
static unsigned int churn_size(const char *name, unsigned int dflt, unsigned int step)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return dflt;
	n = strtoul(v, &end, 10);
	ck_assert_msg(!*end && n >= step && n <= 1000 && n % step == 0,
		      "%s=%s: want a multiple of %u up to 1000", name, v, step);
	return (unsigned int)n;
}

static char churn_dir[128];

/* n copies of the fake driver: n files, n inodes, one name. */
static void make_copies(unsigned int n)
{
	char drv[512];

	tp_fake(drv, sizeof(drv), "libcuda.so.1");
	snprintf(churn_dir, sizeof(churn_dir), "/tmp/zernel-churn-%d", (int)getpid());
	ck_assert_int_eq(tu_system("for i in $(seq 0 %u); do mkdir -p '%s/'$i && "
				   "cp '%s' '%s/'$i/libcuda.so.1 || exit 1; done",
				   n - 1, churn_dir, drv, churn_dir), 0);
}

/*
 * The collector probes the node's CUDA libraries before its first publish;
 * on a machine where other processes are closing uprobes that can take
 * longer than tp_collector_start waits: give it two minutes more.
 */
static int start_patiently_with(struct tp_collector *c, const char *const *extra)
{
	if (tp_collector_start(c, extra, 0) == 0)
		return 0;
	for (int i = 0; c->pid > 0 && i < 2400; i++) {
		if (tp_snapshot(c) == 0)
			return 0;
		tu_sleep_ms(50);
	}
	return -1;
}

static int start_patiently(struct tp_collector *c)
{
	return start_patiently_with(c, NULL);
}

/*
 * Processes named zernel-unprobe, collectors' links still being released:
 * every one on the node (parent 0), or a collector's left behind when it
 * exited, once the test is their subreaper (other collectors on the node
 * have their own).
 */
static unsigned int unprobe_children_of(pid_t parent)
{
	return tu_processes("zernel-unprobe", parent, 0, NULL);
}

static unsigned int unprobe_children(void)
{
	return unprobe_children_of(0);
}

/*
 * Check kills a test's process group when the test ends, and a release
 * killed midway leaks its uprobes in the kernel: the children that release
 * a collector's links leave its group (collector/probes/probe_detach.c).
 * Called while they are at work, just after the collector exited.
 */
static void assert_releases_outside_our_group(void)
{
	ck_assert_msg(unprobe_children_of(getpid()) > 0, "no release of ours in progress");
	ck_assert_uint_eq(tu_processes("zernel-unprobe", 0, getpgrp(), NULL), 0);
}

/*
 * The kernel frees uprobes one grace period at a time under one node-wide
 * lock, after the collector has gone: wait for that, so that the tests
 * after these attach on a node as quiet as before.
 */
static void wait_links_released(void)
{
	uint64_t t0 = now_mono_ns();

	while (unprobe_children() && now_mono_ns() - t0 < 300 * NSEC_PER_SEC)
		tu_sleep_ms(100);
	fprintf(stderr, "churn: links released %.1f s after the collector exited\n",
		(double)(now_mono_ns() - t0) / 1e9);
	ck_assert_uint_eq(unprobe_children(), 0);
}

static void remove_copies(void)
{
	if (churn_dir[0])
		tu_system("rm -rf '%s'", churn_dir);
	churn_dir[0] = '\0';
}

/* Starts a process that maps copy i, then allocates bytes once told to. */
static void start_user(struct tp_workload *w, unsigned int i, uint64_t bytes)
{
	char zw[512], lib[256], op[64];
	char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), lib, "wait", op, NULL };

	snprintf(lib, sizeof(lib), "lib:%s/%u/libcuda.so.1", churn_dir, i);
	snprintf(op, sizeof(op), "cumalloc:%llu", (unsigned long long)bytes);
	ck_assert_int_eq(tp_workload_start(w, argv), 0);
	ck_assert_int_eq(tp_workload_expect(w, "WAIT", 5000), 0);
}

/*
 * Waits until every one of the n processes is watched.  Attaching is slow
 * on a loaded machine (each uprobe is installed in every mapping of its
 * file, and waits for other processes' closes): allow three minutes.
 */
static void wait_watched(struct tp_collector *c, struct tp_workload *w, unsigned int n)
{
	for (int tries = 0; tries < 1800; tries++) {
		unsigned int seen = 0;

		tu_sleep_ms(100);
		if (tp_snapshot(c) != 0)
			continue;
		for (unsigned int i = 0; i < n; i++)
			seen += tp_proc(c, (uint32_t)w[i].pid) != NULL;
		if (seen == n)
			return;
	}
	ck_abort_msg("the collector did not find every process's library");
}

static uint64_t stat_now(struct tp_collector *c, int libs)
{
	ck_assert_int_eq(tp_snapshot(c), 0);
	return libs ? c->snap.hdr->stats.libraries_attached : c->snap.hdr->stats.probes_attached;
}

/*
 * Lines of the collector's log about our copies: how many were probed and
 * how many detached.  The segment's counts are node-wide (other processes
 * on the machine may map CUDA libraries too); the log names each file.
 */
static void our_files(const struct tp_collector *c, unsigned int *probed, unsigned int *detached)
{
	char *text = tu_read_file(c->log, NULL);

	*probed = *detached = 0;
	for (char *line = text; line && *line;) {
		char *end = strchr(line, '\n');

		if (end)
			*end = '\0';
		if (strstr(line, churn_dir)) {
			*probed += strstr(line, ": probing ") != NULL;
			*detached += strstr(line, "uprobes detached") != NULL;
		}
		line = end ? end + 1 : NULL;
	}
	free(text);
}

START_TEST(test_library_files_come_and_go)
{
	struct tp_collector c;
	struct tp_workload w[CHURN_WAVE];
	unsigned int probed = 0, detached = 0, most = 0;
	unsigned int files = churn_size("ZERNEL_CHURN_FILES", CHURN_FILES, CHURN_WAVE);
	uint64_t t0 = now_mono_ns();

	if (tu_skip_unless_root("test_library_files_come_and_go"))
		return;
	/* The children the collector leaves releasing its links come to this process. */
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	make_copies(files);
	ck_assert_msg(start_patiently(&c) == 0, "collector did not start, see %s", c.log);

	for (unsigned int wave = 0; wave < files / CHURN_WAVE; wave++) {
		for (unsigned int k = 0; k < CHURN_WAVE; k++)
			start_user(&w[k], wave * CHURN_WAVE + k, 4096 + wave * CHURN_WAVE + k);
		wait_watched(&c, w, CHURN_WAVE);
		our_files(&c, &probed, &detached);
		most = probed - detached > most ? probed - detached : most;
		for (unsigned int k = 0; k < CHURN_WAVE; k++)
			tp_workload_go(&w[k]);
		for (unsigned int k = 0; k < CHURN_WAVE; k++)
			ck_assert_int_eq(tp_workload_expect(&w[k], "DONE", 5000), 0);
		/* Each file was probed while mapped: every allocation was seen. */
		for (unsigned int k = 0; k < CHURN_WAVE; k++) {
			uint64_t want = 4096 + wave * CHURN_WAVE + k;
			const struct shm_gpu_mem *m = NULL;

			for (int tries = 0; tries < 30; tries++) {
				if (tp_snapshot(&c) == 0 &&
				    (m = tp_gpu_mem(&c, (uint32_t)w[k].pid, 0)) && m->used_bytes == want)
					break;
				tu_sleep_ms(100);
			}
			ck_assert_msg(m && m->used_bytes == want, "file %u: allocation not seen",
				      wave * CHURN_WAVE + k);
		}
		for (unsigned int k = 0; k < CHURN_WAVE; k++)
			tp_workload_finish(&w[k]);
		/*
		 * Once nothing maps them (3 scans), this wave's files lose their
		 * links; scans wait on other processes' uprobe closes too.
		 */
		for (int tries = 0; tries < 1200; tries++) {
			our_files(&c, &probed, &detached);
			if (detached >= (wave + 1) * CHURN_WAVE)
				break;
			tu_sleep_ms(100);
		}
		ck_assert_msg(detached == (wave + 1) * CHURN_WAVE,
			      "wave %u: %u of our files detached, want %u", wave, detached,
			      (wave + 1) * CHURN_WAVE);
	}
	fprintf(stderr, "churn: %u files in waves of %u in %.0f s: each probed once (%u) while "
		"mapped, all detached (%u), at most %u probed at once; node-wide %llu refused, "
		"%llu links now\n", files, CHURN_WAVE, (double)(now_mono_ns() - t0) / 1e9, probed,
		detached, most,
		(unsigned long long)(stat_now(&c, 0), c.snap.hdr->stats.probes_refused),
		(unsigned long long)c.snap.hdr->stats.probes_attached);
	ck_assert_uint_eq(probed, files);
	ck_assert_uint_eq(detached, files);
	ck_assert_uint_le(most, CHURN_WAVE);
	ck_assert_uint_eq(c.snap.hdr->stats.probes_refused, 0);
	tp_collector_stop(&c);
	assert_releases_outside_our_group();
	wait_links_released();
	remove_copies();
}
END_TEST

/*
 * A forked child runs on with its parent's library after the parent has
 * gone.  The scan takes the parent's files for the child without reading
 * its maps (the kernel saw it fork and no exec), so the file stays probed
 * while the child maps it, and the child's allocation counts, though the
 * parent left more scans ago than a file's idle time.
 */
START_TEST(test_forked_child_keeps_its_parents_library)
{
	const uint64_t bytes = 3u << 20;
	struct tp_collector c;
	struct tp_workload w;
	const struct shm_gpu_mem *m = NULL;
	char zw[512], lib[256], op[64], out[512], want[96];
	char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), lib, "wait", "fork:2500", "wait",
			 op, "wait", NULL };
	unsigned int probed, detached;
	int child = 0, status;
	char *log;

	if (tu_skip_unless_root("test_forked_child_keeps_its_parents_library"))
		return;
	make_copies(1);
	snprintf(lib, sizeof(lib), "lib:%s/0/libcuda.so.1", churn_dir);
	snprintf(op, sizeof(op), "cumalloc:%llu", (unsigned long long)bytes);
	setenv("ZERNEL_LOG", "debug", 1);
	ck_assert_msg(start_patiently(&c) == 0, "collector did not start, see %s", c.log);
	unsetenv("ZERNEL_LOG");
	ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	wait_watched(&c, &w, 1);

	/* The parent lives 2.5 s more: the scans see the child beside it. */
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_collect(&w, "WAIT", out, sizeof(out), 5000), 0);
	ck_assert_msg(strstr(out, "CHILD ") && sscanf(strstr(out, "CHILD "), "CHILD %d", &child) == 1 &&
		      child > 0, "no child in: %s", out);
	ck_assert_int_eq(waitpid(w.pid, &status, 0), w.pid);
	/* Five scans after the parent's exit, two more than a file's idle time. */
	tu_sleep_ms(5000);
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	for (int tries = 0; tries < 30; tries++) {
		if (tp_snapshot(&c) == 0 && (m = tp_gpu_mem(&c, (uint32_t)child, 0)) &&
		    m->used_bytes == bytes)
			break;
		tu_sleep_ms(100);
	}
	our_files(&c, &probed, &detached);
	ck_assert_msg(m && m->used_bytes == bytes, "the child's allocation was not seen "
		      "(our file probed %u times, detached %u); see %s", probed, detached, c.log);
	ck_assert_uint_eq(detached, 0);
	/* Its parent's pid came first in /proc (no wrap between): its maps went unread. */
	log = tu_read_file(c.log, NULL);
	snprintf(want, sizeof(want), "pid %d: forked by %d and no exec since", child, (int)w.pid);
	if (child > w.pid)
		ck_assert_msg(log && strstr(log, want), "no \"%s\" in %s", want, c.log);
	free(log);
	close(w.in_fd);
	close(w.out_fd);
	kill(child, SIGKILL);
	tp_collector_stop(&c);
	remove_copies();
}
END_TEST

START_TEST(test_sigterm_with_many_links_is_prompt)
{
	enum { FILES_MAX = 1000 };
	unsigned int files = churn_size("ZERNEL_CHURN_SIGTERM_FILES", CHURN_SIGTERM_FILES, 1);
	struct tp_collector c;
	struct tp_workload *w = calloc(FILES_MAX, sizeof(*w));
	uint64_t links = 0, t0;
	double secs;
	int st;

	if (tu_skip_unless_root("test_sigterm_with_many_links_is_prompt"))
		return;
	ck_assert_ptr_nonnull(w);
	make_copies(files);
	ck_assert_msg(start_patiently(&c) == 0, "collector did not start, see %s", c.log);
	for (unsigned int i = 0; i < files; i++)
		start_user(&w[i], i, 4096);
	wait_watched(&c, w, files);
	links = stat_now(&c, 0);
	t0 = now_mono_ns();
	st = tu_stop(c.pid, SIGTERM, 10000);
	secs = (double)(now_mono_ns() - t0) / 1e9;
	c.pid = 0;
	fprintf(stderr, "SIGTERM with %llu uprobe links on %u files: exited in %.3f s\n",
		(unsigned long long)links, files, secs);
	for (unsigned int i = 0; i < files; i++)
		tp_workload_finish(&w[i]);
	free(w);
	ck_assert_uint_ge(links, files * 16);
	ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status 0x%x", st);
	ck_assert_msg(secs < 2.0, "SIGTERM took %.3f s with %llu links", secs,
		      (unsigned long long)links);
	tp_collector_stop(&c);
	wait_links_released();
	remove_copies();
}
END_TEST

/*
 * In a container the runtime kills what the main process leaves behind,
 * and a uprobe whose release is killed leaks: with --exit-when-released
 * the segment goes at once, but the collector exits only after the child
 * that releases its links, while the processes it probed still run.
 */
START_TEST(test_exit_when_released_outlives_the_release)
{
	enum { FILES = 4 };
	static const char *const extra[] = { "--exit-when-released", NULL };
	struct tp_collector c;
	struct tp_workload w[FILES];
	uint64_t links, t0, gone_ns = 0;
	double exit_s;
	int st = -1;

	if (tu_skip_unless_root("test_exit_when_released_outlives_the_release"))
		return;
	/* A child the collector leaves behind comes to this process, not to init. */
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	wait_links_released();
	make_copies(FILES);
	ck_assert_msg(start_patiently_with(&c, extra) == 0, "collector did not start, see %s",
		      c.log);
	for (unsigned int i = 0; i < FILES; i++)
		start_user(&w[i], i, 4096);
	wait_watched(&c, w, FILES);
	links = stat_now(&c, 0);
	t0 = now_mono_ns();
	kill(c.pid, SIGTERM);
	for (int i = 0; i < 12000; i++) {
		int fd = shm_open(c.shm, O_RDONLY, 0);

		if (fd < 0 && !gone_ns)
			gone_ns = now_mono_ns() - t0;
		if (fd >= 0)
			close(fd);
		if (waitpid(c.pid, &st, WNOHANG) == c.pid)
			break;
		tu_sleep_ms(10);
	}
	exit_s = (double)(now_mono_ns() - t0) / 1e9;
	/* Checked before the probed processes end: their breakpoints were removed. */
	ck_assert_uint_eq(unprobe_children_of(getpid()), 0);
	c.pid = 0;
	fprintf(stderr, "--exit-when-released with %llu links: segment gone in %.3f s, "
		"exited in %.1f s\n", (unsigned long long)links, (double)gone_ns / 1e9, exit_s);
	for (unsigned int i = 0; i < FILES; i++)
		tp_workload_finish(&w[i]);
	ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status 0x%x", st);
	ck_assert_msg(gone_ns > 0 && gone_ns < 2 * NSEC_PER_SEC, "segment removed after %.3f s",
		      (double)gone_ns / 1e9);
	{
		char *log = tu_read_file(c.log, NULL);

		ck_assert_msg(log && strstr(log, "uprobes released in"), "see %s", c.log);
		free(log);
	}
	tp_collector_stop(&c);
	remove_copies();
}
END_TEST

Suite *probes_churn_suite(void);
Suite *probes_churn_suite(void)
{
	Suite *s = suite_create("probes_churn");
	TCase *tc = tcase_create("churn");

	tcase_set_timeout(tc, 1200);
	tcase_add_test(tc, test_library_files_come_and_go);
	tcase_add_test(tc, test_forked_child_keeps_its_parents_library);
	tcase_add_test(tc, test_sigterm_with_many_links_is_prompt);
	tcase_add_test(tc, test_exit_when_released_outlives_the_release);
	suite_add_tcase(s, tc);
	return s;
}
