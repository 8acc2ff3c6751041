/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * JSON snapshot of the segment for the WebSocket feed (see feed_json.h).
 * Runs unprivileged in the WebSocket thread, once per interval whatever the
 * number of clients; it reads only a validated private snapshot.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "exporter/alerts.h"
#include "exporter/feed_json.h"
#include "common/utf8.h"
#include "exporter/text.h"
#include "shm/shm_reader.h"

#define US 1e3
#define MS 1e6
#define S  1e9

static const struct shm_latency zero_latency;

/* json-c takes ownership of v (a NULL v, out of memory, adds null). */
static void put(struct json_object *o, const char *k, struct json_object *v)
{
	json_object_object_add(o, k, v);
}

static void put_u64(struct json_object *o, const char *k, uint64_t v)
{
	put(o, k, json_object_new_uint64(v));
}

static void put_ns(struct json_object *o, const char *k, uint64_t ns, double unit)
{
	put(o, k, json_object_new_double((double)ns / unit));
}

/* A window quantile in unit; 0 when the window holds no sample. */
static void put_q(struct json_object *o, const char *k, const struct shm_latency *l,
		  int p99, double unit)
{
	put_ns(o, k, l->window_count ? (p99 ? l->window_p99_ns : l->window_p50_ns) : 0, unit);
}

static const struct shm_latency *nccl_lat(const struct shm_nccl_op *ops, uint32_t n,
					  uint32_t op, int wait)
{
	for (uint32_t i = 0; i < n; i++)
		if (ops[i].op == op)
			return wait ? &ops[i].wait : &ops[i].duration;
	return &zero_latency;
}

static void add_seed(struct json_object *root, const struct shm_snapshot *snap)
{
	const struct shm_latency *cuda = &zero_latency, *dl = &zero_latency;
	struct json_object *util = json_object_new_array();
	const struct shm_nccl_op *ops = NULL;
	const struct shm_gpu_mem *m = NULL;
	uint32_t nm = 0, no = 0;

	if (snap) {
		m = shm_snapshot_gpu_mem(snap, &nm);
		ops = shm_snapshot_nccl_ops(snap, &no);
		/* Node-wide series: every sample of every watched process. */
		cuda = &snap->hdr->node[SHM_FAMILY_CUDA_LAUNCH];
		dl = &snap->hdr->node[SHM_FAMILY_DATALOADER_WAIT];
	}
	if (!m)
		nm = 0;
	if (!ops)
		no = 0;
	for (uint32_t i = 0; i < nm && i < FEED_MAX_GPU_ROWS; i++) {
		struct json_object *e = json_object_new_object();
		char key[32];

		snprintf(key, sizeof(key), "%" PRIu32 ":%" PRIu32, m[i].pid, m[i].gpu_id);
		put(e, "key", json_object_new_string(key));
		put_u64(e, "current_bytes", m[i].used_bytes);
		put_u64(e, "peak_bytes", m[i].peak_bytes);
		put_u64(e, "pid", m[i].pid);
		put_u64(e, "gpu_id", m[i].gpu_id);
		json_object_array_add(util, e);
	}
	put(root, "gpu_utilization", util);
	put_u64(root, "gpu_utilization_total", nm);
	put_q(root, "cuda_latency_p50_us", cuda, 0, US);
	put_q(root, "cuda_latency_p99_us", cuda, 1, US);
	put_q(root, "nccl_allreduce_p50_ms", nccl_lat(ops, no, SHM_NCCL_ALL_REDUCE, 0), 0, MS);
	put_q(root, "nccl_allreduce_p99_ms", nccl_lat(ops, no, SHM_NCCL_ALL_REDUCE, 0), 1, MS);
	put_q(root, "dataloader_wait_p50_ms", dl, 0, MS);
	put_q(root, "dataloader_wait_p99_ms", dl, 1, MS);
}

static void add_gpus(struct json_object *root, const struct shm_snapshot *snap)
{
	struct json_object *arr = json_object_new_array();
	const struct shm_gpu *g = NULL;
	uint32_t n = 0;

	if (snap)
		g = shm_snapshot_gpus(snap, &n);
	for (uint32_t i = 0; g && i < n; i++) {
		struct json_object *e = json_object_new_object();

		put_u64(e, "gpu_id", g[i].gpu_id);
		put_u64(e, "total_bytes", g[i].total_bytes);
		put_u64(e, "used_bytes", g[i].used_bytes);
		put_u64(e, "processes", g[i].processes);
		json_object_array_add(arr, e);
	}
	put(root, "gpus", arr);
}

