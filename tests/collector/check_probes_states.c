/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where a training thread's time goes (zernel_thread_state_seconds_total)
 * against ground truth: a main thread that sleeps, reads a slow pipe,
 * waits on a condition variable and spins pinned beside an unwatched CPU
 * hog, timing each wait itself and reading its CPU time and run-queue wait
 * from the kernel (CLOCK_THREAD_CPUTIME_ID, schedstat); and CUDA
 * synchronisations of a known length in the fake driver, after NCCL calls
 * or not; and returns to a CPU that no sched_switch shows.  The states
 * must add up to the thread's wall time.  Root (BPF).
 */
#include <bpf/bpf.h>
#include <check.h>
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bpf/probe_abi.h"

#include "common/util.h"
#include "tests/support/testutil.h"
#include "tests/collector/tu_waits.h"

static uint64_t st_sum(const struct shm_proc *p)
{
	uint64_t s = 0;

	for (unsigned int i = 0; i < SHM_STATE_COUNT; i++)
		s += p->thread_state_ns[i];
	return s;
}

static void st_print(const struct shm_proc *p)
{
	static const char *const names[SHM_STATE_COUNT] = {
		"oncpu", "runq", "input", "gpu", "collective", "lock", "sleep", "other",
	};

	for (unsigned int i = 0; i < SHM_STATE_COUNT; i++)
		fprintf(stderr, "  %-10s %10.3f ms\n", names[i], p->thread_state_ns[i] / 1e6);
}

/* lo_rel * want - slack <= got <= hi_rel * want + slack */
static void st_assert_in(const char *what, uint64_t got, long long want, double lo_rel,
			 double hi_rel, uint64_t slack_ns)
{
	double lo = (double)want * lo_rel - (double)slack_ns;
	double hi = (double)want * hi_rel + (double)slack_ns;

	ck_assert_msg(want >= 0, "%s: the workload did not say", what);
	/* Printed as it passes too: a log shows how near the bound each run came. */
	fprintf(stderr, "  %s: %.3f ms against %.3f ms, in [%.3f, %.3f]\n", what, got / 1e6,
		want / 1e6, lo / 1e6, hi / 1e6);
	ck_assert_msg((double)got >= lo && (double)got <= hi,
		      "%s: got %.3f ms, want %.3f ms (in [%.3f, %.3f])", what, got / 1e6,
		      want / 1e6, lo / 1e6, hi / 1e6);
}

/* Once the workload says "done", the collector's row of it, printed. */
static const struct shm_proc *st_done_proc(struct tp_collector *c, struct tw_work *w)
{
	const struct shm_proc *p;

	ck_assert_int_eq(tw_wait_line(w, "done", 20000), 0);
	ck_assert_int_eq(tw_settle(c), 0);
	p = tp_proc(c, (uint32_t)w->pid);
	ck_assert_ptr_nonnull(p);
	st_print(p);
	return p;
}

/*
 * How long the workload has waited for its second signal, after "done",
 * as the collector last read its states: that wait is open, and counted.
 */
static uint64_t st_waited_after_done(const struct tp_collector *c, const struct tw_work *w)
{
	long long done = tw_value(w, "done_mono_ns");

	ck_assert_msg(done > 0, "the workload did not say when it was done");
	return c->snap.hdr->heartbeat_mono_ns > (uint64_t)done ?
	       c->snap.hdr->heartbeat_mono_ns - (uint64_t)done : 0;
}

/*
 * A zw_cuda workload that printed WAIT goes on once the collector watches
 * it (found mapping the libraries it loaded): a call begun before would
 * be missed in part.
 */
static void st_go_once_watched(struct tp_collector *c, struct tp_workload *w)
{
	ck_assert_int_eq(tp_workload_expect(w, "WAIT", 30000), 0);
	for (int i = 0; i < 300 && !(tp_snapshot(c) == 0 && tp_proc(c, (uint32_t)w->pid)); i++)
		tu_sleep_ms(100);
	ck_assert_msg(tp_proc(c, (uint32_t)w->pid) != NULL, "workload not watched; see %s", c->log);
	tp_workload_go(w);
}

