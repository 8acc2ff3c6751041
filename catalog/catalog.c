/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * THE table: every family Zernel exports, in Prometheus order (see
 * catalog.h for what an entry says and how each output reads it).  Adding
 * a family is one entry here, plus the collector code that measures it and
 * a test.  No privilege; pure data (derived values: cat_derive.c).
 */
#include <pthread.h>
#include <string.h>

#include "catalog/cat_derive.h"
#include "catalog/catalog.h"
#include "common/util.h"

/* A field of a row type: its offset and width. */
#define FIELD(type, member)	.off = offsetof(type, member), .width = sizeof(((type *)0)->member)
#define HDR(member)		FIELD(struct shm_header_fields, member)
#define PROC(member)		FIELD(struct shm_proc, member)
#define MEM(member)		FIELD(struct shm_gpu_mem, member)
#define GPU(member)		FIELD(struct shm_gpu, member)
#define OP(member)		FIELD(struct shm_nccl_op, member)
#define COMM(member)		FIELD(struct shm_nccl_comm, member)
#define TABLE(member)		FIELD(struct shm_table, member)
#define STATUS(member)		FIELD(struct cat_status, member)
#define STAT(id)		.off = (id), .width = 8
#define FEED(obj, pos, key)	.feed_obj = (obj), .feed_pos = (pos), .feed = (key)

/* ---- row sources ------------------------------------------------------- */

#define THREAD_STATE_HELP	"Time of the process's training threads, seconds, by state: " \
	"oncpu, runq (runnable, waiting for a CPU), gpu (inside a CUDA call, blocked or " \
	"spinning), collective (inside NCCL), or blocked in input, lock, sleep, other.  " \
	"Counted when each state ends; a state never entered has no series."

#define LABEL_PID(off_, pos)	{ .id = CAT_ID_PROC_PID, .type = CAT_L_U32, .name = "pid", \
				  .feed = "pid", .feed_pos = (pos), .off = (off_), \
				  .help = "Process id." }
#define LABEL_COMM		{ .id = CAT_ID_PROC_COMM, .type = CAT_L_TEXT, .name = "comm", \
				  .feed = "comm", .feed_pos = 2, .text = cat_text_comm, \
				  .help = "Command name, valid UTF-8 without control characters." }

static const struct cat_label tables_labels[] = {
	{ .type = CAT_L_TEXT, .name = "table", .text = cat_text_table },
};
static const struct cat_label procs_labels[] = {
	LABEL_PID(offsetof(struct shm_proc, pid), 0),
};
static const struct cat_label procs_alert_labels[] = {
	LABEL_PID(offsetof(struct shm_proc, pid), 0), LABEL_COMM,
};
static const struct cat_label mem_labels[] = {
	{ .id = CAT_ID_MEM_KEY, .type = CAT_L_TEXT, .feed = "key", .feed_pos = 0,
	  .text = cat_text_mem_key, .help = "\"pid:gpu_id\"." },
	{ .id = CAT_ID_MEM_PID, .type = CAT_L_U32, .name = "pid", .feed = "pid", .feed_pos = 3,
	  .off = offsetof(struct shm_gpu_mem, pid), .help = "Process id." },
	/* Prometheus: "cuda<N>" when not known, so that two such rows of a process differ. */
	{ .type = CAT_L_TEXT, .name = "gpu_id", .text = cat_text_mem_gpu,
	  .help = "Physical GPU, its index as nvidia-smi numbers it; cuda<N> (the process's CUDA "
	  "device N) when not known, zernel_gpu_memory_info says why." },
	{ .id = CAT_ID_MEM_GPU, .type = CAT_L_GPU, .feed = "gpu_id", .feed_pos = 4,
	  .off = offsetof(struct shm_gpu_mem, gpu_id),
	  .help = "Physical GPU, its index as nvidia-smi numbers it; null when not known." },
};
/* dcgm-exporter's spellings (UUID, modelName), so that its series join these. */
static const struct cat_label mem_info_labels[] = {
	{ .type = CAT_L_TEXT, .name = "UUID", .text = cat_text_mem_uuid },
	{ .type = CAT_L_TEXT, .name = "modelName", .text = cat_text_mem_model },
	/* Empty on a row of the driver's figure alone: the process's own ordinal is not known. */
	{ .type = CAT_L_GPU, .name = "cuda_device", .off = offsetof(struct shm_gpu_mem, cuda_device) },
	{ .type = CAT_L_TEXT, .name = "gpu_map", .text = cat_text_gpu_map },
};
static const struct cat_label gpus_labels[] = {
	{ .id = CAT_ID_GPU_ID, .type = CAT_L_U32, .name = "gpu_id", .feed = "gpu_id", .feed_pos = 0,
	  .off = offsetof(struct shm_gpu, gpu_id),
	  .help = "Physical GPU, its index as nvidia-smi numbers it." },
};
static const struct cat_label gpu_used_labels[] = {
	{ .type = CAT_L_TEXT, .name = "source", .text = cat_text_gpu_used_source,
	  .help = "driver (NVML's device used memory) or processes (the watched processes' sum)." },
};
static const struct cat_label gpu_info_labels[] = {
	{ .type = CAT_L_TEXT, .name = "UUID", .text = cat_text_gpu_uuid },
	{ .type = CAT_L_TEXT, .name = "modelName", .text = cat_text_gpu_model },
};
static const struct cat_label ops_labels[] = {
	{ .id = CAT_ID_NCCL_OP, .type = CAT_L_TEXT, .name = "op", .feed = "op", .feed_pos = 0,
	  .text = cat_text_op, .help = "NCCL operation: all_reduce, all_gather, reduce_scatter, "
	  "broadcast, reduce, send, recv, all_to_all, gather or scatter." },
};
/*
 * One rank of one communicator: comm (NCCL's commHash, the same on every
 * rank and node) and rank join the ranks in PromQL; pid keeps two
 * processes apart where a local id could repeat.
 */
static const struct cat_label comms_labels[] = {
	{ .type = CAT_L_HEX64, .name = "comm", .off = offsetof(struct shm_nccl_comm, comm_id),
	  .help = "NCCL's commHash of the communicator, 0x..." },
	{ .type = CAT_L_I32, .name = "rank", .off = offsetof(struct shm_nccl_comm, rank),
	  .help = "Its rank; -1 while unknown." },
	{ .type = CAT_L_U32, .name = "pid", .off = offsetof(struct shm_nccl_comm, pid),
	  .help = "Process that holds it." },
};

const struct cat_rows_def cat_rows_defs[CAT_ROWS_COUNT] = {
	[CAT_ROWS_TABLES] = { tables_labels, ARRAY_SIZE(tables_labels), NULL, 0 },
	[CAT_ROWS_PROCS] = { procs_labels, ARRAY_SIZE(procs_labels),
			     procs_alert_labels, ARRAY_SIZE(procs_alert_labels) },
	[CAT_ROWS_GPU_MEM] = { mem_labels, ARRAY_SIZE(mem_labels), mem_labels + 1, 2 },
	[CAT_ROWS_GPUS] = { gpus_labels, ARRAY_SIZE(gpus_labels), gpus_labels, 1 },
	[CAT_ROWS_NCCL_OPS] = { ops_labels, ARRAY_SIZE(ops_labels), ops_labels, 1 },
	[CAT_ROWS_NCCL_COMMS] = { comms_labels, ARRAY_SIZE(comms_labels), comms_labels, 2 },
};

/* ---- the feed's objects ------------------------------------------------ */

