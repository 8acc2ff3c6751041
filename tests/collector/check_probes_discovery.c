/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Library discovery and the watched set through the real collector: a
 * library dlopen'ed after the collector started, from a venv-like path in
 * /tmp; a process in its own mount namespace whose library the collector's
 * namespace cannot see; a process already seen that execs a program
 * loading one; descendants of a --pid process, those it had
 * before the collector started too; and a process that
 * maps no CUDA library staying unreported.  Needs root (BPF, unshare).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "tests/support/testutil.h"
#include "tests/collector/tu_probes.h"

/* Waits until the collector probes at least n libraries and watches pid. */
static int wait_attached(struct tp_collector *c, uint64_t n, pid_t pid)
{
	for (int i = 0; i < 100; i++) {
		tu_sleep_ms(100);
		if (tp_snapshot(c) == 0 && c->snap.hdr->stats.libraries_attached >= n &&
		    tp_proc(c, (uint32_t)pid))
			return 0;
	}
	return -1;
}

static int wait_mem(struct tp_collector *c, pid_t pid, uint32_t gpu, uint64_t used)
{
	for (int i = 0; i < 50; i++) {
		const struct shm_gpu_mem *m;

		tu_sleep_ms(100);
		if (tp_snapshot(c) != 0)
			continue;
		m = tp_gpu_mem(c, (uint32_t)pid, gpu);
		if (m && m->used_bytes == used)
			return 0;
	}
	return -1;
}

/* Copies the fake runtime (as libcudart.so.12) and driver into dir. */
static int copy_fakes(const char *dir)
{
	char rt[512], drv[512];

	tp_fake(rt, sizeof(rt), "libcudart.so");
	tp_fake(drv, sizeof(drv), "libcuda.so.1");
	return tu_system("mkdir -p '%s' && cp '%s' '%s/libcudart.so.12' && cp '%s' '%s/'",
			 dir, rt, dir, drv, dir);
}

/*
 * Fresh copies of the runtime and driver (new inodes no collector has
 * probed) under /tmp/zernel-TAG-PID/lib, and a collector started with
 * extra: root receives the directory to remove, lib_arg the workload's
 * "lib:" argument for the runtime.
 */
static void start_with_fresh_copies(struct tp_collector *c, const char *const *extra,
				    const char *tag, char *root, size_t root_len, char *lib_arg,
				    size_t arg_len)
{
	char dir[256];

	snprintf(root, root_len, "/tmp/zernel-%s-%d", tag, (int)getpid());
	snprintf(dir, sizeof(dir), "%s/lib", root);
	ck_assert_int_eq(copy_fakes(dir), 0);
	ck_assert_msg(tp_collector_start(c, extra, 0) == 0, "collector did not start, see %s",
		      c->log);
	snprintf(lib_arg, arg_len, "lib:%s/libcudart.so.12", dir);
}

START_TEST(test_dlopen_after_start_from_venv_path)
{
	struct tp_collector c;
	struct tp_workload w;
	char root[128], dir[256], zw[512], lib_arg[300];
	const struct shm_gpu_mem *m;
	uint64_t libs0;

	if (tu_skip_unless_root("test_dlopen_after_start_from_venv_path"))
		return;
	/* Fresh copies: new inodes that no collector has probed yet. */
	snprintf(root, sizeof(root), "/tmp/zernel-venv-%d", (int)getpid());
	snprintf(dir, sizeof(dir), "%s/lib/python3.11/site-packages/nvidia/cuda_runtime/lib", root);
	ck_assert_int_eq(copy_fakes(dir), 0);
	ck_assert_msg(tp_collector_start(&c, NULL, 0) == 0, "collector did not start, see %s", c.log);
	libs0 = c.snap.hdr->stats.libraries_attached;
	snprintf(lib_arg, sizeof(lib_arg), "lib:%s/libcudart.so.12", dir);
	{
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), "wait", lib_arg, "wait",
				 "malloc:4096", "dev:3", "malloc:1234", NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	tu_sleep_ms(1500);
	tp_snapshot(&c);
	ck_assert_msg(!tp_proc(&c, (uint32_t)w.pid), "watched before it loaded CUDA");
	tp_workload_go(&w);		/* now it dlopens */
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	ck_assert_msg(wait_attached(&c, libs0 + 2, w.pid) == 0,
		      "the dlopen'ed runtime and driver were not found");
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 5000), 0);
	ck_assert_int_eq(wait_mem(&c, w.pid, 3, 1234), 0);
	m = tp_gpu_mem(&c, (uint32_t)w.pid, 0);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->used_bytes, 4096);
	ck_assert_uint_eq(m->alloc_calls, 1);
	ck_assert(tp_proc(&c, (uint32_t)w.pid)->watch_reason & SHM_WATCH_CUDA);

	tp_workload_finish(&w);
	tp_collector_stop(&c);
	tu_system("rm -rf '%s'", root);
}
END_TEST

