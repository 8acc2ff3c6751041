/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The /proc scanner on real processes: a workload that dlopens the fake
 * CUDA runtime is reported as its libraries (through its /proc/PID/root,
 * each once, with their kinds) and then as a process to watch; one named
 * by --comm is reported before it maps anything, and one whose maps were
 * read already by its name alone; our own libc is found for the barrier
 * probe; the tree below a set of processes; whether a process is alive.
 * Reports only: nothing here needs root.
 */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpf/probe_abi.h"
#include "collector/probes/discovery.h"
#include "collector/proc/proc_stat.h"
#include "shm/shm_consts.h"
#include "tests/collector/tu_probes.h"
#include "tests/support/testutil.h"

struct seen {
	unsigned int kinds;		/* of pid's CUDA/NCCL libraries */
	unsigned int libs;
	unsigned int loaders;		/* its dynamic loader, reported apart */
	int repeats;			/* a library reported twice */
	int proc;			/* pid's process item, after its libraries */
	int proc_before_libs;
	uint32_t reasons, ppid;
	uint64_t start_ns;
	char comm[32];
	char first_path[PATH_MAX + 64];
};

/*
 * The filter of a caller that has read one process's maps already, or
 * knows what they hold (known_reasons: a forked copy of a process read).
 */
static uint32_t read_already, known_reasons;

static int not_read_yet(void *ctx, uint32_t pid, uint32_t *reasons)
{
	(void)ctx;
	if (pid != read_already)
		return 1;
	*reasons = known_reasons;
	return 0;
}

static void scan_for(uint32_t pid, const char *const *comms, size_t n_comms, struct seen *s)
{
	struct discovery_item it;
	struct discovery d;
	char paths[8][PATH_MAX + 64];

	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(discovery_open(&d, comms, n_comms), 0);
	if (read_already)
		discovery_filter(&d, not_read_yet, NULL);
	while (discovery_next(&d, &it)) {
		ck_assert_uint_ne(it.pid, (uint32_t)getpid());
		if (it.pid != pid)
			continue;
		if (it.what == DISCOVERY_PROC) {
			s->proc++;
			s->reasons = it.reasons;
			s->ppid = it.ppid;
			s->start_ns = it.start_ns;
			snprintf(s->comm, sizeof(s->comm), "%s", it.comm);
			continue;
		}
		ck_assert_int_eq(it.what, DISCOVERY_LIB);
		if (it.kind == PROBE_LIB_LOADER) {
			s->loaders++;
			continue;
		}
		s->proc_before_libs |= s->proc;
		for (unsigned int i = 0; i < s->libs && i < 8; i++)
			s->repeats |= strcmp(paths[i], it.path) == 0;
		if (s->libs < 8)
			snprintf(paths[s->libs], sizeof(paths[0]), "%s", it.path);
		if (!s->libs)
			snprintf(s->first_path, sizeof(s->first_path), "%s", it.path);
		s->libs++;
		s->kinds |= it.kind;
	}
	discovery_close(&d);
}

