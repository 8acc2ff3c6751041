/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * zernel-collector --simulate, run as the built binary and read back
 * through shm_reader: the synthetic job is plausible, every family moves,
 * each scenario does what its name says on the real clock, and SIGTERM
 * leaves no segment behind.  The four scenarios run side by side so that
 * the suite stays short.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/sim/scenario.h"
#include "common/util.h"
#include "shm/shm_reader.h"
#include "tests/support/testutil.h"

#define MS	NSEC_PER_MSEC

struct job {
	char name[64];
	char log[128];
	pid_t pid;
	uint64_t started_ns;
	struct shm_reader r;
};

static void job_start(struct job *j, const char *const *extra)
{
	char bin[512];
	char *argv[32];
	size_t n = 0;

	memset(j, 0, sizeof(*j));
	tu_unique_shm_name(j->name, sizeof(j->name));
	snprintf(j->log, sizeof(j->log), "/tmp%s.log", j->name);
	argv[n++] = (char *)tu_build_path(bin, sizeof(bin), "zernel-collector");
	argv[n++] = "--simulate";
	argv[n++] = "--shm";
	argv[n++] = j->name;
	argv[n++] = "--publish-interval";
	argv[n++] = "200";
	while (extra && *extra && n < sizeof(argv) / sizeof(argv[0]) - 1)
		argv[n++] = (char *)*extra++;
	argv[n] = NULL;
	j->started_ns = now_mono_ns();
	j->pid = tu_spawn(argv, j->log);
	ck_assert_int_gt(j->pid, 0);
	shm_reader_init(&j->r, j->name);
}