/* What the workload's calls of kind what spent blocked: their time less their run-queue waits. */
static long long st_blocked(const struct tw_work *w, const char *what)
{
	char slept[48], queued[48];
	long long s, q;

	snprintf(slept, sizeof(slept), "%s_slept_ns", what);
	snprintf(queued, sizeof(queued), "%s_queued_ns", what);
	s = tw_value(w, slept);
	q = tw_value(w, queued);
	return s < 0 || q < 0 ? -1 : s - q;
}

/* The collector started with the flags in more (NULL-terminated; NULL: none). */
static void check_states_of_a_thread(const char *const *more)
{
	char cpu[16], pid[16];
	struct tp_collector c;
	struct tw_work w, hog;
	const struct shm_proc *p;
	long long wall;
	uint64_t after;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	snprintf(cpu, sizeof(cpu), "%d", n > 0 ? (int)(n - 1) : 0);
	{
		const char *args[] = { "states", cpu, "20", NULL };
		const char *hog_args[] = { "hog", cpu, "3000", NULL };

		ck_assert_int_eq(tw_start(&w, args), 0);
		ck_assert_int_eq(tw_start(&hog, hog_args), 0);
	}
	snprintf(pid, sizeof(pid), "%d", (int)w.pid);
	ck_assert_msg(tw_collector_watch_extra(&c, pid, more, w.pid) == 0,
		      "collector did not start; see %s", c.log);
	tw_go(&hog);
	tw_go(&w);
	p = st_done_proc(&c, &w);

	/*
	 * Only the main thread counts (no CUDA here): its writer and
	 * signaller threads do not.  The collector knows it from its wakeup
	 * by the signal to its last time back on a CPU; the workload times
	 * from the end of its signal wait to its last result, so the two
	 * windows differ by the run-queue wait before the first and the CPU
	 * time after the last: 2% + 5 ms.
	 */
	wall = tw_value(&w, "states_wall_ns");
	after = st_waited_after_done(&c, &w);
	st_assert_in("sum of the states vs wall time", st_sum(p) - after, wall, 0.98, 1.02,
		     5 * TW_MS);
	/*
	 * Each block against the calls that slept: the collector's block
	 * ends at the wakeup, the call's at its return, so it is the call's
	 * time less the run-queue waits in it, which the kernel counted for
	 * the workload (schedstat around each call), less a little time on
	 * the CPU in the call.  The kernel stamps a run-queue wait at other
	 * points of a wakeup than the collector does, by its run queue's
	 * clock: under load the two were seen 2.3% apart, so 5% each way.
	 */
	st_assert_in("sleep", p->thread_state_ns[SHM_STATE_SLEEP], st_blocked(&w, "nap"),
		     0.95, 1.05, 3 * TW_MS);
	st_assert_in("input", p->thread_state_ns[SHM_STATE_INPUT], st_blocked(&w, "read"),
		     0.95, 1.05, 3 * TW_MS);
	/* Plus joining the two helper threads. */
	st_assert_in("lock", p->thread_state_ns[SHM_STATE_LOCK], st_blocked(&w, "cond"),
		     0.95, 1.05, 15 * TW_MS);
	/*
	 * The kernel's own accounting, over the work; the collector's window
	 * also holds the results' printing, still pinned beside the hog: a
	 * slice (4 ms) or three on the CPU and as many waiting for it.
	 */
	st_assert_in("runq", p->thread_state_ns[SHM_STATE_RUNQ],
		     tw_value(&w, "states_run_delay_ns"), 0.9, 1.1, 15 * TW_MS);
	ck_assert_uint_ge(p->thread_state_ns[SHM_STATE_RUNQ], 50 * TW_MS);
	/* Time on a CPU, not the CPU clock, which leaves out what the host stole. */
	st_assert_in("oncpu", p->thread_state_ns[SHM_STATE_ONCPU], tw_value(&w, "states_oncpu_ns"),
		     0.9, 1.1, 15 * TW_MS);
	ck_assert_uint_eq(p->thread_state_ns[SHM_STATE_GPU], 0);
	ck_assert_uint_eq(p->thread_state_ns[SHM_STATE_COLLECTIVE], 0);
	/* The wait for the second signal is neither a read, a sleep nor a futex. */
	ck_assert_uint_le(p->thread_state_ns[SHM_STATE_OTHER],
			  after + 5 * TW_MS + (uint64_t)wall / 50);

	tw_finish(&w);
	tw_finish(&hog);
	tp_collector_stop(&c);
}

