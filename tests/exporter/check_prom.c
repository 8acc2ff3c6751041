/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exporter's renderers on a crafted segment whose every value is known:
 * Prometheus text (families, exact labels, hostile process names, histogram
 * invariants), the project's text validator (each violation it must catch),
 * and the WebSocket JSON snapshot.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"
#include "exporter/feed/feed_json.h"
#include "exporter/prom/prom.h"
#include "tests/exporter/prom_validate.h"
#include "common/sbuf.h"
#include "exporter/source.h"
#include "exporter/stats.h"
#include "shm/shm_hist.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

/* A hostile name: quote, backslash, newline, an invalid UTF-8 byte, a tab. */
static const char hostile_comm[] = "x\"y\\z\n\xff\tq";
/* What it must look like inside a Prometheus label value. */
static const char hostile_label[] = "comm=\"x\\\"y\\\\z\\n\xef\xbf\xbd?q\"";

struct fixture {
	char name[64];
	struct shm_writer w;
	struct shm_reader r;
	struct shm_snapshot snap;
	struct sbuf out;
};

static struct fixture fx;

/* A latency series with count samples spread over known buckets. */
static void fill_latency(struct shm_latency *l, uint64_t scale)
{
	memset(l, 0, sizeof(*l));
	l->bucket[3] = 5 * scale;	/* (500 ns, 1 us] */
	l->bucket[6] = 10 * scale;	/* (5 us, 10 us] */
	l->bucket[SHM_LAT_FINITE_BUCKETS] = 1 * scale;	/* above 100 s */
	l->count = 16 * scale;
	l->sum_ns = 123456789012ull * scale;
	l->window_count = 16;
	l->window_p50_ns = 9000;
	l->window_p90_ns = 9500;
	l->window_p99_ns = 20000;
	l->window_max_ns = 200000000000ull;
}

/* The same samples as a workload's: fill_latency's, in both sets of buckets. */
static void fill_workload_latency(struct shm_workload_latency *l, uint64_t scale)
{
	memset(l, 0, sizeof(*l));
	l->bucket[3] = 5 * scale;
	l->fine[hist_bucket_index(800)] = 5 * scale;
	l->bucket[6] = 10 * scale;
	l->fine[hist_bucket_index(8000)] = 10 * scale;
	l->bucket[SHM_LAT_FINITE_BUCKETS] = 1 * scale;
	l->fine[HIST_BUCKETS - 1] = 1 * scale;
	l->count = 16 * scale;
	l->sum_ns = 123456789012ull * scale;
}

/* A workload row of kind with its texts and DataLoader samples (scale as fill_latency's). */
static struct shm_workload *workload(struct shm_workload *w, uint32_t kind, const char *ns,
				     const char *name, uint64_t scale)
{
	memset(w, 0, sizeof(*w));
	w->kind = kind;
	w->processes = 1;
	snprintf(w->namespace, sizeof(w->namespace), "%s", ns);
	snprintf(w->name, sizeof(w->name), "%s", name);
	fill_workload_latency(&w->lat[SHM_FAMILY_DATALOADER_WAIT], scale);
	return w;
}

