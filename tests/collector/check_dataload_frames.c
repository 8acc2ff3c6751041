/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DataLoader waits told by the trainer's Python frames, against a real
 * PyTorch DataLoader that times its own next() calls
 * (tests/py/dataloader_wait.py): a block of a training thread inside the
 * DataLoader's next() is part of a wait whatever the system call (the
 * pin-memory thread's queue is a futex), a read outside it (a c10d
 * TCPStore) is not, and one batch is one wait on a machine busy with
 * other work.  Root (BPF).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/collector/tu_dataload.h"
#include "tests/support/testutil.h"

/* What one run gave: the trainer's truth beside the collector's figures. */
static void report(const char *what, const struct tw_work *w, const struct shm_latency *l)
{
	fprintf(stderr, "%s: collector %llu waits, p50 %.2f ms, sum %.1f ms; trainer %lld "
		"batches, next() p50 %.2f ms, %.1f ms in all\n", what,
		(unsigned long long)l->count, l->window_p50_ns / 1e6, l->sum_ns / 1e6,
		tw_value(w, "batches"), tw_value(w, "next_p50_ns") / 1e6,
		tw_value(w, "next_total_ns") / 1e6);
}

/*
 * One wait per batch: the count within 10% of the batches, the median
 * within 15% of the trainer's own median next().  The storage is paced (a
 * batch ready every 25 ms), so that every next() waits about as long: a
 * trainer that sometimes finds two batches ready has next() times in two
 * groups, and the median of either side falls between them.
 */
static void check_one_wait_per_batch(const struct tw_work *w, const struct shm_latency *l)
{
	long long batches = tw_value(w, "batches");

	ck_assert_int_gt(batches, 10);
	ck_assert_msg(l->count * 10 >= (uint64_t)batches * 9 &&
		      l->count * 10 <= (uint64_t)batches * 11,
		      "%llu waits for %lld batches", (unsigned long long)l->count, batches);
	td_assert_near("wait p50 vs the trainer's own", l->window_p50_ns,
		       (uint64_t)tw_value(w, "next_p50_ns"), 0.15);
	/* Inside what next() took, in all. */
	ck_assert_uint_le(l->sum_ns, (uint64_t)tw_value(w, "next_total_ns"));
}

static const struct shm_latency *trainer_waits(const struct tp_collector *c,
					       const struct tw_work *w)
{
	const struct shm_proc *p = tp_proc(c, (uint32_t)w->pid);

	ck_assert_ptr_nonnull(p);
	return &p->lat[SHM_FAMILY_DATALOADER_WAIT];
}

/* Whether the collector said it follows pid's DataLoader by its frames. */
static int told_by_frames(const struct tp_collector *c, pid_t pid)
{
	char want[96], *log = tu_read_file(c->log, NULL);
	int found;

	ck_assert_ptr_nonnull(log);
	snprintf(want, sizeof(want), "pid %d: its DataLoader waits are told by their Python frames",
		 (int)pid);
	found = strstr(log, want) != NULL;
	free(log);
	return found;
}

/*
 * pin_memory=True: the trainer takes each batch from the pin-memory
 * thread's queue.Queue, a futex wait, never a read; the frames place it
 * inside next(), so it is the DataLoader's wait, in the input state.
 */