static uint64_t proc_gpu_bytes(const struct shm_gpu_mem *m, uint32_t nm, uint32_t pid)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; m && i < nm; i++)
		if (m[i].pid == pid)
			sum += m[i].used_bytes;
	return sum;
}

static void add_processes(struct json_object *root, const struct shm_snapshot *snap)
{
	struct json_object *arr = json_object_new_array();
	const struct shm_proc *p = NULL;
	const struct shm_gpu_mem *m = NULL;
	uint32_t n = 0, nm = 0;

	if (snap) {
		p = shm_snapshot_procs(snap, &n);
		m = shm_snapshot_gpu_mem(snap, &nm);
	}
	if (!p)
		n = 0;
	for (uint32_t i = 0; i < n && i < FEED_MAX_PROCESSES; i++) {
		const struct shm_latency *l = p[i].lat;
		struct json_object *e = json_object_new_object();
		char comm[3 * SHM_COMM_LEN + 1], why[64];

		utf8_sanitize(comm, sizeof(comm), p[i].comm, SHM_COMM_LEN);
		text_watch_reasons(why, sizeof(why), p[i].watch_reason);
		put_u64(e, "pid", p[i].pid);
		put_u64(e, "ppid", p[i].ppid);
		put(e, "comm", json_object_new_string(comm));
		put(e, "watch_reason", json_object_new_string(why));
		/* O(procs x rows) is fine at the bounded sizes (1024 x 4096 at most). */
		put_u64(e, "gpu_bytes", proc_gpu_bytes(m, nm, p[i].pid));
		put_q(e, "cuda_launch_p50_us", &l[SHM_FAMILY_CUDA_LAUNCH], 0, US);
		put_q(e, "cuda_launch_p99_us", &l[SHM_FAMILY_CUDA_LAUNCH], 1, US);
		put_u64(e, "cuda_launch_count", l[SHM_FAMILY_CUDA_LAUNCH].count);
		put_u64(e, "cuda_graph_launch_count", l[SHM_FAMILY_CUDA_GRAPH_LAUNCH].count);
		put_q(e, "dataloader_wait_p50_ms", &l[SHM_FAMILY_DATALOADER_WAIT], 0, MS);
		put_q(e, "dataloader_wait_p99_ms", &l[SHM_FAMILY_DATALOADER_WAIT], 1, MS);
		put_u64(e, "dataloader_wait_count", l[SHM_FAMILY_DATALOADER_WAIT].count);
		put_q(e, "futex_wait_p99_ms", &l[SHM_FAMILY_FUTEX_WAIT], 1, MS);
		put_q(e, "barrier_wait_p99_ms", &l[SHM_FAMILY_BARRIER_WAIT], 1, MS);
		put_q(e, "runq_delay_p99_us", &l[SHM_FAMILY_RUNQ_DELAY], 1, US);
		put_ns(e, "offcpu_preempted_s", p[i].offcpu_preempted_ns, S);
		put_ns(e, "offcpu_blocked_s", p[i].offcpu_blocked_ns, S);
		put_u64(e, "involuntary_switches", p[i].involuntary_switches);
		put_u64(e, "voluntary_switches", p[i].voluntary_switches);
		put_u64(e, "migrations", p[i].migrations);
		json_object_array_add(arr, e);
	}
	put(root, "processes", arr);
	put_u64(root, "processes_total", n);
	put(root, "processes_truncated", json_object_new_boolean(n > FEED_MAX_PROCESSES));
}

static void add_nccl(struct json_object *root, const struct shm_snapshot *snap)
{
	struct json_object *arr = json_object_new_array();
	struct json_object *comms = json_object_new_array();
	const struct shm_nccl_op *o = NULL;
	const struct shm_nccl_comm *c = NULL;
	uint32_t n = 0, nc = 0;

	if (snap) {
		o = shm_snapshot_nccl_ops(snap, &n);
		c = shm_snapshot_nccl_comms(snap, &nc);
	}
	for (uint32_t i = 0; o && i < n; i++) {
		const char *name = shm_nccl_op_name(o[i].op);
		struct json_object *e;

		if (!name)
			continue;
		e = json_object_new_object();
		put(e, "op", json_object_new_string(name));
		put_u64(e, "calls", o[i].calls);
		put_u64(e, "bytes", o[i].bytes);
		put_u64(e, "errors", o[i].errors);
		put_q(e, "duration_p50_ms", &o[i].duration, 0, MS);
		put_q(e, "duration_p99_ms", &o[i].duration, 1, MS);
		put_q(e, "wait_p50_ms", &o[i].wait, 0, MS);
		put_q(e, "wait_p99_ms", &o[i].wait, 1, MS);
		json_object_array_add(arr, e);
	}
	put(root, "nccl", arr);
	for (uint32_t i = 0; c && i < nc && i < FEED_MAX_COMMS; i++) {
		struct json_object *e = json_object_new_object();
		char id[24];

		snprintf(id, sizeof(id), "0x%" PRIx64, c[i].comm_id);
		put_u64(e, "pid", c[i].pid);
		put(e, "rank", json_object_new_int(c[i].rank));
		put(e, "world_size", json_object_new_int(c[i].nranks));
		put(e, "comm", json_object_new_string(id));
		if (c[i].gpu_id == UINT32_MAX)
			put(e, "gpu_id", NULL);
		else
			put_u64(e, "gpu_id", c[i].gpu_id);
		json_object_array_add(comms, e);
	}
	put(root, "nccl_comms", comms);
}