static void setup(void)
{
	struct shm_writer_opts o;
	struct shm_header_fields *h;
	struct shm_proc *p;
	struct shm_gpu_mem *m;
	struct shm_gpu *g;
	struct shm_nccl_op *ops;
	struct shm_nccl_comm *c;
	struct shm_identity *id;
	struct shm_workload *wl;
	char reason[256];

	memset(&fx, 0, sizeof(fx));
	tu_unique_shm_name(fx.name, sizeof(fx.name));
	tu_shm_opts(&o, fx.name, (struct shm_capacity){ 8, 8, 4, 4 });
	ck_assert_int_eq(shm_writer_create(&fx.w, &o), 0);
	h = &fx.w.base->h;
	shm_writer_begin(&fx.w);

	p = shm_writer_table(&fx.w, SHM_TABLE_PROCS);
	p[0].pid = 100;
	p[0].ppid = 1;
	p[0].watch_reason = SHM_WATCH_CUDA | SHM_WATCH_NCCL;
	snprintf(p[0].comm, SHM_COMM_LEN, "trainer");
	for (int f = 0; f < SHM_FAMILY_COUNT; f++)
		fill_latency(&p[0].lat[f], 1);
	p[0].offcpu_preempted_ns = 1500;
	p[0].offcpu_blocked_ns = 2000000000ull;
	p[0].involuntary_switches = 7;
	p[0].voluntary_switches = 8;
	p[0].migrations = 9;
	p[0].thread_state_ns[SHM_STATE_ONCPU] = 3000000000ull;
	p[0].thread_state_ns[SHM_STATE_GPU] = 250000000ull;
	p[1].pid = 101;
	p[1].ppid = 100;
	p[1].watch_reason = SHM_WATCH_DESCENDANT;
	memcpy(p[1].comm, hostile_comm, sizeof(hostile_comm));
	fill_latency(&p[1].lat[SHM_FAMILY_DATALOADER_WAIT], 2);
	p[2].pid = 102;		/* watched, but no sample in any family */
	p[2].ppid = 1;
	p[2].watch_reason = SHM_WATCH_PID;
	snprintf(p[2].comm, SHM_COMM_LEN, "idle");
	h->table[SHM_TABLE_PROCS].count = 3;

	/*
	 * Identity: process 100 in a pod with ranks; 101's texts are what a
	 * hostile workload could name (invalid UTF-8, a control character);
	 * 102 has no identity row (the segment validator refuses unterminated
	 * texts and rows of another pid: check_shm_reader).
	 */
	id = shm_writer_table(&fx.w, SHM_TABLE_IDENTITY);
	id[0] = (struct shm_identity){ .pid = 100, .runtime = SHM_ID_RUNTIME_CONTAINERD,
				       .flags = SHM_ID_F_READ, .rank = 3, .local_rank = 1,
				       .world_size = 8, .group_rank = -1, .slurm_job_id = 0 };
	snprintf(id[0].pod, sizeof(id[0].pod), "trainer-0");
	snprintf(id[0].namespace, sizeof(id[0].namespace), "ml");
	snprintf(id[0].container, sizeof(id[0].container), "trainer");
	snprintf(id[0].run_id, sizeof(id[0].run_id), "run \"7\"");
	id[1] = (struct shm_identity){ .pid = 101, .flags = SHM_ID_F_READ, .rank = -1,
				       .local_rank = -1, .world_size = -1, .group_rank = -1,
				       .slurm_job_id = 4242 };
	snprintf(id[1].pod, sizeof(id[1].pod), "pod-\xff\xfe");
	snprintf(id[1].namespace, sizeof(id[1].namespace), "ml\tx");
	snprintf(id[1].slurm_step, sizeof(id[1].slurm_step), "batch");
	h->table[SHM_TABLE_IDENTITY].count = 2;
	/* Their workloads, as the collector keeps them: 100's pod, 101's Slurm job. */
	wl = shm_writer_table(&fx.w, SHM_TABLE_WORKLOADS);
	workload(&wl[0], SHM_WORKLOAD_POD, "ml", "trainer-0", 1);
	for (int f = 0; f < SHM_FAMILY_COUNT; f++)
		fill_workload_latency(&wl[0].lat[f], 1);
	workload(&wl[1], SHM_WORKLOAD_SLURM_JOB, "", "4242", 2);
	h->table[SHM_TABLE_WORKLOADS].count = 2;

	m = shm_writer_table(&fx.w, SHM_TABLE_GPU_MEM);
	/*
	 * The driver's figures: 100 on GPU 0 (beside the probes'), none on GPU
	 * 1, and 101 on GPU 0 in a row of the figure alone; GPU 0's used
	 * memory is the driver's.
	 */
	m[0] = (struct shm_gpu_mem){ .pid = 100, .gpu_id = 0, .used_bytes = 1000,
				     .peak_bytes = 2000, .alloc_calls = 3, .free_calls = 2,
				     .failed_calls = 1, .flags = SHM_GPU_MEM_F_DRIVER,
				     .driver_used_bytes = 3000 };
	m[1] = (struct shm_gpu_mem){ .pid = 100, .gpu_id = 1, .used_bytes = 5,
				     .peak_bytes = 5, .alloc_calls = 1 };
	m[2] = (struct shm_gpu_mem){ .pid = 101, .gpu_id = 0, .cuda_device = SHM_GPU_UNKNOWN,
				     .gpu_map = SHM_GPU_MAP_DRIVER,
				     .flags = SHM_GPU_MEM_F_DRIVER | SHM_GPU_MEM_F_DRIVER_ROW,
				     .driver_used_bytes = 4096 };
	h->table[SHM_TABLE_GPU_MEM].count = 3;
	g = shm_writer_table(&fx.w, SHM_TABLE_GPUS);
	g[0] = (struct shm_gpu){ .gpu_id = 0, .total_source = SHM_TOTAL_SIMULATED,
				 .total_bytes = 80000000000ull, .used_bytes = 9000, .processes = 2,
				 .used_source = SHM_USED_DRIVER };
	g[1] = (struct shm_gpu){ .gpu_id = 1, .total_source = SHM_TOTAL_UNKNOWN,
				 .used_bytes = 5, .processes = 1 };
	h->table[SHM_TABLE_GPUS].count = 2;

	ops = shm_writer_table(&fx.w, SHM_TABLE_NCCL_OPS);
	ops[SHM_NCCL_ALL_REDUCE].calls = 16;
	ops[SHM_NCCL_ALL_REDUCE].bytes = 4096;
	ops[SHM_NCCL_ALL_REDUCE].errors = 1;
	fill_latency(&ops[SHM_NCCL_ALL_REDUCE].duration, 1);
	fill_latency(&ops[SHM_NCCL_ALL_REDUCE].wait, 3);
	c = shm_writer_table(&fx.w, SHM_TABLE_NCCL_COMMS);
	c[0] = (struct shm_nccl_comm){ .pid = 100, .rank = 0, .nranks = 2, .gpu_id = UINT32_MAX,
				       .comm_id = 0xabcdef, .calls = 40, .bytes = 640, .pending = 2,
				       .stalled_ns = 1500000000ull };
	fill_latency(&c[0].wait, 2);
	h->table[SHM_TABLE_NCCL_COMMS].count = 1;

	fill_latency(&h->node[SHM_FAMILY_CUDA_LAUNCH], 1);
	h->node[SHM_FAMILY_CUDA_LAUNCH].window_p50_ns = 8000;
	fill_latency(&h->node[SHM_FAMILY_DATALOADER_WAIT], 1);
	h->node[SHM_FAMILY_DATALOADER_WAIT].window_p50_ns = 2500000;
	h->node[SHM_FAMILY_DATALOADER_WAIT].window_p90_ns = 3000000;
	h->node[SHM_FAMILY_DATALOADER_WAIT].window_p99_ns = 3000000;
	h->stats.events_total = 77;
	h->stats.events_dropped = 3;
	h->table[SHM_TABLE_PROCS].overflows = 4;
	snprintf(h->scenario, sizeof(h->scenario), "steady");
	h->heartbeat_mono_ns = now_mono_ns();
	h->heartbeat_real_ns = 1700000000123456789ull;
	shm_writer_end(&fx.w);

	shm_reader_init(&fx.r, fx.name);
	ck_assert_msg(shm_reader_snapshot(&fx.r, &fx.snap, reason, sizeof(reason)) == SHM_READ_OK,
		      "crafted segment rejected: %s", reason);
	sbuf_init(&fx.out, 64u << 20, 0);
}

