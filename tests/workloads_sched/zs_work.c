/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Ground-truth workloads for the wait and scheduler probes: reads and
 * io_uring waits that block for a known time, condition-variable and barrier waits of a known length,
 * a thread preempted by a CPU hog, a thread moved between CPUs, one long
 * sleep to be seen while it lasts.  Runs
 * unprivileged; prints what it did as key=value lines.
 *
 * Protocol: prints "ready pid=N", waits for SIGUSR1, works, prints its
 * results and "done", then waits for a second SIGUSR1 before exiting, so a
 * test can read the collector's segment while the process still lives.
 * With "fork" the work runs in a child; with "exec" the parent first
 * makes a futex wait (its libc is reported), then the child runs this
 * program anew ("child": no protocol of its own) with LD_LIBRARY_PATH
 * taken from ZS_EXEC_LD_LIBRARY_PATH, which can name another libc.
 */
#include <errno.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/workloads/thread_schedstat.h"

#define ZS_RECORD	64

static unsigned long n_items;
static unsigned long delay_ms;
/* step=MS: CPU work after each record or wait, as a training step would do. */
static unsigned long step_ms;

static void die(const char *what)
{
	fprintf(stderr, "zs_work: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned long ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

/*
 * A sleep of ms the way the i-th of a series sleeps, in turn: with
 * clock_nanosleep, with select() watching no descriptor (CPython 3.10's
 * time.sleep) and with poll() given none.  Each is a sleep, not input.
 */
static void nap_ms(unsigned long i, unsigned long ms)
{
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };

	if (i % 3 == 0) {
		sleep_ms(ms);
	} else if (i % 3 == 1) {
		/* Linux leaves the time not slept in tv. */
		while (select(0, NULL, NULL, NULL, &tv) < 0 && errno == EINTR)
			;
	} else if (poll(NULL, 0, (int)ms) < 0 && errno != EINTR) {
		die("poll");
	}
}

/*
 * Time the calling thread's spins held a CPU that its CPU clock did not
 * count: on a virtual machine, what the host ran on that CPU meanwhile
 * (steal time, which the kernel takes out of a thread's CPU clock).  The
 * collector times a thread on a CPU from one switch to the next, so its
 * truth is the CPU clock plus this.
 */
static __thread uint64_t spin_uncounted_ns;

/* Burns the CPU for ms milliseconds of wall time. */
static void spin_ms(unsigned long ms)
{
	unsigned long long rd0, rd1, slices;
	uint64_t w0, c0, held, counted, end;
	volatile unsigned long x = 0;

	thread_schedstat(&rd0, &slices);
	c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	w0 = now_ns(CLOCK_MONOTONIC);
	end = w0 + ms * 1000000ull;
	while (now_ns(CLOCK_MONOTONIC) < end)
		x++;
	counted = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	thread_schedstat(&rd1, &slices);
	/* Never blocked: on a CPU all along but for its run-queue waits. */
	held = now_ns(CLOCK_MONOTONIC) - w0;
	held = held > rd1 - rd0 ? held - (rd1 - rd0) : 0;
	if (held > counted)
		spin_uncounted_ns += held - counted;
}

/* Blocks until SIGUSR1 (already blocked in every thread). */
static void wait_signal(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	while (sigwait(&set, &sig) != 0 || sig != SIGUSR1)
		;
}

static void pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		die("sched_setaffinity");
}

/*
 * Each wait is timed here too, and sorted as the tests sort the collector's
 * samples: "long" waits last (10 ms, 50 ms], which is where a wait of the
 * delay lands even on a busy machine; a wait that found its record already
 * there (the waiter fell behind) is short and is not one.
 */
#define ZS_LONG_LO	10000000ull
#define ZS_LONG_HI	50000000ull
#define ZS_TALLY_KEPT	1024	/* calls that slept whose times are kept for the median */
/*
 * A wait this close to either end of the long range may land on the other
 * side for the collector, whose time leaves out this program's own timing
 * calls: such a wait is counted as long "maybe", the others "surely".
 */
#define ZS_EDGE		1000000ull