/*
 * With /proc scans ten minutes apart, only the loader's own report
 * (_dl_debug_state) can tell the collector that a running process has
 * just loaded a runtime it never saw: both files are probed within
 * moments, and what the process then does is counted.
 */
START_TEST(test_library_load_reported_by_the_loader)
{
	static const char *const extra[] = { "--scan-interval", "600000", NULL };
	struct tp_collector c;
	struct tp_workload w;
	char root[128], zw[512], lib_arg[300];
	const struct shm_gpu_mem *m;
	uint64_t libs0, t0;

	if (tu_skip_unless_root("test_library_load_reported_by_the_loader"))
		return;
	start_with_fresh_copies(&c, extra, "late", root, sizeof(root), lib_arg, sizeof(lib_arg));
	libs0 = c.snap.hdr->stats.libraries_attached;
	{
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), "wait", lib_arg, "wait",
				 "malloc:4096", "cumalloc:512", NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	tp_workload_go(&w);		/* now it dlopens */
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	t0 = now_mono_ns();
	/* Watched from its first call into them, before the next scan. */
	for (int i = 0; i < 3000 && !(tp_snapshot(&c) == 0 &&
				    c.snap.hdr->stats.libraries_attached >= libs0 + 2); i++)
		tu_sleep_ms(10);
	ck_assert_msg(c.snap.hdr->stats.libraries_attached >= libs0 + 2,
		      "the loaded runtime and driver were not probed (see %s)", c.log);
	fprintf(stderr, "loader report: runtime and driver probed within %.0f ms of the load\n",
		(double)(now_mono_ns() - t0) / 1e6);
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 5000), 0);
	ck_assert_int_eq(wait_mem(&c, w.pid, 0, 4096 + 512), 0);
	m = tp_gpu_mem(&c, (uint32_t)w.pid, 0);
	ck_assert_uint_eq(m->alloc_calls, 2);
	ck_assert(tp_proc(&c, (uint32_t)w.pid)->watch_reason & SHM_WATCH_CUDA);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
	tu_system("rm -rf '%s'", root);
}
END_TEST

/*
 * A library's uprobes attach while its process runs.  A call that enters
 * after a symbol's entry probe and before its return probe would leave
 * the thread inside that call for good, and its later calls of the kind
 * would count as nested ones; so returns are attached before entries
 * (probe_loader.h), one by one as perf events or together as uprobe_multi
 * links.  Here a process allocates and frees back to back while the
 * runtime it just loaded, and the driver under it, are probed: once both
 * are in, every call counts.  links: the --uprobe-links value.
 */