static void teardown(void)
{
	sbuf_free(&fx.out);
	shm_snapshot_free(&fx.snap);
	shm_reader_close(&fx.r);
	shm_writer_close(&fx.w, 1);
}

static const struct cat_status fresh_status = {
	.status = SHM_READ_OK, .reason = "", .seen = 1, .generation = 42,
	.age_ns = 250000000, .last_update_real_ns = 1700000000123456789ull,
};

static void render_all(void)
{
	struct exporter_stats stats;
	char err[256];
	int v;

	memset(&stats, 0, sizeof(stats));
	ck_assert_int_eq(prom_render_data(&(struct prom_out){ .b = &fx.out }, &fx.snap), 0);
	ck_assert_int_eq(prom_render_self(&(struct prom_out){ .b = &fx.out }, &fresh_status, &stats), 0);
	v = prom_validate(fx.out.data, fx.out.len, err, sizeof(err));
	ck_assert_msg(v == 0, "validator: %s", err);
}

/* The exact line "<series> <value>\n" is in the output. */
static void assert_line(const char *line)
{
	char want[2048];

	snprintf(want, sizeof(want), "\n%s\n", line);
	ck_assert_msg(strstr(fx.out.data, want), "missing line: %s", line);
}

static void assert_substring(const char *s)
{
	ck_assert_msg(strstr(fx.out.data, s), "missing text: %s", s);
}

static void assert_no_substring(const char *s)
{
	ck_assert_msg(!strstr(fx.out.data, s), "unexpected text: %s", s);
}

START_TEST(prom_contract_families_have_exact_labels_and_values)
{
	render_all();
	assert_line("zernel_gpu_memory_used_bytes{pid=\"100\",gpu_id=\"0\"} 1000");
	assert_line("zernel_gpu_memory_peak_bytes{pid=\"100\",gpu_id=\"0\"} 2000");
	assert_line("zernel_gpu_memory_used_bytes{pid=\"100\",gpu_id=\"1\"} 5");
	assert_line("zernel_cuda_launch_latency_seconds{pid=\"100\",quantile=\"0.5\"} 0.000009");
	assert_line("zernel_cuda_launch_latency_seconds{pid=\"100\",quantile=\"0.99\"} 0.00002");
	assert_line("zernel_cuda_launch_latency_seconds_count{pid=\"100\"} 16");
	assert_line("zernel_cuda_launch_latency_seconds_sum{pid=\"100\"} 123.456789012");
	assert_line("zernel_nccl_collective_duration_seconds{op=\"all_reduce\",quantile=\"0.5\"} 0.000009");
	assert_line("zernel_nccl_collective_duration_seconds{op=\"all_reduce\",quantile=\"0.99\"} 0.00002");
	assert_line("zernel_dataloader_wait_seconds{pid=\"100\",quantile=\"0.5\"} 0.000009");
	assert_line("zernel_dataloader_wait_seconds{pid=\"101\",quantile=\"0.99\"} 0.00002");
	assert_line("zernel_dataloader_wait_seconds_count{pid=\"101\"} 32");
	/* Every NCCL op has its series, even those never called (no window: NaN). */
	assert_line("zernel_nccl_collective_duration_seconds{op=\"recv\",quantile=\"0.5\"} NaN");
	for (uint32_t op = 0; op < SHM_NCCL_OP_COUNT; op++) {
		char line[128];

		snprintf(line, sizeof(line), "zernel_nccl_calls_total{op=\"%s\"} %d",
			 shm_nccl_op_name(op), op == SHM_NCCL_ALL_REDUCE ? 16 : 0);
		assert_line(line);
	}
	assert_line("zernel_nccl_bytes_total{op=\"all_reduce\"} 4096");
	assert_line("zernel_nccl_errors_total{op=\"all_reduce\"} 1");
	/* One HELP and one TYPE each, typed as the contract says. */
	assert_line("# TYPE zernel_cuda_launch_latency_seconds summary");
	assert_line("# TYPE zernel_gpu_memory_used_bytes gauge");
	assert_line("# TYPE zernel_cuda_launch_duration_seconds histogram");
}
END_TEST

