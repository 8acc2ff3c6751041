/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verdict rules on shares of wall time: the wait that stands out
 * names the bottleneck, and when none does, the time on the CPU is
 * GPU-bound only for a process that does GPU work.  Ranks are compared
 * with the ranks of their own job only, and the straggler is told so.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "exporter/explain/explain_verdict.h"

/* A process over 10 s with the given shares; the rest of the time on the CPU. */
static struct ev_process shares(int uses_gpu, double input, double gpu, double sleep)
{
	struct ev_process p = { .pid = 42, .rank = -1, .nranks = -1, .window_s = 10,
				.uses_gpu = uses_gpu, .straggler_rank = -1 };

	p.share[EV_INPUT] = input;
	p.share[EV_GPU] = gpu;
	p.share[EV_SLEEP] = sleep;
	p.share[EV_ONCPU] = 1 - input - gpu - sleep;
	return p;
}

/* p with share s at f, taken from its time on the CPU. */
static struct ev_process with(struct ev_process p, enum ev_share s, double f)
{
	p.share[EV_ONCPU] -= f - p.share[s];
	p.share[s] = f;
	return p;
}

static enum ev_verdict decide(const struct ev_process *p, char *evidence, size_t len)
{
	const char *advice = NULL;
	enum ev_verdict v = ev_decide(p, evidence, len, &advice);

	ck_assert_ptr_nonnull(advice);
	ck_assert_int_gt((int)strlen(evidence), 0);
	return v;
}

START_TEST(no_wait_stands_out_gpu_work_is_gpu_bound_else_cpu_bound)
{
	struct ev_process gpu_job = shares(1, 0.02, 0.10, 0), cpu_job = shares(0, 0.02, 0, 0);
	char evidence[512];

	ck_assert_int_eq(decide(&gpu_job, evidence, sizeof(evidence)), EV_GPU_BOUND);
	ck_assert_ptr_nonnull(strstr(evidence, "10% of the wall time waiting for the GPU"));
	ck_assert_int_eq(decide(&cpu_job, evidence, sizeof(evidence)), EV_CPU_BOUND);
	ck_assert_ptr_nonnull(strstr(evidence, "98% of the wall time on the CPU"));
	ck_assert_ptr_nonnull(strstr(evidence, "no GPU work seen"));
	ck_assert_str_eq(ev_verdict_name(EV_CPU_BOUND), "CPU-bound");
}
END_TEST

START_TEST(the_largest_wait_over_the_bound_names_it)
{
	struct ev_process asleep = shares(0, 0.20, 0, 0.70), fed = shares(1, 0.40, 0, 0.20);
	char evidence[512];

	ck_assert_int_eq(decide(&asleep, evidence, sizeof(evidence)), EV_SLEEPING);
	ck_assert_ptr_nonnull(strstr(evidence, "70% of the wall time asleep"));
	ck_assert_str_eq(ev_verdict_name(EV_SLEEPING), "sleeping");
	ck_assert_int_eq(decide(&fed, evidence, sizeof(evidence)), EV_DATA_BOUND);
	ck_assert_ptr_nonnull(strstr(evidence, "40% of the wall time waiting for input"));
	/* Under the bound, a sleep names nothing. */
	asleep = shares(1, 0, 0, 0.10);
	ck_assert_int_eq(decide(&asleep, evidence, sizeof(evidence)), EV_GPU_BOUND);
}
END_TEST

START_TEST(lock_waits_over_the_bound_are_lock_contention)
{
	struct ev_process locked = with(shares(1, 0.02, 0.10, 0), EV_LOCK, 0.30);
	const char *advice = NULL;
	char evidence[512];

	ck_assert_int_eq(ev_decide(&locked, evidence, sizeof(evidence), &advice),
			 EV_LOCK_CONTENTION);
	ck_assert_str_eq(ev_verdict_name(EV_LOCK_CONTENTION), "lock contention");
	ck_assert_ptr_nonnull(strstr(evidence, "30% of the wall time waiting on locks (futex)"));
	ck_assert_ptr_nonnull(strstr(advice, "the lock the top site waits on"));
	/* Under the bound, the GPU work is what is left. */
	locked = with(shares(1, 0.02, 0.10, 0), EV_LOCK, 0.14);
	ck_assert_int_eq(decide(&locked, evidence, sizeof(evidence)), EV_GPU_BOUND);
	/* Over the bound but under a larger wait, the larger one names it. */
	locked = with(shares(1, 0.40, 0, 0), EV_LOCK, 0.20);
	ck_assert_int_eq(decide(&locked, evidence, sizeof(evidence)), EV_DATA_BOUND);
}
END_TEST