static void add_telemetry(struct json_object *root, const struct shm_snapshot *snap,
			  const struct exporter_stats *stats)
{
	static const char *const tables[SHM_TABLE_COUNT] = {
		"procs", "gpu_mem", "gpus", "nccl_ops", "nccl_comms",
	};
	struct json_object *t = json_object_new_object();

	if (snap) {
		const struct shm_header_fields *h = snap->hdr;
		struct json_object *ovf = json_object_new_object();
		char scenario[3 * sizeof(h->scenario) + 1];

		utf8_sanitize(scenario, sizeof(scenario), h->scenario, sizeof(h->scenario));
		put(t, "mode", json_object_new_string(h->mode == SHM_MODE_SIMULATE ? "simulate" :
						      h->mode == SHM_MODE_BPF ? "bpf" : "unknown"));
		put(t, "scenario", json_object_new_string(scenario));
		put_u64(t, "publish_interval_ms", h->publish_interval_ms);
		put_u64(t, "events_total", h->stats.events_total);
		put_u64(t, "events_dropped", h->stats.events_dropped);
		put_u64(t, "publishes", h->stats.publishes);
		put_u64(t, "probes_attached", h->stats.probes_attached);
		put_u64(t, "processes_tracked", h->table[SHM_TABLE_PROCS].count);
		for (unsigned int i = 0; i < SHM_TABLE_COUNT; i++)
			put_u64(ovf, tables[i], h->table[i].overflows);
		put(t, "table_overflows", ovf);
	}
	put_u64(t, "ws_clients", stats_get(&stats->ws_clients));
	put_u64(t, "ws_frames_dropped", stats_get(&stats->ws_frames_dropped));
	put_u64(t, "http_scrapes", stats_get(&stats->scrapes));
	put(root, "telemetry", t);
}

int feed_render(struct sbuf *out, const struct shm_snapshot *snap,
		const struct source_status *st, const struct exporter_stats *stats)
{
	struct json_object *root = json_object_new_object();
	char reason[512];
	const char *text;
	size_t len;
	int err;

	if (!root)
		return -ENOMEM;
	if (st->status != SHM_READ_OK)
		snap = NULL;
	/* Short decimal forms instead of %.17g noise; per thread, no locking. */
	json_c_set_serialization_double_format("%.9g", JSON_C_OPTION_THREAD);

	add_seed(root, snap);
	put_u64(root, "last_update_ms", st->seen ? st->last_update_real_ns / 1000000ull : 0);
	put(root, "collector_up", json_object_new_boolean(st->status == SHM_READ_OK));
	put(root, "status", json_object_new_string(shm_read_status_name(st->status)));
	utf8_sanitize(reason, sizeof(reason), st->reason ? st->reason : "",
		      st->reason ? strlen(st->reason) : 0);
	put(root, "stale_reason", json_object_new_string(st->status == SHM_READ_OK ? "" : reason));
	put_u64(root, "generation", st->seen ? st->generation : 0);
	put_u64(root, "age_ms", st->seen ? st->age_ns / 1000000ull : 0);
	add_gpus(root, snap);
	add_processes(root, snap);
	add_nccl(root, snap);
	add_telemetry(root, snap, stats);
	/* Filled by the alerting work; present now so clients can rely on it. */
	put(root, "alerts", alerts_feed_json(exporter_alerts));

	text = json_object_to_json_string_length(root, JSON_C_TO_STRING_PLAIN, &len);
	err = text ? sbuf_append(out, text, len) : -ENOMEM;
	json_object_put(root);
	/* json-c keeps a per-thread copy of the format: free it, threads end. */
	json_c_set_serialization_double_format(NULL, JSON_C_OPTION_THREAD);
	return err;
}