static void calls_while_probes_attach(const char *links)
{
	const char *extra[] = { "--scan-interval", "600000", "--uprobe-links", links, NULL };
	const struct shm_gpu_mem *m;
	struct tp_collector c;
	struct tp_workload w;
	char root[128], zw[512], lib_arg[300], want[64], *log;
	uint64_t libs0, allocs, frees, used, t0;
	int attached = 0;

	start_with_fresh_copies(&c, extra, "spin", root, sizeof(root), lib_arg, sizeof(lib_arg));
	snprintf(want, sizeof(want), "uprobes attach as %s",
		 strcmp(links, "perf") == 0 ? "one perf event each" : "uprobe_multi links");
	log = tu_read_file(c.log, NULL);
	ck_assert_msg(log && strstr(log, want), "the collector does not say \"%s\" (see %s)", want,
		      c.log);
	free(log);
	libs0 = c.snap.hdr->stats.libraries_attached;
	{
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), "wait", lib_arg,
				 "memspin:4096", "wait", "malloc:4096", "cumalloc:512", NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	tp_workload_go(&w);		/* dlopen, then calls without a pause */
	t0 = now_mono_ns();
	ck_assert_int_eq(tp_workload_expect(&w, "SPINNING", 5000), 0);
	/* Slow when other collectors on the node are releasing uprobes. */
	for (int i = 0; i < 6000 && !attached; i++) {
		tu_sleep_ms(10);
		attached = tp_snapshot(&c) == 0 &&
			   c.snap.hdr->stats.libraries_attached >= libs0 + 2;
	}
	ck_assert_msg(attached, "the runtime and driver were not probed (see %s)", c.log);
	fprintf(stderr, "%s links: runtime and driver probed within %.0f ms of the load\n", links,
		(double)(now_mono_ns() - t0) / 1e6);
	tu_sleep_ms(200);		/* calls with every probe in */
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	/* What the spin made known, before the calls that must all count. */
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	m = tp_gpu_mem(&c, (uint32_t)w.pid, 0);
	ck_assert_msg(m != NULL, "no allocation of the spin was counted (see %s)", c.log);
	allocs = m->alloc_calls;
	frees = m->free_calls;
	used = m->used_bytes;
	ck_assert_uint_gt(frees, 0);
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 5000), 0);
	ck_assert_msg(wait_mem(&c, w.pid, 0, used + 4096 + 512) == 0,
		      "the calls after the probes attached were not all counted (see %s)", c.log);
	m = tp_gpu_mem(&c, (uint32_t)w.pid, 0);
	ck_assert_uint_eq(m->alloc_calls, allocs + 2);
	ck_assert_uint_eq(m->free_calls, frees);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
	tu_system("rm -rf '%s'", root);
}

START_TEST(test_calls_while_multi_links_attach_all_count_after)
{
	if (tu_skip_unless_root("test_calls_while_multi_links_attach_all_count_after"))
		return;
	calls_while_probes_attach("multi");
}
END_TEST

START_TEST(test_calls_while_perf_uprobes_attach_all_count_after)
{
	if (tu_skip_unless_root("test_calls_while_perf_uprobes_attach_all_count_after"))
		return;
	calls_while_probes_attach("perf");
}
END_TEST

/*
 * A runtime never seen before, dlopen'ed and used 5 ms later: the
 * loader's report wakes the collector, which probes the runtime and the
 * driver it brings as uprobe_multi links, most often before the first
 * call, but not always on a loaded node.  What the product promises is
 * never to be silently short: the process's row is marked as not tracked
 * from the start (its library came after it), never more is counted than
 * was called, and a call once the probes are in always counts.
 */
START_TEST(test_library_used_5ms_after_dlopen_counted_or_marked)
{
	static const char *const extra[] = { "--scan-interval", "600000", "--uprobe-links",
					     "multi", NULL };
	const struct shm_gpu_mem *m;
	struct tp_collector c;
	struct tp_workload w;
	char root[128], zw[512], lib_arg[300];
	uint64_t libs0;
	int attached = 0;

	if (tu_skip_unless_root("test_library_used_5ms_after_dlopen_counted_or_marked"))
		return;
	start_with_fresh_copies(&c, extra, "5ms", root, sizeof(root), lib_arg, sizeof(lib_arg));
	libs0 = c.snap.hdr->stats.libraries_attached;
	{
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), "wait", lib_arg, "sleep:5",
				 "malloc:4096", "free", "cumalloc:512", "free", "malloc:8192",
				 "wait", "cumalloc:1024", NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	for (int i = 0; i < 6000 && !attached; i++) {
		tu_sleep_ms(10);
		attached = tp_snapshot(&c) == 0 &&
			   c.snap.hdr->stats.libraries_attached >= libs0 + 2;
	}
	ck_assert_msg(attached, "the runtime and driver were not probed (see %s)", c.log);
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 5000), 0);
	/* The last call came with every probe in: it counts, with 8192 or without. */
	m = NULL;
	for (int i = 0; i < 50 && !(m && (m->used_bytes == 8192 + 1024 || m->used_bytes == 1024));
	     i++) {
		tu_sleep_ms(100);
		m = tp_snapshot(&c) == 0 ? tp_gpu_mem(&c, (uint32_t)w.pid, 0) : NULL;
	}
	ck_assert_msg(m && (m->used_bytes == 8192 + 1024 || m->used_bytes == 1024),
		      "the call after the probes attached was not counted (see %s)", c.log);
	fprintf(stderr, "5 ms after dlopen: %llu of 4 allocations and %llu of 2 frees counted\n",
		(unsigned long long)m->alloc_calls, (unsigned long long)m->free_calls);
	ck_assert_uint_ge(m->alloc_calls, 1);
	ck_assert_uint_le(m->alloc_calls, 4);
	ck_assert_uint_le(m->free_calls, 2);
	ck_assert_uint_le(m->peak_bytes, 8192 + 1024);
	/* Complete or not, the library came after the process: not tracked from the start. */
	ck_assert_msg(!(m->flags & SHM_GPU_MEM_F_FROM_START),
		      "a library loaded after the process is called tracked from the start");
	if (m->alloc_calls == 4) {
		ck_assert_uint_eq(m->free_calls, 2);
		ck_assert_uint_eq(m->used_bytes, 8192 + 1024);
		ck_assert_uint_eq(m->peak_bytes, 8192 + 1024);
	}
	tp_workload_finish(&w);
	tp_collector_stop(&c);
	tu_system("rm -rf '%s'", root);
}
END_TEST

