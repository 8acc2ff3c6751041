/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DataLoader waits against ground truth: reads from a pipe whose writer
 * delays each record by a known time, in a watched process, a forked child
 * and an unwatched twin; then a real PyTorch DataLoader.  A wait is one
 * episode of a training thread: its input blocks merged while less than
 * the gap (1 ms) of CPU time separates them, so each workload does a
 * training step of a few ms between records, as a trainer does between
 * batches.  Root (BPF).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/testutil.h"
#include "tests/collector/tu_dataload.h"
#include "tests/collector/tu_waits.h"

#define DL_ITEMS	20
#define DL_DELAY_MS	15
#define PT_DELAY_MS	15

/*
 * Ground truth: the workload times each read itself and asks the kernel
 * whether it slept (its thread's voluntary switches), so the tests know
 * exactly how many reads blocked and how many of those lasted about the
 * delay, (10 ms, 50 ms], even when a busy machine makes the reader fall
 * behind now and then.  Tolerances: the collector's sum may differ from
 * the workload's by the syscall entry and exit (2% + 2 ms over the run);
 * the median of the pipe reads lies between the workload's own two middle
 * waits, widened by 1/64 (histogram error) and 1 ms; where the workload
 * gives no median, in [delay - 1 ms - 1/64, delay + 5 ms].
 */
#define DL_P50_LO(d)	((d) * TW_MS - (d) * TW_MS / 64 - TW_MS)
#define DL_P50_HI(d)	((d) * TW_MS + 5 * TW_MS)

static void check_pipe_reads(const struct shm_proc *p, const struct tw_work *w)
{
	const struct shm_latency *l = &p->lat[SHM_FAMILY_DATALOADER_WAIT];
	long long waits = tw_value(w, "read_waits");
	long long longs = tw_value(w, "read_long");
	long long slept = tw_value(w, "read_slept_ns");
	long long lo = tw_value(w, "read_p50_lo_ns"), hi = tw_value(w, "read_p50_hi_ns");

	/*
	 * The workload did what it is for: reads waited for the writer.  Not
	 * all: on a busy machine the reader falls behind and finds records
	 * waiting (9 of 20 waited in one run beside two busy loops); what the
	 * collector says is checked against what the workload counted.
	 */
	ck_assert_int_ge(longs, DL_ITEMS / 4);
	ck_assert_uint_eq(l->count, (uint64_t)waits);
	tw_assert_band(tw_bucket_count(l, 10 * TW_MS, 50 * TW_MS), w, "read_long",
		       "read waits in (10 ms, 50 ms]");
	ck_assert_msg(l->sum_ns <= (uint64_t)slept + (uint64_t)slept / 50 + 2 * TW_MS &&
		      l->sum_ns + (uint64_t)slept / 50 + 2 * TW_MS >= (uint64_t)slept,
		      "read waits: collector %llu ns, workload %lld ns",
		      (unsigned long long)l->sum_ns, slept);
	/*
	 * The median of the same waits as the workload timed them (about the
	 * delay less the step, less on a busy machine, where the reader falls
	 * behind): between its two middle waits, widened by the histogram's
	 * 1/64 and a millisecond for the syscall's entry and exit.
	 */
	fprintf(stderr, "pipe read waits: p50 %.3f ms, the workload's middle waits %.3f and "
		"%.3f ms\n", l->window_p50_ns / 1e6, lo / 1e6, hi / 1e6);
	ck_assert_int_gt(lo, 0);
	ck_assert_uint_ge(l->window_p50_ns + (uint64_t)lo / 64 + TW_MS, (uint64_t)lo);
	ck_assert_uint_le(l->window_p50_ns, (uint64_t)hi + (uint64_t)hi / 64 + TW_MS);
}

/*
 * A writer delaying each record by 20 ms, the reader stepping 3 ms after
 * each: waits of about 17 ms, well inside (10 ms, 50 ms].
 */
static const char *const pipe_args[] = { "pipe", "20", "20", "step=3", NULL };