/* Run-queue waits after a wakeup from the kernel's sched_info, where it keeps one. */
START_TEST(states_of_a_thread_sum_to_its_wall_time_and_match_each_wait)
{
	if (tu_skip_unless_root("states_of_a_thread_sum_to_its_wall_time_and_match_each_wait"))
		return;
	check_states_of_a_thread(NULL);
}
END_TEST

/* The same, timed from programs on sched_wakeup. */
START_TEST(states_match_each_wait_with_wakeups_timed_at_sched_wakeup)
{
	static const char *const wakeup[] = { "--runq-source", "wakeup", NULL };

	if (tu_skip_unless_root("states_match_each_wait_with_wakeups_timed_at_sched_wakeup"))
		return;
	check_states_of_a_thread(wakeup);
}
END_TEST

#define ST_SYNC_NS	20000000ull
#define ST_SYNC_NS_TEXT	"20000000"
#define ST_SYNCS	5

/*
 * cudaStreamSynchronize through the fake libcudart and libcuda, each
 * blocking ST_SYNC_NS: after an NCCL call it completes a collective
 * (collective), alone it waits for the GPU (gpu).  The fake driver sleeps
 * in nanosleep, which counts as the CUDA call, not as sleep.
 */
/*
 * A state is seen while it lasts: two seconds into a 4 s sleep, the
 * published sleep holds those seconds (less one publish interval), and
 * the states never add up to more than the time since the thread was
 * first seen.  Once it ends, the sleep counts its whole length, once.
 */
