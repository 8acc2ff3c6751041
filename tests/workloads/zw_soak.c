// SPDX-License-Identifier: BSD-2-Clause
/*
 * The soak's workloads (tests/collector/check_soak.c), over a CUDA driver
 * (the fake one) they dlopen, counting what they did so the test knows the
 * ground truth.  They print "READY", run until a line arrives on stdin,
 * print their totals and "DONE", and wait for stdin to close.  No
 * privilege, except that churn reuses pids when it may write
 * /proc/sys/kernel/ns_last_pid (root).
 *
 *   zw_soak LIB steady HANDOFFS_PER_S
 *       two threads hand a futex word back and forth at the given rate
 *       (scheduler events: waits, wakeups, switches), while a third
 *       launches a kernel every millisecond and allocates and frees device
 *       memory every 50 launches, keeping 4 allocations live.
 *       Totals: "steady handoffs H launches L allocs A frees F held B"
 *   zw_soak LIB churn CHILDREN_PER_S LAUNCHES
 *       forks short-lived children at the given rate: each allocates, makes
 *       LAUNCHES launches, lives 0-19 ms and exits without freeing.  Every
 *       other child is given the pid of the child reaped before it.
 *       Totals: "churn children N launches L allocs A reused R failed F"
 *   zw_soak LIB chain N LAUNCHES
 *       after a line on stdin, N children one after the other, each forked
 *       the moment the one before has been reaped and given its pid, each
 *       making LAUNCHES launches, so that a child launches while the
 *       collector learns that the one before it exited.
 *       Totals: "chain children N launches L reused R failed F"
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/fakes/fake_cuda.h"

typedef CUresult (*fn_launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*fn_alloc)(CUdeviceptr *, size_t);
typedef CUresult (*fn_free)(CUdeviceptr);

static fn_launch cu_launch;
static fn_alloc cu_alloc;
static fn_free cu_free;
static atomic_int stopping;

static void *sym(void *lib, const char *name)
{
	void *f = dlsym(lib, name);

	if (!f) {
		fprintf(stderr, "zw_soak: no symbol %s\n", name);
		exit(2);
	}
	return f;
}

static void load_driver(const char *path)
{
	void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);

	if (!lib) {
		fprintf(stderr, "zw_soak: %s\n", dlerror());
		exit(2);
	}
	cu_launch = (fn_launch)sym(lib, "cuLaunchKernel");
	cu_alloc = (fn_alloc)sym(lib, "cuMemAlloc_v2");
	cu_free = (fn_free)sym(lib, "cuMemFree_v2");
}

static int launch(void)
{
	return cu_launch(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Blocks until a line (or EOF) on stdin. */
static void wait_line(void)
{
	char c;

	while (read(0, &c, 1) == 1 && c != '\n')
		;
}

/* ---- steady ---------------------------------------------------------- */

#define STEADY_LIVE	4

struct pingpong {
	_Atomic uint32_t turn;		/* the futex word: whose turn, 0 or 1 */
	uint64_t rate;			/* handoffs per second */
	uint64_t handoffs;		/* by side 0, read after the join */
};

struct pp_side {
	struct pingpong *pp;
	uint32_t me;
};

static void futex_wait(_Atomic uint32_t *w, uint32_t val)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Waits for its turn, passes it on; side 0 paces the pair to the rate. */
static void *pp_run(void *arg)
{
	struct pp_side *s = arg;
	struct pingpong *pp = s->pp;
	uint64_t n = 0, t0 = fake_now_ns();

	for (;;) {
		uint32_t t;

		while ((t = atomic_load(&pp->turn)) != s->me && t != 2)
			futex_wait(&pp->turn, t);
		if (t == 2)
			break;
		if (s->me == 0) {
			n++;
			if (atomic_load(&stopping)) {
				atomic_store(&pp->turn, 2);
				futex_wake(&pp->turn);
				break;
			}
			if (n % 256 == 0) {
				uint64_t due = t0 + n * 1000000000ull / pp->rate, now = fake_now_ns();

				if (due > now)
					sleep_ns(due - now);
			}
		}
		atomic_store(&pp->turn, !s->me);
		futex_wake(&pp->turn);
	}
	if (s->me == 0)
		pp->handoffs = n;
	return NULL;
}

struct cuda_totals {
	uint64_t launches, allocs, frees, held;
	int failed;
};

/* A launch a millisecond; every 50th, the oldest of 4 allocations is replaced. */
static void *cuda_run(void *arg)
{
	struct cuda_totals *t = arg;
	CUdeviceptr live[STEADY_LIVE] = { 0 };
	size_t size[STEADY_LIVE] = { 0 };

	for (uint64_t i = 0; !atomic_load(&stopping); i++) {
		t->failed |= launch() != 0;
		t->launches++;
		if (i % 50 == 0) {
			unsigned int k = (unsigned int)(i / 50 % STEADY_LIVE);

			if (live[k]) {
				t->failed |= cu_free(live[k]) != 0;
				t->frees++;
				t->held -= size[k];
			}
			size[k] = 4096u * (1u + (unsigned int)(i / 50 % 16));
			t->failed |= cu_alloc(&live[k], size[k]) != 0;
			t->allocs++;
			t->held += size[k];
		}
		sleep_ns(1000000);
	}
	return NULL;
}

