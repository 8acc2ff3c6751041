/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Scheduler stalls against the kernel's own accounting: a thread pinned to
 * a CPU with an unwatched CPU hog on the same CPU (involuntary switches,
 * preempted off-CPU time, run-queue delay), threads that block (blocked
 * off-CPU time), and a thread whose affinity flips between CPUs
 * (migrations).  The workload reads its truth from getrusage(RUSAGE_THREAD)
 * and /proc/thread-self/{schedstat,sched}.  Root (BPF).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/testutil.h"
#include "tests/collector/tu_waits.h"

#define SC_SPIN_MS	1000

static int sc_last_cpu(char *buf, size_t len)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	snprintf(buf, len, "%d", n > 0 ? (int)(n - 1) & 0xffff : 0);
	return n >= 1;
}

/* |a - b| <= rel * b + abs_ns */
static void sc_assert_near(const char *what, uint64_t got, uint64_t want, double rel,
			   uint64_t abs_ns)
{
	double lo = (double)want * (1.0 - rel) - (double)abs_ns;
	double hi = (double)want * (1.0 + rel) + (double)abs_ns;

	ck_assert_msg((double)got >= lo && (double)got <= hi,
		      "%s: got %llu, want %llu (within %.0f%% + %llu)", what,
		      (unsigned long long)got, (unsigned long long)want, rel * 100,
		      (unsigned long long)abs_ns);
}

/*
 * Each wait counts into the bucket whose bounds hold it, so the sum lies
 * between the buckets' lower and upper bounds summed: the buckets and the
 * sum agree in unit and in count, whatever the waits were.
 */
static void sc_assert_buckets_hold_sum(const struct shm_latency *l)
{
	static const uint64_t le[SHM_LAT_FINITE_BUCKETS] = SHM_LAT_BOUNDS_NS_INIT;
	uint64_t lo = 0, hi = 0, n = 0;
	size_t i;

	for (i = 0; i < SHM_LAT_BUCKETS; i++) {
		n += l->bucket[i];
		lo += l->bucket[i] * (i ? le[i - 1] : 0);
		if (i < SHM_LAT_FINITE_BUCKETS)
			hi += l->bucket[i] * le[i];
	}
	if (l->bucket[SHM_LAT_FINITE_BUCKETS])
		hi = UINT64_MAX;	/* +Inf has no upper bound */
	ck_assert_uint_eq(n, l->count);
	ck_assert_msg(l->sum_ns >= lo && l->sum_ns <= hi,
		      "sum %llu ns outside its buckets' bounds [%llu, %llu]",
		      (unsigned long long)l->sum_ns, (unsigned long long)lo,
		      (unsigned long long)hi);
}