START_TEST(prom_other_families_have_exact_labels)
{
	char line[256];

	render_all();
	assert_line("zernel_dist_sync_wait_seconds{pid=\"100\",kind=\"futex\",quantile=\"0.5\"} 0.000009");
	assert_line("zernel_dist_sync_wait_seconds{pid=\"100\",kind=\"barrier\",quantile=\"0.99\"} 0.00002");
	assert_line("zernel_sched_runqueue_delay_seconds_count{pid=\"100\"} 16");
	assert_line("zernel_sched_offcpu_seconds_total{pid=\"100\",reason=\"preempted\"} 0.0000015");
	assert_line("zernel_sched_offcpu_seconds_total{pid=\"100\",reason=\"blocked\"} 2");
	assert_line("zernel_sched_involuntary_switches_total{pid=\"100\"} 7");
	assert_line("zernel_sched_voluntary_switches_total{pid=\"100\"} 8");
	assert_line("zernel_sched_migrations_total{pid=\"100\"} 9");
	assert_line("zernel_gpu_memory_alloc_calls_total{pid=\"100\",gpu_id=\"0\"} 3");
	assert_line("zernel_gpu_memory_free_calls_total{pid=\"100\",gpu_id=\"0\"} 2");
	assert_line("zernel_gpu_memory_alloc_failures_total{pid=\"100\",gpu_id=\"0\"} 1");
	assert_line("zernel_gpu_memory_total_bytes{gpu_id=\"0\"} 80000000000");
	/* GPU 1's size is unknown: no total rather than a false 0. */
	assert_no_substring("zernel_gpu_memory_total_bytes{gpu_id=\"1\"}");
	assert_line("zernel_gpu_memory_device_used_bytes{gpu_id=\"0\",source=\"driver\"} 9000");
	assert_line("zernel_gpu_memory_device_used_bytes{gpu_id=\"1\",source=\"processes\"} 5");
	/* The driver's figure only where it is known, with the rows' labels. */
	assert_line("zernel_gpu_memory_driver_used_bytes{pid=\"100\",gpu_id=\"0\"} 3000");
	assert_line("zernel_gpu_memory_driver_used_bytes{pid=\"101\",gpu_id=\"0\"} 4096");
	assert_no_substring("zernel_gpu_memory_driver_used_bytes{pid=\"100\",gpu_id=\"1\"}");
	assert_line("# TYPE zernel_gpu_memory_driver_used_bytes gauge");
	/* A row of the figure alone: the probes saw nothing, its own ordinal is not known. */
	assert_line("zernel_gpu_memory_used_bytes{pid=\"101\",gpu_id=\"0\"} 0");
	assert_line("zernel_gpu_memory_info{pid=\"101\",gpu_id=\"0\",UUID=\"\",modelName=\"\","
		    "cuda_device=\"\",gpu_map=\"driver\"} 1");
	assert_line("zernel_gpu_memory_info{pid=\"100\",gpu_id=\"1\",UUID=\"\",modelName=\"\","
		    "cuda_device=\"0\",gpu_map=\"ordinal\"} 1");
	assert_line("zernel_nccl_comm_info{comm=\"0xabcdef\",rank=\"0\",pid=\"100\",world_size=\"2\",gpu_id=\"\",origin=\"init_rank\",parent=\"0x0\"} 1");
	assert_line("zernel_nccl_comm_calls_total{comm=\"0xabcdef\",rank=\"0\",pid=\"100\"} 40");
	assert_line("zernel_nccl_comm_bytes_total{comm=\"0xabcdef\",rank=\"0\",pid=\"100\"} 640");
	assert_line("zernel_nccl_comm_pending{comm=\"0xabcdef\",rank=\"0\",pid=\"100\"} 2");
	assert_line("zernel_nccl_comm_stalled_seconds{comm=\"0xabcdef\",rank=\"0\",pid=\"100\"} 1.5");
	assert_line("zernel_nccl_comm_wait_seconds_count{comm=\"0xabcdef\",rank=\"0\",pid=\"100\"} 32");
	/* No gap sample yet: no series. */
	assert_no_substring("zernel_nccl_comm_gap_seconds{");
	assert_line("zernel_nccl_untracked_total{reason=\"captured\"} 0");
	assert_line("zernel_nccl_wait_seconds_count{op=\"all_reduce\"} 48");
	assert_line("zernel_process_info{pid=\"100\",ppid=\"1\",comm=\"trainer\",watch_reason=\"cuda,nccl\","
		    "pod=\"trainer-0\",namespace=\"ml\",container=\"trainer\",container_runtime=\"containerd\","
		    "container_id=\"unknown\",pod_uid=\"unknown\",slurm_job=\"unknown\",slurm_step=\"unknown\","
		    "rank=\"3\",local_rank=\"1\",world_size=\"8\",group_rank=\"unknown\","
		    "torchelastic_run_id=\"run \\\"7\\\"\"} 1");
	/* Invalid UTF-8 and control characters say unknown; the row's own job stays. */
	assert_substring("pod=\"unknown\",namespace=\"unknown\",container=\"unknown\","
			 "container_runtime=\"unknown\",container_id=\"unknown\",pod_uid=\"unknown\","
			 "slurm_job=\"4242\",slurm_step=\"batch\"");
	/* No identity row: every label unknown. */
	assert_substring("zernel_process_info{pid=\"102\",ppid=\"1\",comm=\"idle\",watch_reason=\"pid\","
			 "pod=\"unknown\",namespace=\"unknown\"");
	assert_line("zernel_events_total 77");
	assert_line("zernel_events_dropped_total 3");
	assert_line("zernel_processes_tracked 3");
	assert_line("zernel_table_overflows_total{table=\"procs\"} 4");
	snprintf(line, sizeof(line), "zernel_collector_info{mode=\"simulate\",scenario=\"steady\","
		 "writer_pid=\"%d\"} 1", (int)getpid());
	assert_line(line);
	assert_line("zernel_collector_up 1");
	assert_line("zernel_collector_status{status=\"ok\"} 1");
	assert_line("zernel_segment_generation 42");
	assert_line("zernel_collector_last_publish_age_seconds 0.25");
	assert_line("zernel_collector_last_publish_timestamp_seconds 1700000000.123456789");
	/* Thread states: the states entered, and no series for the others. */
	assert_line("zernel_thread_state_seconds_total{pid=\"100\",state=\"oncpu\"} 3");
	assert_line("zernel_thread_state_seconds_total{pid=\"100\",state=\"gpu\"} 0.25");
	assert_no_substring("zernel_thread_state_seconds_total{pid=\"100\",state=\"runq\"}");
	assert_no_substring("zernel_thread_state_seconds_total{pid=\"102\"");
	/* A process with no sample in a family has no series in it. */
	assert_no_substring("pid=\"102\",quantile");
	assert_no_substring("{pid=\"102\",le=");
	assert_no_substring("zernel_cuda_launch_latency_seconds_count{pid=\"101\"}");
}
END_TEST

