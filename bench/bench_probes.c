/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Probe cost per call on a launch-heavy loop: cuLaunchKernel with an empty
 * body (bench/empty_launch.c) called in a tight loop with no probe, with
 * empty BPF programs on its uprobe and uretprobe (the kernel's floor), with
 * programs that only read the clock, under zernel-collector, and under
 * bpftrace keeping the equivalent latency histogram.  Rounds alternate the
 * five, each round starting one further along, so that machine noise hits
 * all of them alike; each round keeps its fastest slice.  Prints, per
 * method, the median round, the rounds' spread and the cost above no
 * probe, the ratios to the floor round by round, and whether Zernel's
 * distance from the floor stands out of the floor's own noise.  Needs root.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "bench/probe_floor.skel.h"
#include "shm/shm_reader.h"

/* 10 ms or more a slice with a probe: far above the clock's resolution. */
#define SLICE_CALLS	5000
#define SLICES		10
#define ROUNDS		9
#define SETTLE_US	300000	/* before each loop */
#define SYMBOL		"cuLaunchKernel"
#define GOAL_X_FLOOR	1.05

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			 unsigned, void *, void **, void **);

enum method { M_NONE, M_FLOOR, M_CLOCK, M_ZERNEL, M_BPFTRACE, M_COUNT };