START_TEST(sched_preempted_by_hog_matches_kernel_accounting)
{
	char cpu[16], ms[16], hog_ms[16];
	struct tp_collector c;
	struct tw_work spin, hog;
	const struct shm_proc *p;
	const struct shm_latency *rq;
	long long nivcsw, wall, cpu_ns, run_delay;

	if (tu_skip_unless_root("sched_preempted_by_hog_matches_kernel_accounting"))
		return;
	sc_last_cpu(cpu, sizeof(cpu));
	snprintf(ms, sizeof(ms), "%d", SC_SPIN_MS);
	snprintf(hog_ms, sizeof(hog_ms), "%d", SC_SPIN_MS + 1000);
	{
		const char *spin_args[] = { "spin", cpu, ms, NULL };
		const char *hog_args[] = { "hog", cpu, hog_ms, NULL };

		ck_assert_int_eq(tw_start(&spin, spin_args), 0);
		ck_assert_int_eq(tw_start(&hog, hog_args), 0);
	}
	ck_assert_msg(tw_collector_watch_pid(&c, spin.pid) == 0,
		      "collector did not start; see %s", c.log);
	tw_go(&hog);
	tu_sleep_ms(50);
	tw_go(&spin);
	ck_assert_int_eq(tw_wait_line(&spin, "done", 10000), 0);
	ck_assert_int_eq(tw_settle(&c), 0);

	nivcsw = tw_value(&spin, "nivcsw");
	wall = tw_value(&spin, "wall_ns");
	cpu_ns = tw_value(&spin, "cpu_ns");
	/*
	 * The collector's run-queue waits are every one since it watched the
	 * spinner, the one after its pinning's move included (a blocked call,
	 * then a wait behind the hog, before the spin's own timing starts):
	 * so is the kernel's count since the spinner said "ready".
	 */
	run_delay = tw_value(&spin, "run_delay_since_ready_ns");
	/* The hog really competed: the spinner lost a good part of its second. */
	ck_assert_int_ge(nivcsw, 20);
	ck_assert_int_ge(wall - cpu_ns, wall / 5);

	p = tp_proc(&c, (uint32_t)spin.pid);
	ck_assert_ptr_nonnull(p);
	/*
	 * Tolerances: the thread counts from its first getrusage after the
	 * signal, the collector from the wakeup (and its pinning) on, so the
	 * windows differ by a few switches: 3% + 2 below, 5% + 3 above (over
	 * a whole process life they agree within 1-2, the switches before
	 * exec).  Times agree within 10% + 10 ms.
	 */
	ck_assert_msg(p->involuntary_switches + 2 + (uint64_t)nivcsw * 3 / 100 >= (uint64_t)nivcsw &&
		      p->involuntary_switches <= (uint64_t)nivcsw + 3 + (uint64_t)nivcsw / 20,
		      "involuntary switches: collector %llu, kernel %lld (events dropped %llu)",
		      (unsigned long long)p->involuntary_switches, nivcsw,
		      (unsigned long long)c.snap.hdr->stats.events_dropped);
	sc_assert_near("preempted off-CPU ns", p->offcpu_preempted_ns,
		       (uint64_t)(wall - cpu_ns), 0.10, 10 * TW_MS);
	rq = &p->lat[SHM_FAMILY_RUNQ_DELAY];
	ck_assert_uint_ge(rq->count + 2 + (uint64_t)nivcsw * 3 / 100, (uint64_t)nivcsw);
	if (run_delay > 0)
		sc_assert_near("run-queue delay sum ns", rq->sum_ns, (uint64_t)run_delay,
			       0.10, 10 * TW_MS);
	fprintf(stderr, "spinner behind the hog: %llu run-queue waits, p50 %llu ns, longest %llu ns\n",
		(unsigned long long)rq->count, (unsigned long long)rq->window_p50_ns,
		(unsigned long long)rq->window_max_ns);
	sc_assert_buckets_hold_sum(rq);
	/*
	 * A scheduler slice is most of a millisecond or more, so some wait
	 * behind the hog was too.  Not the median: on a busy machine other short tasks
	 * preempt the spinner as well, and their waits are microseconds.
	 */
	ck_assert_msg(rq->window_max_ns >= 500000 && rq->window_max_ns <= 1000 * TW_MS,
		      "longest run-queue wait %llu ns (p50 %llu, %llu waits)",
		      (unsigned long long)rq->window_max_ns,
		      (unsigned long long)rq->window_p50_ns, (unsigned long long)rq->count);
	/* The hog was never watched. */
	ck_assert_ptr_null(tp_proc(&c, (uint32_t)hog.pid));

	tw_finish(&spin);
	tw_finish(&hog);
	tp_collector_stop(&c);
}
END_TEST

/*
 * Runs workload args to its end under a collector watching it, started
 * with the flags in more (NULL-terminated; NULL: none); its row.
 */
static const struct shm_proc *run_watched_with(struct tp_collector *c, struct tw_work *w,
					       const char *const *args, const char *const *more)
{
	const struct shm_proc *p;
	char pid[16];

	ck_assert_int_eq(tw_start(w, args), 0);
	snprintf(pid, sizeof(pid), "%d", (int)w->pid);
	ck_assert_msg(tw_collector_watch_extra(c, pid, more, w->pid) == 0,
		      "collector did not start; see %s", c->log);
	tw_go(w);
	ck_assert_int_eq(tw_wait_line(w, "done", 10000), 0);
	ck_assert_int_eq(tw_settle(c), 0);
	p = tp_proc(c, (uint32_t)w->pid);
	ck_assert_ptr_nonnull(p);
	return p;
}

