/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Prometheus text of the segment's families (see prom.h).  Runs
 * unprivileged on the exporter's request path: it reads only a private,
 * validated snapshot and writes into a bounded buffer, so bad data can
 * truncate the output (the caller answers 500) but never crash or grow
 * memory without bound.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "exporter/prom.h"
#include "exporter/prom_write.h"
#include "common/utf8.h"
#include "exporter/text.h"

/* ---- segment families ------------------------------------------------- */

static void render_collector(struct sbuf *b, const struct shm_header_fields *h)
{
	static const char *const tables[SHM_TABLE_COUNT] = {
		"procs", "gpu_mem", "gpus", "nccl_ops", "nccl_comms",
	};
	char scenario[3 * sizeof(h->scenario) + 1];
	char labels[64];

	utf8_sanitize(scenario, sizeof(scenario), h->scenario, sizeof(h->scenario));
	prom_family(b, "zernel_collector_info", "gauge",
	       "Always 1; labels: how the collector runs (mode bpf or simulate, simulate scenario).");
	sbuf_puts(b, "zernel_collector_info{mode=\"");
	sbuf_puts(b, h->mode == SHM_MODE_SIMULATE ? "simulate" :
		     h->mode == SHM_MODE_BPF ? "bpf" : "unknown");
	sbuf_puts(b, "\",scenario=\"");
	text_prom_escape(b, scenario);
	sbuf_puts(b, "\",writer_pid=\"");
	sbuf_u64(b, h->writer_pid);
	sbuf_puts(b, "\"} 1\n");

	prom_family(b, "zernel_collector_publish_interval_seconds", "gauge",
	       "Interval at which the collector publishes the segment, seconds.");
	prom_series_sec(b, "zernel_collector_publish_interval_seconds", "", "",
		   (uint64_t)h->publish_interval_ms * 1000000ull);
	prom_family(b, "zernel_quantile_window_seconds", "gauge",
	       "Sliding window the summary quantiles describe, seconds.");
	prom_series_sec(b, "zernel_quantile_window_seconds", "", "", h->window_ns);
	prom_single_u64(b, "zernel_collector_publishes_total", "counter",
		   "Publishes the collector completed since it started.", h->stats.publishes);
	prom_family(b, "zernel_collector_last_publish_duration_seconds", "gauge",
	       "Time the collector's last publish took, seconds.");
	prom_series_sec(b, "zernel_collector_last_publish_duration_seconds", "", "",
		   h->stats.last_publish_duration_ns);
	prom_single_u64(b, "zernel_collector_probes_attached", "gauge",
		   "BPF programs (uprobes, tracepoints) attached now.", h->stats.probes_attached);
	prom_single_u64(b, "zernel_collector_libraries_attached", "gauge",
		   "CUDA/NCCL library files with uprobes attached now.", h->stats.libraries_attached);
	prom_single_u64(b, "zernel_events_total", "counter",
		   "Events the collector aggregated.", h->stats.events_total);
	prom_single_u64(b, "zernel_events_dropped_total", "counter",
		   "Events lost before aggregation (ring buffer full, ...).", h->stats.events_dropped);
	prom_single_u64(b, "zernel_processes_tracked", "gauge",
		   "Processes the collector watches now.", h->table[SHM_TABLE_PROCS].count);
	prom_single_u64(b, "zernel_collector_processes_evicted_total", "counter",
		   "Watched processes removed after they exited.", h->stats.processes_evicted);

	prom_family(b, "zernel_table_overflows_total", "counter",
	       "Rows refused because a segment table was full.");
	for (unsigned int t = 0; t < SHM_TABLE_COUNT; t++) {
		snprintf(labels, sizeof(labels), "table=\"%s\"", tables[t]);
		prom_series_u64(b, "zernel_table_overflows_total", "", labels, h->table[t].overflows);
	}
	prom_family(b, "zernel_table_capacity", "gauge", "Rows a segment table can hold.");
	for (unsigned int t = 0; t < SHM_TABLE_COUNT; t++) {
		snprintf(labels, sizeof(labels), "table=\"%s\"", tables[t]);
		prom_series_u64(b, "zernel_table_capacity", "", labels, h->table[t].capacity);
	}
}


/* Per-process scheduler counters: plain counts, one family each. */
static const struct {
	const char *name;
	const char *help;
	size_t offset;
} sched_counters[] = {
	{ "zernel_sched_involuntary_switches_total",
	  "Context switches away from the process while it was runnable (preemptions).",
	  offsetof(struct shm_proc, involuntary_switches) },
	{ "zernel_sched_voluntary_switches_total",
	  "Context switches away from the process because it blocked.",
	  offsetof(struct shm_proc, voluntary_switches) },
	{ "zernel_sched_migrations_total",
	  "Times the process's threads moved to another CPU.",
	  offsetof(struct shm_proc, migrations) },
};