START_TEST(a_process_is_reported_by_its_libraries_then_itself)
{
	char zw[512], rt[512], lib_arg[600], prefix[64];
	const char *comms[] = { "zw_cuda" };
	struct tp_workload w;
	struct seen s;

	tp_fake(rt, sizeof(rt), "libcudart.so");
	snprintf(lib_arg, sizeof(lib_arg), "lib:%s", rt);
	{
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), "wait", lib_arg, "wait", NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);

	/*
	 * Nothing of ours mapped yet: only a --comm name makes it one to
	 * watch.  Its loader is reported, to be probed for its library loads.
	 */
	scan_for((uint32_t)w.pid, NULL, 0, &s);
	ck_assert_int_eq(s.libs + s.proc, 0);
	ck_assert_int_eq(s.loaders, 1);
	scan_for((uint32_t)w.pid, comms, 1, &s);
	ck_assert_int_eq(s.libs, 0);
	ck_assert_int_eq(s.proc, 1);
	ck_assert_uint_eq(s.reasons, SHM_WATCH_COMM);

	tp_workload_go(&w);	/* dlopen: the runtime, and the driver it needs */
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	scan_for((uint32_t)w.pid, NULL, 0, &s);
	ck_assert_uint_eq(s.kinds, PROBE_LIB_CUDA | PROBE_LIB_CUDART);
	ck_assert_int_eq(s.libs, 2);
	ck_assert_int_eq(s.repeats, 0);
	snprintf(prefix, sizeof(prefix), "/proc/%d/root/", (int)w.pid);
	ck_assert_msg(strncmp(s.first_path, prefix, strlen(prefix)) == 0, "path %s", s.first_path);
	ck_assert_int_eq(s.proc, 1);
	ck_assert_int_eq(s.proc_before_libs, 0);
	ck_assert_uint_eq(s.reasons, SHM_WATCH_CUDA);
	ck_assert_uint_eq(s.ppid, (uint32_t)getpid());
	ck_assert_uint_gt(s.start_ns, 0);
	ck_assert_str_eq(s.comm, "zw_cuda");

	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 5000), 0);
	tp_workload_finish(&w);
}
END_TEST

/*
 * A process whose maps the caller has read is not read again; with --comm
 * names it is still looked at, since a name can change without exec, and
 * with reasons the caller knows it is reported with them.
 */
START_TEST(a_process_read_already_is_reported_by_its_name_only)
{
	char zw[512], rt[512], lib_arg[600];
	const char *comms[] = { "zw_cuda" };
	struct tp_workload w;
	struct seen s;

	tp_fake(rt, sizeof(rt), "libcudart.so");
	snprintf(lib_arg, sizeof(lib_arg), "lib:%s", rt);
	{
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), lib_arg, "wait", NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 5000), 0);
	read_already = (uint32_t)w.pid;
	scan_for((uint32_t)w.pid, NULL, 0, &s);
	ck_assert_int_eq(s.libs + s.loaders + s.proc, 0);
	scan_for((uint32_t)w.pid, comms, 1, &s);
	ck_assert_int_eq(s.libs + s.loaders, 0);
	ck_assert_int_eq(s.proc, 1);
	ck_assert_uint_eq(s.reasons, SHM_WATCH_COMM);
	/* Known without a read: reported with what the caller knows, and its name. */
	known_reasons = SHM_WATCH_NCCL;
	scan_for((uint32_t)w.pid, NULL, 0, &s);
	ck_assert_int_eq(s.libs + s.loaders, 0);
	ck_assert_int_eq(s.proc, 1);
	ck_assert_uint_eq(s.reasons, SHM_WATCH_NCCL);
	scan_for((uint32_t)w.pid, comms, 1, &s);
	ck_assert_int_eq(s.proc, 1);
	ck_assert_uint_eq(s.reasons, SHM_WATCH_NCCL | SHM_WATCH_COMM);
	known_reasons = 0;
	/* Another process is read as before. */
	read_already = (uint32_t)getppid();
	scan_for((uint32_t)w.pid, NULL, 0, &s);
	ck_assert_uint_eq(s.kinds, PROBE_LIB_CUDA | PROBE_LIB_CUDART);
	ck_assert_int_eq(s.proc, 1);
	read_already = 0;
	tp_workload_go(&w);
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 5000), 0);
	tp_workload_finish(&w);
}
END_TEST