/* Stops the job; returns its exit status (-1 when it did not exit). */
static int job_stop(struct job *j)
{
	int st = -1;

	if (j->pid > 0) {
		st = tu_stop(j->pid, SIGTERM, 3000);
		j->pid = 0;
	}
	shm_reader_close(&j->r);
	unlink(j->log);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A fresh, valid snapshot, waiting up to 5 s for the collector to start. */
static void job_read(struct job *j, struct shm_snapshot *snap)
{
	char why[256] = "";
	enum shm_read_status st = SHM_READ_MISSING;

	for (int i = 0; i < 500; i++) {
		st = shm_reader_snapshot(&j->r, snap, why, sizeof(why));
		if (st == SHM_READ_OK)
			return;
		tu_sleep_ms(10);
	}
	ck_abort_msg("%s: %s: %s", j->name, shm_read_status_name(st), why);
}

static double seconds_since(const struct job *j)
{
	return (double)(now_mono_ns() - j->started_ns) / 1e9;
}

/* Sleeps until t seconds after the job started. */
static void sleep_until(const struct job *j, double t)
{
	double left = t - seconds_since(j);

	if (left > 0)
		tu_sleep_ms((unsigned int)(left * 1000.0));
}

static const struct shm_proc *proc_by_pid(const struct shm_snapshot *s, uint32_t pid)
{
	uint32_t n;
	const struct shm_proc *p = shm_snapshot_procs(s, &n);

	for (uint32_t i = 0; i < n; i++)
		if (p[i].pid == pid)
			return &p[i];
	return NULL;
}

static uint64_t gpu_mem_sum(const struct shm_snapshot *s, uint32_t gpu)
{
	uint32_t n;
	const struct shm_gpu_mem *m = shm_snapshot_gpu_mem(s, &n);
	uint64_t sum = 0;

	for (uint32_t i = 0; i < n; i++)
		if (m[i].gpu_id == gpu)
			sum += m[i].used_bytes;
	return sum;
}

static double gpu_fill(const struct shm_snapshot *s, uint32_t gpu)
{
	uint32_t n;
	const struct shm_gpu *g = shm_snapshot_gpus(s, &n);

	for (uint32_t i = 0; i < n; i++)
		if (g[i].gpu_id == gpu && g[i].total_bytes)
			return (double)g[i].used_bytes / (double)g[i].total_bytes;
	return -1.0;
}

/*
 * The job's identity: each trainer's pod and rank agree with the rank its
 * NCCL communicator reports; each worker shares its trainer's pod.
 */
static void check_job_identity(const struct shm_snapshot *s)
{
	const struct shm_proc *procs;
	const struct shm_identity *ids;
	const struct shm_nccl_comm *comms;
	uint32_t n, n_ids, n_comms;

	procs = shm_snapshot_procs(s, &n);
	ids = shm_snapshot_identity(s, &n_ids);
	comms = shm_snapshot_nccl_comms(s, &n_comms);
	ck_assert_uint_eq(n_ids, n);
	for (uint32_t i = 0; i < n; i++) {
		const struct shm_identity *id = &ids[i], *parent = NULL;
		char pod[64];

		ck_assert_uint_eq(id->pid, procs[i].pid);
		ck_assert(id->flags & SHM_ID_F_READ);
		ck_assert_str_eq(id->namespace, "ml-training");
		ck_assert_str_eq(id->run_id, "llama-ft-4821");
		ck_assert_uint_eq(id->runtime, SHM_ID_RUNTIME_CONTAINERD);
		ck_assert_uint_eq(strlen(id->container_id), 64);
		ck_assert_int_eq(id->world_size, 4);
		snprintf(pod, sizeof(pod), "llama-ft-worker-%d", id->rank);
		ck_assert_str_eq(id->pod, pod);
		for (uint32_t c = 0; c < n_comms; c++)
			if (comms[c].pid == procs[i].pid)
				ck_assert_int_eq(comms[c].rank, id->rank);
		for (uint32_t k = 0; k < n; k++)
			if (procs[k].pid == procs[i].ppid)
				parent = &ids[k];
		if (parent) {	/* a DataLoader worker: its trainer's pod */
			ck_assert_str_eq(id->pod, parent->pod);
			ck_assert_str_eq(id->container_id, parent->container_id);
		}
	}
}

START_TEST(steady_job_is_plausible_and_moving)
{
	struct shm_snapshot a = { 0 }, b = { 0 };
	const struct shm_header_fields *ha, *hb;
	const struct shm_proc *procs;
	const struct shm_gpu *gpus;
	const struct shm_nccl_op *ops;
	const struct shm_nccl_comm *comms;
	uint32_t n, trainers = 0, workers = 0, ranks_seen = 0;
	uint64_t sched_a = 0, sched_b = 0, migrations = 0;
	struct job j;

	job_start(&j, NULL);
	sleep_until(&j, 1.2);
	job_read(&j, &a);
	sleep_until(&j, 2.6);
	job_read(&j, &b);
	ha = a.hdr;
	hb = b.hdr;

	ck_assert_uint_eq(hb->mode, SHM_MODE_SIMULATE);
	ck_assert_str_eq(hb->scenario, "steady");
	ck_assert_uint_eq(hb->writer_pid, (uint32_t)j.pid);
	ck_assert_uint_eq(hb->publish_interval_ms, 200);
	ck_assert_uint_eq(hb->window_ns, 60 * NSEC_PER_SEC);
	ck_assert_uint_gt(hb->stats.publishes, ha->stats.publishes);
	ck_assert_uint_gt(hb->stats.events_total, ha->stats.events_total);

	/* Every latency family moves, with sane quantiles. */
	for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++) {
		const struct shm_latency *l = &hb->node[f];

		ck_assert_msg(l->count > ha->node[f].count, "%s did not move",
			      shm_family_name(f));
		ck_assert_msg(l->window_p50_ns > 0 && l->window_p99_ns >= l->window_p50_ns &&
			      l->window_max_ns >= l->window_p99_ns, "%s quantiles",
			      shm_family_name(f));
	}
	/* Launches take microseconds, batch waits well under a second. */
	ck_assert_uint_lt(hb->node[SHM_FAMILY_CUDA_LAUNCH].window_p50_ns, 100000);
	ck_assert_uint_gt(hb->node[SHM_FAMILY_CUDA_LAUNCH].window_p50_ns, 1000);
	ck_assert_uint_lt(hb->node[SHM_FAMILY_DATALOADER_WAIT].window_p99_ns, 100 * MS);

	/* 4 trainers, each with one DataLoader worker as descendant. */
	procs = shm_snapshot_procs(&b, &n);
	ck_assert_uint_eq(n, 8);
	for (uint32_t i = 0; i < n; i++) {
		const struct shm_proc *p = &procs[i], *pa = proc_by_pid(&a, p->pid);

		ck_assert_uint_ge(p->pid, 100000);
		ck_assert(p->watch_reason & SHM_WATCH_SIMULATED);
		ck_assert_ptr_nonnull(pa);
		sched_a += pa->voluntary_switches + pa->involuntary_switches;
		sched_b += p->voluntary_switches + p->involuntary_switches;
		migrations += p->migrations;
		if (p->watch_reason & SHM_WATCH_DESCENDANT) {
			const struct shm_proc *parent = proc_by_pid(&b, p->ppid);

			workers++;
			ck_assert_ptr_nonnull(parent);
			ck_assert(parent->watch_reason & SHM_WATCH_CUDA);
			ck_assert_uint_gt(p->lat[SHM_FAMILY_DATALOADER_WAIT].count, 0);
		} else {
			trainers++;
			ck_assert(p->watch_reason & SHM_WATCH_CUDA);
			ck_assert_uint_gt(p->lat[SHM_FAMILY_CUDA_LAUNCH].count,
					  pa->lat[SHM_FAMILY_CUDA_LAUNCH].count);
			ck_assert_uint_gt(p->offcpu_blocked_ns, 0);
			ck_assert_uint_gt(p->offcpu_preempted_ns, 0);
		}
	}
	ck_assert_uint_eq(trainers, 4);
	ck_assert_uint_eq(workers, 4);
	ck_assert_uint_gt(sched_b, sched_a);
	ck_assert_uint_gt(migrations, 0);

	/* GPUs: simulated 80 GiB totals, memory within them and moving. */
	gpus = shm_snapshot_gpus(&b, &n);
	ck_assert_uint_eq(n, 4);
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_uint_eq(gpus[i].total_source, SHM_TOTAL_SIMULATED);
		ck_assert_uint_eq(gpus[i].total_bytes, 80ull << 30);
		ck_assert_uint_gt(gpus[i].used_bytes, 0);
		ck_assert_uint_le(gpus[i].used_bytes, gpus[i].total_bytes);
		ck_assert_uint_eq(gpus[i].used_bytes, gpu_mem_sum(&b, gpus[i].gpu_id));
		ck_assert_uint_eq(gpus[i].processes, 1);
		ck_assert_uint_ne(gpus[i].used_bytes, gpu_mem_sum(&a, gpus[i].gpu_id));
	}

	/* NCCL: every op has run with bytes; all_reduce keeps running. */
	ops = shm_snapshot_nccl_ops(&b, &n);
	ck_assert_uint_eq(n, SHM_NCCL_OP_COUNT);
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_msg(ops[i].calls > 0 && ops[i].bytes > 0, "%s idle",
			      shm_nccl_op_name(i));
		ck_assert_uint_eq(ops[i].duration.count, ops[i].calls);
		ck_assert_uint_gt(ops[i].wait.count, 0);
	}
	ck_assert_uint_gt(ops[SHM_NCCL_ALL_REDUCE].calls,
			  shm_snapshot_nccl_ops(&a, &n)[SHM_NCCL_ALL_REDUCE].calls);
	comms = shm_snapshot_nccl_comms(&b, &n);
	ck_assert_uint_eq(n, 4);
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_int_eq(comms[i].nranks, 4);
		ck_assert_int_ge(comms[i].rank, 0);
		ck_assert_int_lt(comms[i].rank, 4);
		ranks_seen |= 1u << comms[i].rank;
		ck_assert_ptr_nonnull(proc_by_pid(&b, comms[i].pid));
	}
	ck_assert_uint_eq(ranks_seen, 0xf);
	check_job_identity(&b);

	shm_snapshot_free(&a);
	shm_snapshot_free(&b);
	ck_assert_int_eq(job_stop(&j), 0);
}
END_TEST