START_TEST(run_queue_waits_from_a_lower_bound_are_cpu_contention)
{
	struct ev_process crowded = with(shares(1, 0.02, 0.10, 0), EV_RUNQ, 0.12);
	const char *advice = NULL;
	char evidence[512];

	crowded.involuntary_per_s = 250;
	ck_assert_int_eq(ev_decide(&crowded, evidence, sizeof(evidence), &advice),
			 EV_CPU_CONTENTION);
	ck_assert_str_eq(ev_verdict_name(EV_CPU_CONTENTION), "CPU contention");
	ck_assert_ptr_nonnull(strstr(evidence, "12% of the wall time runnable but waiting for "
				     "a CPU; 250 involuntary switches a second"));
	ck_assert_ptr_nonnull(strstr(advice, "give the trainer its own cores"));
	/* Its bound is lower than the blocked states' ... */
	crowded = with(shares(1, 0.02, 0.10, 0), EV_RUNQ, 0.09);
	ck_assert_int_eq(decide(&crowded, evidence, sizeof(evidence)), EV_GPU_BOUND);
	/* ... and among those over their bounds, the largest share wins. */
	crowded = with(with(shares(1, 0.02, 0.10, 0), EV_RUNQ, 0.12), EV_LOCK, 0.16);
	ck_assert_int_eq(decide(&crowded, evidence, sizeof(evidence)), EV_LOCK_CONTENTION);
	crowded = with(with(shares(1, 0.02, 0.10, 0), EV_RUNQ, 0.20), EV_LOCK, 0.16);
	ck_assert_int_eq(decide(&crowded, evidence, sizeof(evidence)), EV_CPU_CONTENTION);
}
END_TEST

/* Rank rank of nranks with this collective share, in communicator comm_id of job. */
static struct ev_process rank_in(uint32_t pid, int32_t rank, int32_t nranks, uint64_t comm_id,
				 const char *job, double collective)
{
	struct ev_process p = with(shares(1, 0.01, 0.30, 0), EV_COLLECTIVE, collective);

	p.pid = pid;
	p.rank = rank;
	p.nranks = nranks;
	p.comm_id = comm_id;
	snprintf(p.job, sizeof(p.job), "%s", job);
	return p;
}

START_TEST(stragglers_are_found_within_each_job_of_the_node)
{
	/*
	 * Two 4-rank jobs on one node.  Job A's rank 1 waits least in A; job
	 * B's rank 2 waits less than any rank of either job.
	 */
	struct ev_process p[8] = {
		rank_in(100, 0, 4, 0xa1, "", 0.30), rank_in(101, 1, 4, 0xa1, "", 0.04),
		rank_in(102, 2, 4, 0xa1, "", 0.32), rank_in(103, 3, 4, 0xa1, "", 0.28),
		rank_in(200, 0, 4, 0xb2, "", 0.40), rank_in(201, 1, 4, 0xb2, "", 0.42),
		rank_in(202, 2, 4, 0xb2, "", 0.01), rank_in(203, 3, 4, 0xb2, "", 0.38),
	};
	struct ev_process *procs[8];

	for (size_t i = 0; i < 8; i++)
		procs[i] = &p[i];
	ev_stragglers(procs, 8);
	for (size_t i = 0; i < 4; i++) {
		ck_assert_int_eq(p[i].straggler_rank, 1);
		ck_assert_uint_eq(p[i].straggler_pid, 101);
		ck_assert_double_eq_tol(p[i].straggler_share, 0.04, 1e-9);
		ck_assert_uint_eq(p[i].waited_by, i == 1 ? 3 : 0);
		ck_assert_int_eq(p[4 + i].straggler_rank, 2);
		ck_assert_uint_eq(p[4 + i].straggler_pid, 202);
		ck_assert_uint_eq(p[4 + i].waited_by, i == 2 ? 3 : 0);
	}
	ck_assert_double_eq_tol(p[1].waiting_share, 0.30, 1e-9);
	ck_assert_double_eq_tol(p[6].waiting_share, 0.40, 1e-9);
}
END_TEST