static void render_processes(struct sbuf *b, const struct shm_proc *p, uint32_t n)
{
	char comm[3 * SHM_COMM_LEN + 1], why[64], labels[48];

	prom_family(b, "zernel_process_info", "gauge",
	       "Always 1 for each watched process; labels: parent pid, command name, why it is watched.");
	for (uint32_t i = 0; i < n; i++) {
		utf8_sanitize(comm, sizeof(comm), p[i].comm, SHM_COMM_LEN);
		text_watch_reasons(why, sizeof(why), p[i].watch_reason);
		sbuf_puts(b, "zernel_process_info{pid=\"");
		sbuf_u64(b, p[i].pid);
		sbuf_puts(b, "\",ppid=\"");
		sbuf_u64(b, p[i].ppid);
		sbuf_puts(b, "\",comm=\"");
		text_prom_escape(b, comm);
		sbuf_puts(b, "\",watch_reason=\"");
		sbuf_puts(b, why);
		sbuf_puts(b, "\"} 1\n");
	}

	prom_family(b, "zernel_sched_offcpu_seconds_total", "counter",
	       "Time the process spent off CPU, seconds; reason preempted (runnable) or blocked (sleeping).");
	for (uint32_t i = 0; i < n; i++) {
		prom_pid_labels(labels, sizeof(labels), p[i].pid, "reason=\"preempted\"");
		prom_series_sec(b, "zernel_sched_offcpu_seconds_total", "", labels, p[i].offcpu_preempted_ns);
		prom_pid_labels(labels, sizeof(labels), p[i].pid, "reason=\"blocked\"");
		prom_series_sec(b, "zernel_sched_offcpu_seconds_total", "", labels, p[i].offcpu_blocked_ns);
	}
	for (size_t c = 0; c < ARRAY_SIZE(sched_counters); c++) {
		prom_family(b, sched_counters[c].name, "counter", sched_counters[c].help);
		for (uint32_t i = 0; i < n; i++) {
			const uint64_t *v = (const uint64_t *)((const char *)&p[i] +
							       sched_counters[c].offset);

			prom_pid_labels(labels, sizeof(labels), p[i].pid, NULL);
			prom_series_u64(b, sched_counters[c].name, "", labels, *v);
		}
	}
}

/*
 * Per-process latency families, each as a summary (the seed's quantiles)
 * and a classic histogram under its own name.  A family with two sources
 * (distributed sync) tells them apart with a kind label.
 */
struct lat_metric {
	const char *summary;
	const char *summary_help;
	const char *hist;
	const char *hist_help;
	unsigned int nfam;
	uint32_t fam[2];
	const char *kind[2];	/* extra label per source, or NULL */
};

static const struct lat_metric lat_metrics[] = {
	{ "zernel_cuda_launch_latency_seconds",
	  "CUDA kernel launch API latency per process (host side, entry to return), seconds; quantiles over the summary window.",
	  "zernel_cuda_launch_duration_seconds",
	  "CUDA kernel launch API latency per process (host side, entry to return), seconds.",
	  1, { SHM_FAMILY_CUDA_LAUNCH }, { NULL } },
	{ "zernel_cuda_graph_launch_latency_seconds",
	  "CUDA graph launch API latency per process (host side), seconds; quantiles over the summary window.",
	  "zernel_cuda_graph_launch_duration_seconds",
	  "CUDA graph launch API latency per process (host side), seconds.",
	  1, { SHM_FAMILY_CUDA_GRAPH_LAUNCH }, { NULL } },
	{ "zernel_dataloader_wait_seconds",
	  "Time a process waited for input data (blocked in read/poll/io_uring waits), seconds; quantiles over the summary window.",
	  "zernel_dataloader_wait_duration_seconds",
	  "Time a process waited for input data (blocked in read/poll/io_uring waits), seconds.",
	  1, { SHM_FAMILY_DATALOADER_WAIT }, { NULL } },
	{ "zernel_dist_sync_wait_seconds",
	  "Distributed-sync waits per process, seconds; kind futex (FUTEX_WAIT) or barrier (pthread_barrier_wait); quantiles over the summary window.",
	  "zernel_dist_sync_wait_duration_seconds",
	  "Distributed-sync waits per process, seconds; kind futex (FUTEX_WAIT) or barrier (pthread_barrier_wait).",
	  2, { SHM_FAMILY_FUTEX_WAIT, SHM_FAMILY_BARRIER_WAIT },
	  { "kind=\"futex\"", "kind=\"barrier\"" } },
	{ "zernel_sched_runqueue_delay_seconds",
	  "Run-queue delay per process (wakeup or preemption to running), seconds; quantiles over the summary window.",
	  "zernel_sched_runqueue_delay_duration_seconds",
	  "Run-queue delay per process (wakeup or preemption to running), seconds.",
	  1, { SHM_FAMILY_RUNQ_DELAY }, { NULL } },
};

