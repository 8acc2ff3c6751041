/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers of the wait and scheduler probe tests; see tu_waits.h. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/testutil.h"
#include "tests/collector/tu_waits.h"

static unsigned int tw_seq;

/*
 * A failed assertion ends the test process through exit(): whatever it
 * started is stopped here, so no collector or workload outlives it.
 */
#define TW_MAX_CHILDREN	16
static pid_t tw_children[TW_MAX_CHILDREN];
static char tw_shm[TW_MAX_CHILDREN][64];
static int tw_atexit_done;

static void tw_cleanup(void)
{
	for (int i = 0; i < TW_MAX_CHILDREN; i++) {
		if (tw_children[i] > 0 && kill(tw_children[i], 0) == 0) {
			kill(tw_children[i], SIGKILL);
			waitpid(tw_children[i], NULL, 0);
		}
		if (tw_shm[i][0])
			shm_unlink(tw_shm[i]);
	}
}

static void tw_track(pid_t pid, const char *shm)
{
	if (!tw_atexit_done) {
		atexit(tw_cleanup);
		tw_atexit_done = 1;
	}
	for (int i = 0; i < TW_MAX_CHILDREN; i++) {
		if (tw_children[i] <= 0 || kill(tw_children[i], 0) != 0) {
			tw_children[i] = pid;
			snprintf(tw_shm[i], sizeof(tw_shm[i]), "%s", shm ? shm : "");
			return;
		}
	}
}

static int tw_spawn(struct tw_work *w, char *const argv[])
{
	memset(w, 0, sizeof(*w));
	snprintf(w->out, sizeof(w->out), "/tmp/zernel-waits-%d-%u.out", (int)getpid(), tw_seq++);
	w->pid = tu_spawn(argv, w->out);
	if (w->pid < 0)
		return -1;
	tw_track(w->pid, NULL);
	return tw_wait_line(w, NULL, 60000);
}

int tw_start_argv(struct tw_work *w, char *const argv[])
{
	return tw_spawn(w, argv);
}

int tw_start(struct tw_work *w, const char *const *args)
{
	char bin[512];
	char *argv[16];
	int n = 0;

	argv[n++] = (char *)tu_build_path(bin, sizeof(bin), "tests/workloads_sched/zs_work");
	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	return tw_spawn(w, argv);
}

int tw_start_py_in(struct tw_work *w, const char *const *interp, const char *script,
		   const char *const *args)
{
	char path[512];
	char *argv[16];
	int n = 0;

	snprintf(path, sizeof(path), "%s/tests/py/%s", tu_src_dir(), script);
	for (size_t i = 0; interp[i] && n < 14; i++)
		argv[n++] = (char *)interp[i];
	argv[n++] = path;
	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	return tw_spawn(w, argv);
}

int tw_start_py(struct tw_work *w, const char *script, const char *const *args)
{
	static const char *const python[] = { "/usr/bin/python3", NULL };

	return tw_start_py_in(w, python, script, args);
}

/*
 * Does text hold line (a whole line), or a "ready ..." line when NULL?
 * Only lines that end count: Python writes a line and its newline in two
 * calls, and a line read between them may be cut short ("ready pid=12"
 * of "ready pid=1234").
 */
static int has_line(const char *text, const char *line)
{
	for (const char *s = text; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
		size_t n = strcspn(s, "\n");

		if (s[n] != '\n')
			break;
		if (!line && strncmp(s, "ready", 5) == 0)
			return 1;
		if (line && n == strlen(line) && strncmp(s, line, n) == 0)
			return 1;
	}
	return 0;
}

/*
 * Why a workload never said its line: one line per thread of pid and of
 * every process it forked, with the thread's state and where it sleeps.
 */
static void report_threads(pid_t pid, int depth)
{
	char dir[64], path[384];
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = depth < 4 ? opendir(dir) : NULL;
	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		char *stat, *wchan, *children, *comm, *c;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/stat", dir, e->d_name);
		stat = tu_read_file(path, NULL);
		snprintf(path, sizeof(path), "%s/%s/wchan", dir, e->d_name);
		wchan = tu_read_file(path, NULL);
		/* "tid (comm) S ...": the name and the state, one field after it. */
		comm = stat ? strchr(stat, '(') : NULL;
		c = stat ? strrchr(stat, ')') : NULL;
		fprintf(stderr, "  %d/%s %.*s %c in %s\n", (int)pid, e->d_name,
			comm && c ? (int)(c - comm + 1) : 1, comm && c ? comm : "?",
			c && c[1] == ' ' && c[2] ? c[2] : '?', wchan && *wchan ? wchan : "?");
		snprintf(path, sizeof(path), "%s/%s/children", dir, e->d_name);
		children = tu_read_file(path, NULL);
		for (char *s = children; s && *s;) {
			char *end;
			long child = strtol(s, &end, 10);

			if (end == s)
				break;
			report_threads((pid_t)child, depth + 1);
			s = end;
		}
		free(stat);
		free(wchan);
		free(children);
	}
	closedir(d);
}