struct zs_tally {
	unsigned long waits;		/* calls that slept (voluntary switch) */
	unsigned long long_waits;	/* of those, the ones of about the delay */
	unsigned long long_surely, long_maybe;	/* the same, by ZS_EDGE inside and outside */
	uint64_t slept_ns;		/* time inside calls that slept */
	uint64_t queued_ns;		/* of that, waiting on a run queue (the kernel's count) */
	unsigned long calls_long;	/* all calls of about the delay */
	unsigned long calls_short;	/* all the other calls */
	unsigned long calls_long_surely, calls_long_maybe;
	unsigned long calls_short_surely, calls_short_maybe;	/* at most 10 ms, by ZS_EDGE */
	uint64_t kept[ZS_TALLY_KEPT];	/* the times of the first calls that slept */
};

static long thread_nvcsw(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw;
}

/*
 * A call being timed: when it began, the thread's voluntary switches and
 * run-queue wait, and the clock right before the call itself.
 */
struct zs_call {
	uint64_t t0;
	uint64_t t_in;
	long nv0;
	unsigned long long rd0;
};

/*
 * The run-queue wait is read inside the call's time at both ends: a
 * preemption while reading it then counts in the call's time and not in
 * the wait, never the other way round (which would make the truth short).
 */
static struct zs_call call_begin(void)
{
	struct zs_call c;
	unsigned long long slices;

	c.nv0 = thread_nvcsw();
	c.t0 = now_ns(CLOCK_MONOTONIC);
	thread_schedstat(&c.rd0, &slices);
	c.t_in = now_ns(CLOCK_MONOTONIC);
	return c;
}

static void tally(struct zs_tally *t, const struct zs_call *c)
{
	unsigned long long rd1, slices;
	uint64_t t_out = now_ns(CLOCK_MONOTONIC), d, call;
	int is_long, surely, maybe;

	thread_schedstat(&rd1, &slices);
	d = now_ns(CLOCK_MONOTONIC) - c->t0;
	/*
	 * Sorted by the call's own time, not the reads of /proc around it,
	 * which a busy machine can stretch by milliseconds.
	 */
	call = t_out - c->t_in;
	is_long = call > ZS_LONG_LO && call <= ZS_LONG_HI;
	surely = call > ZS_LONG_LO + ZS_EDGE && call <= ZS_LONG_HI - ZS_EDGE;
	maybe = call > ZS_LONG_LO - ZS_EDGE && call <= ZS_LONG_HI + ZS_EDGE;
	if (is_long)
		t->calls_long++;
	else
		t->calls_short++;
	t->calls_long_surely += surely;
	t->calls_long_maybe += maybe;
	t->calls_short_surely += call <= ZS_LONG_LO - ZS_EDGE;
	t->calls_short_maybe += call <= ZS_LONG_LO + ZS_EDGE;
	if (thread_nvcsw() != c->nv0) {
		t->waits++;
		t->long_waits += is_long;
		t->long_surely += surely;
		t->long_maybe += maybe;
		t->slept_ns += d;
		t->queued_ns += rd1 - c->rd0;
		if (t->waits <= ZS_TALLY_KEPT)
			t->kept[t->waits - 1] = call;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The median of the calls that slept, as the two middle times (equal for
 * an odd count): the collector's p50 of the same waits lies between them,
 * whichever rank its histogram takes, less its own error.  A busy machine
 * moves the waits away from the delay (a reader that falls behind waits
 * less), and these are what it made them.
 */
static void tally_print(const char *name, struct zs_tally *t)
{
	unsigned long n = t->waits < ZS_TALLY_KEPT ? t->waits : ZS_TALLY_KEPT;

	qsort(t->kept, n, sizeof(t->kept[0]), cmp_u64);
	printf("%s_p50_lo_ns=%llu\n", name, n ? (unsigned long long)t->kept[(n - 1) / 2] : 0ull);
	printf("%s_p50_hi_ns=%llu\n", name, n ? (unsigned long long)t->kept[n / 2] : 0ull);
	printf("%s_waits=%lu\n", name, t->waits);
	printf("%s_long=%lu\n", name, t->long_waits);
	printf("%s_long_surely=%lu\n", name, t->long_surely);
	printf("%s_long_maybe=%lu\n", name, t->long_maybe);
	printf("%s_slept_ns=%llu\n", name, (unsigned long long)t->slept_ns);
	printf("%s_queued_ns=%llu\n", name, (unsigned long long)t->queued_ns);
}

static long process_nvcsw(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw;
}

/* --- pipe: a reader whose writer delays each record -------------------- */

static struct zs_tally writer_sleeps;

static void *pipe_writer(void *arg)
{
	int fd = *(int *)arg;
	char rec[ZS_RECORD];

	memset(rec, 'r', sizeof(rec));
	for (unsigned long i = 0; i < n_items; i++) {
		struct zs_call c = call_begin();

		sleep_ms(delay_ms);
		tally(&writer_sleeps, &c);
		if (write(fd, rec, sizeof(rec)) != (ssize_t)sizeof(rec))
			die("write");
	}
	return NULL;
}

static void run_pipe(void)
{
	struct zs_tally reads = { 0 };
	long nvcsw0 = process_nvcsw();
	char rec[ZS_RECORD];
	pthread_t writer;
	int fds[2];

	if (pipe(fds) != 0)
		die("pipe");
	if (pthread_create(&writer, NULL, pipe_writer, &fds[1]) != 0)
		die("pthread_create");
	for (unsigned long i = 0; i < n_items; i++) {
		size_t got = 0;

		while (got < sizeof(rec)) {
			struct zs_call c = call_begin();
			ssize_t n = read(fds[0], rec + got, sizeof(rec) - got);

			if (n <= 0)
				die("read");
			tally(&reads, &c);
			got += (size_t)n;
		}
		spin_ms(step_ms);
	}
	pthread_join(writer, NULL);
	printf("reads=%lu\n", n_items);
	tally_print("read", &reads);
	tally_print("sleep", &writer_sleeps);
	printf("nvcsw=%ld\n", process_nvcsw() - nvcsw0);
}

/* --- futex: a condition variable signalled after a delay ---------------- */

static pthread_mutex_t cv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned long cv_posted, cv_taken;
static struct zs_tally cv_waits;

static void *cv_waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cv_lock);
	while (cv_taken < n_items) {
		while (cv_posted == cv_taken) {
			struct zs_call c = call_begin();

			pthread_cond_wait(&cv, &cv_lock);
			tally(&cv_waits, &c);
		}
		cv_taken++;
	}
	pthread_mutex_unlock(&cv_lock);
	return NULL;
}