START_TEST(scenarios_behave_as_named)
{
	static const char *const names[SIM_SCENARIO_COUNT] = {
		"steady", "oom", "straggler", "dataloader-stall",
	};
	struct job jobs[SIM_SCENARIO_COUNT];
	struct shm_snapshot snap[SIM_SCENARIO_COUNT];
	double oom_crossed = -1.0, oom_early_max = 0.0;
	const struct shm_nccl_op *steady_ops, *strag_ops;
	uint32_t n;

	memset(snap, 0, sizeof(snap));
	for (int i = 0; i < SIM_SCENARIO_COUNT; i++) {
		const char *extra[] = { "--scenario", names[i], NULL };

		job_start(&jobs[i], extra);
	}

	/* oom: below 95% before its onset, past it within 10 s of start. */
	while (seconds_since(&jobs[SIM_OOM]) < 11.0 && oom_crossed < 0) {
		double fill, t;

		job_read(&jobs[SIM_OOM], &snap[SIM_OOM]);
		t = (double)(snap[SIM_OOM].hdr->heartbeat_mono_ns - jobs[SIM_OOM].started_ns) / 1e9;
		fill = gpu_fill(&snap[SIM_OOM], 0);
		ck_assert(fill <= 1.0);
		if (t < 2.5 && fill > oom_early_max)
			oom_early_max = fill;
		if (fill > 0.95)
			oom_crossed = t;
		tu_sleep_ms(200);
	}
	ck_assert_msg(oom_crossed > 0, "GPU 0 never passed 95%% within 11 s");
	ck_assert_msg(oom_crossed <= 10.0, "GPU 0 passed 95%% only after %.1f s", oom_crossed);
	ck_assert_msg(oom_early_max > 0.3 && oom_early_max < 0.9,
		      "before the onset GPU 0 was at %.2f", oom_early_max);
	/* Only GPU 0 is filled; the others stay at their plateau. */
	ck_assert(gpu_fill(&snap[SIM_OOM], 1) < 0.9);

	/* Give the other scenarios time past their onset, then compare. */
	sleep_until(&jobs[SIM_STEADY], 9.0);
	for (int i = 0; i < SIM_SCENARIO_COUNT; i++) {
		job_read(&jobs[i], &snap[i]);
		ck_assert_str_eq(snap[i].hdr->scenario, names[i]);
	}
	ck_assert(gpu_fill(&snap[SIM_OOM], 0) > 0.95);
	ck_assert(gpu_fill(&snap[SIM_STEADY], 0) < 0.9);

	steady_ops = shm_snapshot_nccl_ops(&snap[SIM_STEADY], &n);
	strag_ops = shm_snapshot_nccl_ops(&snap[SIM_STRAGGLER], &n);
	ck_assert_msg(strag_ops[SHM_NCCL_ALL_REDUCE].duration.window_p99_ns >=
		      5 * steady_ops[SHM_NCCL_ALL_REDUCE].duration.window_p99_ns,
		      "straggler all_reduce p99 %llu ns, steady %llu ns",
		      (unsigned long long)strag_ops[SHM_NCCL_ALL_REDUCE].duration.window_p99_ns,
		      (unsigned long long)steady_ops[SHM_NCCL_ALL_REDUCE].duration.window_p99_ns);
	ck_assert_uint_ge(strag_ops[SHM_NCCL_ALL_REDUCE].wait.window_p99_ns,
			  5 * steady_ops[SHM_NCCL_ALL_REDUCE].wait.window_p99_ns);

	ck_assert_msg(snap[SIM_DATALOADER_STALL].hdr->node[SHM_FAMILY_DATALOADER_WAIT].window_p99_ns >=
		      5 * snap[SIM_STEADY].hdr->node[SHM_FAMILY_DATALOADER_WAIT].window_p99_ns,
		      "stall p99 %llu ns, steady %llu ns",
		      (unsigned long long)snap[SIM_DATALOADER_STALL].hdr->node[SHM_FAMILY_DATALOADER_WAIT].window_p99_ns,
		      (unsigned long long)snap[SIM_STEADY].hdr->node[SHM_FAMILY_DATALOADER_WAIT].window_p99_ns);
	ck_assert_uint_ge(snap[SIM_DATALOADER_STALL].hdr->node[SHM_FAMILY_DATALOADER_WAIT].window_p99_ns,
			  100 * MS);

	for (int i = 0; i < SIM_SCENARIO_COUNT; i++) {
		shm_snapshot_free(&snap[i]);
		ck_assert_int_eq(job_stop(&jobs[i]), 0);
	}
}
END_TEST