static int steady(uint64_t rate)
{
	struct pingpong pp = { .rate = rate };
	struct pp_side sides[2] = { { &pp, 0 }, { &pp, 1 } };
	struct cuda_totals ct = { 0 };
	pthread_t th[3];

	pthread_create(&th[0], NULL, pp_run, &sides[0]);
	pthread_create(&th[1], NULL, pp_run, &sides[1]);
	pthread_create(&th[2], NULL, cuda_run, &ct);
	printf("READY\n");
	fflush(stdout);
	wait_line();
	atomic_store(&stopping, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	printf("steady handoffs %llu launches %llu allocs %llu frees %llu held %llu\n",
	       (unsigned long long)pp.handoffs, (unsigned long long)ct.launches,
	       (unsigned long long)ct.allocs, (unsigned long long)ct.frees,
	       (unsigned long long)ct.held);
	return ct.failed;
}

/* ---- churn ----------------------------------------------------------- */

struct churn {
	uint64_t launches_each;
	uint64_t children, launches, allocs, reused, failed;
	pid_t last_reaped;
	int last_pid_fd;		/* /proc/sys/kernel/ns_last_pid, or -1 */
};

static void child(const struct churn *c, uint64_t i)
{
	CUdeviceptr p;
	int bad = cu_alloc(&p, 4096u * (1u + (unsigned int)(i % 7))) != 0;

	for (uint64_t k = 0; k < c->launches_each; k++)
		bad |= launch() != 0;
	sleep_ns(i % 20 * 1000000ull);
	_exit(bad);
}

/*
 * Forks with the pid of the child reaped last, as a busy node reuses pids:
 * ns_last_pid names the pid before the next one, and the lock keeps other
 * writers (CRIU does the same) out of the way.
 */
static pid_t fork_reusing(struct churn *c)
{
	char text[24];
	pid_t pid;
	int n;

	if (c->last_pid_fd < 0 || c->last_reaped <= 1)
		return fork();
	n = snprintf(text, sizeof(text), "%d", (int)c->last_reaped - 1);
	if (flock(c->last_pid_fd, LOCK_EX) != 0)
		return fork();
	if (pwrite(c->last_pid_fd, text, (size_t)n, 0) != n) {
		flock(c->last_pid_fd, LOCK_UN);
		return fork();
	}
	pid = fork();
	if (pid > 0) {
		flock(c->last_pid_fd, LOCK_UN);
		c->reused += pid == c->last_reaped;
	}
	return pid;
}

static void reap(struct churn *c, int block)
{
	int st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, block ? 0 : WNOHANG)) > 0) {
		c->last_reaped = pid;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			c->launches += c->launches_each;
			c->allocs++;
		} else {
			c->failed++;
		}
	}
}

static int churn(uint64_t rate, uint64_t launches_each)
{
	struct churn c = { .launches_each = launches_each };
	struct pollfd in = { .fd = 0, .events = POLLIN };
	uint64_t t0, period = 1000000000ull / rate;

	c.last_pid_fd = open("/proc/sys/kernel/ns_last_pid", O_RDWR | O_CLOEXEC);
	printf("READY\n");
	fflush(stdout);
	t0 = fake_now_ns();
	for (uint64_t i = 0;; i++) {
		uint64_t due = t0 + i * period, now = fake_now_ns();
		pid_t pid;

		if (poll(&in, 1, due > now ? (int)((due - now) / 1000000) : 0) > 0)
			break;
		pid = i % 2 ? fork_reusing(&c) : fork();
		if (pid == 0)
			child(&c, i);
		if (pid < 0)
			c.failed++;
		else
			c.children++;
		reap(&c, 0);
	}
	wait_line();
	reap(&c, 1);
	printf("churn children %llu launches %llu allocs %llu reused %llu failed %llu\n",
	       (unsigned long long)c.children, (unsigned long long)c.launches,
	       (unsigned long long)c.allocs, (unsigned long long)c.reused,
	       (unsigned long long)c.failed);
	return c.failed != 0;
}

static int chain(uint64_t n, uint64_t launches_each)
{
	struct churn c = { .launches_each = launches_each };

	c.last_pid_fd = open("/proc/sys/kernel/ns_last_pid", O_RDWR | O_CLOEXEC);
	printf("READY\n");
	fflush(stdout);
	wait_line();
	for (uint64_t i = 0; i < n; i++) {
		pid_t pid = fork_reusing(&c);

		if (pid == 0) {
			int bad = 0;

			for (uint64_t k = 0; k < launches_each; k++)
				bad |= launch() != 0;
			_exit(bad);
		}
		if (pid < 0) {
			c.failed++;
			continue;
		}
		c.children++;
		reap(&c, 1);
	}
	printf("chain children %llu launches %llu reused %llu failed %llu\n",
	       (unsigned long long)c.children, (unsigned long long)c.launches,
	       (unsigned long long)c.reused, (unsigned long long)c.failed);
	return c.failed != 0;
}

int main(int argc, char **argv)
{
	int bad;

	if (argc < 4 || (strcmp(argv[2], "steady") != 0 && argc < 5) ||
	    (strcmp(argv[2], "steady") != 0 && strcmp(argv[2], "churn") != 0 &&
	     strcmp(argv[2], "chain") != 0)) {
		fprintf(stderr, "usage: zw_soak LIB steady HANDOFFS_PER_S\n"
				"       zw_soak LIB churn CHILDREN_PER_S LAUNCHES\n"
				"       zw_soak LIB chain N LAUNCHES\n");
		return 2;
	}
	load_driver(argv[1]);
	if (strcmp(argv[2], "steady") == 0)
		bad = steady(strtoull(argv[3], NULL, 10) ?: 1);
	else if (strcmp(argv[2], "churn") == 0)
		bad = churn(strtoull(argv[3], NULL, 10) ?: 1, strtoull(argv[4], NULL, 10));
	else
		bad = chain(strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10));
	printf("DONE\n");
	fflush(stdout);
	wait_line();
	return bad;
}