/*
 * Adds a process with DataLoader samples and the identity id (pid set
 * here) to the fixture's segment, and reads the segment again.
 */
/* Publishes one more workload row: kind with its texts, DataLoader samples only. */
static void add_workload(uint32_t kind, const char *ns, const char *name)
{
	struct shm_header_fields *h = &fx.w.base->h;
	struct shm_workload *wl = shm_writer_table(&fx.w, SHM_TABLE_WORKLOADS);
	char reason[256];

	shm_writer_begin(&fx.w);
	workload(&wl[h->table[SHM_TABLE_WORKLOADS].count++], kind, ns, name, 1);
	h->heartbeat_mono_ns = now_mono_ns();
	shm_writer_end(&fx.w);
	shm_snapshot_free(&fx.snap);
	ck_assert_msg(shm_reader_snapshot(&fx.r, &fx.snap, reason, sizeof(reason)) == SHM_READ_OK,
		      "crafted segment rejected: %s", reason);
}

/*
 * Each kind of workload is labelled as zernel_process_info names it, so
 * a join finds its processes; never "job", which Prometheus sets on every
 * series of a target (and which would replace it under honor_labels).
 */
START_TEST(prom_workload_histograms_are_labelled_by_their_identity)
{
	add_workload(SHM_WORKLOAD_POD_UID, "", "0f6b3a7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b");
	add_workload(SHM_WORKLOAD_CONTAINER, "", "beef01");
	add_workload(SHM_WORKLOAD_RUN, "", "elastic \"9\"");
	add_workload(SHM_WORKLOAD_NODE, "", "");
	render_all();
	assert_line("zernel_dataloader_wait_duration_seconds_count{namespace=\"ml\",pod=\"trainer-0\"} 16");
	assert_line("zernel_dataloader_wait_duration_seconds_count{slurm_job=\"4242\"} 32");
	assert_line("zernel_dataloader_wait_duration_seconds_count"
		    "{pod_uid=\"0f6b3a7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b\"} 16");
	assert_line("zernel_dataloader_wait_duration_seconds_count{container_id=\"beef01\"} 16");
	assert_line("zernel_dataloader_wait_duration_seconds_count{torchelastic_run_id=\"elastic \\\"9\\\"\"} 16");
	/* The node's row: processes with no workload found. */
	assert_line("zernel_dataloader_wait_duration_seconds_count 16");
	assert_no_substring("{job=");
	assert_no_substring(",job=");
}
END_TEST

/*
 * A workload's texts come from names workloads choose: one that is not
 * printable UTF-8 says "unknown", and two rows that both read "unknown"
 * print one series holding both rows' samples, not the same series twice
 * (a scrape Prometheus would refuse whole).
 */
START_TEST(prom_workload_texts_are_checked_and_never_repeat_a_series)
{
	char err[256];

	add_workload(SHM_WORKLOAD_CONTAINER, "", "c0\xff\xfe");
	add_workload(SHM_WORKLOAD_CONTAINER, "", "c1\x01");
	add_workload(SHM_WORKLOAD_POD, "ns\tx", "p");
	render_all();
	assert_line("zernel_dataloader_wait_duration_seconds_count{container_id=\"unknown\"} 32");
	assert_line("zernel_dataloader_wait_duration_seconds_bucket{container_id=\"unknown\",le=\"1e-06\"} 10");
	assert_line("zernel_dataloader_wait_duration_seconds_count{namespace=\"unknown\",pod=\"p\"} 16");
	ck_assert_msg(prom_validate(fx.out.data, fx.out.len, err, sizeof(err)) == 0, "%s", err);
}
END_TEST

START_TEST(prom_hostile_comm_is_escaped_and_valid_utf8)
{
	render_all();
	ck_assert_msg(strstr(fx.out.data, hostile_label), "escaped comm not found");
	/* The raw newline never reaches the output inside a label. */
	ck_assert_ptr_null(strstr(fx.out.data, "z\n\xff"));
}
END_TEST