START_TEST(the_libc_of_one_process_is_found_on_request)
{
	struct discovery_item it;
	struct discovery d;
	char want[64];
	int n = 0;

	/* Ourselves: the plain path, as libbpf and the log show it. */
	ck_assert_int_eq(discovery_open_pid(&d, 0, PROBE_LIB_LIBC), 0);
	while (discovery_next(&d, &it)) {
		ck_assert_int_eq(it.what, DISCOVERY_LIB);
		ck_assert_uint_eq(it.kind, PROBE_LIB_LIBC);
		ck_assert_int_eq(it.path[0], '/');
		ck_assert_ptr_nonnull(strstr(it.path, "libc"));
		n++;
	}
	discovery_close(&d);
	ck_assert_int_eq(n, 1);
	/* By pid: through its root; and no CUDA library where none is asked for. */
	snprintf(want, sizeof(want), "/proc/%d/root/", (int)getpid());
	ck_assert_int_eq(discovery_open_pid(&d, (uint32_t)getpid(), PROBE_LIB_LIBC), 0);
	ck_assert_int_eq(discovery_next(&d, &it), 1);
	ck_assert_int_eq(strncmp(it.path, want, strlen(want)), 0);
	ck_assert_int_eq(discovery_next(&d, &it), 0);
	discovery_close(&d);
	ck_assert_int_lt(discovery_open_pid(&d, 0x7ffffff0u, PROBE_LIB_LIBC), 0);
	discovery_close(&d);
}
END_TEST

/* A child that sleeps until killed; with grand, a child of its own too. */
static pid_t sleeper(int with_grand, pid_t *grand)
{
	int fds[2];
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pid_t g = 0;

		close(fds[0]);
		if (with_grand && (g = fork()) == 0) {
			pause();
			_exit(0);
		}
		/* Named only once it exists. */
		if (write(fds[1], &g, sizeof(g)) != (ssize_t)sizeof(g))
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], grand, sizeof(*grand)), (ssize_t)sizeof(*grand));
	close(fds[0]);
	return pid;
}

static struct {
	unsigned int n;
	uint32_t pid[8], ppid[8];
} below;

static void note_below(void *ctx, const struct discovery_item *it)
{
	(void)ctx;
	ck_assert_int_eq(it->what, DISCOVERY_PROC);
	ck_assert_uint_eq(it->reasons, SHM_WATCH_DESCENDANT);
	if (below.n < 8) {
		below.pid[below.n] = it->pid;
		below.ppid[below.n] = it->ppid;
	}
	below.n++;
}

/* Where pid was reported, under which parent: 1, or 0 when it was not. */
static int reported_below(uint32_t pid, uint32_t ppid)
{
	for (unsigned int i = 0; i < below.n && i < 8; i++)
		if (below.pid[i] == pid)
			return below.ppid[i] == ppid;
	return 0;
}

/*
 * Children and grandchildren, each under its parent; a zombie is still in
 * the tree (the watch looks again, proc_alive); a root below another
 * root is reported too.
 */
START_TEST(the_tree_below_the_roots_is_reported_each_under_its_parent)
{
	pid_t grand = 0, child = sleeper(1, &grand), zombie = fork();
	uint32_t roots[2] = { (uint32_t)getpid(), 0 };

	if (zombie == 0)
		_exit(0);
	ck_assert_int_gt(grand, 0);
	tu_sleep_ms(50);	/* the zombie's exit */
	memset(&below, 0, sizeof(below));
	ck_assert_int_eq(discovery_descendants(roots, 1, note_below, NULL), 3);
	ck_assert_uint_eq(below.n, 3);
	ck_assert(reported_below((uint32_t)child, (uint32_t)getpid()));
	ck_assert(reported_below((uint32_t)grand, (uint32_t)child));
	ck_assert(reported_below((uint32_t)zombie, (uint32_t)getpid()));

	/* The child a root itself: reported under ours all the same. */
	roots[1] = (uint32_t)child;
	memset(&below, 0, sizeof(below));
	ck_assert_int_eq(discovery_descendants(roots, 2, note_below, NULL), 3);
	ck_assert(reported_below((uint32_t)child, (uint32_t)getpid()));

	kill(grand, SIGKILL);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	waitpid(zombie, NULL, 0);
}
END_TEST