/* One family of a lat_metric, written by write (summary or histogram). */
static void render_latency_family(struct sbuf *b, const struct lat_metric *lm, const char *name,
				  const char *type, const char *help,
				  void (*write)(struct sbuf *, const char *, const char *,
						const struct shm_latency *),
				  const struct shm_proc *p, uint32_t n)
{
	char labels[64];

	prom_family(b, name, type, help);
	for (uint32_t i = 0; i < n; i++) {
		for (unsigned int k = 0; k < lm->nfam; k++) {
			const struct shm_latency *l = &p[i].lat[lm->fam[k]];

			/* Processes with no sample in a family have no series in it. */
			if (!l->count)
				continue;
			prom_pid_labels(labels, sizeof(labels), p[i].pid, lm->kind[k]);
			write(b, name, labels, l);
		}
	}
}

static void render_latencies(struct sbuf *b, const struct shm_proc *p, uint32_t n)
{
	for (size_t m = 0; m < ARRAY_SIZE(lat_metrics); m++) {
		const struct lat_metric *lm = &lat_metrics[m];

		render_latency_family(b, lm, lm->summary, "summary", lm->summary_help,
				      prom_summary, p, n);
		render_latency_family(b, lm, lm->hist, "histogram", lm->hist_help,
				      prom_histogram, p, n);
	}
}

static void render_gpu(struct sbuf *b, const struct shm_gpu_mem *m, uint32_t nm,
		       const struct shm_gpu *g, uint32_t ng)
{
	static const struct {
		const char *name, *type, *help;
		size_t off;
	} per_pid[] = {
		{ "zernel_gpu_memory_used_bytes", "gauge",
		  "GPU memory a process holds on a device now, bytes.",
		  offsetof(struct shm_gpu_mem, used_bytes) },
		{ "zernel_gpu_memory_peak_bytes", "gauge",
		  "High-water mark of the GPU memory a process held on a device, bytes.",
		  offsetof(struct shm_gpu_mem, peak_bytes) },
		{ "zernel_gpu_memory_alloc_calls_total", "counter",
		  "Successful GPU memory allocations by a process on a device.",
		  offsetof(struct shm_gpu_mem, alloc_calls) },
		{ "zernel_gpu_memory_free_calls_total", "counter",
		  "GPU memory frees by a process on a device that matched an allocation.",
		  offsetof(struct shm_gpu_mem, free_calls) },
		{ "zernel_gpu_memory_alloc_failures_total", "counter",
		  "GPU memory allocations by a process on a device that returned an error.",
		  offsetof(struct shm_gpu_mem, failed_calls) },
	};
	char labels[64];

	for (size_t f = 0; f < sizeof(per_pid) / sizeof(per_pid[0]); f++) {
		prom_family(b, per_pid[f].name, per_pid[f].type, per_pid[f].help);
		for (uint32_t i = 0; i < nm; i++) {
			uint64_t v;

			memcpy(&v, (const char *)&m[i] + per_pid[f].off, sizeof(v));
			snprintf(labels, sizeof(labels), "pid=\"%" PRIu32 "\",gpu_id=\"%" PRIu32 "\"",
				 m[i].pid, m[i].gpu_id);
			prom_series_u64(b, per_pid[f].name, "", labels, v);
		}
	}

	prom_family(b, "zernel_gpu_memory_total_bytes", "gauge",
	       "Memory of a GPU device, bytes (devices whose size is known).");
	for (uint32_t i = 0; i < ng; i++) {
		if (!g[i].total_bytes)
			continue;
		snprintf(labels, sizeof(labels), "gpu_id=\"%" PRIu32 "\"", g[i].gpu_id);
		prom_series_u64(b, "zernel_gpu_memory_total_bytes", "", labels, g[i].total_bytes);
	}
	prom_family(b, "zernel_gpu_memory_device_used_bytes", "gauge",
	       "GPU memory held on a device by all watched processes together, bytes.");
	for (uint32_t i = 0; i < ng; i++) {
		snprintf(labels, sizeof(labels), "gpu_id=\"%" PRIu32 "\"", g[i].gpu_id);
		prom_series_u64(b, "zernel_gpu_memory_device_used_bytes", "", labels, g[i].used_bytes);
	}
	prom_family(b, "zernel_gpu_processes", "gauge",
	       "Watched processes holding memory on a GPU device.");
	for (uint32_t i = 0; i < ng; i++) {
		snprintf(labels, sizeof(labels), "gpu_id=\"%" PRIu32 "\"", g[i].gpu_id);
		prom_series_u64(b, "zernel_gpu_processes", "", labels, g[i].processes);
	}
}