static const char *const method_name[M_COUNT] = {
	"no probe", "empty BPF (floor)", "floor + 2 clock reads", "zernel", "bpftrace hist",
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The machine is shared: other work can only add time.  The loop runs in
 * SLICES slices and keeps the fastest, the cost with the least
 * interference.  It starts after a pause: the method measured before this
 * one leaves kernel work behind when it stops (freeing its maps and
 * links, RCU callbacks, TLB shootdowns) that would otherwise land on
 * whichever method comes next.
 */
static double loop_ns(launch_fn fn)
{
	double best = 1e18;

	usleep(SETTLE_US);

	for (int s = 0; s < SLICES; s++) {
		uint64_t t0 = mono_ns();

		for (int i = 0; i < SLICE_CALLS; i++)
			fn(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		double ns = (double)(mono_ns() - t0) / SLICE_CALLS;

		if (ns < best)
			best = ns;
	}
	return best;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The floor: empty programs on the same symbol. */
/* Empty programs (M_FLOOR), or programs that only read the clock (M_CLOCK). */
static double run_floor(const char *lib, launch_fn fn, enum method m)
{
	LIBBPF_OPTS(bpf_uprobe_opts, in, .func_name = SYMBOL);
	LIBBPF_OPTS(bpf_uprobe_opts, out, .func_name = SYMBOL, .retprobe = 1);
	struct probe_floor_bpf *skel = probe_floor_bpf__open_and_load();
	struct bpf_link *l1 = NULL, *l2 = NULL;
	double ns = -1;

	if (!skel) {
		fprintf(stderr, "bench_probes: cannot load the floor programs\n");
		return -1;
	}
	l1 = bpf_program__attach_uprobe_opts(m == M_CLOCK ? skel->progs.clock_enter :
					     skel->progs.floor_enter, -1, lib, 0, &in);
	l2 = bpf_program__attach_uprobe_opts(m == M_CLOCK ? skel->progs.clock_exit :
					     skel->progs.floor_exit, -1, lib, 0, &out);
	if (l1 && l2)
		ns = loop_ns(fn);
	bpf_link__destroy(l1);
	bpf_link__destroy(l2);
	probe_floor_bpf__destroy(skel);
	return ns;
}

static pid_t spawn(char *const argv[], int out_fd)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (out_fd >= 0) {
			dup2(out_fd, STDOUT_FILENO);
			dup2(out_fd, STDERR_FILENO);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* Sends sig and waits up to wait_ms for the exit; SIGKILL after that. */
static void stop(pid_t pid, int sig, int wait_ms)
{
	int st;

	if (pid <= 0)
		return;
	kill(pid, sig);
	for (int i = 0; i < wait_ms / 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

static double run_zernel(const char *collector, const char *lib, launch_fn fn)
{
	char shm[64];
	/*
	 * The floor and bpftrace attach perf uprobes; so does the collector
	 * here, so that the ratios compare the programs, not the kinds of link.
	 * The collector hands the release of its uprobes to a child that
	 * outlives it; --exit-when-released waits for it, so that no uprobe
	 * of Zernel's is left on the function while the next method runs.
	 */
	char *argv[] = { (char *)collector, "--shm", shm, "--publish-interval", "200",
			 "--lib", (char *)lib, "--uprobe-links", "perf", "--exit-when-released",
			 NULL };
	struct shm_reader r;
	struct shm_snapshot snap = { 0 };
	char reason[256];
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	double ns = -1;
	pid_t pid;

	snprintf(shm, sizeof(shm), "/zernel-bench-%d", (int)getpid());
	pid = spawn(argv, devnull);
	shm_reader_init(&r, shm);
	for (int i = 0; i < 200; i++) {
		usleep(50000);
		if (shm_reader_snapshot(&r, &snap, reason, sizeof(reason)) == SHM_READ_OK &&
		    snap.hdr->stats.libraries_attached >= 1) {
			ns = loop_ns(fn);
			break;
		}
	}
	stop(pid, SIGTERM, 60000);
	shm_snapshot_free(&snap);
	shm_reader_close(&r);
	shm_unlink(shm);
	close(devnull);
	return ns;
}

/* bpftrace: the same latency histogram, by its own means. */
static double run_bpftrace(const char *lib, launch_fn fn)
{
	char prog[2048], buf[4096];
	char *argv[] = { "/usr/bin/bpftrace", "-e", prog, NULL };
	int fds[2];
	size_t len = 0;
	double ns = -1;
	pid_t pid;

	snprintf(prog, sizeof(prog),
		 "BEGIN { printf(\"READY\\n\"); } "
		 "uprobe:%s:%s { @start[tid] = nsecs; } "
		 "uretprobe:%s:%s /@start[tid]/ { @ns = hist(nsecs - @start[tid]); "
		 "delete(@start[tid]); }", lib, SYMBOL, lib, SYMBOL);
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	pid = spawn(argv, fds[1]);
	close(fds[1]);
	/* bpftrace runs BEGIN once every probe is attached. */
	for (;;) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 20000) <= 0)
			break;
		n = read(fds[0], buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		if (strstr(buf, "READY")) {
			ns = loop_ns(fn);
			break;
		}
	}
	stop(pid, SIGINT, 5000);
	close(fds[0]);
	return ns;
}

/* The median, quartiles and extremes of a method's rounds. */
struct spread {
	double min, q1, median, q3, max;
};

static struct spread spread_of(const double *rounds)
{
	double v[ROUNDS];

	memcpy(v, rounds, sizeof(v));
	qsort(v, ROUNDS, sizeof(double), cmp_double);
	return (struct spread){ v[0], v[ROUNDS / 4], v[ROUNDS / 2], v[ROUNDS - 1 - ROUNDS / 4],
				v[ROUNDS - 1] };
}

static void print_figures(double ns[M_COUNT][ROUNDS])
{
	struct spread sp[M_COUNT];
	double ratio[ROUNDS], above, noise;

	for (int m = 0; m < M_COUNT; m++)
		sp[m] = spread_of(ns[m]);
	printf("probe cost per call: %s with an empty body, %d slices of %d calls a round "
	       "(its fastest slice), %d rounds\n", SYMBOL, SLICES, SLICE_CALLS, ROUNDS);
	printf("  %-22s %9s %19s %11s %9s\n", "method", "ns/call", "rounds min-max",
	       "probe cost", "x floor");
	for (int m = 0; m < M_COUNT; m++) {
		printf("  %-22s %9.0f %9.0f-%-9.0f", method_name[m], sp[m].median, sp[m].min,
		       sp[m].max);
		if (m > M_NONE)
			printf(" %11.0f", sp[m].median - sp[M_NONE].median);
		if (m > M_FLOOR && sp[M_FLOOR].median > 0)
			printf(" %9.3f", sp[m].median / sp[M_FLOOR].median);
		printf("\n");
	}
	/* The spread: each round's ratio, from figures taken seconds apart. */
	for (int m = M_CLOCK; m < M_COUNT; m++) {
		printf("  %s / floor by round:", method_name[m]);
		for (int r = 0; r < ROUNDS; r++) {
			ratio[r] = ns[M_FLOOR][r] > 0 ? ns[m][r] / ns[M_FLOOR][r] : 0.0;
			printf(" %.3f", ratio[r]);
		}
		printf("\n");
	}
	for (int r = 0; r < ROUNDS; r++)
		ratio[r] = ns[M_FLOOR][r] > 0 ? ns[M_ZERNEL][r] / ns[M_FLOOR][r] : 0.0;
	struct spread zr = spread_of(ratio);

	printf("  goal: zernel within %.2f x the floor: %.3f (rounds %.3f-%.3f): %s\n",
	       GOAL_X_FLOOR, zr.median, zr.min, zr.max,
	       zr.median <= GOAL_X_FLOOR ? "met" : "not met");
	/*
	 * Noise: how far the floor itself moves between rounds (its
	 * interquartile range).  A distance from the floor smaller than that
	 * is not a measurement of Zernel.
	 */
	above = sp[M_ZERNEL].median - sp[M_FLOOR].median;
	noise = sp[M_FLOOR].q3 - sp[M_FLOOR].q1;
	printf("  zernel above the floor: %.0f ns a call; the floor moves %.0f ns between rounds "
	       "(interquartile): %s\n", above, noise,
	       above > noise ? "above the noise" : "within the noise, not resolved");
	if (sp[M_FLOOR].median <= sp[M_NONE].median)
		printf("  the floor is no slower than no probe: the probes did not fire, "
		       "the figures above measure nothing\n");
}

int main(int argc, char **argv)
{
	double ns[M_COUNT][ROUNDS];
	const char *collector, *lib;
	launch_fn fn;
	void *h;

	if (argc != 3) {
		fprintf(stderr, "usage: bench_probes ZERNEL-COLLECTOR BENCH-CUDA-LIBRARY\n");
		return 2;
	}
	collector = argv[1];
	lib = argv[2];
	if (geteuid() != 0) {
		fprintf(stderr, "bench_probes: needs root (BPF)\n");
		return 2;
	}
	h = dlopen(lib, RTLD_NOW);
	fn = h ? (launch_fn)dlsym(h, SYMBOL) : NULL;
	if (!fn) {
		fprintf(stderr, "bench_probes: %s\n", dlerror());
		return 1;
	}
	libbpf_set_print(NULL);
	loop_ns(fn);	/* warm up */
	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < M_COUNT; k++) {
			int m = (r + k) % M_COUNT;

			switch (m) {
			case M_NONE:
				ns[m][r] = loop_ns(fn);
				break;
			case M_FLOOR:
			case M_CLOCK:
				ns[m][r] = run_floor(lib, fn, (enum method)m);
				break;
			case M_ZERNEL:
				ns[m][r] = run_zernel(collector, lib, fn);
				break;
			default:
				ns[m][r] = run_bpftrace(lib, fn);
				break;
			}
			if (ns[m][r] < 0) {
				fprintf(stderr, "bench_probes: %s did not run\n", method_name[m]);
				return 1;
			}
		}
	}
	print_figures(ns);
	return 0;
}