static void run_futex(void)
{
	pthread_t waiter;

	if (pthread_create(&waiter, NULL, cv_waiter, NULL) != 0)
		die("pthread_create");
	for (unsigned long i = 0; i < n_items; i++) {
		sleep_ms(delay_ms);
		pthread_mutex_lock(&cv_lock);
		cv_posted++;
		pthread_mutex_unlock(&cv_lock);
		/* Signalled after unlocking: the waiter never waits for the mutex. */
		pthread_cond_signal(&cv);
	}
	pthread_join(waiter, NULL);
	printf("cond_signals=%lu\n", n_items);
	tally_print("cond", &cv_waits);
}

/* The same with the roles swapped: the main thread waits, a helper signals. */
static void *cv_signaller(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < n_items; i++) {
		sleep_ms(delay_ms);
		pthread_mutex_lock(&cv_lock);
		cv_posted++;
		pthread_mutex_unlock(&cv_lock);
		pthread_cond_signal(&cv);
	}
	return NULL;
}

static void run_futex_main(void)
{
	pthread_t signaller;

	cv_posted = cv_taken = 0;
	if (pthread_create(&signaller, NULL, cv_signaller, NULL) != 0)
		die("pthread_create");
	cv_waiter(NULL);
	pthread_join(signaller, NULL);
	tally_print("cond", &cv_waits);
}

/* --- barrier: two threads, one arrives delay_ms late -------------------- */

static pthread_barrier_t barrier;
static struct zs_tally barrier_late_tally;

static void barrier_wait_tallied(struct zs_tally *t)
{
	struct zs_call c = call_begin();

	pthread_barrier_wait(&barrier);
	tally(t, &c);
}

static void *barrier_late(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < n_items; i++) {
		sleep_ms(delay_ms);
		barrier_wait_tallied(&barrier_late_tally);
	}
	return NULL;
}

