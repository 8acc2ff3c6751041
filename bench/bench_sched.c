/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `make bench-sched`: what the wait and scheduler probes cost.
 *   1. An unwatched process's syscalls, with and without zernel-collector
 *      loaded: getppid (a syscall no probe measures) and 1-byte reads of
 *      /dev/zero (one the DataLoader probe measures, for watched processes);
 *      and the same reads with only empty programs on read's tracepoints,
 *      the kernel's floor for any probe there.
 *   2. The same reads in a watched process (entry state kept, no event).
 *   3. Per watched event: two threads on one CPU ping-ponging a byte over
 *      pipes (each round trip blocks in read twice and switches context
 *      twice), watched vs unwatched, divided by the events the collector
 *      counted.
 * Minimum of several runs, to keep other load out.  Needs root.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "bench/sched_floor.skel.h"
#include "common/util.h"
#include "shm/shm_reader.h"

#define BS_SYSCALLS	1000000ull
#define BS_PINGPONG	20000ull
#define BS_RUNS		3
#define BS_CYCLES	3

enum bs_mode { BS_GETPPID = 1, BS_READ, BS_PINGPONG_MODE };

struct bs_child {
	pid_t pid;
	int cmd;		/* parent -> child: mode, n */
	int res;		/* child -> parent: elapsed ns */
};

/* --- the measured loops, run in a child process ------------------------- */

static int pp_a[2], pp_b[2];