START_TEST(prom_histograms_are_cumulative_and_inf_equals_count)
{
	const uint64_t bounds[SHM_LAT_FINITE_BUCKETS] = SHM_LAT_BOUNDS_NS_INIT;
	char line[256];

	render_all();
	/* Ground truth from fill_latency: 5 at <= 1 us, 10 more at <= 10 us, 1 above 100 s. */
	for (unsigned int i = 0; i < SHM_LAT_FINITE_BUCKETS; i++) {
		unsigned int want = bounds[i] >= 10000 ? 15 : bounds[i] >= 1000 ? 5 : 0;

		snprintf(line, sizeof(line),
			 "zernel_cuda_launch_duration_seconds_bucket{namespace=\"ml\",pod=\"trainer-0\",le=\"%s\"} %u",
			 prom_le(i), want);
		assert_line(line);
		snprintf(line, sizeof(line),
			 "zernel_dataloader_wait_duration_seconds_bucket{slurm_job=\"4242\",le=\"%s\"} %u",
			 prom_le(i), 2 * want);
		assert_line(line);
	}
	/* Per workload: 100 is pod ml/trainer-0, 101 Slurm job 4242. */
	assert_line("zernel_cuda_launch_duration_seconds_bucket{namespace=\"ml\",pod=\"trainer-0\",le=\"+Inf\"} 16");
	assert_line("zernel_cuda_launch_duration_seconds_count{namespace=\"ml\",pod=\"trainer-0\"} 16");
	assert_line("zernel_dataloader_wait_duration_seconds_bucket{slurm_job=\"4242\",le=\"+Inf\"} 32");
	assert_no_substring("_bucket{pid=");
	/* One per process on request. */
	prom_set_per_pid_histograms(1);
	sbuf_reset(&fx.out);
	render_all();
	prom_set_per_pid_histograms(0);
	assert_line("zernel_cuda_launch_duration_seconds_bucket{pid=\"100\",le=\"+Inf\"} 16");
	assert_line("zernel_dataloader_wait_duration_seconds_bucket{pid=\"101\",le=\"+Inf\"} 32");
	assert_no_substring("pod=\"trainer-0\",le=");
	assert_line("zernel_nccl_collective_seconds_bucket{op=\"all_reduce\",le=\"1e-05\"} 15");
	assert_line("zernel_nccl_wait_duration_seconds_bucket{op=\"all_reduce\",le=\"+Inf\"} 48");
}
END_TEST

START_TEST(prom_le_values_are_the_segment_bounds_in_seconds)
{
	const uint64_t bounds[SHM_LAT_FINITE_BUCKETS] = SHM_LAT_BOUNDS_NS_INIT;

	for (unsigned int i = 0; i < SHM_LAT_FINITE_BUCKETS; i++) {
		double v = strtod(prom_le(i), NULL);

		ck_assert_msg(v == (double)bounds[i] / 1e9, "le %s for %llu ns", prom_le(i),
			      (unsigned long long)bounds[i]);
		ck_assert_ptr_null(strchr(prom_le(i), ' '));
	}
	ck_assert_str_eq(prom_le(0), "1e-07");
	ck_assert_str_eq(prom_le(1), "2.5e-07");
	ck_assert_str_eq(prom_le(SHM_LAT_FINITE_BUCKETS - 1), "100");
	ck_assert_str_eq(prom_le(SHM_LAT_FINITE_BUCKETS), "+Inf");
}
END_TEST

START_TEST(prom_not_fresh_omits_data_and_says_why)
{
	struct exporter_stats stats;
	struct cat_status st = {
		.status = SHM_READ_STALE,
		.reason = "stale: last publish 9 s ago\n# TYPE injected gauge",
		.seen = 1, .generation = 7, .age_ns = 9000000000ull,
		.last_update_real_ns = 1700000000000000000ull,
	};
	char err[256];

	memset(&stats, 0, sizeof(stats));
	stats.v[CAT_STAT_WS_FRAMES_DROPPED] = 5;
	ck_assert_int_eq(prom_render_self(&(struct prom_out){ .b = &fx.out }, &st, &stats), 0);
	ck_assert_msg(prom_validate(fx.out.data, fx.out.len, err, sizeof(err)) == 0, "%s", err);
	assert_line("zernel_collector_up 0");
	assert_line("zernel_collector_status{status=\"stale\"} 1");
	assert_line("zernel_collector_last_publish_age_seconds 9");
	assert_line("zernel_segment_generation 7");
	assert_line("zernel_exporter_ws_frames_dropped_total 5");
	/* The reason is one comment line: its newline cannot start a new line. */
	ck_assert_ptr_nonnull(strstr(fx.out.data, "last publish 9 s ago # TYPE injected gauge\n"));
	ck_assert_ptr_null(strstr(fx.out.data, "\n# TYPE injected"));
	assert_no_substring("zernel_gpu_memory_used_bytes");

	/* Never seen: no age nor generation to report. */
	sbuf_reset(&fx.out);
	st.status = SHM_READ_MISSING;
	st.seen = 0;
	ck_assert_int_eq(prom_render_self(&(struct prom_out){ .b = &fx.out }, &st, &stats), 0);
	assert_line("zernel_collector_status{status=\"missing\"} 1");
	assert_no_substring("zernel_segment_generation");
	assert_no_substring("zernel_collector_last_publish_age_seconds");
}
END_TEST

START_TEST(prom_output_is_bounded)
{
	struct sbuf small;

	sbuf_init(&small, 1000, 0);
	ck_assert_int_eq(prom_render_data(&(struct prom_out){ .b = &small }, &fx.snap), -E2BIG);
	ck_assert_uint_le(small.len, 1000);
	sbuf_free(&small);
}
END_TEST

/* ---- the validator must be able to fail --------------------------------- */

static const char valid_text[] =
	"# HELP a_total A counter.\n# TYPE a_total counter\na_total{x=\"1\"} 3\n"
	"# HELP h A histogram.\n# TYPE h histogram\n"
	"h_bucket{le=\"0.1\"} 1\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 4.5\nh_count 3\n"
	"# HELP s A summary.\n# TYPE s summary\n"
	"s{quantile=\"0.5\"} 1\ns{quantile=\"0.99\"} NaN\ns_sum 2\ns_count 2\n"
	"# a comment\n# HELP g A gauge \\\\ with \\n escapes.\n# TYPE g gauge\n"
	"g{v=\"q\\\"b\\\\s\\n\"} -1.5e-3\n";

static void expect_invalid(const char *text, const char *why)
{
	char err[256];
	int r = prom_validate(text, strlen(text), err, sizeof(err));

	ck_assert_msg(r == -EINVAL, "accepted text that should fail with \"%s\"", why);
	ck_assert_msg(strstr(err, why), "error \"%s\" does not mention \"%s\"", err, why);
}