static void *warm_sleeper(void *arg)
{
	(void)arg;
	sleep_ms(5);
	return NULL;
}

/*
 * One futex wait (joining a thread that sleeps): a collector learns of a
 * libc it has not probed yet from a process's first wait, and gets a
 * moment to probe it.
 */
static void libc_reported(void)
{
	pthread_t warm;

	if (pthread_create(&warm, NULL, warm_sleeper, NULL) != 0)
		die("pthread_create");
	pthread_join(warm, NULL);
	sleep_ms(500);
}

static void run_barrier(void)
{
	struct zs_tally early = { 0 };
	pthread_t late;

	/* Before the barriers start. */
	libc_reported();
	if (pthread_barrier_init(&barrier, NULL, 2) != 0)
		die("pthread_barrier_init");
	if (pthread_create(&late, NULL, barrier_late, NULL) != 0)
		die("pthread_create");
	for (unsigned long i = 0; i < n_items; i++)
		barrier_wait_tallied(&early);
	pthread_join(late, NULL);
	pthread_barrier_destroy(&barrier);
	printf("barrier_calls=%lu\n", 2 * n_items);
	printf("barrier_long=%lu\n", early.calls_long + barrier_late_tally.calls_long);
	printf("barrier_short=%lu\n", early.calls_short + barrier_late_tally.calls_short);
	printf("barrier_long_surely=%lu\n",
	       early.calls_long_surely + barrier_late_tally.calls_long_surely);
	printf("barrier_long_maybe=%lu\n", early.calls_long_maybe + barrier_late_tally.calls_long_maybe);
	printf("barrier_short_surely=%lu\n",
	       early.calls_short_surely + barrier_late_tally.calls_short_surely);
	printf("barrier_short_maybe=%lu\n",
	       early.calls_short_maybe + barrier_late_tally.calls_short_maybe);
}

/* --- uring: io_uring_enter waits that time out after a known delay ---- */

static void run_uring(void)
{
	struct io_uring_params params;
	struct __kernel_timespec ts = { 0, (long long)delay_ms * 1000000LL };
	struct io_uring_getevents_arg arg = { .ts = (uint64_t)(uintptr_t)&ts };
	unsigned long waits = 0;
	int fd;

	memset(&params, 0, sizeof(params));
	fd = (int)syscall(SYS_io_uring_setup, 4, &params);
	if (fd < 0) {
		/* Disabled (kernel.io_uring_disabled) or absent: say so. */
		printf("uring_waits=-1\n");
		return;
	}
	for (unsigned long i = 0; i < n_items; i++) {
		/* Nothing was submitted: it waits for one completion, times out. */
		if (syscall(SYS_io_uring_enter, fd, 0, 1,
			    IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof(arg)) < 0 &&
		    errno == ETIME)
			waits++;
		spin_ms(step_ms);
		/* Asks for nothing: not a wait. */
		syscall(SYS_io_uring_enter, fd, 0, 0, 0, NULL, 0);
	}
	close(fd);
	printf("uring_waits=%lu\n", waits);
}

/* --- spin / hog: a pinned thread and a CPU hog on the same CPU ---------- */

/*
 * The main thread's run-queue wait as it said "ready": from there it is
 * blocked until SIGUSR1, so what it gains after is all since the test
 * began watching, the waits before the spin's own timing included (its
 * wakeup, and its move to the pinned CPU, where the hog already runs).
 */
static unsigned long long ready_run_delay, ready_slices;

static void run_spin(int cpu, int report)
{
	unsigned long long rd0, rd1, sl0, sl1;
	struct rusage ru0, ru1;
	uint64_t w0, c0, end;
	volatile unsigned long x = 0;

	pin_to(cpu);
	getrusage(RUSAGE_THREAD, &ru0);
	thread_schedstat(&rd0, &sl0);
	w0 = now_ns(CLOCK_MONOTONIC);
	c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	end = w0 + delay_ms * 1000000ull;
	while (now_ns(CLOCK_MONOTONIC) < end)
		x++;
	if (!report)
		return;
	getrusage(RUSAGE_THREAD, &ru1);
	thread_schedstat(&rd1, &sl1);
	printf("wall_ns=%llu\n", (unsigned long long)(now_ns(CLOCK_MONOTONIC) - w0));
	printf("cpu_ns=%llu\n", (unsigned long long)(now_ns(CLOCK_THREAD_CPUTIME_ID) - c0));
	printf("nivcsw=%ld\n", ru1.ru_nivcsw - ru0.ru_nivcsw);
	printf("nvcsw=%ld\n", ru1.ru_nvcsw - ru0.ru_nvcsw);
	printf("run_delay_ns=%llu\n", rd1 - rd0);
	printf("run_delay_since_ready_ns=%llu\n", rd1 - ready_run_delay);
	printf("slices=%llu\n", sl1 - sl0);
}