/*
 * A new directory /tmp/zernel-WHAT-PID for the workload's files, and the
 * collector started: the libraries it probes so far.
 */
static uint64_t start_with_dir(struct tp_collector *c, char *dir, size_t len, const char *what)
{
	snprintf(dir, len, "/tmp/zernel-%s-%d", what, (int)getpid());
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_msg(tp_collector_start(c, NULL, 0) == 0, "collector did not start, see %s", c->log);
	return c->snap.hdr->stats.libraries_attached;
}

START_TEST(test_process_in_own_mount_namespace)
{
	struct tp_collector c;
	struct tp_workload w;
	char dir[128], zw[512], script[4096], probe[300];
	uint64_t libs0;

	if (tu_skip_unless_root("test_process_in_own_mount_namespace"))
		return;
	if (access("/usr/bin/unshare", X_OK) != 0) {
		tu_skip_missing("test_process_in_own_mount_namespace: no unshare\n");
		return;
	}
	/* An empty directory here; in the workload's namespace, a tmpfs with the libraries. */
	libs0 = start_with_dir(&c, dir, sizeof(dir), "ns");
	{
		char rt[512], drv[512];

		tp_fake(rt, sizeof(rt), "libcudart.so");
		tp_fake(drv, sizeof(drv), "libcuda.so.1");
		snprintf(script, sizeof(script),
			 "mount -t tmpfs zernel-test '%s' && cp '%s' '%s/libcudart.so.12' && "
			 "cp '%s' '%s/' && exec '%s' 'lib:%s/libcudart.so.12' wait "
			 "malloc:5555 dev:1 cumalloc:4444",
			 dir, rt, dir, drv, dir, tp_zw_cuda(zw, sizeof(zw)), dir);
	}
	{
		char *argv[] = { "/usr/bin/unshare", "-m", "--propagation", "private",
				 "/bin/sh", "-c", script, NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	/* The collector's own namespace has no such file. */
	snprintf(probe, sizeof(probe), "%s/libcudart.so.12", dir);
	ck_assert_int_ne(access(probe, F_OK), 0);
	ck_assert_msg(wait_attached(&c, libs0 + 2, w.pid) == 0,
		      "libraries in another mount namespace were not found");
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 5000), 0);
	ck_assert_int_eq(wait_mem(&c, w.pid, 0, 5555), 0);
	ck_assert_int_eq(wait_mem(&c, w.pid, 1, 4444), 0);

	tp_workload_finish(&w);
	tp_collector_stop(&c);
	rmdir(dir);
}
END_TEST

/*
 * A process the /proc scan has already seen (a shell) runs, through exec,
 * a program that loads the CUDA runtime with a copy of the dynamic
 * loader: no probe is on that copy, so only the scan can find the
 * library, and it looks at a seen process's program again only because
 * the kernel marked the exec (zw_fresh_bits).  Well before the full scan
 * (every 60th) that would find it anyway.
 */