static void report_stuck(const struct tw_work *w, const char *line, int status, int exited)
{
	char *text = tu_read_file(w->out, NULL);

	fprintf(stderr, "workload %d never printed \"%s\"; ", (int)w->pid, line ? line : "ready");
	if (exited && WIFEXITED(status))
		fprintf(stderr, "it exited with %d\n", WEXITSTATUS(status));
	else if (exited && WIFSIGNALED(status))
		fprintf(stderr, "it was killed by signal %d\n", WTERMSIG(status));
	else
		fprintf(stderr, "it still runs:\n");
	if (!exited)
		report_threads(w->pid, 0);
	fprintf(stderr, "its output:\n%s\n", text ? text : "(none)");
	free(text);
}

int tw_wait_line(struct tw_work *w, const char *line, int timeout_ms)
{
	for (int waited = 0; waited <= timeout_ms; waited += 20) {
		char *text = tu_read_file(w->out, NULL);
		int found = text && has_line(text, line);
		int status;

		free(text);
		if (found)
			return 0;
		if (waitpid(w->pid, &status, WNOHANG) == w->pid) {
			report_stuck(w, line, status, 1);
			w->pid = 0;
			return -1;
		}
		tu_sleep_ms(20);
	}
	report_stuck(w, line, 0, 0);
	return -1;
}

long long tw_value(const struct tw_work *w, const char *key)
{
	char *text = tu_read_file(w->out, NULL);
	size_t klen = strlen(key);
	long long v = -1;

	for (char *s = text; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
		if (strncmp(s, key, klen) == 0 && s[klen] == '=')
			v = strtoll(s + klen + 1, NULL, 10);
	}
	free(text);
	return v;
}

void tw_go(const struct tw_work *w)
{
	if (w->pid > 0)
		kill(w->pid, SIGUSR1);
}

int tw_finish(struct tw_work *w)
{
	long long worker = tw_value(w, "worker");
	int status;

	if (w->pid <= 0)
		return -1;
	if (worker > 0 && worker != w->pid)
		kill((pid_t)worker, SIGUSR1);
	status = tu_stop(w->pid, SIGUSR1, 5000);
	w->pid = 0;
	/* Whatever it forked and left behind. */
	if (worker > 0)
		kill((pid_t)worker, SIGKILL);
	unlink(w->out);
	return status;
}

int tw_collector_watch_extra(struct tp_collector *c, const char *pidstr,
			     const char *const *more, pid_t pid)
{
	const char *args[8] = { "--pid", pidstr };
	size_t n = 2;

	for (; more && *more && n < 7; more++)
		args[n++] = *more;
	args[n] = NULL;
	return tw_collector_watch_args(c, args, pid);
}

int tw_collector_watch(struct tp_collector *c, const char *flag, const char *value, pid_t pid)
{
	const char *extra[] = { flag, value, NULL };

	return tw_collector_watch_args(c, extra, pid);
}

int tw_collector_watch_args(struct tp_collector *c, const char *const *extra, pid_t pid)
{
	if (tp_collector_start(c, extra, 0) != 0)
		return -1;
	tw_track(c->pid, c->shm);
	for (int waited = 0; waited < 10000; waited += 50) {
		if (tp_snapshot(c) == 0 && tp_proc(c, (uint32_t)pid))
			return 0;
		tu_sleep_ms(50);
	}
	return -1;
}

int tw_collector_watch_pid(struct tp_collector *c, pid_t pid)
{
	char pidbuf[16];

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	return tw_collector_watch(c, "--pid", pidbuf, pid);
}

int tw_settle(struct tp_collector *c)
{
	/* Two publishes: the collector drains the ring between them. */
	if (tp_wait_publish(c) != 0)
		return -1;
	return tp_wait_publish(c);
}

void tw_assert_band(uint64_t n, const struct tw_work *w, const char *key, const char *what)
{
	char k[64];
	long long surely, maybe;

	snprintf(k, sizeof(k), "%s_surely", key);
	surely = tw_value(w, k);
	snprintf(k, sizeof(k), "%s_maybe", key);
	maybe = tw_value(w, k);
	fprintf(stderr, "%s: %llu; the workload timed %lld surely so, %lld within a millisecond\n",
		what, (unsigned long long)n, surely, maybe);
	ck_assert_msg(surely >= 0 && maybe >= surely, "%s: no figures from the workload", key);
	ck_assert_msg(n >= (uint64_t)surely && n <= (uint64_t)maybe,
		      "%s: %llu, the workload %lld to %lld", what, (unsigned long long)n, surely,
		      maybe);
}

uint64_t tw_bucket_count(const struct shm_latency *l, uint64_t lo_ns, uint64_t hi_ns)
{
	static const uint64_t bounds[SHM_LAT_FINITE_BUCKETS] = SHM_LAT_BOUNDS_NS_INIT;
	uint64_t n = 0;

	for (unsigned int i = 0; i < SHM_LAT_FINITE_BUCKETS; i++)
		if (bounds[i] > lo_ns && bounds[i] <= hi_ns)
			n += l->bucket[i];
	return n;
}