/* --- nap: one sleep of delay_ms, announced as it begins ----------------- */

static void run_nap(void)
{
	uint64_t t0;

	/* When the nap began by the clock the collector stamps with, before it says so. */
	t0 = now_ns(CLOCK_MONOTONIC);
	printf("nap_start_ns=%llu\n", (unsigned long long)t0);
	printf("napping\n");
	sleep_ms(delay_ms);
	printf("nap_slept_ns=%llu\n", (unsigned long long)(now_ns(CLOCK_MONOTONIC) - t0));
}

/* --- migrate: the thread's affinity flips between two CPUs -------------- */

static long kernel_migrations(void)
{
	char line[256];
	long n = -1;
	FILE *f = fopen("/proc/thread-self/sched", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "se.nr_migrations : %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

static void run_migrate(void)
{
	long m0 = kernel_migrations(), m1;
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	int cpu0 = sched_getcpu();

	if (ncpu < 2) {
		printf("flips=0\n");
		return;
	}
	for (unsigned long i = 0; i < n_items; i++) {
		uint64_t end;

		/* Always away from where it runs now: each flip is one move. */
		pin_to((cpu0 + 1 + (int)i) % 2);
		end = now_ns(CLOCK_MONOTONIC) + 1000000ull;
		while (now_ns(CLOCK_MONOTONIC) < end)
			;
	}
	m1 = kernel_migrations();
	printf("flips=%lu\n", n_items);
	printf("kernel_migrations=%ld\n", m0 < 0 || m1 < 0 ? -1 : m1 - m0);
}

/*
 * --- states: the main thread sleeps (nap_ms: three ways), reads a slow pipe, waits on a
 * condition variable, then spins pinned to CPU n_items (where a test runs
 * a hog); each phase n x delay.  Truth: its wall time, CPU time, time on
 * a CPU (the CPU time and what the host stole from its spins) and
 * run-queue wait (schedstat) over the whole work, and each wait's time.
 */
static void run_states(void)
{
	unsigned long long rd0, rd1, sl;
	struct zs_tally sleeps = { 0 };
	unsigned long n = 10;
	uint64_t w0, c0, u0 = spin_uncounted_ns;
	int cpu = (int)n_items;

	n_items = n;
	thread_schedstat(&rd0, &sl);
	w0 = now_ns(CLOCK_MONOTONIC);
	c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	for (unsigned long i = 0; i < n; i++) {
		struct zs_call c = call_begin();

		nap_ms(i, delay_ms);
		tally(&sleeps, &c);
	}
	step_ms = 2;
	run_pipe();
	run_futex_main();
	pin_to(cpu);
	spin_ms(n * delay_ms);
	thread_schedstat(&rd1, &sl);
	printf("states_wall_ns=%llu\n", (unsigned long long)(now_ns(CLOCK_MONOTONIC) - w0));
	printf("states_cpu_ns=%llu\n",
	       (unsigned long long)(now_ns(CLOCK_THREAD_CPUTIME_ID) - c0));
	printf("states_oncpu_ns=%llu\n",
	       (unsigned long long)(now_ns(CLOCK_THREAD_CPUTIME_ID) - c0 + spin_uncounted_ns - u0));
	printf("states_run_delay_ns=%llu\n", rd1 - rd0);
	tally_print("nap", &sleeps);
}

/*
 * --- rounds: n rounds, each a wait for SIGUSR1, then "back I" and
 * delay ms spinning, pinned to the last CPU; "waiting I" comes before each
 * wait, so a test knows when it may act on the next return.  Truth: its
 * wall time, CPU time and time on a CPU from the first signal to a short
 * sleep after its last spin.
 */
static void run_rounds(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t u0 = spin_uncounted_ns;

	pin_to(ncpu > 0 ? (int)ncpu - 1 : 0);
	for (unsigned long i = 0; i < n_items; i++) {
		printf("waiting %lu\n", i);
		wait_signal();
		printf("back %lu\n", i);
		spin_ms(delay_ms);
	}
	/* A switch back after the last spin, where the collector counts it. */
	sleep_ms(1);
	printf("rounds_wall_ns=%llu\n", (unsigned long long)(now_ns(CLOCK_MONOTONIC) - w0));
	printf("rounds_cpu_ns=%llu\n",
	       (unsigned long long)(now_ns(CLOCK_THREAD_CPUTIME_ID) - c0));
	printf("rounds_oncpu_ns=%llu\n",
	       (unsigned long long)(now_ns(CLOCK_THREAD_CPUTIME_ID) - c0 + spin_uncounted_ns - u0));
}

static void usage(void)
{
	fprintf(stderr,
		"usage: zs_work pipe|uring|futex|barrier|migrate|states|rounds|nap N DELAY_MS "
		"[fork|exec|child] [step=MS]\n"
		"       zs_work spin|hog CPU DURATION_MS\n");
	exit(2);
}

static unsigned long number(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > 1000000)
		usage();
	return v;
}

/* exec: the child runs this program again, its work alone, maybe on another libc. */
static void exec_child(char **argv)
{
	const char *path = getenv("ZS_EXEC_LD_LIBRARY_PATH");
	char *args[] = { argv[0], argv[1], argv[2], argv[3], "child", NULL };

	if (path)
		setenv("LD_LIBRARY_PATH", path, 1);
	execv("/proc/self/exe", args);
	die("execv");
}

int main(int argc, char **argv)
{
	const char *mode;
	int do_fork = 0, do_exec = 0, child = 0;
	pid_t worker;
	sigset_t set;

	if (argc < 4)
		usage();
	mode = argv[1];
	n_items = number(argv[2]);
	delay_ms = number(argv[3]);
	for (int i = 4; i < argc; i++) {
		if (strcmp(argv[i], "fork") == 0)
			do_fork = 1;
		else if (strcmp(argv[i], "exec") == 0)
			do_fork = do_exec = 1;
		else if (strcmp(argv[i], "child") == 0)
			child = 1;
		else if (strncmp(argv[i], "step=", 5) == 0)
			step_ms = number(argv[i] + 5);
		else
			usage();
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* A test that dies does not leave its workloads spinning. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (!child) {
		thread_schedstat(&ready_run_delay, &ready_slices);
		printf("ready pid=%d\n", (int)getpid());
		wait_signal();
	}
	if (do_exec)
		libc_reported();

	/* fork: the work runs in a child born after watching began. */
	worker = do_fork ? fork() : 0;
	if (worker < 0)
		die("fork");
	if (worker == 0)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (worker == 0 && do_exec)
		exec_child(argv);
	if (worker > 0) {
		int st;

		printf("child=%d\n", (int)worker);
		if (waitpid(worker, &st, 0) < 0)
			die("waitpid");
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	if (strcmp(mode, "pipe") == 0)
		run_pipe();
	else if (strcmp(mode, "uring") == 0)
		run_uring();
	else if (strcmp(mode, "futex") == 0)
		run_futex();
	else if (strcmp(mode, "barrier") == 0)
		run_barrier();
	else if (strcmp(mode, "spin") == 0)
		run_spin((int)n_items, 1);
	else if (strcmp(mode, "hog") == 0)
		run_spin((int)n_items, 0);
	else if (strcmp(mode, "migrate") == 0)
		run_migrate();
	else if (strcmp(mode, "states") == 0)
		run_states();
	else if (strcmp(mode, "rounds") == 0)
		run_rounds();
	else if (strcmp(mode, "nap") == 0)
		run_nap();
	else
		usage();
	printf("worker=%d\n", (int)getpid());
	/* From here it waits for the second signal: a state the collector sees open. */
	printf("done_mono_ns=%llu\n", (unsigned long long)now_ns(CLOCK_MONOTONIC));
	printf("done\n");
	wait_signal();
	return 0;
}