START_TEST(test_exec_under_a_seen_pid_found_by_the_scan)
{
	struct tp_collector c;
	struct tp_workload w;
	char dir[128], zw[512], rt[512], script[2048];
	uint64_t libs0;

	if (tu_skip_unless_root("test_exec_under_a_seen_pid_found_by_the_scan"))
		return;
	libs0 = start_with_dir(&c, dir, sizeof(dir), "exec");
	/* The loader the shell's own tools run with, copied: another file. */
	snprintf(script, sizeof(script),
		 "ld=$(sed -n 's|.* \\(/[^ ]*/ld-linux[^ ]*\\)$|\\1|p' /proc/self/maps | head -n1) && "
		 "cp \"$ld\" '%s/ld.so' && echo SEEN && read go && "
		 "exec '%s/ld.so' '%s' 'lib:%s' wait",
		 dir, dir, tp_zw_cuda(zw, sizeof(zw)), tp_fake(rt, sizeof(rt), "libcudart.so"));
	{
		char *argv[] = { "/bin/sh", "-c", script, NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&w, "SEEN", 5000), 0);
	/* Three scans (one a second): the shell is a process seen before. */
	tu_sleep_ms(3000);
	ck_assert_ptr_null(tp_proc(&c, (uint32_t)w.pid));
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	ck_assert_msg(wait_attached(&c, libs0 + 1, w.pid) == 0,
		      "a library a seen process loads after exec was not found; see %s", c.log);
	tp_workload_go(&w);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
	tu_system("rm -rf '%s'", dir);
}
END_TEST

START_TEST(test_pid_descendants_watched_others_not)
{
	struct tp_collector c;
	struct tp_workload parent, other;
	char pid_arg[16];
	const struct shm_proc *procs;
	uint32_t n;
	pid_t child = 0;
	int found = 0;

	if (tu_skip_unless_root("test_pid_descendants_watched_others_not"))
		return;
	{
		/* Forks a child once told to, and names it. */
		char *argv[] = { "/bin/sh", "-c", "read x; sleep 30 & echo \"CHILD $!\"; read y", NULL };
		char *argv2[] = { "/bin/sh", "-c", "read x", NULL };

		ck_assert_int_eq(tp_workload_start(&parent, argv), 0);
		ck_assert_int_eq(tp_workload_start(&other, argv2), 0);
	}
	snprintf(pid_arg, sizeof(pid_arg), "%d", (int)parent.pid);
	{
		const char *extra[] = { "--pid", pid_arg, NULL };

		ck_assert_msg(tp_collector_start(&c, extra, 0) == 0, "collector did not start, see %s",
			      c.log);
	}
	tp_workload_go(&parent);
	{
		char line[64];

		/* tp_workload_expect wants a whole line: read the child's pid by hand. */
		for (int i = 0; i < 50 && !child; i++) {
			ssize_t r = read(parent.out_fd, line, sizeof(line) - 1);

			if (r > 0) {
				line[r] = '\0';
				sscanf(line, "CHILD %d", &child);
			}
		}
	}
	ck_assert_int_gt(child, 0);
	for (int i = 0; i < 30 && !found; i++) {
		tu_sleep_ms(100);
		found = tp_snapshot(&c) == 0 && tp_proc(&c, (uint32_t)child);
	}
	ck_assert_msg(found, "child %d of a watched process is not watched", (int)child);
	ck_assert(tp_proc(&c, (uint32_t)child)->watch_reason & SHM_WATCH_DESCENDANT);
	ck_assert_uint_eq(tp_proc(&c, (uint32_t)child)->ppid, (uint32_t)parent.pid);
	ck_assert(tp_proc(&c, (uint32_t)parent.pid)->watch_reason & SHM_WATCH_PID);

	/* The unrelated shell maps no CUDA library and is nobody's child here. */
	tu_sleep_ms(1200);	/* a discovery scan went by */
	ck_assert_int_eq(tp_snapshot(&c), 0);
	ck_assert_ptr_null(tp_proc(&c, (uint32_t)other.pid));
	procs = shm_snapshot_procs(&c.snap, &n);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_uint_ne(procs[i].pid, (uint32_t)c.pid);

	/* The child's exit evicts it. */
	kill(child, SIGKILL);
	found = 1;
	for (int i = 0; i < 20 && found; i++) {
		tu_sleep_ms(TP_PUBLISH_MS);
		found = tp_snapshot(&c) != 0 || tp_proc(&c, (uint32_t)child) != NULL;
	}
	ck_assert_msg(!found, "exited child %d still published", (int)child);

	tp_workload_finish(&parent);
	tp_workload_finish(&other);
	tp_collector_stop(&c);
}
END_TEST