START_TEST(dataload_blocked_pipe_reads_match_writer_delay)
{
	struct tp_collector c;
	struct tw_work watched, twin;
	const struct shm_proc *p;

	if (tu_skip_unless_root("dataload_blocked_pipe_reads_match_writer_delay"))
		return;
	ck_assert_int_eq(tw_start(&watched, pipe_args), 0);
	ck_assert_int_eq(tw_start(&twin, pipe_args), 0);
	ck_assert_msg(tw_collector_watch_pid(&c, watched.pid) == 0,
		      "collector did not start; see %s", c.log);
	tw_go(&watched);
	tw_go(&twin);
	ck_assert_int_eq(tw_wait_line(&watched, "done", 10000), 0);
	ck_assert_int_eq(tw_wait_line(&twin, "done", 10000), 0);
	ck_assert_int_eq(tw_settle(&c), 0);

	p = tp_proc(&c, (uint32_t)watched.pid);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->watch_reason & SHM_WATCH_PID, SHM_WATCH_PID);
	check_pipe_reads(p, &watched);
	/* The same work in a process nobody asked for is not reported. */
	ck_assert_ptr_null(tp_proc(&c, (uint32_t)twin.pid));

	tw_finish(&watched);
	tw_finish(&twin);
	tp_collector_stop(&c);
}
END_TEST

/* DataLoader waits in every workload row: all the collector's watched processes'. */
static uint64_t workload_waits(const struct tp_collector *c)
{
	uint32_t n;
	const struct shm_workload *w = shm_snapshot_rows(&c->snap, SHM_TABLE_WORKLOADS, &n);
	uint64_t sum = 0;

	for (uint32_t i = 0; w && i < n; i++)
		sum += w[i].lat[SHM_FAMILY_DATALOADER_WAIT].count;
	return sum;
}

/*
 * The child's waits also count in its workload's histogram, and stay
 * there once it has exited and its row is gone (a PyTorch DataLoader
 * starts new workers every epoch): a workload's count never falls.
 */
START_TEST(dataload_child_forked_after_watch_is_watched)
{
	static const char *const args[] = { "pipe", "20", "20", "fork", "step=3", NULL };
	struct tp_collector c;
	struct tw_work w;
	const struct shm_proc *p;
	long long child, waits;

	if (tu_skip_unless_root("dataload_child_forked_after_watch_is_watched"))
		return;
	ck_assert_int_eq(tw_start(&w, args), 0);
	/* Named by --comm this time (zs_work: the workload's file name). */
	ck_assert_msg(tw_collector_watch(&c, "--comm", "zs_work", w.pid) == 0,
		      "collector did not start; see %s", c.log);
	tw_go(&w);
	ck_assert_int_eq(tw_wait_line(&w, "done", 10000), 0);
	child = tw_value(&w, "child");
	ck_assert_int_gt(child, 0);
	ck_assert_int_eq(tw_value(&w, "worker"), child);
	ck_assert_int_eq(tw_settle(&c), 0);

	p = tp_proc(&c, (uint32_t)child);
	ck_assert_msg(p != NULL, "forked child %lld is not watched", child);
	ck_assert_uint_eq(p->watch_reason & SHM_WATCH_DESCENDANT, SHM_WATCH_DESCENDANT);
	ck_assert_uint_eq(p->ppid, (uint32_t)w.pid);
	check_pipe_reads(p, &w);
	/* The parent only waited for the child (wait4): no read waits. */
	p = tp_proc(&c, (uint32_t)w.pid);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->watch_reason & SHM_WATCH_COMM, SHM_WATCH_COMM);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_DATALOADER_WAIT].count, 0);
	waits = tw_value(&w, "read_waits");
	ck_assert_uint_eq(workload_waits(&c), (uint64_t)waits);

	tw_finish(&w);
	for (int waited = 0; tp_proc(&c, (uint32_t)child); waited += 200) {
		ck_assert_msg(waited < 10000, "exited child %lld never left the segment", child);
		tu_sleep_ms(200);
		ck_assert_int_eq(tp_snapshot(&c), 0);
	}
	ck_assert_uint_eq(workload_waits(&c), (uint64_t)waits);
	tp_collector_stop(&c);
}
END_TEST