const struct cat_obj_def cat_objs[CAT_OBJ_COUNT] = {
	[CAT_OBJ_ROOT] = { .help = "One snapshot of zernel-exporter's WebSocket feed." },
	[CAT_OBJ_GPU_MEM] = { "gpu_utilization", CAT_OBJ_ROOT, 0, CAT_SHAPE_ARRAY,
			      CAT_ROWS_GPU_MEM, 0, 4096,
			      "GPU memory per (process, GPU), at most 4096 rows." },
	[CAT_OBJ_GPUS] = { "gpus", CAT_OBJ_ROOT, 11, CAT_SHAPE_ARRAY, CAT_ROWS_GPUS, 0, 0,
			   "GPU devices seen." },
	[CAT_OBJ_PROCS] = { "processes", CAT_OBJ_ROOT, 12, CAT_SHAPE_ARRAY, CAT_ROWS_PROCS, 0,
			    CAT_FEED_TOP_PROCS, "The top watched processes, at most "
			    CAT_STR(CAT_FEED_TOP_PROCS) " (by GPU memory, then CUDA launches; see "
			    "processes_total); every one in GET /snapshot on the metrics port." },
	[CAT_OBJ_NCCL] = { "nccl", CAT_OBJ_ROOT, 15, CAT_SHAPE_ARRAY, CAT_ROWS_NCCL_OPS, 0, 0,
			   "NCCL operations, all processes together." },
	[CAT_OBJ_COMMS] = { "nccl_comms", CAT_OBJ_ROOT, 16, CAT_SHAPE_ARRAY,
			    CAT_ROWS_NCCL_COMMS, 0, 1024,
			    "NCCL communicators watched processes created, at most 1024." },
	[CAT_OBJ_TELEMETRY] = { "telemetry", CAT_OBJ_ROOT, 17, CAT_SHAPE_OBJECT, CAT_ROWS_HEADER,
				1, 0, "The collector's and the exporter's own figures; the "
				"collector's only while it is fresh." },
	[CAT_OBJ_OVERFLOWS] = { "table_overflows", CAT_OBJ_TELEMETRY, 8, CAT_SHAPE_MAP,
				CAT_ROWS_TABLES, 0, 0,
				"Rows refused because a segment table was full, per table." },
	[CAT_OBJ_ALERTS] = { "alerts", CAT_OBJ_ROOT, 18, CAT_SHAPE_ARRAY, CAT_ROWS_ALERTS, 0, 0,
			     "Pending and firing alerts." },
	[CAT_OBJ_STALL_SITES] = { "stall_sites", CAT_OBJ_PROCS, 49, CAT_SHAPE_ARRAY,
				  CAT_ROWS_STALL_SITES, 0, CAT_FEED_TOP_SITES,
				  "Where its Python code waited longest: its stall sites, longest "
				  "first, at most " CAT_STR(CAT_FEED_TOP_SITES) " (see "
				  "stall_sites_total); every one in GET /snapshot, and with the "
				  "innermost frame in /api/stalls, on the metrics port." },
};

/* ---- labels of info entries -------------------------------------------- */

static const struct cat_label collector_info_labels[] = {
	{ .id = CAT_ID_MODE, .type = CAT_L_TEXT, .name = "mode", .feed = "mode", .feed_pos = 0,
	  .text = cat_text_mode, .help = "How the collector runs: bpf or simulate." },
	{ .id = CAT_ID_SCENARIO, .type = CAT_L_TEXT, .name = "scenario", .feed = "scenario",
	  .feed_pos = 1, .text = cat_text_scenario, .help = "Simulated scenario; \"\" for bpf." },
	{ .type = CAT_L_U32, .name = "writer_pid",
	  .off = offsetof(struct shm_header_fields, writer_pid) },
};
static const struct cat_label process_info_labels[] = {
	{ .id = CAT_ID_PROC_PPID, .type = CAT_L_U32, .name = "ppid", .feed = "ppid", .feed_pos = 1,
	  .off = offsetof(struct shm_proc, ppid), .help = "Parent process id." },
	LABEL_COMM,
	{ .type = CAT_L_TEXT, .name = "watch_reason", .feed = "watch_reason", .feed_pos = 3,
	  .text = cat_text_watch_reason, .help = "Why it is watched: cuda, nccl, descendant, pid, "
	  "comm, simulated, comma separated." },
	/* Who it is (collector/identity/ident_scan.h): "unknown" where not found. */
	{ .id = CAT_ID_PROC_POD, .type = CAT_L_TEXT, .name = "pod", .feed = "pod", .feed_pos = 16,
	  .text = cat_text_pod, .help = "Kubernetes pod name, from the kubelet's log directories." },
	{ .id = CAT_ID_PROC_NAMESPACE, .type = CAT_L_TEXT, .name = "namespace", .feed = "namespace",
	  .feed_pos = 17, .text = cat_text_namespace, .help = "Kubernetes namespace of the pod." },
	{ .id = CAT_ID_PROC_CONTAINER, .type = CAT_L_TEXT, .name = "container", .feed = "container",
	  .feed_pos = 18, .text = cat_text_container,
	  .help = "Kubernetes container name, from the kubelet's log directories." },
	{ .type = CAT_L_TEXT, .name = "container_runtime", .feed = "container_runtime",
	  .feed_pos = 19, .text = cat_text_runtime,
	  .help = "Container runtime named by the cgroup: containerd, cri-o, docker, podman." },
	{ .type = CAT_L_TEXT, .name = "container_id", .feed = "container_id", .feed_pos = 20,
	  .text = cat_text_container_id, .help = "Container id (64 hex digits), from the cgroup." },
	{ .type = CAT_L_TEXT, .name = "pod_uid", .feed = "pod_uid", .feed_pos = 21,
	  .text = cat_text_pod_uid, .help = "Kubernetes pod UID, from the cgroup." },
	{ .id = CAT_ID_PROC_SLURM_JOB, .type = CAT_L_TEXT, .name = "slurm_job", .feed = "slurm_job",
	  .feed_pos = 22, .text = cat_text_slurm_job,
	  .help = "Slurm job id, from the cgroup, else SLURM_JOB_ID." },
	{ .type = CAT_L_TEXT, .name = "slurm_step", .feed = "slurm_step", .feed_pos = 23,
	  .text = cat_text_slurm_step, .help = "Slurm step: a number, batch, extern or interactive." },
	{ .id = CAT_ID_PROC_RANK, .type = CAT_L_TEXT, .name = "rank", .feed = "rank",
	  .feed_pos = 24, .text = cat_text_rank,
	  .help = "Global rank: RANK, else OMPI_COMM_WORLD_RANK, else SLURM_PROCID." },
	{ .id = CAT_ID_PROC_LOCAL_RANK, .type = CAT_L_TEXT, .name = "local_rank",
	  .feed = "local_rank", .feed_pos = 25, .text = cat_text_local_rank,
	  .help = "Rank on this node: LOCAL_RANK, else OMPI_COMM_WORLD_LOCAL_RANK, else SLURM_LOCALID." },
	{ .id = CAT_ID_PROC_WORLD_SIZE, .type = CAT_L_TEXT, .name = "world_size",
	  .feed = "world_size", .feed_pos = 26, .text = cat_text_world_size,
	  .help = "Ranks in the job: WORLD_SIZE, else OMPI_COMM_WORLD_SIZE, else SLURM_NTASKS." },
	{ .type = CAT_L_TEXT, .name = "group_rank", .feed = "group_rank", .feed_pos = 27,
	  .text = cat_text_group_rank, .help = "GROUP_RANK: the node's index in a torchelastic job." },
	{ .type = CAT_L_TEXT, .name = "torchelastic_run_id", .feed = "torchelastic_run_id",
	  .feed_pos = 28, .text = cat_text_run_id, .help = "TORCHELASTIC_RUN_ID." },
};
/* The row's labels (comm, rank, pid) are Prometheus's; the feed names them here. */
static const struct cat_label comm_info_labels[] = {
	{ .type = CAT_L_U32, .feed = "pid", .feed_pos = 0,
	  .off = offsetof(struct shm_nccl_comm, pid), .help = "Process that created it." },
	{ .type = CAT_L_I32, .feed = "rank", .feed_pos = 1,
	  .off = offsetof(struct shm_nccl_comm, rank), .help = "Its rank; -1 while unknown." },
	{ .type = CAT_L_I32, .name = "world_size", .feed = "world_size", .feed_pos = 2,
	  .off = offsetof(struct shm_nccl_comm, nranks),
	  .help = "Ranks in the communicator; -1 while unknown." },
	{ .type = CAT_L_HEX64, .feed = "comm", .feed_pos = 3,
	  .off = offsetof(struct shm_nccl_comm, comm_id),
	  .help = "NCCL's commHash of the communicator (its \"commId\" in NCCL's log), 0x..." },
	{ .type = CAT_L_GPU, .name = "gpu_id", .feed = "gpu_id", .feed_pos = 4,
	  .off = offsetof(struct shm_nccl_comm, gpu_id), .help = "GPU device; null when unknown." },
	{ .type = CAT_L_TEXT, .name = "origin", .feed = "origin", .feed_pos = 5,
	  .text = cat_text_comm_origin,
	  .help = "How it was made: init_rank, scalable, init_all, split or shrink; "
	  "\"local\" appended when comm is not NCCL's hash (joins only within the process)." },
	{ .type = CAT_L_HEX64, .name = "parent", .feed = "parent", .feed_pos = 6,
	  .off = offsetof(struct shm_nccl_comm, parent_id),
	  .help = "A split or shrunk communicator's parent comm; 0x0 otherwise." },
};
static const struct cat_label status_labels[] = {
	{ .id = CAT_ID_STATUS, .type = CAT_L_TEXT, .name = "status", .feed = "status",
	  .feed_pos = 7, .text = cat_text_status,
	  .help = "ok, stale, busy, missing or invalid." },
};
static const struct cat_label build_info_labels[] = {
	{ .type = CAT_L_TEXT, .name = "version", .text = cat_text_version },
};

/* ---- the table --------------------------------------------------------- */