START_TEST(thousand_processes_publish_on_time)
{
	const char *extra[] = { "--processes", "1000", "--gpus", "8", NULL };
	struct shm_snapshot a = { 0 }, b = { 0 };
	uint32_t n, descendants = 0;
	const struct shm_proc *p;
	uint64_t publishes;
	struct job j;

	job_start(&j, extra);
	job_read(&j, &a);
	sleep_until(&j, 0.5);
	job_read(&j, &a);
	sleep_until(&j, 3.0);
	job_read(&j, &b);
	/* 2.5 s at 200 ms is 12.5 publishes; allow for scheduling noise. */
	publishes = b.hdr->stats.publishes - a.hdr->stats.publishes;
	ck_assert_msg(publishes >= 10, "only %llu publishes in 2.5 s",
		      (unsigned long long)publishes);
	ck_assert_uint_lt(b.hdr->stats.last_publish_duration_ns, 100 * MS);
	p = shm_snapshot_procs(&b, &n);
	ck_assert_uint_eq(n, 1000);
	for (uint32_t i = 0; i < n; i++)
		descendants += !!(p[i].watch_reason & SHM_WATCH_DESCENDANT);
	ck_assert_uint_eq(descendants, 992);
	ck_assert_uint_gt(b.hdr->node[SHM_FAMILY_FUTEX_WAIT].count,
			  a.hdr->node[SHM_FAMILY_FUTEX_WAIT].count);
	shm_snapshot_free(&a);
	shm_snapshot_free(&b);
	ck_assert_int_eq(job_stop(&j), 0);
}
END_TEST