static const struct shm_proc *run_watched(struct tp_collector *c, struct tw_work *w,
					  const char *const *args)
{
	return run_watched_with(c, w, args, NULL);
}

/*
 * The reader blocks in read and the writer in nanosleep, 20 x 15 ms each;
 * the workload counts its voluntary switches (getrusage) and times the
 * calls that slept.  more: the collector's flags.
 */
static void check_blocked_time(const char *const *more)
{
	static const char *const args[] = { "pipe", "20", "15", NULL };
	struct tp_collector c;
	struct tw_work w;
	const struct shm_proc *p;
	long long nvcsw, slept;

	p = run_watched_with(&c, &w, args, more);
	/*
	 * The collector misses the writer's final switch (it never runs
	 * again) and may see the odd switch the workload's window does not:
	 * 3 either way.  Blocked time within 10% + 20 ms (the calls' own CPU
	 * time, thread start and exit).
	 */
	nvcsw = tw_value(&w, "nvcsw");
	slept = tw_value(&w, "read_slept_ns") + tw_value(&w, "sleep_slept_ns");
	ck_assert_int_ge(nvcsw, 20);
	ck_assert_msg(p->voluntary_switches + 3 >= (uint64_t)nvcsw &&
		      p->voluntary_switches <= (uint64_t)nvcsw + 3,
		      "voluntary switches: collector %llu, kernel %lld",
		      (unsigned long long)p->voluntary_switches, nvcsw);
	sc_assert_near("blocked off-CPU ns", p->offcpu_blocked_ns, (uint64_t)slept, 0.10,
		       20 * TW_MS);
	/* Every block ended in a wakeup: each has its run-queue delay. */
	ck_assert_uint_ge(p->lat[SHM_FAMILY_RUNQ_DELAY].count + 3, (uint64_t)nvcsw);
	tw_finish(&w);
	tp_collector_stop(&c);
}

/* Added up in the process's in-kernel slot. */
START_TEST(sched_blocked_time_matches_sleeps)
{
	if (tu_skip_unless_root("sched_blocked_time_matches_sleeps"))
		return;
	check_blocked_time(NULL);
}
END_TEST

/* With no slot to add to, a record per switch: the same figures. */
START_TEST(sched_blocked_time_matches_sleeps_without_slots)
{
	static const char *const no_slots[] = { "--process-slots", "0", NULL };

	if (tu_skip_unless_root("sched_blocked_time_matches_sleeps_without_slots"))
		return;
	check_blocked_time(no_slots);
}
END_TEST

START_TEST(sched_migrations_match_affinity_flips)
{
	static const char *const args[] = { "migrate", "20", "0", NULL };
	struct tp_collector c;
	struct tw_work w;
	const struct shm_proc *p;
	long long flips, kernel;

	if (tu_skip_unless_root("sched_migrations_match_affinity_flips"))
		return;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "SKIP sched_migrations_match_affinity_flips: one CPU\n");
		return;
	}
	p = run_watched(&c, &w, args);
	flips = tw_value(&w, "flips");
	kernel = tw_value(&w, "kernel_migrations");
	ck_assert_int_eq(flips, 20);
	ck_assert_uint_ge(p->migrations, 20);
	if (kernel >= 0) {
		/* The wakeup that started the work may add one or two moves. */
		ck_assert_uint_ge(p->migrations, (uint64_t)kernel);
		ck_assert_uint_le(p->migrations, (uint64_t)kernel + 3);
	}
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

Suite *probes_sched_suite(void);
Suite *probes_sched_suite(void)
{
	Suite *s = suite_create("probes_sched");
	TCase *tc = tcase_create("sched");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sched_preempted_by_hog_matches_kernel_accounting);
	tcase_add_test(tc, sched_blocked_time_matches_sleeps);
	tcase_add_test(tc, sched_blocked_time_matches_sleeps_without_slots);
	tcase_add_test(tc, sched_migrations_match_affinity_flips);
	suite_add_tcase(s, tc);
	return s;
}