const struct cat_metric cat_metrics[] = {
	/* The collector, from the segment header. */
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_INFO, .prom = "zernel_collector_info",
	  .labels = collector_info_labels, .n_labels = ARRAY_SIZE(collector_info_labels),
	  .help = "Always 1; labels: how the collector runs (mode bpf or simulate, simulate scenario).",
	  .feed_obj = CAT_OBJ_TELEMETRY },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_GAUGE, .unit = CAT_UNIT_MS, HDR(publish_interval_ms),
	  .prom = "zernel_collector_publish_interval_seconds",
	  .help = "Interval at which the collector publishes the segment, seconds.",
	  FEED(CAT_OBJ_TELEMETRY, 2, "publish_interval_ms") },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_GAUGE, .unit = CAT_UNIT_NS, HDR(window_ns),
	  .prom = "zernel_quantile_window_seconds",
	  .help = "Sliding window the summary quantiles describe, seconds." },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_COUNTER, HDR(stats.publishes),
	  .prom = "zernel_collector_publishes_total",
	  .help = "Publishes the collector completed since it started.",
	  FEED(CAT_OBJ_TELEMETRY, 5, "publishes") },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_GAUGE, .unit = CAT_UNIT_NS,
	  HDR(stats.last_publish_duration_ns),
	  .prom = "zernel_collector_last_publish_duration_seconds",
	  .help = "Time the collector's last publish took, seconds." },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_GAUGE, HDR(stats.probes_attached),
	  .prom = "zernel_collector_probes_attached",
	  .help = "BPF programs (uprobes, tracepoints) attached now.",
	  FEED(CAT_OBJ_TELEMETRY, 6, "probes_attached") },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_GAUGE, HDR(stats.libraries_attached),
	  .prom = "zernel_collector_libraries_attached",
	  .help = "CUDA/NCCL library files with uprobes attached now." },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_COUNTER, HDR(stats.probes_refused),
	  .prom = "zernel_collector_probes_refused_total",
	  .help = "Uprobes and library files refused at the collector's limits (not probed)." },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_COUNTER, HDR(stats.parser_restarts),
	  .prom = "zernel_collector_parser_restarts_total",
	  .help = "Parser children (the unprivileged process that parses the ELF files of watched processes) killed or lost in the middle of a file: that file is not probed, the next gets a new child." },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_GAUGE, HDR(stats.entry_points_checked),
	  .prom = "zernel_collector_entry_points_checked",
	  .help = "Probed driver entry points the collector compared at start with what the node's driver answers through cuGetProcAddress." },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_GAUGE, HDR(stats.entry_points_bypassed),
	  .prom = "zernel_collector_entry_points_bypassed",
	  .help = "Probed driver entry points for which the node's driver answers cuGetProcAddress with another address than the probed symbol: calls through them are not seen (the log names them)." },
	{ .id = CAT_ID_EVENTS, .rows = CAT_ROWS_HEADER, .kind = CAT_COUNTER, HDR(stats.events_total),
	  .prom = "zernel_events_total", .help = "Events the collector aggregated.",
	  FEED(CAT_OBJ_TELEMETRY, 3, "events_total") },
	{ .id = CAT_ID_EVENTS_DROPPED, .rows = CAT_ROWS_HEADER, .kind = CAT_COUNTER,
	  HDR(stats.events_dropped), .prom = "zernel_events_dropped_total",
	  .help = "Events lost before aggregation (ring buffer full, ...).",
	  FEED(CAT_OBJ_TELEMETRY, 4, "events_dropped") },
	{ .id = CAT_ID_PROCESSES_TRACKED, .rows = CAT_ROWS_HEADER, .kind = CAT_GAUGE,
	  HDR(table[SHM_TABLE_PROCS].count), .prom = "zernel_processes_tracked",
	  .help = "Processes the collector watches now.",
	  FEED(CAT_OBJ_TELEMETRY, 7, "processes_tracked") },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_COUNTER, HDR(stats.processes_evicted),
	  .prom = "zernel_collector_processes_evicted_total",
	  .help = "Watched processes removed after they exited." },