static void *pp_echo(void *arg)
{
	uint64_t n = *(uint64_t *)arg;
	char c;

	for (uint64_t i = 0; i < n; i++) {
		if (read(pp_a[0], &c, 1) != 1 || write(pp_b[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

static uint64_t bs_run(enum bs_mode mode, uint64_t n)
{
	uint64_t t0, t1;
	pthread_t echo;
	cpu_set_t one;
	char c = 'x';
	int fd;

	switch (mode) {
	case BS_GETPPID:
		t0 = now_mono_ns();
		for (uint64_t i = 0; i < n; i++)
			syscall(SYS_getppid);
		return now_mono_ns() - t0;
	case BS_READ:
		fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
		t0 = now_mono_ns();
		for (uint64_t i = 0; i < n; i++)
			if (read(fd, &c, 1) != 1)
				break;
		t1 = now_mono_ns();
		close(fd);
		return t1 - t0;
	case BS_PINGPONG_MODE:
		/* One CPU for both threads: each trip is two plain switches, no IPI. */
		CPU_ZERO(&one);
		CPU_SET(0, &one);
		if (sched_setaffinity(0, sizeof(one), &one) != 0)
			return 0;
		if (pipe(pp_a) != 0 || pipe(pp_b) != 0)
			return 0;
		if (pthread_create(&echo, NULL, pp_echo, &n) != 0)
			return 0;
		t0 = now_mono_ns();
		for (uint64_t i = 0; i < n; i++)
			if (write(pp_a[1], &c, 1) != 1 || read(pp_b[0], &c, 1) != 1)
				break;
		t1 = now_mono_ns();
		pthread_join(echo, NULL);
		close(pp_a[0]);
		close(pp_a[1]);
		close(pp_b[0]);
		close(pp_b[1]);
		return t1 - t0;
	}
	return 0;
}

static void bs_child_loop(int cmd, int res)
{
	uint64_t req[2], ns;

	while (read(cmd, req, sizeof(req)) == (ssize_t)sizeof(req)) {
		ns = bs_run((enum bs_mode)req[0], req[1]);
		if (write(res, &ns, sizeof(ns)) != (ssize_t)sizeof(ns))
			break;
	}
	_exit(0);
}

static int bs_child_start(struct bs_child *c)
{
	int cmd[2], res[2];

	if (pipe2(cmd, O_CLOEXEC) != 0 || pipe2(res, O_CLOEXEC) != 0)
		return -errno;
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (c->pid == 0) {
		close(cmd[1]);
		close(res[0]);
		bs_child_loop(cmd[0], res[1]);
	}
	close(cmd[0]);
	close(res[1]);
	c->cmd = cmd[1];
	c->res = res[0];
	return 0;
}

static void bs_child_stop(struct bs_child *c)
{
	/* Its siblings hold copies of its command pipe: no EOF to wait for. */
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	close(c->cmd);
	close(c->res);
}

static void bs_min(double *best, double v)
{
	if (v > 0 && v < *best)
		*best = v;
}

/* Best of BS_RUNS: ns per operation. */
static double bs_measure(struct bs_child *c, enum bs_mode mode, uint64_t n)
{
	uint64_t req[2] = { mode, n }, ns, best = UINT64_MAX;

	for (int r = 0; r < BS_RUNS; r++) {
		if (write(c->cmd, req, sizeof(req)) != (ssize_t)sizeof(req) ||
		    read(c->res, &ns, sizeof(ns)) != (ssize_t)sizeof(ns) || ns == 0)
			return -1;
		if (ns < best)
			best = ns;
	}
	return (double)best / (double)n;
}

/* --- the collector ------------------------------------------------------- */

static pid_t bs_collector_start(const char *bin, const char *shm, pid_t watch)
{
	char pid[16];
	char *argv[] = { (char *)bin, "--shm", (char *)shm, "--publish-interval", "200",
			 "--pid", pid, NULL };
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	char reason[256];
	pid_t cp;

	snprintf(pid, sizeof(pid), "%d", (int)watch);
	cp = fork();
	if (cp == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDERR_FILENO);
		execv(bin, argv);
		_exit(127);
	}
	if (cp < 0)
		return -1;
	shm_reader_init(&r, shm);
	/* Loaded once it publishes a row for the watched process. */
	for (int i = 0; i < 300; i++) {
		uint32_t n = 0;

		usleep(50000);
		if (shm_reader_snapshot(&r, &s, reason, sizeof(reason)) == SHM_READ_OK &&
		    shm_snapshot_procs(&s, &n) && n > 0) {
			shm_snapshot_free(&s);
			shm_reader_close(&r);
			return cp;
		}
	}
	shm_snapshot_free(&s);
	shm_reader_close(&r);
	kill(cp, SIGKILL);
	waitpid(cp, NULL, 0);
	return -1;
}

static uint64_t bs_events(const char *shm)
{
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	char reason[256];
	uint64_t n = 0;

	/* After two publishes everything sent so far is counted. */
	usleep(500000);
	shm_reader_init(&r, shm);
	if (shm_reader_snapshot(&r, &s, reason, sizeof(reason)) == SHM_READ_OK)
		n = s.hdr->stats.events_total;
	shm_snapshot_free(&s);
	shm_reader_close(&r);
	return n;
}

/* Reads with empty programs on sys_enter_read/sys_exit_read: ns per call. */
static double bs_floor(struct bs_child *c)
{
	struct sched_floor_bpf *s = sched_floor_bpf__open_and_load();
	double ns = -1;

	if (!s)
		return -1;
	if (sched_floor_bpf__attach(s) == 0)
		ns = bs_measure(c, BS_READ, BS_SYSCALLS);
	sched_floor_bpf__destroy(s);
	return ns;
}

static void bs_warn_other_loaders(void)
{
	/* Another collector with these probes would tax the baseline too. */
	if (system("bpftool prog show 2>/dev/null | grep -q 'name zs_dl_enter'") == 0)
		printf("warning: zernel syscall probes are already loaded by another process; "
		       "the baseline includes their cost\n");
}

int main(int argc, char **argv)
{
	struct bs_child unwatched, watched;
	double base_ppid, base_read, base_pp, load_ppid, load_read, load_pp;
	double w_read, w_pp, ev_trip, floor_read;
	uint64_t ev0, ev1;
	int rc = 1;
	char shm[64];
	pid_t col;

	if (argc != 2) {
		fprintf(stderr, "usage: bench_sched PATH/zernel-collector\n");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bench_sched: needs root (it loads the BPF probes)\n");
		return 1;
	}
	snprintf(shm, sizeof(shm), "/zernel-bench-sched-%d", (int)getpid());
	bs_warn_other_loaders();
	if (bs_child_start(&unwatched) != 0 || bs_child_start(&watched) != 0) {
		perror("bench_sched: fork");
		return 1;
	}

	base_ppid = base_read = base_pp = load_ppid = load_read = load_pp = 1e18;
	w_read = w_pp = floor_read = 1e18;
	ev_trip = 0;
	/* Alternate without and with the collector, keep the best of each. */
	for (int cycle = 0; cycle < BS_CYCLES; cycle++) {
		/* 1. baseline: no collector */
		bs_min(&base_ppid, bs_measure(&unwatched, BS_GETPPID, BS_SYSCALLS));
		bs_min(&base_read, bs_measure(&unwatched, BS_READ, BS_SYSCALLS));
		bs_min(&base_pp, bs_measure(&unwatched, BS_PINGPONG_MODE, BS_PINGPONG));
		bs_min(&floor_read, bs_floor(&unwatched));

		/* 2. collector loaded, watching only the second child */
		col = bs_collector_start(argv[1], shm, watched.pid);
		if (col < 0) {
			fprintf(stderr, "bench_sched: %s did not start\n", argv[1]);
			goto cleanup;
		}
		bs_min(&load_ppid, bs_measure(&unwatched, BS_GETPPID, BS_SYSCALLS));
		bs_min(&load_read, bs_measure(&unwatched, BS_READ, BS_SYSCALLS));
		bs_min(&load_pp, bs_measure(&unwatched, BS_PINGPONG_MODE, BS_PINGPONG));
		/* 3. the watched child */
		bs_min(&w_read, bs_measure(&watched, BS_READ, BS_SYSCALLS));
		ev0 = bs_events(shm);
		bs_min(&w_pp, bs_measure(&watched, BS_PINGPONG_MODE, BS_PINGPONG));
		ev1 = bs_events(shm);
		if (ev1 > ev0)
			ev_trip = (double)(ev1 - ev0) / (double)(BS_PINGPONG * BS_RUNS);
		kill(col, SIGTERM);
		waitpid(col, NULL, 0);
		shm_unlink(shm);
	}
	rc = 0;

	printf("zernel wait/scheduler probes: cost (best of %d runs)\n", BS_RUNS * BS_CYCLES);
	printf("  unwatched getppid        %8.1f ns/call -> %8.1f ns/call loaded: %+6.1f ns (%+.2f%%)\n",
	       base_ppid, load_ppid, load_ppid - base_ppid, 100 * (load_ppid / base_ppid - 1));
	printf("  unwatched read(/dev/zero)%8.1f ns/call -> %8.1f ns/call loaded: %+6.1f ns (%+.2f%%)\n",
	       base_read, load_read, load_read - base_read, 100 * (load_read / base_read - 1));
	if (floor_read < 1e17)
		printf("  of which the kernel's floor (empty programs on read's tracepoints): "
		       "%+.1f ns; the probes' own work: %+.1f ns\n",
		       floor_read - base_read, load_read - floor_read);
	printf("  unwatched pipe ping-pong %8.0f ns/trip -> %8.0f ns/trip loaded: %+6.0f ns (%+.2f%%)\n",
	       base_pp, load_pp, load_pp - base_pp, 100 * (load_pp / base_pp - 1));
	printf("  watched read(/dev/zero), non-blocking (no event): %.1f ns/call, %+.1f ns over unwatched\n",
	       w_read, w_read - load_read);
	if (ev_trip > 0)
		printf("  watched pipe ping-pong: %.0f ns/trip, %+.0f ns over unwatched, "
		       "%.2f events/trip -> %.0f ns per watched event\n",
		       w_pp, w_pp - load_pp, ev_trip, (w_pp - load_pp) / ev_trip);
cleanup:
	bs_child_stop(&unwatched);
	bs_child_stop(&watched);
	return rc;
}