START_TEST(ranks_without_a_shared_communicator_are_grouped_by_job_or_not_at_all)
{
	/*
	 * Communicator ids of their own (not NCCL's): job A's ranks join on
	 * their run id; the ranks of no known job are compared with no one.
	 */
	struct ev_process p[6] = {
		rank_in(100, 0, 2, 0, "torchelastic:a", 0.30),
		rank_in(101, 1, 2, 0, "torchelastic:a", 0.02),
		rank_in(200, 0, 2, 0, "torchelastic:b", 0.01),
		rank_in(201, 1, 2, 0, "torchelastic:b", 0.01),
		rank_in(300, 0, 2, 0, "", 0.40), rank_in(301, 1, 2, 0, "", 0.001),
	};
	struct ev_process *procs[6];

	for (size_t i = 0; i < 6; i++)
		procs[i] = &p[i];
	ev_stragglers(procs, 6);
	ck_assert_uint_eq(p[0].straggler_pid, 101);
	ck_assert_uint_eq(p[1].waited_by, 1);
	/* Job B's ranks wait alike: none stands out. */
	ck_assert_int_eq(p[2].straggler_rank, -1);
	ck_assert_int_eq(p[3].straggler_rank, -1);
	ck_assert_int_eq(p[4].straggler_rank, -1);
	ck_assert_int_eq(p[5].straggler_rank, -1);
	ck_assert_uint_eq(p[5].waited_by, 0);
}
END_TEST

START_TEST(the_straggler_is_told_it_is_the_rank_the_others_wait_for)
{
	/* Its own lock waits are over their bound, yet the job waits for it. */
	struct ev_process late = with(with(shares(1, 0.01, 0.55, 0), EV_LOCK, 0.17),
				      EV_COLLECTIVE, 0.03);
	const char *advice = NULL;
	char evidence[512];

	late.rank = 1;
	late.nranks = 4;
	late.waited_by = 3;
	late.waiting_share = 0.25;
	ck_assert_int_eq(ev_decide(&late, evidence, sizeof(evidence), &advice), EV_STRAGGLER);
	ck_assert_str_eq(ev_verdict_name(EV_STRAGGLER), "straggler");
	ck_assert_msg(strstr(evidence, "the other 3 ranks wait for this rank in collectives "
			     "(25% of their wall time; 3% here)") != NULL, "%s", evidence);
	ck_assert_msg(strstr(evidence, "its own largest share: gpu 55%") != NULL, "%s", evidence);
	ck_assert_ptr_nonnull(strstr(advice, "the whole job"));
}
END_TEST

Suite *explain_verdict_suite(void);
Suite *explain_verdict_suite(void)
{
	Suite *s = suite_create("explain_verdict");
	TCase *tc = tcase_create("rules");

	tcase_add_test(tc, no_wait_stands_out_gpu_work_is_gpu_bound_else_cpu_bound);
	tcase_add_test(tc, the_largest_wait_over_the_bound_names_it);
	tcase_add_test(tc, lock_waits_over_the_bound_are_lock_contention);
	tcase_add_test(tc, run_queue_waits_from_a_lower_bound_are_cpu_contention);
	tcase_add_test(tc, stragglers_are_found_within_each_job_of_the_node);
	tcase_add_test(tc, ranks_without_a_shared_communicator_are_grouped_by_job_or_not_at_all);
	tcase_add_test(tc, the_straggler_is_told_it_is_the_rank_the_others_wait_for);
	suite_add_tcase(s, tc);
	return s;
}