START_TEST(dataload_io_uring_waits_counted_only_when_waiting)
{
	static const char *const args[] = { "uring", "20", "15", "step=3", NULL };
	struct tp_collector c;
	struct tw_work w;
	const struct shm_proc *p;
	const struct shm_latency *l;

	if (tu_skip_unless_root("dataload_io_uring_waits_counted_only_when_waiting"))
		return;
	ck_assert_int_eq(tw_start(&w, args), 0);
	ck_assert_msg(tw_collector_watch_pid(&c, w.pid) == 0,
		      "collector did not start; see %s", c.log);
	tw_go(&w);
	ck_assert_int_eq(tw_wait_line(&w, "done", 10000), 0);
	if (tw_value(&w, "uring_waits") < 0) {
		fprintf(stderr, "SKIP dataload_io_uring_waits_counted_only_when_waiting: "
			"io_uring is disabled on this kernel\n");
		tw_finish(&w);
		tp_collector_stop(&c);
		return;
	}
	ck_assert_int_eq(tw_value(&w, "uring_waits"), DL_ITEMS);
	ck_assert_int_eq(tw_settle(&c), 0);
	p = tp_proc(&c, (uint32_t)w.pid);
	ck_assert_ptr_nonnull(p);
	l = &p->lat[SHM_FAMILY_DATALOADER_WAIT];
	/* The timed-out waits, each one delay long; the calls asking for nothing, not. */
	ck_assert_uint_eq(l->count, DL_ITEMS);
	ck_assert_uint_eq(tw_bucket_count(l, 10 * TW_MS, 50 * TW_MS), DL_ITEMS);
	ck_assert_uint_ge(l->window_p50_ns, DL_DELAY_MS * TW_MS - DL_DELAY_MS * TW_MS / 64);
	ck_assert_uint_le(l->window_p50_ns, DL_P50_HI(DL_DELAY_MS));
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * PyTorch DataLoader (tests/py/dataloader_wait.py): each item's read
 * blocks a known delay D, and the trainer runs a CPU training step of
 * PT_STEP_MS after each batch.  The script times next() itself and counts
 * the batches it slept for: its ground truth per batch.
 */
#define PT_STEP_MS	"3"

/*
 * num_workers=0, batch 1: the trainer makes every read itself, one wait of
 * D per batch; a helper thread of the trainer sitting in poll() a second
 * at a time is not a training thread and never shows.
 */
START_TEST(dataload_pytorch_no_workers_trainer_waits_per_item)
{
	static const char *const args[] = { "0", "64", "1", "40", PT_STEP_MS, "helper", NULL };
	struct tp_collector c;
	struct tw_work w;
	const struct shm_proc *p;
	const struct shm_latency *l;
	long long slept;

	if (tu_skip_unless_root("dataload_pytorch_no_workers_trainer_waits_per_item"))
		return;
	td_run(&c, &w, args, NULL);
	if (w.pid == 0)
		return;
	ck_assert_int_eq(tw_value(&w, "items"), 64);
	ck_assert_int_eq(tw_value(&w, "workers"), 0);
	slept = tw_value(&w, "next_slept");
	ck_assert_int_ge(slept, 32);
	p = tp_proc(&c, (uint32_t)w.pid);
	ck_assert_ptr_nonnull(p);
	l = &p->lat[SHM_FAMILY_DATALOADER_WAIT];
	/* One wait per batch it slept for (the last may close later). */
	ck_assert_uint_ge(l->count + 1, (uint64_t)slept);
	ck_assert_uint_le(l->count, (uint64_t)slept);
	td_assert_near("trainer wait p50", l->window_p50_ns, 40 * TW_MS, 0.10);
	/* The helper's one-second polls would be the maximum. */
	ck_assert_uint_le(l->window_max_ns, 500 * TW_MS);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * The same helper, counted when every thread counts: the exclusion is
 * real.  Without Python frames, where a helper's reads are told apart
 * from the DataLoader's by the thread alone (with them, its polls lie
 * outside next() and are no DataLoader wait either way).
 */
START_TEST(dataload_pytorch_helper_thread_counted_with_all_threads)
{
	static const char *const args[] = { "0", "64", "1", "40", PT_STEP_MS, "helper", NULL };
	static const char *const flags[] = { "--all-threads", "--no-python-frames", NULL };
	struct tp_collector c;
	struct tw_work w;
	const struct shm_proc *p;

	if (tu_skip_unless_root("dataload_pytorch_helper_thread_counted_with_all_threads"))
		return;
	td_run(&c, &w, args, flags);
	if (w.pid == 0)
		return;
	p = tp_proc(&c, (uint32_t)w.pid);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_ge(p->lat[SHM_FAMILY_DATALOADER_WAIT].window_max_ns, 900 * TW_MS);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * num_workers=2, batch 1, storage that delivers an item every D/2 (each
 * item still takes its worker D): the workers take turns, a batch is ready
 * every D/2, and the trainer waits D/2 less its 2 ms step per batch.  Its
 * own timing of the next() calls it slept in is the truth, D/2 the target.
 * D is long (160 ms) so that a loaded machine still leaves the trainer
 * ahead of its storage.
 */
START_TEST(dataload_pytorch_two_workers_batch_one_waits_half_the_delay)
{
	static const char *const args[] = { "2", "32", "1", "160", "2", "paced", NULL };
	struct tp_collector c;
	struct tw_work w;
	const struct shm_proc *p;
	const struct shm_latency *l;

	if (tu_skip_unless_root("dataload_pytorch_two_workers_batch_one_waits_half_the_delay"))
		return;
	td_run(&c, &w, args, NULL);
	if (w.pid == 0)
		return;
	ck_assert_int_eq(tw_value(&w, "workers"), 2);
	p = tp_proc(&c, (uint32_t)w.pid);
	ck_assert_ptr_nonnull(p);
	l = &p->lat[SHM_FAMILY_DATALOADER_WAIT];
	fprintf(stderr, "two workers: trainer p50 %llu ns over %llu waits, its own %lld ns\n",
		(unsigned long long)l->window_p50_ns, (unsigned long long)l->count,
		tw_value(&w, "next_slept_p50_ns"));
	ck_assert_uint_ge(l->count + 2, (uint64_t)tw_value(&w, "next_slept"));
	td_assert_near("trainer wait p50 vs D/2", l->window_p50_ns, 80 * TW_MS, 0.15);
	td_assert_near("trainer wait p50 vs its own", l->window_p50_ns,
		       (uint64_t)tw_value(&w, "next_slept_p50_ns"), 0.10);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

START_TEST(dataload_pytorch_two_workers_trainer_waits_for_batches)
{
	static const char *const args[] = { "2", "48", "4", "15", PT_STEP_MS, "decode", NULL };
	const uint64_t items = 48, workers = 2, per_worker = items / workers;
	const uint64_t floor_ns = items * PT_DELAY_MS * TW_MS / workers;
	struct tp_collector c;
	struct tw_work w;
	const struct shm_proc *p, *wp;
	const struct shm_latency *l;
	long long next_total;

	if (tu_skip_unless_root("dataload_pytorch_two_workers_trainer_waits_for_batches"))
		return;
	td_run(&c, &w, args, NULL);
	if (w.pid == 0)
		return;
	ck_assert_int_eq(tw_value(&w, "items"), (long long)items);
	ck_assert_int_eq(tw_value(&w, "workers"), (long long)workers);
	/* The workers start at iter(), before the first next(): 10% of slack. */
	next_total = tw_value(&w, "next_total_ns");
	ck_assert_int_ge(next_total, (long long)(floor_ns - floor_ns / 10));

	p = tp_proc(&c, (uint32_t)w.pid);
	ck_assert_ptr_nonnull(p);
	l = &p->lat[SHM_FAMILY_DATALOADER_WAIT];
	/* Within 10% below the floor, and inside what next() took. */
	ck_assert_msg(l->sum_ns >= floor_ns - floor_ns / 10 && l->sum_ns <= (uint64_t)next_total,
		      "trainer waited %llu ns; want [%llu, %lld]", (unsigned long long)l->sum_ns,
		      (unsigned long long)(floor_ns - floor_ns / 10), next_total);
	/*
	 * The workers: descendants of the trainer whose main threads make the
	 * reads, each a wait of its own (the decoding after it is longer than
	 * the gap), about D long.  Batches go round-robin, so each read its
	 * share; its last wait may still be open, and its wait for the next
	 * batch's indices, once per batch, is a wait of its own or joins the
	 * read after it.
	 */
	for (uint64_t i = 0; i < workers; i++) {
		const uint64_t batches = per_worker / 4;
		uint64_t own_p75;
		char key[32];
		long long pid;

		snprintf(key, sizeof(key), "worker%llu", (unsigned long long)i);
		pid = tw_value(&w, key);
		ck_assert_int_gt(pid, 0);
		wp = tp_proc(&c, (uint32_t)pid);
		ck_assert_msg(wp != NULL, "worker %lld is not watched", pid);
		ck_assert_uint_eq(wp->watch_reason & SHM_WATCH_DESCENDANT, SHM_WATCH_DESCENDANT);
		ck_assert_uint_eq(wp->ppid, (uint32_t)w.pid);
		l = &wp->lat[SHM_FAMILY_DATALOADER_WAIT];
		fprintf(stderr, "worker %llu: %llu waits, sum %llu ns, p50 %llu ns\n",
			(unsigned long long)i, (unsigned long long)l->count,
			(unsigned long long)l->sum_ns, (unsigned long long)l->window_p50_ns);
		ck_assert_msg(l->count >= per_worker - batches - 1 && l->count <= per_worker + batches,
			      "worker %lld: %llu waits for %llu reads", pid,
			      (unsigned long long)l->count, (unsigned long long)per_worker);
		ck_assert_uint_ge(l->sum_ns, (per_worker - 1) * PT_DELAY_MS * TW_MS * 9 / 10);
		ck_assert_uint_ge(l->window_p50_ns, DL_P50_LO(PT_DELAY_MS));
		snprintf(key, sizeof(key), "worker%llu_read_p75_ns", (unsigned long long)i);
		ck_assert_int_gt(tw_value(&w, key), 0);
		own_p75 = (uint64_t)tw_value(&w, key);
		fprintf(stderr, "worker %llu: its reads that slept took %llu ns at the third "
			"quartile, by its own clock\n", (unsigned long long)i,
			(unsigned long long)own_p75);
		/*
		 * Above: the delay, as where the workload gives no median; or
		 * on a busy machine, where a woken worker waits for a CPU and
		 * the timer's next arming starts late, what its reads took by
		 * its own clock (run-queue time included, which the collector
		 * does not count): a quarter of its waits, one a batch, may
		 * have joined the index wait before them, hence the third
		 * quartile, widened as DL_P50_HI is.
		 */
		ck_assert_msg(l->window_p50_ns <= DL_P50_HI(PT_DELAY_MS) ||
			      l->window_p50_ns <= own_p75 + own_p75 / 64 + TW_MS,
			      "worker %lld: p50 %llu ns; its reads' own p75 %llu ns", pid,
			      (unsigned long long)l->window_p50_ns, (unsigned long long)own_p75);
	}
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

Suite *probes_dataload_suite(void);
Suite *probes_dataload_suite(void)
{
	Suite *s = suite_create("probes_dataload");
	TCase *tc = tcase_create("pipe");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, dataload_blocked_pipe_reads_match_writer_delay);
	tcase_add_test(tc, dataload_child_forked_after_watch_is_watched);
	tcase_add_test(tc, dataload_io_uring_waits_counted_only_when_waiting);
	suite_add_tcase(s, tc);
	tc = tcase_create("pytorch");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, dataload_pytorch_no_workers_trainer_waits_per_item);
	tcase_add_test(tc, dataload_pytorch_helper_thread_counted_with_all_threads);
	tcase_add_test(tc, dataload_pytorch_two_workers_batch_one_waits_half_the_delay);
	tcase_add_test(tc, dataload_pytorch_two_workers_trainer_waits_for_batches);
	suite_add_tcase(s, tc);
	return s;
}