START_TEST(states_are_seen_while_they_last)
{
	struct tp_collector c;
	struct tw_work w;
	const struct shm_proc *p;
	char pid[16];
	uint64_t t_nap, shown, elapsed;

	if (tu_skip_unless_root("states_are_seen_while_they_last"))
		return;
	{
		const char *args[] = { "nap", "1", "4000", NULL };

		ck_assert_int_eq(tw_start(&w, args), 0);
	}
	snprintf(pid, sizeof(pid), "%d", (int)w.pid);
	ck_assert_msg(tw_collector_watch_extra(&c, pid, NULL, w.pid) == 0,
		      "collector did not start; see %s", c.log);
	tw_go(&w);
	ck_assert_int_eq(tw_wait_line(&w, "napping", 10000), 0);
	/* The workload's own stamp: the test may see its line late on a busy machine. */
	t_nap = (uint64_t)tw_value(&w, "nap_start_ns");
	ck_assert_uint_gt(t_nap, 0);
	tu_sleep_ms(2000);
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	elapsed = c.snap.hdr->heartbeat_mono_ns - t_nap;
	p = tp_proc(&c, (uint32_t)w.pid);
	ck_assert_ptr_nonnull(p);
	st_print(p);
	shown = p->thread_state_ns[SHM_STATE_SLEEP];
	/* Open since the nap began, up to this publish (its states are read just before). */
	ck_assert_msg(shown + 50 * TW_MS >= elapsed - 300 * TW_MS && shown <= elapsed + 50 * TW_MS,
		      "%.3f s of sleep shown %.3f s into it", shown / 1e9, elapsed / 1e9);
	ck_assert_uint_le(st_sum(p), elapsed + 200 * TW_MS);

	p = st_done_proc(&c, &w);
	st_assert_in("sleep, once ended", p->thread_state_ns[SHM_STATE_SLEEP],
		     tw_value(&w, "nap_slept_ns"), 0.98, 1.0, 3 * TW_MS);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * Runs zw_cuda over the fake runtime and NCCL (each NCCL call 0.1 ms) with
 * ops after "dev:0 wait", each of whose 2 * ST_SYNCS synchronisations
 * blocks ST_SYNC_NS, and returns its process row once the collector has
 * published after it; *p99: the workload's own p99 of its syncs, over
 * ST_SYNC_NS (what bounds each state from above).
 */
static const struct shm_proc *st_run_syncs(struct tp_collector *c, struct tp_workload *w,
					   char *const *ops, double *p99_ratio)
{
	static char zw[512], rt[512], nc[512], lib_rt[600], lib_nccl[600];
	char *argv[8 + 4 * ST_SYNCS];
	uint64_t count, p50, p99;
	const struct shm_proc *p;
	size_t n = 0;

	ck_assert_msg(tp_collector_start_fakes(c) == 0, "collector did not start, see %s", c->log);
	snprintf(lib_rt, sizeof(lib_rt), "lib:%s", tp_fake(rt, sizeof(rt), "libcudart.so"));
	snprintf(lib_nccl, sizeof(lib_nccl), "lib:%s", tp_fake(nc, sizeof(nc), "libnccl.so.2"));
	setenv("FAKE_NCCL_NS", "100000", 1);
	argv[n++] = (char *)tp_zw_cuda(zw, sizeof(zw));
	argv[n++] = lib_rt;
	argv[n++] = lib_nccl;
	argv[n++] = "dev:0";
	argv[n++] = "wait";
	for (; *ops && n < sizeof(argv) / sizeof(argv[0]) - 1; ops++)
		argv[n++] = *ops;
	argv[n] = NULL;
	ck_assert_int_eq(tp_workload_start(w, argv), 0);
	unsetenv("FAKE_NCCL_NS");
	st_go_once_watched(c, w);
	ck_assert_int_eq(tp_workload_series(w, "sync", &count, &p50, &p99, 30000), 0);
	ck_assert_int_eq(tp_workload_expect(w, "DONE", 30000), 0);
	ck_assert_uint_eq(count, 2 * ST_SYNCS);
	ck_assert_int_eq(tp_wait_publish(c), 0);
	ck_assert_int_eq(tp_wait_publish(c), 0);
	p = tp_proc(c, (uint32_t)w->pid);
	ck_assert_ptr_nonnull(p);
	st_print(p);
	*p99_ratio = (double)p99 / ST_SYNC_NS;
	return p;
}

/*
 * Half the syncs completed collectives, half did not: each half's time in
 * its state, bounded by the workload's own p99 from above.
 */
static void st_assert_half_collective(const struct shm_proc *p, double p99)
{
	const uint64_t want = ST_SYNCS * ST_SYNC_NS;

	st_assert_in("gpu", p->thread_state_ns[SHM_STATE_GPU], (long long)want, 0.95, p99,
		     2 * TW_MS);
	st_assert_in("collective", p->thread_state_ns[SHM_STATE_COLLECTIVE], (long long)want,
		     0.95, p99, 2 * TW_MS);
}

START_TEST(states_gpu_and_collective_from_synchronisations)
{
	char sync[32], *ops[3 * ST_SYNCS + 1];
	struct tp_collector c;
	struct tp_workload w;
	const struct shm_proc *p;
	double p99;
	size_t n = 0;

	if (tu_skip_unless_root("states_gpu_and_collective_from_synchronisations"))
		return;
	snprintf(sync, sizeof(sync), "sync:%llu", ST_SYNC_NS);
	/* One of each collective whose blocking counts as the collective state. */
	for (int i = 0; i < ST_SYNCS; i++) {
		static const char *const calls[] = {
			"nccl:allreduce:1000:7:1", "nccl:bcast:1000:7:1", "nccl:alltoall:1000:7:1",
			"nccl:gather:1000:7:1", "nccl:scatter:1000:7:1",
		};

		ops[n++] = (char *)calls[i % (int)(sizeof(calls) / sizeof(calls[0]))];
		ops[n++] = sync;
	}
	for (int i = 0; i < ST_SYNCS; i++)
		ops[n++] = sync;
	ops[n] = NULL;
	p = st_run_syncs(&c, &w, ops, &p99);
	st_assert_half_collective(p, p99);
	ck_assert_uint_le(p->thread_state_ns[SHM_STATE_SLEEP], 2 * TW_MS);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * DDP: autograd's thread queues the all-reduce on NCCL's stream and records
 * an event after it; the main thread waits for that event.  Its wait
 * completes a collective another thread queued, which the stream tracking
 * knows: it counts as collective.  The same waits once nothing is
 * outstanding count as gpu.  (The event handle is the fake's delay, ns.)
 */
START_TEST(states_collective_from_a_wait_on_another_threads_collectives)
{
	char evsync[32], *ops[3 * ST_SYNCS + 1];
	struct tp_collector c;
	struct tp_workload w;
	const struct shm_proc *p;
	double p99;
	size_t n = 0;

	if (tu_skip_unless_root("states_collective_from_a_wait_on_another_threads_collectives"))
		return;
	snprintf(evsync, sizeof(evsync), "evsync:%llu", ST_SYNC_NS);
	for (int i = 0; i < ST_SYNCS; i++) {
		ops[n++] = "onthread:stream:7+nccl:allreduce:1000:7:1+record:" ST_SYNC_NS_TEXT;
		ops[n++] = evsync;
	}
	for (int i = 0; i < ST_SYNCS; i++)
		ops[n++] = evsync;
	ops[n] = NULL;
	p = st_run_syncs(&c, &w, ops, &p99);
	/* The helper's own NCCL calls add their 0.1 ms each to the collective state. */
	st_assert_half_collective(p, p99);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * In a CUDA process the training threads are those that launch: here a
 * thread that launches and then sleeps ST_HELPER_SLEEP_MS, while the main
 * thread, which makes no CUDA call, waits to join it and then sleeps too,
 * as a helper idling in futex or poll would.  Only the launching thread's
 * sleep counts, and none of the main thread's waits; with --all-threads
 * (the second round) both threads' do.  The third round launches
 * cooperative kernels only, which mark a training thread as other
 * launches do.  The truth is each wait as the workload timed it, less the
 * run-queue wait the kernel counted in it (time that is runq, not sleep).
 */
#define ST_HELPER_SLEEP_MS	800
#define ST_MAIN_SLEEP_MS	500

/* The workload's "SLEPT <ms> <ns>" of its sleep of ms, and its "JOINED <ns>". */
static uint64_t st_workload_wait(const char *out, const char *fmt, unsigned long long ms)
{
	for (const char *line = out, *end; *line; line = end ? end + 1 : "") {
		unsigned long long a = 0, ns = 0;

		end = strchr(line, '\n');

		if (!strcmp(fmt, "JOINED") && sscanf(line, "JOINED %llu", &ns) == 1)
			return ns;
		if (!strcmp(fmt, "SLEPT") && sscanf(line, "SLEPT %llu %llu", &a, &ns) == 2 &&
		    a == ms)
			return ns;
	}
	ck_abort_msg("the workload printed no %s line for %llu ms:\n%s", fmt, ms, out);
	return 0;
}

START_TEST(states_count_the_launching_thread_not_an_idle_main_thread)
{
	char zw[512], rt[512], lib_rt[600], bufs[3][512], thread_ops[128], main_sleep[32];
	char out[4096];
	uint64_t helper_slept, main_slept, joined;
	const char *extra[] = {
		"--lib", tp_fake(bufs[0], sizeof(bufs[0]), "libcudart.so"),
		"--lib", tp_fake(bufs[1], sizeof(bufs[1]), "libcuda.so.1"),
		"--lib", tp_fake(bufs[2], sizeof(bufs[2]), "libnccl.so.2"),
		_i == 1 ? "--all-threads" : NULL, NULL,
	};
	char *argv[8];
	struct tp_collector c;
	struct tp_workload w;
	const struct shm_proc *p;
	const uint64_t ms = 1000000ull;

	if (tu_skip_unless_root("states_count_the_launching_thread_not_an_idle_main_thread"))
		return;
	ck_assert_msg(tp_collector_start(&c, extra, 3) == 0, "collector did not start, see %s",
		      c.log);
	snprintf(lib_rt, sizeof(lib_rt), "lib:%s", tp_fake(rt, sizeof(rt), "libcudart.so"));
	snprintf(thread_ops, sizeof(thread_ops), "onthread:%s:50:1000+sleep:%d",
		 _i == 2 ? "cooplaunch" : "dev:0+launch", ST_HELPER_SLEEP_MS);
	snprintf(main_sleep, sizeof(main_sleep), "sleep:%d", ST_MAIN_SLEEP_MS);
	argv[0] = (char *)tp_zw_cuda(zw, sizeof(zw));
	argv[1] = lib_rt;
	argv[2] = "wait";
	argv[3] = thread_ops;
	argv[4] = main_sleep;
	argv[5] = NULL;
	ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	st_go_once_watched(&c, &w);
	ck_assert_int_eq(tp_workload_collect(&w, "DONE", out, sizeof(out), 30000), 0);
	helper_slept = st_workload_wait(out, "SLEPT", ST_HELPER_SLEEP_MS);
	main_slept = st_workload_wait(out, "SLEPT", ST_MAIN_SLEEP_MS);
	joined = st_workload_wait(out, "JOINED", 0);
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	p = tp_proc(&c, (uint32_t)w.pid);
	ck_assert_ptr_nonnull(p);
	st_print(p);
	printf("workload: helper slept %.3f s, main slept %.3f s, joined %.3f s\n",
	       helper_slept / 1e9, main_slept / 1e9, joined / 1e9);
	if (_i != 1) {
		st_assert_in("sleep, the launching thread's", p->thread_state_ns[SHM_STATE_SLEEP],
			     (long long)helper_slept, 0.95, 1.0, 20 * ms);
		/*
		 * Nor the main thread's join (futex).  (Its wait for "go" on
		 * stdin counts as input: the process had made no CUDA call yet,
		 * and then its main thread is the training thread.)
		 */
		ck_assert_uint_le(p->thread_state_ns[SHM_STATE_LOCK], 20 * ms);
	} else {
		st_assert_in("sleep, both threads'", p->thread_state_ns[SHM_STATE_SLEEP],
			     (long long)(helper_slept + main_slept), 0.95, 1.0, 20 * ms);
		/* The join is a futex wait; the helper's own futexes may add to it. */
		ck_assert_uint_ge(p->thread_state_ns[SHM_STATE_LOCK], joined * 95 / 100);
	}
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * cudaDeviceSynchronize spinning ST_SYNC_NS on the CPU each time, as the
 * real driver waits while it has CPUs to spare: the thread never blocks,
 * and its time inside the call is gpu all the same, not oncpu.
 */
START_TEST(states_gpu_from_synchronisations_that_spin)
{
	char zw[512], rt[512], lib_rt[600], spin[32];
	char *argv[8 + ST_SYNCS];
	struct tp_collector c;
	struct tp_workload w;
	const struct shm_proc *p;
	const uint64_t want = ST_SYNCS * ST_SYNC_NS;
	uint64_t count, p50, p99;
	size_t n = 0;

	if (tu_skip_unless_root("states_gpu_from_synchronisations_that_spin"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	snprintf(lib_rt, sizeof(lib_rt), "lib:%s", tp_fake(rt, sizeof(rt), "libcudart.so"));
	snprintf(spin, sizeof(spin), "%llu", ST_SYNC_NS);
	setenv("FAKE_SYNC_SPIN_NS", spin, 1);
	argv[n++] = (char *)tp_zw_cuda(zw, sizeof(zw));
	argv[n++] = lib_rt;
	argv[n++] = "dev:0";
	argv[n++] = "wait";
	for (int i = 0; i < ST_SYNCS; i++)
		argv[n++] = "devsync";
	argv[n] = NULL;
	ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	unsetenv("FAKE_SYNC_SPIN_NS");
	st_go_once_watched(&c, &w);
	ck_assert_int_eq(tp_workload_series(&w, "sync", &count, &p50, &p99, 30000), 0);
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 30000), 0);
	ck_assert_uint_eq(count, ST_SYNCS);
	/*
	 * Its last stint on the CPU, the last spin in it, is counted when the
	 * thread next gets a CPU: a line on its stdin wakes it.
	 */
	tp_workload_go(&w);
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	p = tp_proc(&c, (uint32_t)w.pid);
	ck_assert_ptr_nonnull(p);
	st_print(p);
	/*
	 * The spin is the call's time, less what the thread spent preempted
	 * (runq): together at least the calls' time; the gpu part at most the
	 * calls' time, which the workload's own p99 bounds from above.  (The
	 * thread's runq also holds its preemptions outside the calls, which a
	 * busy machine makes long: no upper bound for it here.)
	 */
	st_assert_in("gpu + runq", p->thread_state_ns[SHM_STATE_GPU] +
		     p->thread_state_ns[SHM_STATE_RUNQ], (long long)want, 0.95, 1e9, 5 * TW_MS);
	st_assert_in("gpu", p->thread_state_ns[SHM_STATE_GPU], (long long)want, 0,
		     (double)p99 / ST_SYNC_NS, 5 * TW_MS);
	/*
	 * The share on the CPU is gpu, not runq: how large it is depends on
	 * how busy the machine is (the spin runs by the wall clock), but a
	 * thread at the default priority gets far more than a tenth of a CPU
	 * beside busy loops, and a spin counted as runq would leave none.
	 */
	ck_assert_uint_ge(p->thread_state_ns[SHM_STATE_GPU], want / 10);
	/* What is left on the CPU is the workload's own start, far below one sync. */
	ck_assert_uint_le(p->thread_state_ns[SHM_STATE_ONCPU], ST_SYNC_NS / 2);
	ck_assert_uint_eq(p->thread_state_ns[SHM_STATE_COLLECTIVE], 0);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * The watched-process bits (bpf/watch.h) of the collector running as pid,
 * mapped writable: the map of that name among the maps its descriptors
 * hold (/proc/PID/fdinfo says each one's id), whatever other collectors
 * run on the node.  NULL if none.
 */
static uint64_t *st_watched_bits(pid_t collector)
{
	char dir[64], path[320], line[128];
	struct bpf_map_info info;
	struct dirent *e;
	uint64_t *bits = NULL;
	__u32 len;
	DIR *d;
	int fd = -1;

	snprintf(dir, sizeof(dir), "/proc/%d/fdinfo", (int)collector);
	d = opendir(dir);
	while (d && fd < 0 && (e = readdir(d))) {
		unsigned int id = 0;
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "map_id: %u", &id) == 1)
				break;
		if (f)
			fclose(f);
		if (!id || (fd = bpf_map_get_fd_by_id(id)) < 0)
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0 ||
		    strcmp(info.name, "zw_watched_bits") != 0) {
			close(fd);
			fd = -1;
		}
	}
	if (d)
		closedir(d);
	if (fd < 0)
		return NULL;
	bits = mmap(NULL, ZW_WATCHED_WORDS * sizeof(*bits), PROT_READ | PROT_WRITE, MAP_SHARED,
		    fd, 0);
	close(fd);
	return bits == MAP_FAILED ? NULL : bits;
}

/* The number before what in the collector's log, 0 when it is not there. */
static unsigned long long st_log_count(const char *log, const char *what)
{
	char *text = tu_read_file(log, NULL);
	char *at = text ? strstr(text, what) : NULL;
	unsigned long long n = 0;

	/* "... info: N what": back over the number. */
	if (at && at > text) {
		char *num = at - 1;

		while (num > text && num[-1] >= '0' && num[-1] <= '9')
			num--;
		n = strtoull(num, NULL, 10);
	}
	free(text);
	return n;
}

#define ST_ROUNDS	8
#define ST_ROUND_MS	60

/* Waits, polling every millisecond, for a line of the workload's output. */
static int st_wait_line(const struct tw_work *w, const char *line, int timeout_ms)
{
	char want[48];

	snprintf(want, sizeof(want), "\n%s\n", line);
	for (int waited = 0; waited <= timeout_ms; waited++) {
		char *text = tu_read_file(w->out, NULL);
		int found = text && strstr(text, want);

		free(text);
		if (found)
			return 0;
		tu_sleep_ms(1);
	}
	return -1;
}

/*
 * A return to the CPU that no sched_switch shows: some kernels show none
 * for a switch away from some of their own tasks, so a watched thread that
 * gets its CPU straight from one comes back unseen.  Here the test takes
 * the thread out of the watched bits while it is woken and gets its CPU,
 * then puts it back while it spins: its next switch away finds it still
 * marked off the CPU.  The kernel's sched_info times the return; each
 * round's wait and spin must be counted, and the states add up to the
 * wall time.
 */
START_TEST(states_count_returns_no_switch_showed)
{
	char rounds[16], ms[16], line[32];
	cpu_set_t cpus;
	struct tp_collector c;
	struct tw_work w;
	const struct shm_proc *p;
	uint64_t *bits, bit;
	long long wall;

	if (tu_skip_unless_root("states_count_returns_no_switch_showed"))
		return;
	snprintf(rounds, sizeof(rounds), "%d", ST_ROUNDS);
	snprintf(ms, sizeof(ms), "%d", ST_ROUND_MS);
	{
		const char *args[] = { "rounds", rounds, ms, NULL };

		ck_assert_int_eq(tw_start(&w, args), 0);
	}
	ck_assert_msg(tw_collector_watch_pid(&c, w.pid) == 0, "collector did not start; see %s",
		      c.log);
	bits = st_watched_bits(c.pid);
	ck_assert_msg(bits != NULL, "cannot map the collector's zw_watched_bits");
	bit = 1ull << (w.pid % 64);
	ck_assert_msg(__atomic_load_n(&bits[w.pid / 64], __ATOMIC_RELAXED) & bit,
		      "the workload is not in the watched bits");
	/* Off the workload's CPU (the last), so as not to preempt it out of the bits. */
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(cpus), &cpus), 0);
	tw_go(&w);
	for (int i = 0; i < ST_ROUNDS; i++) {
		snprintf(line, sizeof(line), "waiting %d", i);
		ck_assert_int_eq(st_wait_line(&w, line, 10000), 0);
		/* Its switch away into the wait is seen: it printed before. */
		tu_sleep_ms(20);
		__atomic_fetch_and(&bits[w.pid / 64], ~bit, __ATOMIC_RELAXED);
		tw_go(&w);
		snprintf(line, sizeof(line), "back %d", i);
		ck_assert_int_eq(st_wait_line(&w, line, 10000), 0);
		__atomic_fetch_or(&bits[w.pid / 64], bit, __ATOMIC_RELAXED);
	}
	munmap(bits, ZW_WATCHED_WORDS * sizeof(*bits));
	p = st_done_proc(&c, &w);
	/*
	 * The collector knows the thread from its first switch back after
	 * the first signal on; the workload times from there to its sleep
	 * after the last spin: the windows differ by a run-queue wait.
	 */
	wall = tw_value(&w, "rounds_wall_ns");
	st_assert_in("sum of the states vs wall time", st_sum(p) - st_waited_after_done(&c, &w),
		     wall, 0.98, 1.02, 5 * TW_MS);
	/* The spins, less what ran with the thread out of the bits (a poll of its output). */
	st_assert_in("oncpu", p->thread_state_ns[SHM_STATE_ONCPU], tw_value(&w, "rounds_oncpu_ns"),
		     0.9, 1.05, 5 * TW_MS);
	/*
	 * Most returns went unseen: one the thread was preempted in (the
	 * poll of its output is a millisecond) was seen, after an unseen
	 * switch away, and is counted from the wait's start as blocked.
	 */
	ck_assert_int_eq(tu_stop(c.pid, SIGTERM, 5000), 0);
	c.pid = 0;
	ck_assert_uint_ge(st_log_count(c.log, "returns of watched threads to a CPU with no "
					      "sched_switch, timed from sched_info"),
			  ST_ROUNDS / 2);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

Suite *probes_states_suite(void);
Suite *probes_states_suite(void)
{
	Suite *s = suite_create("probes_states");
	TCase *tc = tcase_create("states");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, states_of_a_thread_sum_to_its_wall_time_and_match_each_wait);
	tcase_add_test(tc, states_match_each_wait_with_wakeups_timed_at_sched_wakeup);
	tcase_add_test(tc, states_gpu_and_collective_from_synchronisations);
	tcase_add_test(tc, states_collective_from_a_wait_on_another_threads_collectives);
	tcase_add_test(tc, states_gpu_from_synchronisations_that_spin);
	tcase_add_test(tc, states_count_returns_no_switch_showed);
	tcase_add_test(tc, states_are_seen_while_they_last);
	tcase_add_loop_test(tc, states_count_the_launching_thread_not_an_idle_main_thread, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}