static void render_nccl(struct sbuf *b, const struct shm_nccl_op *o, uint32_t n,
			const struct shm_nccl_comm *c, uint32_t nc)
{
	char labels[96];

#define FOR_OPS(body)							\
	for (uint32_t i = 0; i < n; i++) {				\
		const char *op = shm_nccl_op_name(o[i].op);		\
		if (!op)						\
			continue;					\
		snprintf(labels, sizeof(labels), "op=\"%s\"", op);	\
		body;							\
	}

	prom_family(b, "zernel_nccl_collective_duration_seconds", "summary",
	       "Host-side duration of NCCL calls per op, all processes, seconds; quantiles over the summary window.");
	FOR_OPS(prom_summary(b, "zernel_nccl_collective_duration_seconds", labels, &o[i].duration));
	prom_family(b, "zernel_nccl_collective_seconds", "histogram",
	       "Host-side duration of NCCL calls per op, all processes, seconds.");
	FOR_OPS(prom_histogram(b, "zernel_nccl_collective_seconds", labels, &o[i].duration));
	prom_family(b, "zernel_nccl_wait_seconds", "summary",
	       "From an NCCL call to the end of the next stream/device synchronisation on its thread (upper bound of GPU completion), seconds; quantiles over the summary window.");
	FOR_OPS(prom_summary(b, "zernel_nccl_wait_seconds", labels, &o[i].wait));
	prom_family(b, "zernel_nccl_wait_duration_seconds", "histogram",
	       "From an NCCL call to the end of the next stream/device synchronisation on its thread (upper bound of GPU completion), seconds.");
	FOR_OPS(prom_histogram(b, "zernel_nccl_wait_duration_seconds", labels, &o[i].wait));
	prom_family(b, "zernel_nccl_calls_total", "counter", "NCCL calls per op, all processes.");
	FOR_OPS(prom_series_u64(b, "zernel_nccl_calls_total", "", labels, o[i].calls));
	prom_family(b, "zernel_nccl_bytes_total", "counter",
	       "Bytes NCCL calls were asked to move per op (count times datatype size), all processes.");
	FOR_OPS(prom_series_u64(b, "zernel_nccl_bytes_total", "", labels, o[i].bytes));
	prom_family(b, "zernel_nccl_errors_total", "counter",
	       "NCCL calls per op that returned an error, all processes.");
	FOR_OPS(prom_series_u64(b, "zernel_nccl_errors_total", "", labels, o[i].errors));
#undef FOR_OPS

	prom_family(b, "zernel_nccl_comm_info", "gauge",
	       "Always 1 for each NCCL communicator a watched process created; labels: rank, world size, communicator id, GPU (empty when unknown).");
	for (uint32_t i = 0; i < nc; i++) {
		char gpu[16] = "";

		if (c[i].gpu_id != UINT32_MAX)
			snprintf(gpu, sizeof(gpu), "%" PRIu32, c[i].gpu_id);
		snprintf(labels, sizeof(labels),
			 "pid=\"%" PRIu32 "\",rank=\"%" PRId32 "\",world_size=\"%" PRId32
			 "\",comm=\"0x%" PRIx64 "\",gpu_id=\"%s\"",
			 c[i].pid, c[i].rank, c[i].nranks, c[i].comm_id, gpu);
		prom_series_u64(b, "zernel_nccl_comm_info", "", labels, 1);
	}
}

int prom_render_data(struct sbuf *out, const struct shm_snapshot *snap)
{
	const struct shm_proc *procs;
	const struct shm_gpu_mem *mem;
	const struct shm_gpu *gpus;
	const struct shm_nccl_op *ops;
	const struct shm_nccl_comm *comms;
	uint32_t np, nm, ng, no, nc;

	procs = shm_snapshot_procs(snap, &np);
	mem = shm_snapshot_gpu_mem(snap, &nm);
	gpus = shm_snapshot_gpus(snap, &ng);
	ops = shm_snapshot_nccl_ops(snap, &no);
	comms = shm_snapshot_nccl_comms(snap, &nc);

	render_collector(out, snap->hdr);
	render_processes(out, procs, procs ? np : 0);
	render_gpu(out, mem, mem ? nm : 0, gpus, gpus ? ng : 0);
	render_latencies(out, procs, procs ? np : 0);
	render_nccl(out, ops, ops ? no : 0, comms, comms ? nc : 0);
	return sbuf_error(out);
}