#define UNTRACKED(member, why, text) \
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_COUNTER, HDR(stats.member), \
	  .prom = "zernel_nccl_untracked_total", .prom_labels = "reason=\"" why "\"", \
	  .help = "NCCL calls, communicators or wait state the collector could not follow, " \
	  "per reason: " text }
	UNTRACKED(nccl_id_unreadable, "id_unreadable", "id_unreadable: a communicator whose ncclUniqueId could not be read at entry (its comm is local to the process); "
		  "unknown_comm: a call on a communicator never seen created; bad_args: an unknown datatype or a negative count (0 bytes counted); "
		  "captured: a call captured into a CUDA graph (it runs at graph launches, unseen); pending_dropped: a queued call given up over the per-stream bound; "
		  "pending_ended: a queued call whose communicator was aborted (or its destroy still in progress) before a synchronisation covered it; state_evicted: stream, event or group state evicted over its bound."),
	UNTRACKED(nccl_unknown_comm, "unknown_comm", ""),
	UNTRACKED(nccl_bad_args, "bad_args", ""),
	UNTRACKED(nccl_captured, "captured", ""),
	UNTRACKED(nccl_pending_dropped, "pending_dropped", ""),
	UNTRACKED(nccl_pending_ended, "pending_ended", ""),
	UNTRACKED(nccl_state_evicted, "state_evicted", ""),
	{ .id = CAT_ID_TABLE_OVERFLOWS, .rows = CAT_ROWS_TABLES, .kind = CAT_COUNTER,
	  TABLE(overflows), .prom = "zernel_table_overflows_total",
	  .help = "Rows refused because a segment table was full.",
	  FEED(CAT_OBJ_OVERFLOWS, 0, "table_overflows") },
	{ .rows = CAT_ROWS_TABLES, .kind = CAT_GAUGE, TABLE(capacity),
	  .prom = "zernel_table_capacity", .help = "Rows a segment table can hold." },

	/* Processes. */
	{ .rows = CAT_ROWS_PROCS, .kind = CAT_INFO, .prom = "zernel_process_info",
	  .labels = process_info_labels, .n_labels = ARRAY_SIZE(process_info_labels),
	  .help = "Always 1 for each watched process; labels: parent pid, command name, why it is watched, and who it is (pod, namespace, container, runtime and id, pod UID, Slurm job and step, ranks, torchelastic run id; unknown where not found).",
	  .feed_obj = CAT_OBJ_PROCS },
	{ .id = CAT_ID_PROC_PREEMPTED, .rows = CAT_ROWS_PROCS, .kind = CAT_COUNTER,
	  .unit = CAT_UNIT_NS, PROC(offcpu_preempted_ns),
	  .prom = "zernel_sched_offcpu_seconds_total", .prom_labels = "reason=\"preempted\"",
	  .help = "Time the process spent off CPU, seconds; reason preempted (runnable) or blocked (sleeping).",
	  FEED(CAT_OBJ_PROCS, 11, "offcpu_preempted_s"), .feed_fmt = CAT_FMT_S },
	{ .id = CAT_ID_PROC_BLOCKED, .rows = CAT_ROWS_PROCS, .kind = CAT_COUNTER,
	  .unit = CAT_UNIT_NS, PROC(offcpu_blocked_ns),
	  .prom = "zernel_sched_offcpu_seconds_total", .prom_labels = "reason=\"blocked\"",
	  .help = "Time the process spent off CPU, seconds; reason preempted (runnable) or blocked (sleeping).",
	  FEED(CAT_OBJ_PROCS, 12, "offcpu_blocked_s"), .feed_fmt = CAT_FMT_S },
	{ .id = CAT_ID_PROC_INVOLUNTARY, .rows = CAT_ROWS_PROCS, .kind = CAT_COUNTER,
	  PROC(involuntary_switches), .prom = "zernel_sched_involuntary_switches_total",
	  .help = "Context switches away from the process while it was runnable (preemptions).",
	  FEED(CAT_OBJ_PROCS, 13, "involuntary_switches") },
	{ .id = CAT_ID_PROC_VOLUNTARY, .rows = CAT_ROWS_PROCS, .kind = CAT_COUNTER,
	  PROC(voluntary_switches), .prom = "zernel_sched_voluntary_switches_total",
	  .help = "Context switches away from the process because it blocked.",
	  FEED(CAT_OBJ_PROCS, 14, "voluntary_switches") },
	{ .id = CAT_ID_PROC_MIGRATIONS, .rows = CAT_ROWS_PROCS, .kind = CAT_COUNTER,
	  PROC(migrations), .prom = "zernel_sched_migrations_total",
	  .help = "Times the process's threads moved to another CPU.",
	  FEED(CAT_OBJ_PROCS, 15, "migrations") },
	/*
	 * One family: the states of enum shm_thread_state, in its order.  A
	 * process pays only for the states its threads were in (most are in
	 * three or four of the eight).
	 */
	{ .id = CAT_ID_PROC_STATE_ONCPU, .rows = CAT_ROWS_PROCS, .kind = CAT_COUNTER,
	  .unit = CAT_UNIT_NS, .flags = CAT_F_SPARSE, PROC(thread_state_ns[SHM_STATE_ONCPU]),
	  .prom = "zernel_thread_state_seconds_total", .prom_labels = "state=\"oncpu\"",
	  .help = THREAD_STATE_HELP,
	  FEED(CAT_OBJ_PROCS, 40, "state_oncpu_s"), .feed_fmt = CAT_FMT_S },
	{ .id = CAT_ID_PROC_STATE_RUNQ, .rows = CAT_ROWS_PROCS, .kind = CAT_COUNTER,
	  .unit = CAT_UNIT_NS, .flags = CAT_F_SPARSE, PROC(thread_state_ns[SHM_STATE_RUNQ]),
	  .prom = "zernel_thread_state_seconds_total", .prom_labels = "state=\"runq\"",
	  .help = THREAD_STATE_HELP,
	  FEED(CAT_OBJ_PROCS, 41, "state_runq_s"), .feed_fmt = CAT_FMT_S },
	{ .id = CAT_ID_PROC_STATE_INPUT, .rows = CAT_ROWS_PROCS, .kind = CAT_COUNTER,
	  .unit = CAT_UNIT_NS, .flags = CAT_F_SPARSE, PROC(thread_state_ns[SHM_STATE_INPUT]),
	  .prom = "zernel_thread_state_seconds_total", .prom_labels = "state=\"input\"",
	  .help = THREAD_STATE_HELP,
	  FEED(CAT_OBJ_PROCS, 42, "state_input_s"), .feed_fmt = CAT_FMT_S },
	{ .id = CAT_ID_PROC_STATE_GPU, .rows = CAT_ROWS_PROCS, .kind = CAT_COUNTER,
	  .unit = CAT_UNIT_NS, .flags = CAT_F_SPARSE, PROC(thread_state_ns[SHM_STATE_GPU]),
	  .prom = "zernel_thread_state_seconds_total", .prom_labels = "state=\"gpu\"",
	  .help = THREAD_STATE_HELP,
	  FEED(CAT_OBJ_PROCS, 43, "state_gpu_s"), .feed_fmt = CAT_FMT_S },
	{ .id = CAT_ID_PROC_STATE_COLLECTIVE, .rows = CAT_ROWS_PROCS, .kind = CAT_COUNTER,
	  .unit = CAT_UNIT_NS, .flags = CAT_F_SPARSE, PROC(thread_state_ns[SHM_STATE_COLLECTIVE]),
	  .prom = "zernel_thread_state_seconds_total", .prom_labels = "state=\"collective\"",
	  .help = THREAD_STATE_HELP,
	  FEED(CAT_OBJ_PROCS, 44, "state_collective_s"), .feed_fmt = CAT_FMT_S },
	{ .id = CAT_ID_PROC_STATE_LOCK, .rows = CAT_ROWS_PROCS, .kind = CAT_COUNTER,
	  .unit = CAT_UNIT_NS, .flags = CAT_F_SPARSE, PROC(thread_state_ns[SHM_STATE_LOCK]),
	  .prom = "zernel_thread_state_seconds_total", .prom_labels = "state=\"lock\"",
	  .help = THREAD_STATE_HELP,
	  FEED(CAT_OBJ_PROCS, 45, "state_lock_s"), .feed_fmt = CAT_FMT_S },
	{ .id = CAT_ID_PROC_STATE_SLEEP, .rows = CAT_ROWS_PROCS, .kind = CAT_COUNTER,
	  .unit = CAT_UNIT_NS, .flags = CAT_F_SPARSE, PROC(thread_state_ns[SHM_STATE_SLEEP]),
	  .prom = "zernel_thread_state_seconds_total", .prom_labels = "state=\"sleep\"",
	  .help = THREAD_STATE_HELP,
	  FEED(CAT_OBJ_PROCS, 46, "state_sleep_s"), .feed_fmt = CAT_FMT_S },
	{ .id = CAT_ID_PROC_STATE_OTHER, .rows = CAT_ROWS_PROCS, .kind = CAT_COUNTER,
	  .unit = CAT_UNIT_NS, .flags = CAT_F_SPARSE, PROC(thread_state_ns[SHM_STATE_OTHER]),
	  .prom = "zernel_thread_state_seconds_total", .prom_labels = "state=\"other\"",
	  .help = THREAD_STATE_HELP,
	  FEED(CAT_OBJ_PROCS, 47, "state_other_s"), .feed_fmt = CAT_FMT_S },
	{ .id = CAT_ID_PROC_GPU_BYTES, .rows = CAT_ROWS_PROCS, .kind = CAT_GAUGE,
	  .unit = CAT_UNIT_BYTES, .get = cat_proc_gpu_bytes,
	  .help = "GPU memory the process holds on every GPU together, bytes.",
	  FEED(CAT_OBJ_PROCS, 4, "gpu_bytes") },

	/* GPU memory per (pid, gpu). */
	{ .id = CAT_ID_MEM_USED, .rows = CAT_ROWS_GPU_MEM, .kind = CAT_GAUGE,
	  .unit = CAT_UNIT_BYTES, MEM(used_bytes), .prom = "zernel_gpu_memory_used_bytes",
	  .help = "GPU memory a process holds from the driver on a device now, bytes: what it "
		  "allocated, and what its CUDA memory pools keep after frees.",
	  FEED(CAT_OBJ_GPU_MEM, 1, "current_bytes") },
	{ .id = CAT_ID_MEM_PEAK, .rows = CAT_ROWS_GPU_MEM, .kind = CAT_GAUGE,
	  .unit = CAT_UNIT_BYTES, MEM(peak_bytes), .prom = "zernel_gpu_memory_peak_bytes",
	  .help = "High-water mark of the GPU memory a process held on a device, bytes.",
	  FEED(CAT_OBJ_GPU_MEM, 2, "peak_bytes") },
	{ .rows = CAT_ROWS_GPU_MEM, .kind = CAT_GAUGE, .unit = CAT_UNIT_BYTES,
	  MEM(driver_used_bytes), .known = cat_mem_driver_known,
	  .prom = "zernel_gpu_memory_driver_used_bytes",
	  .help = "GPU memory the driver counts for a process on a device (NVML), bytes: its allocations, its CUDA context and what the probes did not see; only where NVML gives it." },
	{ .rows = CAT_ROWS_GPU_MEM, .kind = CAT_INFO, .prom = "zernel_gpu_memory_info",
	  .labels = mem_info_labels, .n_labels = ARRAY_SIZE(mem_info_labels),
	  .help = "Always 1 for each (pid, gpu_id) memory row: the GPU's UUID and modelName (NVML), the process's own CUDA device, and how gpu_id was found (only_one, pci_order, uuid, mig_parent, open_node; ordinal: not mapped, no GPU list) or why it is not known (fastest_first, no_node_list, no_pci_id, container, ambiguous (a UUID prefix of several GPUs, or a Slurm job's devices that read both job-local and node-wide with no GPU node open to tell), not_on_node, mig, invalid_env, unreadable, unknown); driver: a row of the driver's figure alone (NVML lists the process on that GPU, the probes saw none of its memory there; cuda_device empty)." },
	{ .rows = CAT_ROWS_GPU_MEM, .kind = CAT_GAUGE, .unit = CAT_UNIT_BOOL, .get = cat_mem_from_start,
	  .prom = "zernel_gpu_memory_tracked_from_start",
	  .help = "1 when every library the process calls the driver through was probed before it started, so no allocation was missed; 0 when allocations made before (a collector restart, a library probed late) may be absent from used_bytes." },
	{ .rows = CAT_ROWS_GPU_MEM, .kind = CAT_COUNTER, MEM(alloc_calls),
	  .prom = "zernel_gpu_memory_alloc_calls_total",
	  .help = "Successful GPU memory allocations by a process on a device." },
	{ .rows = CAT_ROWS_GPU_MEM, .kind = CAT_COUNTER, MEM(free_calls),
	  .prom = "zernel_gpu_memory_free_calls_total",
	  .help = "GPU memory frees by a process on a device that matched an allocation." },
	{ .rows = CAT_ROWS_GPU_MEM, .kind = CAT_COUNTER, MEM(failed_calls),
	  .prom = "zernel_gpu_memory_alloc_failures_total",
	  .help = "GPU memory allocations by a process on a device that returned an error." },

	/* GPU devices. */
	{ .rows = CAT_ROWS_GPUS, .kind = CAT_INFO, .prom = "zernel_gpu_info",
	  .labels = gpu_info_labels, .n_labels = ARRAY_SIZE(gpu_info_labels),
	  .help = "Always 1 for each GPU device: its UUID and modelName as NVML gives them (dcgm-exporter's label names; empty when not known)." },
	{ .id = CAT_ID_GPU_TOTAL, .rows = CAT_ROWS_GPUS, .kind = CAT_GAUGE, .unit = CAT_UNIT_BYTES,
	  .flags = CAT_F_KNOWN, GPU(total_bytes), .prom = "zernel_gpu_memory_total_bytes",
	  .help = "Memory of a GPU device, bytes (devices whose size is known).",
	  FEED(CAT_OBJ_GPUS, 1, "total_bytes"), .alert = "gpu_memory_total_bytes" },
	{ .id = CAT_ID_GPU_USED, .rows = CAT_ROWS_GPUS, .kind = CAT_GAUGE, .unit = CAT_UNIT_BYTES,
	  GPU(used_bytes), .prom = "zernel_gpu_memory_device_used_bytes",
	  .labels = gpu_used_labels, .n_labels = ARRAY_SIZE(gpu_used_labels),
	  .help = "GPU memory used on a device, bytes: the driver's figure where NVML gives it (every process and CUDA context; source=\"driver\"), else the watched processes' rows together (source=\"processes\").",
	  FEED(CAT_OBJ_GPUS, 2, "used_bytes") },
	{ .id = CAT_ID_GPU_PROCESSES, .rows = CAT_ROWS_GPUS, .kind = CAT_GAUGE, GPU(processes),
	  .prom = "zernel_gpu_processes",
	  .help = "Watched processes holding memory on a GPU device (the probes' or the driver's figure).",
	  FEED(CAT_OBJ_GPUS, 3, "processes") },
	/* The OOM alert's figures: the driver's used memory, else the processes' rows; never a peak. */
	{ .rows = CAT_ROWS_GPUS, .kind = CAT_GAUGE, .unit = CAT_UNIT_RATIO, .flags = CAT_F_KNOWN,
	  .get = cat_gpu_used_for_oom, .per = offsetof(struct shm_gpu, total_bytes),
	  .help = "GPU memory used / total per GPU (0..1); used is the driver's figure where NVML gives it, else the watched processes' sum", .alert = "gpu_memory_used_ratio" },
	{ .rows = CAT_ROWS_GPUS, .kind = CAT_GAUGE, .unit = CAT_UNIT_BYTES,
	  .get = cat_gpu_used_for_oom, .help = "GPU memory used per GPU, bytes (as gpu_memory_used_ratio)",
	  .alert = "gpu_memory_used_bytes" },

	/* Latencies per process: a summary and a histogram each. */
	{ .id = CAT_ID_PROC_CUDA_LAUNCH, .rows = CAT_ROWS_PROCS, .kind = CAT_LATENCY,
	  .flags = CAT_F_SAMPLED, PROC(lat[SHM_FAMILY_CUDA_LAUNCH]),
	  .prom = "zernel_cuda_launch_latency_seconds",
	  .prom_hist = "zernel_cuda_launch_duration_seconds",
	  .help = "CUDA kernel launch API latency per process (host side, entry to return), seconds.",
	  FEED(CAT_OBJ_PROCS, 5, "cuda_launch"), .feed_fmt = CAT_FMT_US,
	  .feed_parts = CAT_PART_P50 | CAT_PART_P99 | CAT_PART_COUNT,
	  .alert = "process_cuda_launch" },
	{ .rows = CAT_ROWS_PROCS, .kind = CAT_LATENCY, .flags = CAT_F_SAMPLED,
	  PROC(lat[SHM_FAMILY_CUDA_GRAPH_LAUNCH]),
	  .prom = "zernel_cuda_graph_launch_latency_seconds",
	  .prom_hist = "zernel_cuda_graph_launch_duration_seconds",
	  .help = "CUDA graph launch API latency per process (host side), seconds.",
	  FEED(CAT_OBJ_PROCS, 6, "cuda_graph_launch"), .feed_fmt = CAT_FMT_US,
	  .feed_parts = CAT_PART_COUNT, .alert = "process_cuda_graph_launch" },
	{ .id = CAT_ID_PROC_DATALOADER, .rows = CAT_ROWS_PROCS, .kind = CAT_LATENCY,
	  .flags = CAT_F_SAMPLED, PROC(lat[SHM_FAMILY_DATALOADER_WAIT]),
	  .prom = "zernel_dataloader_wait_seconds",
	  .prom_hist = "zernel_dataloader_wait_duration_seconds",
	  .help = "Time a process waited for input data (blocked in read/poll/io_uring waits), seconds.",
	  FEED(CAT_OBJ_PROCS, 7, "dataloader_wait"), .feed_fmt = CAT_FMT_MS,
	  .feed_parts = CAT_PART_P50 | CAT_PART_P99 | CAT_PART_COUNT,
	  .alert = "process_dataloader_wait" },
	{ .id = CAT_ID_PROC_FUTEX, .rows = CAT_ROWS_PROCS, .kind = CAT_LATENCY,
	  .flags = CAT_F_SAMPLED, PROC(lat[SHM_FAMILY_FUTEX_WAIT]),
	  .prom = "zernel_dist_sync_wait_seconds",
	  .prom_hist = "zernel_dist_sync_wait_duration_seconds", .prom_labels = "kind=\"futex\"",
	  .help = "Distributed-sync waits per process, seconds; kind futex (FUTEX_WAIT) or barrier (pthread_barrier_wait).",
	  FEED(CAT_OBJ_PROCS, 8, "futex_wait"), .feed_fmt = CAT_FMT_MS,
	  .feed_parts = CAT_PART_P99, .alert = "process_futex_wait" },
	{ .id = CAT_ID_PROC_BARRIER, .rows = CAT_ROWS_PROCS, .kind = CAT_LATENCY,
	  .flags = CAT_F_SAMPLED, PROC(lat[SHM_FAMILY_BARRIER_WAIT]),
	  .prom = "zernel_dist_sync_wait_seconds",
	  .prom_hist = "zernel_dist_sync_wait_duration_seconds", .prom_labels = "kind=\"barrier\"",
	  .help = "Distributed-sync waits per process, seconds; kind futex (FUTEX_WAIT) or barrier (pthread_barrier_wait).",
	  FEED(CAT_OBJ_PROCS, 9, "barrier_wait"), .feed_fmt = CAT_FMT_MS,
	  .feed_parts = CAT_PART_P99, .alert = "process_barrier_wait" },
	{ .id = CAT_ID_PROC_RUNQ, .rows = CAT_ROWS_PROCS, .kind = CAT_LATENCY,
	  .flags = CAT_F_SAMPLED, PROC(lat[SHM_FAMILY_RUNQ_DELAY]),
	  .prom = "zernel_sched_runqueue_delay_seconds",
	  .prom_hist = "zernel_sched_runqueue_delay_duration_seconds",
	  .help = "Run-queue delay per process (wakeup or preemption to running), seconds.",
	  FEED(CAT_OBJ_PROCS, 10, "runq_delay"), .feed_fmt = CAT_FMT_US,
	  .feed_parts = CAT_PART_P99, .alert = "process_sched_runqueue" },
	{ .rows = CAT_ROWS_PROCS, .kind = CAT_LATENCY, .flags = CAT_F_SAMPLED,
	  PROC(lat[SHM_FAMILY_CUDA_SYNC]),
	  .prom = "zernel_cuda_sync_latency_seconds",
	  .prom_hist = "zernel_cuda_sync_duration_seconds",
	  .help = "Time a process waited in CUDA stream and device synchronisation (host side, entry to return), seconds.",
	  .alert = "process_cuda_sync" },

	/* NCCL per op, all processes together. */
	{ .id = CAT_ID_NCCL_DURATION, .rows = CAT_ROWS_NCCL_OPS, .kind = CAT_LATENCY,
	  OP(duration), .fine_off = offsetof(struct shm_nccl_op, duration_fine),
	  .prom = "zernel_nccl_collective_duration_seconds",
	  .prom_hist = "zernel_nccl_collective_seconds",
	  .help = "Host-side duration of NCCL calls per op, all processes, seconds.",
	  FEED(CAT_OBJ_NCCL, 4, "duration"), .feed_fmt = CAT_FMT_MS,
	  .feed_parts = CAT_PART_P50 | CAT_PART_P99, .alert = "nccl_collective" },
	{ .id = CAT_ID_NCCL_WAIT, .rows = CAT_ROWS_NCCL_OPS, .kind = CAT_LATENCY, OP(wait),
	  .fine_off = offsetof(struct shm_nccl_op, wait_fine),
	  .prom = "zernel_nccl_wait_seconds", .prom_hist = "zernel_nccl_wait_duration_seconds",
	  .help = "From an NCCL collective's launch to the return of the first host-blocking CUDA call that covered its stream (upper bound of GPU completion), all processes, seconds.",
	  FEED(CAT_OBJ_NCCL, 5, "wait"), .feed_fmt = CAT_FMT_MS,
	  .feed_parts = CAT_PART_P50 | CAT_PART_P99, .alert = "nccl_wait" },
	{ .id = CAT_ID_NCCL_CALLS, .rows = CAT_ROWS_NCCL_OPS, .kind = CAT_COUNTER, OP(calls),
	  .prom = "zernel_nccl_calls_total", .help = "NCCL calls per op, all processes.",
	  FEED(CAT_OBJ_NCCL, 1, "calls") },
	{ .id = CAT_ID_NCCL_BYTES, .rows = CAT_ROWS_NCCL_OPS, .kind = CAT_COUNTER,
	  .unit = CAT_UNIT_BYTES, OP(bytes), .prom = "zernel_nccl_bytes_total",
	  .help = "Bytes NCCL calls were asked to move per op (count times datatype size), all processes.",
	  FEED(CAT_OBJ_NCCL, 2, "bytes") },
	{ .id = CAT_ID_NCCL_ERRORS, .rows = CAT_ROWS_NCCL_OPS, .kind = CAT_COUNTER, OP(errors),
	  .prom = "zernel_nccl_errors_total",
	  .help = "NCCL calls per op that returned an error, all processes.",
	  FEED(CAT_OBJ_NCCL, 3, "errors") },
	{ .rows = CAT_ROWS_NCCL_COMMS, .kind = CAT_INFO, .prom = "zernel_nccl_comm_info",
	  .labels = comm_info_labels, .n_labels = ARRAY_SIZE(comm_info_labels),
	  .help = "Always 1 for each rank of an NCCL communicator a watched process holds; labels: communicator (NCCL's commHash), rank, world size, GPU (empty when unknown), origin, parent.",
	  .feed_obj = CAT_OBJ_COMMS },
	/*
	 * Per communicator and rank: what names a straggler and a hang across
	 * nodes.  Summaries only: a classic histogram per (comm, rank) would
	 * cost each process 60 series, and the rules compare quantiles.
	 */
	{ .rows = CAT_ROWS_NCCL_COMMS, .kind = CAT_LATENCY, .flags = CAT_F_SAMPLED,
	  COMM(wait), .prom = "zernel_nccl_comm_wait_seconds",
	  .help = "Per communicator and rank: from a collective's launch (its call, or the ncclGroupEnd that launched it) to the return of the first host-blocking CUDA call that covered its stream, an upper bound of its GPU completion, seconds. The rank the others wait for has the shortest.",
	  FEED(CAT_OBJ_COMMS, 7, "wait"), .feed_fmt = CAT_FMT_MS,
	  .feed_parts = CAT_PART_P50 | CAT_PART_P99 },
	{ .rows = CAT_ROWS_NCCL_COMMS, .kind = CAT_LATENCY, .flags = CAT_F_SAMPLED,
	  COMM(gap), .prom = "zernel_nccl_comm_gap_seconds",
	  .help = "Per communicator and rank: from a completion to its next call while none was pending, the rank's own time between collectives, seconds.",
	  FEED(CAT_OBJ_COMMS, 8, "gap"), .feed_fmt = CAT_FMT_MS,
	  .feed_parts = CAT_PART_P50 | CAT_PART_P99 },
	{ .rows = CAT_ROWS_NCCL_COMMS, .kind = CAT_LATENCY, .flags = CAT_F_SAMPLED,
	  COMM(gpu), .prom = "zernel_nccl_comm_gpu_seconds",
	  .help = "Per communicator and rank: a collective's time on the GPU, from its kernel's first channel starting to its last channel ending (NCCL's own GPU timestamps), seconds; only where NCCL runs Zernel's profiler plugin (NCCL_PROFILER_PLUGIN). The rank the others wait for on the GPU has the shortest." },
	{ .rows = CAT_ROWS_NCCL_COMMS, .kind = CAT_COUNTER, COMM(calls),
	  .prom = "zernel_nccl_comm_calls_total",
	  .help = "Collective and point-to-point calls queued on the communicator by this rank.",
	  FEED(CAT_OBJ_COMMS, 9, "calls") },
	{ .rows = CAT_ROWS_NCCL_COMMS, .kind = CAT_COUNTER, .unit = CAT_UNIT_BYTES, COMM(bytes),
	  .prom = "zernel_nccl_comm_bytes_total",
	  .help = "Bytes those calls were asked to move (count times datatype size)." },
	{ .rows = CAT_ROWS_NCCL_COMMS, .kind = CAT_GAUGE, COMM(pending),
	  .prom = "zernel_nccl_comm_pending",
	  .help = "Calls queued on the communicator by this rank and not yet seen to complete.",
	  FEED(CAT_OBJ_COMMS, 10, "pending") },
	{ .rows = CAT_ROWS_NCCL_COMMS, .kind = CAT_GAUGE, .unit = CAT_UNIT_NS, COMM(stalled_ns),
	  .prom = "zernel_nccl_comm_stalled_seconds",
	  .help = "While calls are pending: seconds since this rank last saw a collective of the communicator complete (or since calls became pending, if later); 0 when none is pending. A hang grows it without bound.",
	  FEED(CAT_OBJ_COMMS, 11, "stalled"), .feed_fmt = CAT_FMT_S, .alert = "nccl_comm_stalled_seconds" },

	/* Node-wide latencies (every sample of every watched process): feed and alerts. */
	{ .id = CAT_ID_CUDA_LATENCY, .rows = CAT_ROWS_HEADER, .kind = CAT_LATENCY,
	  HDR(node[SHM_FAMILY_CUDA_LAUNCH]),
	  .help = "CUDA kernel launch API latency of every watched process, seconds.",
	  FEED(CAT_OBJ_ROOT, 2, "cuda_latency"), .feed_fmt = CAT_FMT_US,
	  .feed_parts = CAT_PART_P50 | CAT_PART_P99, .alert = "cuda_launch" },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_LATENCY, HDR(node[SHM_FAMILY_CUDA_GRAPH_LAUNCH]),
	  .help = "CUDA graph launch API latency of every watched process, seconds.",
	  .alert = "cuda_graph_launch" },
	{ .id = CAT_ID_DATALOADER_WAIT, .rows = CAT_ROWS_HEADER, .kind = CAT_LATENCY,
	  HDR(node[SHM_FAMILY_DATALOADER_WAIT]),
	  .help = "Time every watched process waited for input data, seconds.",
	  FEED(CAT_OBJ_ROOT, 4, "dataloader_wait"), .feed_fmt = CAT_FMT_MS,
	  .feed_parts = CAT_PART_P50 | CAT_PART_P99, .alert = "dataloader_wait" },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_LATENCY, HDR(node[SHM_FAMILY_FUTEX_WAIT]),
	  .help = "Futex waits of every watched process, seconds.", .alert = "futex_wait" },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_LATENCY, HDR(node[SHM_FAMILY_BARRIER_WAIT]),
	  .help = "pthread_barrier_wait calls of every watched process, seconds.",
	  .alert = "barrier_wait" },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_LATENCY, HDR(node[SHM_FAMILY_RUNQ_DELAY]),
	  .help = "Run-queue delay of every watched process, seconds.", .alert = "sched_runqueue" },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_LATENCY, HDR(node[SHM_FAMILY_CUDA_SYNC]),
	  .help = "CUDA stream and device synchronisation waits of every watched process, seconds.",
	  .alert = "cuda_sync" },
	{ .id = CAT_ID_NCCL_ALLREDUCE, .rows = CAT_ROWS_HEADER, .kind = CAT_LATENCY,
	  .get_latency = cat_allreduce_duration,
	  .help = "Host-side duration of ncclAllReduce calls, all processes, seconds.",
	  FEED(CAT_OBJ_ROOT, 3, "nccl_allreduce"), .feed_fmt = CAT_FMT_MS,
	  .feed_parts = CAT_PART_P50 | CAT_PART_P99 },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_GAUGE, HDR(table[SHM_TABLE_GPU_MEM].count),
	  .help = "Rows of gpu_utilization before the bound.",
	  FEED(CAT_OBJ_ROOT, 1, "gpu_utilization_total") },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_GAUGE, HDR(table[SHM_TABLE_PROCS].count),
	  .help = "Watched processes, including those past the bound of processes.",
	  FEED(CAT_OBJ_ROOT, 13, "processes_total") },
	{ .rows = CAT_ROWS_HEADER, .kind = CAT_GAUGE, .unit = CAT_UNIT_BOOL, .get = cat_procs_truncated,
	  .help = "processes holds only the top " CAT_STR(CAT_FEED_TOP_PROCS) " watched processes.",
	  FEED(CAT_OBJ_ROOT, 14, "processes_truncated"), .feed_fmt = CAT_FMT_BOOL },

	/* What the exporter knows of the collector: rendered at every scrape. */
	{ .id = CAT_ID_COLLECTOR_UP, .rows = CAT_ROWS_STATUS, .kind = CAT_GAUGE,
	  .unit = CAT_UNIT_BOOL, .get = cat_collector_up, .prom = "zernel_collector_up",
	  .help = "1 when the collector's segment is present, valid and fresh; 0 otherwise (then no segment data is exported).",
	  FEED(CAT_OBJ_ROOT, 6, "collector_up"), .feed_fmt = CAT_FMT_BOOL,
	  .alert = "collector_up" },
	{ .rows = CAT_ROWS_STATUS, .kind = CAT_INFO, .prom = "zernel_collector_status",
	  .labels = status_labels, .n_labels = ARRAY_SIZE(status_labels),
	  .help = "Always 1; label status: ok, stale (heartbeat older than 3 publish intervals), busy (no consistent copy), missing or invalid." },
	{ .id = CAT_ID_AGE, .rows = CAT_ROWS_STATUS, .kind = CAT_GAUGE, .unit = CAT_UNIT_NS,
	  .flags = CAT_F_SEEN, STATUS(age_ns),
	  .prom = "zernel_collector_last_publish_age_seconds",
	  .help = "Seconds since the collector's last publish that this exporter saw.",
	  FEED(CAT_OBJ_ROOT, 10, "age_ms"), .feed_fmt = CAT_FMT_INT_MS,
	  .alert = "collector_publish_age_seconds" },
	{ .id = CAT_ID_LAST_UPDATE, .rows = CAT_ROWS_STATUS, .kind = CAT_GAUGE,
	  .unit = CAT_UNIT_NS, .flags = CAT_F_SEEN, STATUS(last_update_real_ns),
	  .prom = "zernel_collector_last_publish_timestamp_seconds",
	  .help = "Wall-clock time of the collector's last publish that this exporter saw, seconds since the Unix epoch.",
	  FEED(CAT_OBJ_ROOT, 5, "last_update_ms"), .feed_fmt = CAT_FMT_INT_MS },
	{ .id = CAT_ID_GENERATION, .rows = CAT_ROWS_STATUS, .kind = CAT_GAUGE, .flags = CAT_F_SEEN,
	  STATUS(generation), .prom = "zernel_segment_generation",
	  .help = "Generation of the segment last read; changes at every collector start.",
	  FEED(CAT_OBJ_ROOT, 9, "generation") },
	{ .id = CAT_ID_STALE_REASON, .rows = CAT_ROWS_STATUS, .kind = CAT_TEXT,
	  .get_text = cat_text_stale_reason, .help = "Why the data is not fresh; \"\" when it is.",
	  FEED(CAT_OBJ_ROOT, 8, "stale_reason"), .feed_fmt = CAT_FMT_TEXT },

	/* The exporter itself. */
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_INFO, .prom = "zernel_exporter_build_info",
	  .labels = build_info_labels, .n_labels = ARRAY_SIZE(build_info_labels),
	  .help = "Always 1; label version: the exporter's version." },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_GAUGE, .unit = CAT_UNIT_NS,
	  STAT(CAT_STAT_START_REAL_NS), .prom = "zernel_exporter_start_time_seconds",
	  .help = "When the exporter started, seconds since the Unix epoch." },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_COUNTER, STAT(CAT_STAT_SCRAPES),
	  .prom = "zernel_exporter_scrapes_total", .help = "Requests for /metrics answered.",
	  FEED(CAT_OBJ_TELEMETRY, 11, "http_scrapes") },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_COUNTER, STAT(CAT_STAT_SCRAPES_WAITED),
	  .prom = "zernel_exporter_scrapes_waited_total",
	  .help = "Requests for /metrics that waited for the publish they saw to be rendered; "
		  "the others took a body rendered ahead (while scrapes come often, or just before "
		  "a scraper that asks at a steady interval) or the publish before it." },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_COUNTER, STAT(CAT_STAT_HTTP_REQUESTS),
	  .prom = "zernel_exporter_http_requests_total",
	  .help = "HTTP requests answered, every path." },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_GAUGE, STAT(CAT_STAT_HTTP_CONNECTIONS),
	  .prom = "zernel_exporter_http_connections", .help = "HTTP connections open now." },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_COUNTER, STAT(CAT_STAT_HTTP_REJECTED),
	  .prom = "zernel_exporter_http_rejected_total",
	  .help = "HTTP connections refused at the connection limit." },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_COUNTER, STAT(CAT_STAT_HTTP_EVICTED),
	  .prom = "zernel_exporter_http_evicted_total",
	  .help = "HTTP connections still waiting for their request closed at the connection "
		  "limit, so that a newcomer got their slot." },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_GAUGE, STAT(CAT_STAT_WS_CLIENTS),
	  .prom = "zernel_exporter_ws_clients", .help = "WebSocket clients connected now.",
	  FEED(CAT_OBJ_TELEMETRY, 9, "ws_clients") },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_COUNTER, STAT(CAT_STAT_WS_CONNECTIONS),
	  .prom = "zernel_exporter_ws_connections_total",
	  .help = "WebSocket clients accepted since start." },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_COUNTER, STAT(CAT_STAT_WS_FRAMES_SENT),
	  .prom = "zernel_exporter_ws_frames_sent_total",
	  .help = "Snapshots sent to WebSocket clients." },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_COUNTER, STAT(CAT_STAT_WS_FRAMES_DROPPED),
	  .prom = "zernel_exporter_ws_frames_dropped_total",
	  .help = "Snapshots skipped for a WebSocket client that had not taken the previous one.",
	  FEED(CAT_OBJ_TELEMETRY, 10, "ws_frames_dropped") },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_COUNTER, STAT(CAT_STAT_WS_STALLED_CLOSED),
	  .prom = "zernel_exporter_ws_stalled_closed_total",
	  .help = "WebSocket clients closed for staying stalled." },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_COUNTER, STAT(CAT_STAT_WS_REJECTED),
	  .prom = "zernel_exporter_ws_rejected_total",
	  .help = "WebSocket connections refused at the connection limit." },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_COUNTER, STAT(CAT_STAT_WS_BAD_INPUT),
	  .prom = "zernel_exporter_ws_bad_input_total",
	  .help = "WebSocket clients closed for what they sent (protocol errors, binary, oversized or invalid UTF-8 messages)." },
	{ .rows = CAT_ROWS_EXPORTER, .kind = CAT_GAUGE, .unit = CAT_UNIT_BYTES,
	  STAT(CAT_STAT_WS_FEED_BYTES), .prom = "zernel_exporter_ws_snapshot_bytes",
	  .help = "Size of the last WebSocket snapshot, bytes." },

	/* Alerts: the engine writes these series and the feed's alert objects. */
	{ .id = CAT_ID_ALERT_FIRING, .rows = CAT_ROWS_ALERTS, .kind = CAT_GAUGE,
	  .prom = "zernel_alert_firing",
	  .doc_labels = "alertname, severity, the series' labels, the rule's labels",
	  .help = "1 for each firing alert (labels: alertname, severity, the alert's labels)." },
	{ .id = CAT_ID_ALERT_PENDING, .rows = CAT_ROWS_ALERTS, .kind = CAT_GAUGE,
	  .prom = "zernel_alert_pending",
	  .doc_labels = "alertname, severity, the series' labels, the rule's labels",
	  .help = "1 for each pending (condition true, `for` not yet over) alert (labels: alertname, severity, the alert's labels)." },
	{ .id = CAT_ID_ALERT_TRANSITIONS, .rows = CAT_ROWS_ALERTS, .kind = CAT_COUNTER,
	  .prom = "zernel_alert_transitions_total", .doc_labels = "alertname, to (firing, resolved)",
	  .help = "Alert state changes, to firing or to resolved." },
	{ .id = CAT_ID_ALERT_RULES, .rows = CAT_ROWS_ALERTS, .kind = CAT_GAUGE,
	  .prom = "zernel_alert_rules", .help = "Alert rules loaded." },
	{ .id = CAT_ID_ALERT_RELOADS, .rows = CAT_ROWS_ALERTS, .kind = CAT_COUNTER,
	  .prom = "zernel_alert_config_reloads_total", .doc_labels = "result (success, failure)",
	  .help = "Alert configuration reloads (SIGHUP) by result." },
	{ .id = CAT_ID_ALERT_RELOAD_OK, .rows = CAT_ROWS_ALERTS, .kind = CAT_GAUGE,
	  .unit = CAT_UNIT_BOOL, .prom = "zernel_alert_config_last_reload_successful",
	  .help = "1 when the last alert configuration load succeeded." },
	{ .id = CAT_ID_ALERT_DROPPED, .rows = CAT_ROWS_ALERTS, .kind = CAT_COUNTER,
	  .prom = "zernel_alert_label_sets_dropped_total",
	  .help = "Label sets not tracked because a rule had too many." },
	{ .id = CAT_ID_ALERT_NAME, .rows = CAT_ROWS_ALERTS, .kind = CAT_TEXT,
	  .help = "The rule's name.", FEED(CAT_OBJ_ALERTS, 0, "alertname"),
	  .feed_fmt = CAT_FMT_TEXT },
	{ .id = CAT_ID_ALERT_SEVERITY, .rows = CAT_ROWS_ALERTS, .kind = CAT_TEXT,
	  .help = "The rule's severity.", FEED(CAT_OBJ_ALERTS, 1, "severity"),
	  .feed_fmt = CAT_FMT_TEXT },
	{ .id = CAT_ID_ALERT_STATE, .rows = CAT_ROWS_ALERTS, .kind = CAT_TEXT,
	  .help = "pending: the condition holds, not yet for the rule's `for`; firing.",
	  FEED(CAT_OBJ_ALERTS, 2, "state"), .feed_fmt = CAT_FMT_TEXT,
	  .feed_values = "pending|firing" },
	{ .id = CAT_ID_ALERT_SUMMARY, .rows = CAT_ROWS_ALERTS, .kind = CAT_TEXT,
	  .help = "The rule's summary, its template filled in.",
	  FEED(CAT_OBJ_ALERTS, 3, "summary"), .feed_fmt = CAT_FMT_TEXT },
	{ .id = CAT_ID_ALERT_LABELS, .rows = CAT_ROWS_ALERTS, .kind = CAT_TEXT,
	  .help = "The series' labels and the rule's own labels.",
	  FEED(CAT_OBJ_ALERTS, 4, "labels"), .feed_fmt = CAT_FMT_TEXT_MAP },
	{ .id = CAT_ID_ALERT_STARTS, .rows = CAT_ROWS_ALERTS, .kind = CAT_TEXT,
	  .help = "When it started firing, RFC 3339; 0001-01-01T00:00:00Z while pending.",
	  FEED(CAT_OBJ_ALERTS, 5, "startsAt"), .feed_fmt = CAT_FMT_TEXT },
	{ .id = CAT_ID_ALERT_ACTIVE, .rows = CAT_ROWS_ALERTS, .kind = CAT_TEXT,
	  .help = "When the condition started to hold, RFC 3339.",
	  FEED(CAT_OBJ_ALERTS, 6, "activeAt"), .feed_fmt = CAT_FMT_TEXT },
	{ .id = CAT_ID_ALERT_VALUE, .rows = CAT_ROWS_ALERTS, .kind = CAT_GAUGE,
	  .help = "The metric's value at the last evaluation.",
	  FEED(CAT_OBJ_ALERTS, 7, "value"), .feed_fmt = CAT_FMT_NUMBER },

	/* Webhooks: each target writes its series. */
	{ .id = CAT_ID_WEBHOOK_INFO, .rows = CAT_ROWS_WEBHOOKS, .kind = CAT_INFO,
	  .prom = "zernel_webhook_info", .doc_labels = "webhook, target",
	  .help = "Always 1 per configured webhook; label target: its host and port." },
	{ .id = CAT_ID_WEBHOOK_SENT, .rows = CAT_ROWS_WEBHOOKS, .kind = CAT_COUNTER,
	  .prom = "zernel_webhook_sent_total", .doc_labels = "webhook",
	  .help = "Notifications a webhook accepted (HTTP 2xx)." },
	{ .id = CAT_ID_WEBHOOK_FAILURES, .rows = CAT_ROWS_WEBHOOKS, .kind = CAT_COUNTER,
	  .prom = "zernel_webhook_failures_total", .doc_labels = "webhook",
	  .help = "Notifications given up: out of tries, or refused with HTTP 4xx." },
	{ .id = CAT_ID_WEBHOOK_RETRIES, .rows = CAT_ROWS_WEBHOOKS, .kind = CAT_COUNTER,
	  .prom = "zernel_webhook_retries_total", .doc_labels = "webhook",
	  .help = "Tries after the first (network errors and HTTP 5xx)." },
	{ .id = CAT_ID_WEBHOOK_DROPPED, .rows = CAT_ROWS_WEBHOOKS, .kind = CAT_COUNTER,
	  .prom = "zernel_webhook_dropped_total", .doc_labels = "webhook",
	  .help = "Notifications pushed out of a full queue." },
	{ .id = CAT_ID_WEBHOOK_QUEUE, .rows = CAT_ROWS_WEBHOOKS, .kind = CAT_GAUGE,
	  .prom = "zernel_webhook_queue_length", .doc_labels = "webhook",
	  .help = "Notifications waiting for a webhook." },

	/*
	 * Stall sites: text of any variety, so in the feed and /api/stalls,
	 * never in a Prometheus label; exporter/explain/stall_sites.c writes them.
	 */
	{ .id = CAT_ID_PROC_STALL_SITES, .rows = CAT_ROWS_PROCS, .kind = CAT_GAUGE,
	  .get = cat_proc_stall_sites,
	  .help = "Python stall sites of the process, including those past the bound of stall_sites.",
	  FEED(CAT_OBJ_PROCS, 48, "stall_sites_total") },
	{ .id = CAT_ID_SITE_STATE, .rows = CAT_ROWS_STALL_SITES, .kind = CAT_TEXT,
	  .help = "What its thread waited for there: a CPU (runq), input, the GPU, a "
	  "collective, a lock, a sleep, or other.",
	  FEED(CAT_OBJ_STALL_SITES, 0, "state"), .feed_fmt = CAT_FMT_TEXT,
	  .feed_values = "runq|input|gpu|collective|lock|sleep|other" },
	{ .id = CAT_ID_SITE_FILE, .rows = CAT_ROWS_STALL_SITES, .kind = CAT_TEXT,
	  .help = "File of the innermost frame of the process's own code: the end of a long "
	  "path, printable ASCII (any other byte as ?).",
	  FEED(CAT_OBJ_STALL_SITES, 1, "file"), .feed_fmt = CAT_FMT_TEXT },
	{ .id = CAT_ID_SITE_LINE, .rows = CAT_ROWS_STALL_SITES, .kind = CAT_GAUGE,
	  .help = "Its line; 0 when unknown.", FEED(CAT_OBJ_STALL_SITES, 2, "line") },
	{ .id = CAT_ID_SITE_FUNCTION, .rows = CAT_ROWS_STALL_SITES, .kind = CAT_TEXT,
	  .help = "Its function, printable ASCII.",
	  FEED(CAT_OBJ_STALL_SITES, 3, "function"), .feed_fmt = CAT_FMT_TEXT },
	{ .id = CAT_ID_SITE_STALLS, .rows = CAT_ROWS_STALL_SITES, .kind = CAT_COUNTER,
	  .help = "Stalls there over the collector's --stall-threshold-ms, since the process "
	  "was watched.", FEED(CAT_OBJ_STALL_SITES, 4, "stalls") },
	{ .id = CAT_ID_SITE_SECONDS, .rows = CAT_ROWS_STALL_SITES, .kind = CAT_COUNTER,
	  .unit = CAT_UNIT_NS, .help = "Their time.",
	  FEED(CAT_OBJ_STALL_SITES, 5, "seconds"), .feed_fmt = CAT_FMT_S },
	{ .id = CAT_ID_SITE_SHARE, .rows = CAT_ROWS_STALL_SITES, .kind = CAT_GAUGE,
	  .unit = CAT_UNIT_RATIO, .help = "Their part of the time of all the process's stall "
	  "sites, 0 to 1 (what `zernel explain` prints as a percentage).",
	  FEED(CAT_OBJ_STALL_SITES, 6, "share"), .feed_fmt = CAT_FMT_NUMBER },
};