START_TEST(validate_accepts_valid_text)
{
	char err[256];

	ck_assert_msg(prom_validate(valid_text, strlen(valid_text), err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(prom_validate("", 0, err, sizeof(err)), 0);
}
END_TEST

START_TEST(validate_catches_each_violation)
{
	expect_invalid("# HELP g x\n# TYPE g gauge\ng 1\ng 2\n", "duplicate series");
	expect_invalid("# HELP g x\n# TYPE g gauge\ng{a=\"1\",b=\"2\"} 1\ng{b=\"2\",a=\"1\"} 2\n",
		       "duplicate series");
	expect_invalid("# HELP g x\n# HELP g y\n# TYPE g gauge\ng 1\n", "second HELP");
	expect_invalid("# HELP g x\n# TYPE g gauge\n# TYPE g gauge\ng 1\n", "second TYPE");
	expect_invalid("# HELP g x\n# TYPE g gauge\ng 1\n# TYPE g gauge\n", "after its samples");
	expect_invalid("# TYPE g gauge\ng 1\n", "no HELP");
	expect_invalid("g 1\n", "no TYPE");
	expect_invalid("# HELP g x\n# TYPE g gauge\n# HELP k x\n# TYPE k gauge\n"
		       "g{a=\"1\"} 1\nk 1\ng{a=\"2\"} 1\n", "not contiguous");
	expect_invalid("# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
		       "h_bucket{le=\"+Inf\"} 3\nh_sum 1\nh_count 4\n", "differs from _count");
	expect_invalid("# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
		       "h_bucket{le=\"2\"} 1\nh_bucket{le=\"+Inf\"} 3\nh_sum 1\nh_count 3\n",
		       "not cumulative");
	expect_invalid("# HELP h x\n# TYPE h histogram\nh_bucket{le=\"2\"} 1\n"
		       "h_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\nh_sum 1\nh_count 3\n",
		       "not increasing");
	expect_invalid("# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_sum 1\nh_count 2\n",
		       "no le=\"+Inf\"");
	expect_invalid("# HELP h x\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n",
		       "lacks _sum or _count");
	expect_invalid("# HELP h x\n# TYPE h histogram\nh 1\n", "without _bucket");
	expect_invalid("# HELP g x\n# TYPE g gauge\ng{a=\"\\t\"} 1\n", "invalid escape");
	expect_invalid("# HELP g x\n# TYPE g gauge\ng{a=\"\xff\"} 1\n", "not valid UTF-8");
	expect_invalid("# HELP g x\n# TYPE g gauge\ng{a=\"1\"\n", "unterminated");
	expect_invalid("# HELP g x\n# TYPE g gauge\ng{a=\"1\",a=\"2\"} 1\n", "given twice");
	expect_invalid("# HELP g x\n# TYPE g gauge\ng{__a=\"1\"} 1\n", "reserved");
	expect_invalid("# HELP g x\n# TYPE g gauge\ng{le=\"1\"} 1\n", "le label outside");
	expect_invalid("# HELP g x\n# TYPE g gauge\ng one\n", "bad value");
	expect_invalid("# HELP c x\n# TYPE c counter\nc 1\n", "does not end in _total");
	expect_invalid("# HELP c_total x\n# TYPE c_total counter\nc_total -1\n", "negative");
	expect_invalid("# HELP s x\n# TYPE s summary\ns{quantile=\"1.5\"} 1\ns_sum 1\ns_count 1\n",
		       "outside [0, 1]");
	expect_invalid("# HELP g x\n# TYPE g gauge\ng 1", "newline");
	expect_invalid("# HELP g x\n# TYPE g wobble\n", "unknown type");
	expect_invalid("# HELP g bad \\t escape\n# TYPE g gauge\n", "invalid escape");
	expect_invalid("# HELP g x\n", "HELP or TYPE but not both");
}
END_TEST

/* ---- small pieces ------------------------------------------------------- */

START_TEST(sbuf_seconds_is_exact_and_short)
{
	struct sbuf b;

	sbuf_init(&b, 1024, 0);
	sbuf_seconds(&b, 0);
	sbuf_puts(&b, " ");
	sbuf_seconds(&b, 1500);
	sbuf_puts(&b, " ");
	sbuf_seconds(&b, 12 * NSEC_PER_SEC);
	sbuf_puts(&b, " ");
	sbuf_seconds(&b, UINT64_MAX);
	ck_assert_str_eq(b.data, "0 0.0000015 12 18446744073.709551615");
	sbuf_free(&b);

	sbuf_init(&b, 8, 0);
	ck_assert_int_eq(sbuf_puts(&b, "12345678"), 0);
	ck_assert_int_eq(sbuf_puts(&b, "9"), -E2BIG);
	ck_assert_int_eq(sbuf_printf(&b, "%d", 1), -E2BIG);
	ck_assert_str_eq(b.data, "12345678");
	sbuf_free(&b);
}
END_TEST

/* ---- the JSON snapshot -------------------------------------------------- */

static struct json_object *render_json(const struct shm_snapshot *snap,
				       const struct cat_status *st)
{
	struct exporter_stats stats;
	struct json_object *root;

	memset(&stats, 0, sizeof(stats));
	ck_assert_int_eq(feed_render(&fx.out, snap, st, &stats, NULL), 0);
	root = json_tokener_parse(fx.out.data);
	ck_assert_msg(root != NULL, "not JSON: %.200s", fx.out.data);
	return root;
}

static struct json_object *key(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, k, &v), "key %s missing", k);
	return v;
}