static void *park(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

/*
 * A process whose main thread has ended (pthread_exit) while another
 * runs on: /proc/PID/stat, the main thread's, says zombie.
 */
START_TEST(a_process_whose_main_thread_ended_is_alive)
{
	char path[64], *stat, *s;
	pid_t child = fork();

	ck_assert_int_ge(child, 0);
	if (child == 0) {
		pthread_t th;

		if (pthread_create(&th, NULL, park, NULL) != 0)
			_exit(1);
		pthread_exit(NULL);
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)child);
	for (int i = 0; i < 100; i++) {
		stat = tu_read_file(path, NULL);
		s = stat ? strrchr(stat, ')') : NULL;
		if (s && s[2] == 'Z')
			break;
		free(stat);
		stat = NULL;
		tu_sleep_ms(10);
	}
	ck_assert_msg(stat != NULL, "the main thread of %d did not end", (int)child);
	free(stat);
	ck_assert_int_eq(proc_alive((uint32_t)child, 0), 1);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert_int_eq(proc_alive((uint32_t)child, 0), 0);
}
END_TEST

/* Alive: there, not a zombie, and the process that started then. */
START_TEST(a_zombie_or_another_start_is_not_alive)
{
	pid_t grand, child = sleeper(0, &grand), zombie = fork();
	uint64_t start = 0;

	if (zombie == 0)
		_exit(0);
	ck_assert_int_eq(proc_start_time((uint32_t)child, &start), 0);
	ck_assert_uint_gt(start, 0);
	ck_assert_int_eq(proc_alive((uint32_t)child, start), 1);
	ck_assert_int_eq(proc_alive((uint32_t)child, 0), 1);
	/* Within the same clock tick it is the same start. */
	ck_assert_int_eq(proc_alive((uint32_t)child, start + ZW_START_TICK_NS - 1), 1);
	ck_assert_int_eq(proc_alive((uint32_t)child, start + ZW_START_TICK_NS), 0);
	{
		siginfo_t si;

		/* Until it has exited, left a zombie: no guess at how long that takes. */
		ck_assert_int_eq(waitid(P_PID, (id_t)zombie, &si, WEXITED | WNOWAIT), 0);
	}
	ck_assert_int_eq(proc_alive((uint32_t)zombie, 0), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	waitpid(zombie, NULL, 0);
	ck_assert_int_eq(proc_alive((uint32_t)child, 0), 0);
	ck_assert_int_eq(proc_alive((uint32_t)zombie, 0), 0);
}
END_TEST


/* A thread's id leads to its process. */
START_TEST(a_thread_belongs_to_its_process)
{
	pthread_t th;
	uint32_t tgid = 0;
	char path[64];
	DIR *task;
	struct dirent *e;
	int threads = 0;

	ck_assert_int_eq(pthread_create(&th, NULL, park, NULL), 0);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)getpid());
	task = opendir(path);
	ck_assert_ptr_nonnull(task);
	while ((e = readdir(task))) {
		if (e->d_name[0] == '.')
			continue;
		ck_assert_int_eq(proc_tgid((uint32_t)atoi(e->d_name), &tgid), 0);
		ck_assert_uint_eq(tgid, (uint32_t)getpid());
		threads++;
	}
	closedir(task);
	ck_assert_int_eq(threads, 2);
	ck_assert_int_lt(proc_tgid(0x7ffffff0u, &tgid), 0);
}
END_TEST

Suite *discovery_suite(void);
Suite *discovery_suite(void)
{
	Suite *s = suite_create("discovery");
	TCase *tc = tcase_create("proc");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, a_process_is_reported_by_its_libraries_then_itself);
	tcase_add_test(tc, a_process_read_already_is_reported_by_its_name_only);
	tcase_add_test(tc, the_libc_of_one_process_is_found_on_request);
	tcase_add_test(tc, the_tree_below_the_roots_is_reported_each_under_its_parent);
	tcase_add_test(tc, a_zombie_or_another_start_is_not_alive);
	tcase_add_test(tc, a_process_whose_main_thread_ended_is_alive);
	tcase_add_test(tc, a_thread_belongs_to_its_process);
	suite_add_tcase(s, tc);
	return s;
}