/* A collector started with --pid pid, once it has published. */
static void watch_pid_from_start(struct tp_collector *c, pid_t pid)
{
	char pid_arg[16];
	const char *extra[] = { "--pid", pid_arg, NULL };

	snprintf(pid_arg, sizeof(pid_arg), "%d", (int)pid);
	ck_assert_msg(tp_collector_start(c, extra, 0) == 0, "collector did not start, see %s",
		      c->log);
	ck_assert_int_eq(tp_wait_publish(c), 0);
}

/*
 * A --pid process's children and grandchildren that were there before the
 * collector started are watched too, each under its own parent.
 */
START_TEST(test_pid_children_from_before_start_watched)
{
	/* A child, and a child with a child of its own, then READY. */
	char *argv[] = { "/bin/sh", "-c",
			 "sleep 30 & echo \"CHILD $!\"; "
			 "sh -c 'sleep 30 & echo \"GRAND $!\"; wait' & echo \"MID $!\"; "
			 "sleep 0.3; echo READY; read y", NULL };
	struct tp_collector c;
	struct tp_workload parent;
	char out[512];
	const char *line;
	int child = 0, mid = 0, grand = 0;

	if (tu_skip_unless_root("test_pid_children_from_before_start_watched"))
		return;
	ck_assert_int_eq(tp_workload_start(&parent, argv), 0);
	ck_assert_int_eq(tp_workload_collect(&parent, "READY", out, sizeof(out), 5000), 0);
	for (line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		sscanf(line, "CHILD %d", &child);
		sscanf(line, "MID %d", &mid);
		sscanf(line, "GRAND %d", &grand);
	}
	ck_assert_msg(child > 0 && mid > 0 && grand > 0, "output: %s", out);
	watch_pid_from_start(&c, parent.pid);
	ck_assert_ptr_nonnull(tp_proc(&c, (uint32_t)parent.pid));
	ck_assert(tp_proc(&c, (uint32_t)parent.pid)->watch_reason & SHM_WATCH_PID);
	{
		const int kids[][2] = { { child, parent.pid }, { mid, parent.pid }, { grand, mid } };

		for (size_t i = 0; i < 3; i++) {
			const struct shm_proc *p = tp_proc(&c, (uint32_t)kids[i][0]);

			char path[64];
			char *stat = NULL;

			/* Where it is now in the process tree, should it be missing. */
			snprintf(path, sizeof(path), "/proc/%d/stat", kids[i][0]);
			if (!p)
				stat = tu_read_file(path, NULL);
			ck_assert_msg(p != NULL,
				      "pid %d, there before the collector, is not watched "
				      "(parent %d; %s: %s; log %s)",
				      kids[i][0], kids[i][1], path, stat ? stat : "gone", c.log);
			ck_assert(p->watch_reason & SHM_WATCH_DESCENDANT);
			ck_assert_uint_eq(p->ppid, (uint32_t)kids[i][1]);
		}
	}
	kill(child, SIGKILL);
	kill(grand, SIGKILL);
	tp_workload_finish(&parent);
	tp_collector_stop(&c);
}
END_TEST