START_TEST(dataload_frames_pin_memory_waits_are_the_dataloaders)
{
	static const char *const args[] = { "2", "40", "1", "50", "5", "paced,pin", NULL };
	const struct shm_latency *l;
	const struct shm_proc *p;
	struct tp_collector c;
	struct tw_work w;

	if (tu_skip_unless_root("dataload_frames_pin_memory_waits_are_the_dataloaders"))
		return;
	td_run(&c, &w, args, NULL);
	if (w.pid == 0)
		return;
	ck_assert_int_eq(tw_value(&w, "pin_thread"), 1);
	ck_assert(told_by_frames(&c, w.pid));
	l = trainer_waits(&c, &w);
	report("pin_memory", &w, l);
	check_one_wait_per_batch(&w, l);
	/*
	 * Its time is input, not lock, but for the first batch's: the workers'
	 * start, waited for before a stall inside next() was named.
	 */
	p = tp_proc(&c, (uint32_t)w.pid);
	fprintf(stderr, "pin_memory: input %.1f ms, lock %.1f ms, first next() %.1f ms\n",
		p->thread_state_ns[SHM_STATE_INPUT] / 1e6, p->thread_state_ns[SHM_STATE_LOCK] / 1e6,
		tw_value(&w, "next_first_ns") / 1e6);
	ck_assert_uint_ge(p->thread_state_ns[SHM_STATE_INPUT], l->sum_ns * 9 / 10);
	ck_assert_uint_le(p->thread_state_ns[SHM_STATE_LOCK],
			  (uint64_t)tw_value(&w, "next_first_ns") + 5 * TW_MS);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * After each step the trainer waits 10 ms on a TCPStore key, a blocking
 * recv like the DataLoader's reads: the frames place it outside next(),
 * so no DataLoader wait holds it.
 */
START_TEST(dataload_frames_store_reads_are_not_the_dataloaders)
{
	static const char *const args[] = { "2", "40", "1", "50", "5", "paced,store", NULL };
	const struct shm_latency *l;
	struct tp_collector c;
	struct tw_work w;

	if (tu_skip_unless_root("dataload_frames_store_reads_are_not_the_dataloaders"))
		return;
	td_run(&c, &w, args, NULL);
	if (w.pid == 0)
		return;
	ck_assert_int_eq(tw_value(&w, "store_reads"), 40);
	ck_assert_int_ge(tw_value(&w, "store_total_ns"), 40 * 10 * TW_MS);
	ck_assert(told_by_frames(&c, w.pid));
	l = trainer_waits(&c, &w);
	report("store", &w, l);
	/* With the reads counted there would be two waits a batch, and twice the time. */
	check_one_wait_per_batch(&w, l);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/* Two processes spinning beside the test, as other work on a 2-core node. */
static void busy_start(pid_t busy[2])
{
	for (int i = 0; i < 2; i++) {
		busy[i] = fork();
		ck_assert_int_ge(busy[i], 0);
		if (busy[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				;
		}
	}
}

static void busy_stop(const pid_t busy[2])
{
	for (int i = 0; i < 2; i++) {
		kill(busy[i], SIGKILL);
		waitpid(busy[i], NULL, 0);
	}
}

/*
 * 2 workers, 50 ms an item, a 5 ms step between batches, 60 batches,
 * with two busy loops beside it: one wait per batch in every run (five,
 * by loop index), where the gap rule alone split batches (a worker's
 * handshake slowed by the busy CPUs).
 */
START_TEST(dataload_frames_one_wait_per_batch_beside_busy_work)
{
	static const char *const args[] = { "2", "60", "1", "50", "5", "paced", NULL };
	struct tp_collector c;
	struct tw_work w;
	pid_t busy[2];
	char what[32];

	if (tu_skip_unless_root("dataload_frames_one_wait_per_batch_beside_busy_work"))
		return;
	busy_start(busy);
	td_run(&c, &w, args, NULL);
	busy_stop(busy);
	if (w.pid == 0)
		return;
	snprintf(what, sizeof(what), "busy run %d", _i + 1);
	report(what, &w, trainer_waits(&c, &w));
	check_one_wait_per_batch(&w, trainer_waits(&c, &w));
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

Suite *dataload_frames_suite(void);
Suite *dataload_frames_suite(void)
{
	Suite *s = suite_create("dataload_frames");
	TCase *tc = tcase_create("pytorch");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, dataload_frames_pin_memory_waits_are_the_dataloaders);
	tcase_add_test(tc, dataload_frames_store_reads_are_not_the_dataloaders);
	tcase_add_loop_test(tc, dataload_frames_one_wait_per_batch_beside_busy_work, 0, 5);
	suite_add_tcase(s, tc);
	return s;
}