START_TEST(feed_has_contract_keys_with_values)
{
	struct json_object *root = render_json(&fx.snap, &fresh_status);
	struct json_object *util = key(root, "gpu_utilization"), *e, *procs, *p;

	ck_assert_int_eq(json_object_array_length(util), 3);
	e = json_object_array_get_idx(util, 0);
	ck_assert_str_eq(json_object_get_string(key(e, "key")), "100:0");
	ck_assert_int_eq(json_object_get_int64(key(e, "current_bytes")), 1000);
	ck_assert_int_eq(json_object_get_int64(key(e, "peak_bytes")), 2000);
	/* Node-wide series, not per process: 8 us, 20 us. */
	ck_assert_double_eq_tol(json_object_get_double(key(root, "cuda_latency_p50_us")), 8.0, 1e-9);
	ck_assert_double_eq_tol(json_object_get_double(key(root, "cuda_latency_p99_us")), 20.0, 1e-9);
	ck_assert_double_eq_tol(json_object_get_double(key(root, "nccl_allreduce_p50_ms")), 0.009, 1e-12);
	ck_assert_double_eq_tol(json_object_get_double(key(root, "nccl_allreduce_p99_ms")), 0.02, 1e-12);
	ck_assert_double_eq_tol(json_object_get_double(key(root, "dataloader_wait_p50_ms")), 2.5, 1e-9);
	ck_assert_int_eq(json_object_get_int64(key(root, "last_update_ms")), 1700000000123ll);
	ck_assert(json_object_get_boolean(key(root, "collector_up")));
	ck_assert_int_eq(json_object_array_length(key(root, "alerts")), 0);
	ck_assert_int_eq(json_object_array_length(key(root, "nccl")), SHM_NCCL_OP_COUNT);
	ck_assert_int_eq(json_object_array_length(key(root, "gpus")), 2);

	procs = key(root, "processes");
	ck_assert_int_eq(json_object_array_length(procs), 3);
	p = json_object_array_get_idx(procs, 0);
	ck_assert_int_eq(json_object_get_int64(key(p, "pid")), 100);
	ck_assert_int_eq(json_object_get_int64(key(p, "gpu_bytes")), 1005);
	ck_assert_int_eq(json_object_get_int64(key(p, "cuda_launch_count")), 16);
	ck_assert_str_eq(json_object_get_string(key(p, "watch_reason")), "cuda,nccl");
	ck_assert_double_eq_tol(json_object_get_double(key(p, "cuda_launch_p50_us")), 9.0, 1e-9);
	/* The hostile name arrives as valid UTF-8, control characters replaced. */
	p = json_object_array_get_idx(procs, 1);
	ck_assert_str_eq(json_object_get_string(key(p, "comm")), "x\"y\\z\n\xef\xbf\xbd?q");
	json_object_put(root);
}
END_TEST

START_TEST(feed_not_fresh_presents_no_data)
{
	struct cat_status st = {
		.status = SHM_READ_MISSING, .reason = "missing: no segment /x", .seen = 1,
		.generation = 9, .last_update_real_ns = 1700000000123456789ull,
	};
	/* Even handed a snapshot, a non-fresh status must not show its values. */
	struct json_object *root = render_json(&fx.snap, &st);

	ck_assert(!json_object_get_boolean(key(root, "collector_up")));
	ck_assert_str_eq(json_object_get_string(key(root, "status")), "missing");
	ck_assert_str_eq(json_object_get_string(key(root, "stale_reason")), "missing: no segment /x");
	ck_assert_int_eq(json_object_array_length(key(root, "gpu_utilization")), 0);
	ck_assert_int_eq(json_object_array_length(key(root, "processes")), 0);
	ck_assert_double_eq(json_object_get_double(key(root, "cuda_latency_p99_us")), 0.0);
	ck_assert_int_eq(json_object_get_int64(key(root, "last_update_ms")), 1700000000123ll);
	json_object_put(root);
}
END_TEST

Suite *prom_suite(void);
Suite *prom_suite(void)
{
	Suite *s = suite_create("prom");
	TCase *render = tcase_create("render");
	TCase *validate = tcase_create("validate");
	TCase *pieces = tcase_create("pieces");

	tcase_add_checked_fixture(render, setup, teardown);
	tcase_set_timeout(render, 10);
	tcase_add_test(render, prom_contract_families_have_exact_labels_and_values);
	tcase_add_test(render, prom_other_families_have_exact_labels);
	tcase_add_test(render, prom_hostile_comm_is_escaped_and_valid_utf8);
	tcase_add_test(render, prom_workload_histograms_are_labelled_by_their_identity);
	tcase_add_test(render, prom_workload_texts_are_checked_and_never_repeat_a_series);
	tcase_add_test(render, prom_histograms_are_cumulative_and_inf_equals_count);
	tcase_add_test(render, prom_not_fresh_omits_data_and_says_why);
	tcase_add_test(render, prom_output_is_bounded);
	tcase_add_test(render, feed_has_contract_keys_with_values);
	tcase_add_test(render, feed_not_fresh_presents_no_data);
	suite_add_tcase(s, render);

	tcase_set_timeout(validate, 10);
	tcase_add_test(validate, validate_accepts_valid_text);
	tcase_add_test(validate, validate_catches_each_violation);
	suite_add_tcase(s, validate);

	tcase_set_timeout(pieces, 10);
	tcase_add_test(pieces, prom_le_values_are_the_segment_bounds_in_seconds);
	tcase_add_test(pieces, sbuf_seconds_is_exact_and_short);
	suite_add_tcase(s, pieces);
	return s;
}