/* The children of pid now, from /proc: how many, into kids. */
static size_t children_of(pid_t pid, pid_t *kids, size_t cap)
{
	char path[64], *text, *end;
	size_t n = 0;

	/* Every thread's children: a shell has one thread. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	text = tu_read_file(path, NULL);
	for (char *s = text; s && n < cap; s = end) {
		long k = strtol(s, &end, 10);

		if (end == s)
			break;
		kids[n++] = (pid_t)k;
	}
	free(text);
	return n;
}

/* Whether pid is a sleep that has not exited (a zombie keeps its name). */
static int is_live_sleeper(pid_t pid)
{
	char path[64], *text, *s;
	int live;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	text = tu_read_file(path, NULL);
	s = text ? strstr(text, " (sleep) ") : NULL;
	live = s && s[9] != 'Z' && s[9] != 'X';
	free(text);
	return live;
}

/*
 * A child of a --pid process that forks all the while the collector
 * starts: whatever it forked before its own watch, including in the
 * moment between the collector's read of the process tree and that
 * watch, is watched, and what it forks after is the kernel's to follow.
 * The forker stops by itself, or with its parent should the test fail.
 */
START_TEST(test_pid_child_forking_through_start_watched)
{
	char *argv[] = { "/bin/sh", "-c",
			 "sh -c 'i=0; while [ $i -lt 1000 ] && kill -0 $PPID; do "
			 "sleep 20 & sleep 0.005; i=$((i+1)); done' "
			 "& echo \"FORKER $!\"; echo READY; read y", NULL };
	struct tp_collector c;
	struct tp_workload parent;
	char out[256];
	const char *line;
	pid_t forker = 0, kids[2048];
	size_t n;
	unsigned int sleepers = 0;

	if (tu_skip_unless_root("test_pid_child_forking_through_start_watched"))
		return;
	ck_assert_int_eq(tp_workload_start(&parent, argv), 0);
	ck_assert_int_eq(tp_workload_collect(&parent, "READY", out, sizeof(out), 5000), 0);
	line = strstr(out, "FORKER ");
	ck_assert_msg(line && sscanf(line, "FORKER %d", &forker) == 1, "output: %s", out);
	watch_pid_from_start(&c, parent.pid);
	/* Forking on under the watch a while, then no more. */
	tu_sleep_ms(500);
	kill(forker, SIGSTOP);
	tu_sleep_ms(3 * TP_PUBLISH_MS);
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	n = children_of(forker, kids, sizeof(kids) / sizeof(kids[0]));
	for (size_t i = 0; i < n; i++) {
		const struct shm_proc *p = tp_proc(&c, (uint32_t)kids[i]);

		if (!is_live_sleeper(kids[i]))
			continue;	/* gone, a zombie, or still between fork and exec */
		sleepers++;
		ck_assert_msg(p != NULL, "sleeper %d of %d (%u of %zu children) is not watched",
			      (int)kids[i], (int)forker, sleepers, n);
		ck_assert(p->watch_reason & SHM_WATCH_DESCENDANT);
		ck_assert_uint_eq(p->ppid, (uint32_t)forker);
	}
	/* Enough of them for the check to mean something. */
	ck_assert_uint_ge(sleepers, 20);
	/* Its children before it: while it lives, none of their pids is reused. */
	for (size_t i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	kill(forker, SIGKILL);
	tp_workload_finish(&parent);
	tp_collector_stop(&c);
}
END_TEST

/*
 * The children of a --pid process there before the collector, one of them
 * a zombie (exited, its parent has not waited): the live one is watched,
 * the zombie, past its exit, is not.
 */
START_TEST(test_pid_zombie_child_not_watched)
{
	char *argv[] = { "/usr/bin/python3", "-c",
			 "import os, sys, time\n"
			 "z = os.fork()\n"
			 "if z == 0: os._exit(0)\n"
			 "s = os.fork()\n"
			 "if s == 0: time.sleep(30); os._exit(0)\n"
			 "time.sleep(0.2)\n"
			 "print('ZOMBIE', z, 'LIVE', s, flush=True)\n"
			 "print('READY', flush=True)\n"
			 "sys.stdin.readline()\n"
			 "os.kill(s, 9)\n", NULL };
	struct tp_collector c;
	struct tp_workload parent;
	char out[256];
	const char *line;
	int zombie = 0, live = 0;

	if (tu_skip_unless_root("test_pid_zombie_child_not_watched"))
		return;
	ck_assert_int_eq(tp_workload_start(&parent, argv), 0);
	ck_assert_int_eq(tp_workload_collect(&parent, "READY", out, sizeof(out), 10000), 0);
	line = strstr(out, "ZOMBIE ");
	ck_assert_msg(line && sscanf(line, "ZOMBIE %d LIVE %d", &zombie, &live) == 2, "output: %s",
		      out);
	watch_pid_from_start(&c, parent.pid);
	ck_assert_ptr_nonnull(tp_proc(&c, (uint32_t)live));
	ck_assert_msg(tp_proc(&c, (uint32_t)zombie) == NULL, "zombie %d is watched", zombie);
	tp_workload_go(&parent);
	tp_workload_finish(&parent);
	tp_collector_stop(&c);
}
END_TEST

/* --pid naming a thread: its process is watched, with its children. */
START_TEST(test_pid_of_a_thread_watches_its_process)
{
	char *argv[] = { "/usr/bin/python3", "-c",
			 "import os, sys, threading, time\n"
			 "t = threading.Thread(target=sys.stdin.readline, daemon=True)\n"
			 "t.start()\n"
			 "s = os.fork()\n"
			 "if s == 0: time.sleep(30); os._exit(0)\n"
			 "print('THREAD', t.native_id, 'CHILD', s, flush=True)\n"
			 "print('READY', flush=True)\n"
			 "t.join()\n"
			 "os.kill(s, 9)\n", NULL };
	struct tp_collector c;
	struct tp_workload w;
	char out[256];
	const char *line;
	const struct shm_proc *p;
	int tid = 0, child = 0;

	if (tu_skip_unless_root("test_pid_of_a_thread_watches_its_process"))
		return;
	ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	ck_assert_int_eq(tp_workload_collect(&w, "READY", out, sizeof(out), 10000), 0);
	line = strstr(out, "THREAD ");
	ck_assert_msg(line && sscanf(line, "THREAD %d CHILD %d", &tid, &child) == 2, "output: %s",
		      out);
	ck_assert_int_ne(tid, (int)w.pid);
	watch_pid_from_start(&c, tid);
	p = tp_proc(&c, (uint32_t)w.pid);
	ck_assert_msg(p != NULL, "process %d of thread %d is not watched", (int)w.pid, tid);
	ck_assert(p->watch_reason & SHM_WATCH_PID);
	ck_assert_ptr_null(tp_proc(&c, (uint32_t)tid));
	ck_assert_ptr_nonnull(tp_proc(&c, (uint32_t)child));
	tp_workload_go(&w);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/* --comm: a process started later under that name is watched. */
START_TEST(test_comm_named_at_exec)
{
	struct tp_collector c;
	struct tp_workload w;
	char bin[64], comm[16];
	const struct shm_proc *p = NULL;
	const char *extra[] = { "--comm", comm, NULL };

	if (tu_skip_unless_root("test_comm_named_at_exec"))
		return;
	/* A unique command name: a copy of sleep under it. */
	snprintf(comm, sizeof(comm), "zwc%d", (int)getpid() % 100000);
	snprintf(bin, sizeof(bin), "/tmp/%s", comm);
	ck_assert_int_eq(tu_system("cp /bin/sleep '%s'", bin), 0);
	ck_assert_msg(tp_collector_start(&c, extra, 0) == 0, "collector did not start, see %s", c.log);
	{
		char *argv[] = { bin, "20", NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	/* At exec in the kernel (or, at the latest, by the next /proc scan). */
	for (int i = 0; i < 20 && !p; i++) {
		tu_sleep_ms(100);
		if (tp_snapshot(&c) == 0)
			p = tp_proc(&c, (uint32_t)w.pid);
	}
	ck_assert_msg(p, "process named %s not watched", comm);
	ck_assert(p->watch_reason & SHM_WATCH_COMM);
	ck_assert_str_eq(p->comm, comm);
	kill(w.pid, SIGKILL);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
	unlink(bin);
}
END_TEST

Suite *probes_discovery_suite(void);
Suite *probes_discovery_suite(void)
{
	Suite *s = suite_create("probes_discovery");
	TCase *tc = tcase_create("root");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dlopen_after_start_from_venv_path);
	tcase_add_test(tc, test_library_load_reported_by_the_loader);
	tcase_add_test(tc, test_library_used_5ms_after_dlopen_counted_or_marked);
	tcase_add_test(tc, test_calls_while_multi_links_attach_all_count_after);
	tcase_add_test(tc, test_calls_while_perf_uprobes_attach_all_count_after);
	tcase_add_test(tc, test_process_in_own_mount_namespace);
	tcase_add_test(tc, test_exec_under_a_seen_pid_found_by_the_scan);
	tcase_add_test(tc, test_pid_descendants_watched_others_not);
	tcase_add_test(tc, test_pid_children_from_before_start_watched);
	tcase_add_test(tc, test_pid_child_forking_through_start_watched);
	tcase_add_test(tc, test_pid_zombie_child_not_watched);
	tcase_add_test(tc, test_pid_of_a_thread_watches_its_process);
	tcase_add_test(tc, test_comm_named_at_exec);
	suite_add_tcase(s, tc);
	return s;
}