const size_t cat_metrics_count = ARRAY_SIZE(cat_metrics);

/* ---- lookups ----------------------------------------------------------- */

size_t cat_family_size(size_t i)
{
	const struct cat_metric *g = &cat_metrics[i];
	size_t n = 1;

	while (i + n < cat_metrics_count && g->prom && cat_metrics[i + n].prom &&
	       strcmp(cat_metrics[i + n].prom, g->prom) == 0)
		n++;
	return n;
}

static const struct cat_metric *by_id[CAT_ID_COUNT];
static const struct cat_label *label_by_id[CAT_ID_COUNT];
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static void index_labels(const struct cat_label *l, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (l[i].id && l[i].id < CAT_ID_COUNT && !label_by_id[l[i].id])
			label_by_id[l[i].id] = &l[i];
}

static void index_build(void)
{
	for (size_t i = 0; i < cat_metrics_count; i++) {
		const struct cat_metric *m = &cat_metrics[i];

		if (m->id && m->id < CAT_ID_COUNT)
			by_id[m->id] = m;
		index_labels(m->labels, m->n_labels);
	}
	for (unsigned int r = 0; r < CAT_ROWS_COUNT; r++) {
		index_labels(cat_rows_defs[r].labels, cat_rows_defs[r].n_labels);
		index_labels(cat_rows_defs[r].alert_labels, cat_rows_defs[r].n_alert_labels);
	}
}

const struct cat_metric *cat_metric(enum cat_id id)
{
	pthread_once(&index_once, index_build);
	return (unsigned int)id < CAT_ID_COUNT ? by_id[id] : NULL;
}

const struct cat_label *cat_label(enum cat_id id)
{
	pthread_once(&index_once, index_build);
	return (unsigned int)id < CAT_ID_COUNT ? label_by_id[id] : NULL;
}

const char *cat_quantile_name(enum cat_quantile q)
{
	static const char *const names[CAT_Q_COUNT] = { "p50", "p90", "p99", "max" };

	return (unsigned int)q < CAT_Q_COUNT ? names[q] : "";
}