START_TEST(gpu_memory_total_flag_sets_totals)
{
	const char *extra[] = { "--gpus", "2", "--processes", "2",
				"--gpu-memory-total", "25769803776,42949672960", NULL };
	struct shm_snapshot s = { 0 };
	const struct shm_gpu *g;
	uint32_t n;
	struct job j;

	job_start(&j, extra);
	sleep_until(&j, 1.0);
	job_read(&j, &s);
	g = shm_snapshot_gpus(&s, &n);
	ck_assert_uint_eq(n, 2);
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_uint_eq(g[i].total_source, SHM_TOTAL_FLAG);
		ck_assert_uint_eq(g[i].total_bytes, g[i].gpu_id == 0 ? 24ull << 30 : 40ull << 30);
		ck_assert_uint_gt(g[i].used_bytes, 0);
		ck_assert_uint_le(g[i].used_bytes, g[i].total_bytes * 8 / 10);
	}
	shm_snapshot_free(&s);
	ck_assert_int_eq(job_stop(&j), 0);
}
END_TEST

START_TEST(sigterm_exits_zero_and_removes_the_segment)
{
	struct shm_snapshot s = { 0 };
	char path[128];
	struct stat st;
	struct job j;
	uint64_t t0;
	int status;

	job_start(&j, NULL);
	job_read(&j, &s);
	snprintf(path, sizeof(path), "/dev/shm%s", j.name);
	ck_assert_int_eq(stat(path, &st), 0);
	t0 = now_mono_ns();
	status = tu_stop(j.pid, SIGTERM, 3000);
	j.pid = 0;
	/* Within one poll period (100 ms), give or take process teardown. */
	ck_assert_uint_lt(now_mono_ns() - t0, 500 * MS);
	ck_assert(status != -1 && WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_ne(stat(path, &st), 0);
	shm_snapshot_free(&s);
	job_stop(&j);
}
END_TEST

Suite *simulate_suite(void);
Suite *simulate_suite(void)
{
	Suite *s = suite_create("simulate");
	TCase *tc = tcase_create("binary");

	tcase_set_timeout(tc, 40);
	tcase_add_test(tc, steady_job_is_plausible_and_moving);
	tcase_add_test(tc, scenarios_behave_as_named);
	tcase_add_test(tc, thousand_processes_publish_on_time);
	tcase_add_test(tc, gpu_memory_total_flag_sets_totals);
	tcase_add_test(tc, sigterm_exits_zero_and_removes_the_segment);
	suite_add_tcase(s, tc);
	return s;
}
