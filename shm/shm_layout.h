/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shared-memory segment ABI between zernel-collector (the only writer,
 * privileged) and its readers (zernel-exporter, tests, benchmarks; never
 * privileged).  This file is the whole contract: readers treat every byte
 * of the segment as untrusted and check it against the rules written here.
 *
 * Layout: one 4096-byte header, then the tables the header describes, each
 * starting on a 64-byte boundary.  Sizes are fixed when the collector
 * creates the segment and never change while it lives; a collector restart
 * creates a new segment (new inode, new generation).
 *
 * Consistency: a seqlock.  The writer makes seq odd, writes, makes it even.
 * A reader copies the segment out while seq is even and unchanged across the
 * copy, then validates and works on its private copy (shm_reader.h).
 *
 * All integers are little-endian host order, fixed width, naturally aligned;
 * padding is explicit.  Durations are nanoseconds.
 */
#ifndef ZERNEL_SHM_LAYOUT_H
#define ZERNEL_SHM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* Families, watch reasons, NCCL ops, latency buckets: shared with the probes. */
#include "shm/shm_consts.h"

#define SHM_MAGIC		0x48534c454e52455aULL	/* "ZERNELSH" */
#define SHM_LAYOUT_VERSION	14u
#define SHM_HEADER_SIZE		4096u
#define SHM_TABLE_ALIGN		64u
#define SHM_DEFAULT_NAME	"/zernel"

/* Default capacities: an 8-GPU node running a few hundred processes. */
#define SHM_DEFAULT_MAX_PROCS		1024u
#define SHM_DEFAULT_MAX_GPU_MEM		2048u	/* (pid, gpu) pairs */
#define SHM_DEFAULT_MAX_GPUS		16u
#define SHM_DEFAULT_MAX_NCCL_COMMS	256u

/* Hard upper bounds a reader enforces before trusting any capacity. */
#define SHM_LIMIT_PROCS		65536u
#define SHM_LIMIT_GPU_MEM	262144u
#define SHM_LIMIT_GPUS		256u
#define SHM_LIMIT_NCCL_COMMS	65536u
#define SHM_LIMIT_TOTAL_SIZE	(1ull << 30)

/*
 * One latency series: cumulative count, sum and buckets (for Prometheus
 * histograms and rates) plus quantiles over the sliding summary window
 * (header.window_ns) so that p99 reflects the present.  Quantiles come from
 * the collector's log-linear histogram (collector/agg/hist.h) and carry its stated
 * relative error bound.  Invariant a reader checks: the bucket counts add up
 * to count.
 */
struct shm_latency {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t bucket[SHM_LAT_BUCKETS];	/* per bucket, not cumulative */
	uint64_t window_count;
	uint64_t window_p50_ns;
	uint64_t window_p90_ns;
	uint64_t window_p99_ns;
	uint64_t window_max_ns;
};
_Static_assert(sizeof(struct shm_latency) == 8 * (2 + SHM_LAT_BUCKETS + 5),
	       "shm_latency has no hidden padding");

/* One watched process.  Evicted by the collector once it has exited. */
struct shm_proc {
	uint32_t pid;
	uint32_t ppid;
	uint32_t watch_reason;		/* SHM_WATCH_* */
	uint32_t reserved0;		/* zero */
	uint64_t start_time_ns;		/* boot-relative; tells a reused pid apart */
	char comm[SHM_COMM_LEN];	/* NUL-padded; a reader still bounds it */

	struct shm_latency lat[SHM_FAMILY_COUNT];	/* indexed by enum shm_family */

	uint64_t offcpu_preempted_ns;	/* off CPU while runnable (involuntary) */
	uint64_t offcpu_blocked_ns;	/* off CPU while sleeping (voluntary) */
	uint64_t involuntary_switches;
	uint64_t voluntary_switches;
	uint64_t migrations;
	uint64_t reserved1[3];		/* zero */
	/*
	 * Time of its training threads (see docs/probes.md, "Where the
	 * training thread's time goes") per enum shm_thread_state, counted
	 * when each state ends.
	 */
	uint64_t thread_state_ns[SHM_STATE_COUNT];
};

/*
 * How a memory row's CUDA device was mapped to a physical GPU
 * (shm_gpu_mem.gpu_map).  Resolved: gpu_id is the GPU's index as
 * nvidia-smi numbers it.  Unresolved: gpu_id is SHM_GPU_UNKNOWN and the
 * value says why; nothing is guessed.  collector/gpu/gpu_map.h's enum gpu_how
 * has the same values from 1 on (asserted in collector/identity/gpu_ident.c).
 */
enum shm_gpu_map {
	SHM_GPU_MAP_ORDINAL = 0,	/* not mapped (simulated, no GPU list): gpu_id is the ordinal */
	SHM_GPU_MAP_ONLY_ONE,		/* the process sees one GPU */
	SHM_GPU_MAP_PCI_ORDER,		/* an index under CUDA_DEVICE_ORDER=PCI_BUS_ID */
	SHM_GPU_MAP_UUID,		/* a GPU-<uuid> in CUDA_VISIBLE_DEVICES */
	SHM_GPU_MAP_MIG_PARENT,		/* a MIG instance: the GPU it is carved from */
	SHM_GPU_MAP_OPEN_NODE,		/* one ordinal, and one /dev/nvidiaN open */
	SHM_GPU_MAP_FASTEST_FIRST,	/* several GPUs in CUDA's default, undocumented order */
	SHM_GPU_MAP_ORDER_VALUE,	/* CUDA_DEVICE_ORDER holds neither known value */
	SHM_GPU_MAP_NO_NODE_LIST,	/* needs the node's GPU list (NVML) */
	SHM_GPU_MAP_NO_PCI_ID,		/* PCI order, but a GPU's bus id is not known */
	SHM_GPU_MAP_CONTAINER,		/* a container whose GPUs its environment does not name */
	SHM_GPU_MAP_AMBIGUOUS,		/* a UUID prefix of several GPUs; a Slurm list read two ways */
	SHM_GPU_MAP_NOT_ON_NODE,	/* names a GPU the node list lacks */
	SHM_GPU_MAP_MIG,		/* a MIG instance whose parent is not known */
	SHM_GPU_MAP_INVALID_ENV,	/* a device variable was refused */
	SHM_GPU_MAP_UNREADABLE,		/* the process could not be inspected (gone, denied) */
	SHM_GPU_MAP_UNKNOWN,		/* no reason given */
	SHM_GPU_MAP_DRIVER,		/* a row of the driver's figure alone: NVML's process list */
	SHM_GPU_MAP_COUNT
};

/* gpu_map values for which gpu_id names a physical GPU. */
static inline int shm_gpu_map_resolved(uint32_t m)
{
	return (m >= SHM_GPU_MAP_ONLY_ONE && m <= SHM_GPU_MAP_OPEN_NODE) ||
	       m == SHM_GPU_MAP_ORDINAL || m == SHM_GPU_MAP_DRIVER;
}

/* gpu_id of a row whose physical GPU is not known. */
#define SHM_GPU_UNKNOWN		UINT32_MAX

/*
 * GPU memory held by one process on one device.  used_bytes is what the
 * probes counted (the process's allocations); driver_used_bytes is what
 * the driver counts for it (NVML's per-process used memory: the
 * allocations, the CUDA context and whatever the probes did not see),
 * read every few seconds, valid only with SHM_GPU_MEM_F_DRIVER.
 */
struct shm_gpu_mem {
	uint32_t pid;
	uint32_t gpu_id;		/* physical index; SHM_GPU_UNKNOWN (see gpu_map) */
	uint64_t used_bytes;		/* allocated now */
	uint64_t peak_bytes;		/* high-water mark of used_bytes */
	uint64_t alloc_calls;		/* successful allocations */
	uint64_t free_calls;		/* frees that matched an allocation */
	uint64_t failed_calls;		/* allocations that returned an error */
	uint32_t cuda_device;		/* the process's own CUDA device ordinal; see F_DRIVER_ROW */
	uint32_t gpu_map;		/* enum shm_gpu_map: how gpu_id was found */
	uint32_t flags;			/* SHM_GPU_MEM_F_* */
	uint32_t reserved0;		/* zero */
	uint64_t driver_used_bytes;	/* with SHM_GPU_MEM_F_DRIVER; else 0 */
};

/*
 * Every library the process calls the driver through was probed before the
 * process started: no allocation of it can have been missed.  Without it,
 * allocations made before the collector (re)started or before a library
 * was probed are not in used_bytes (PyTorch's caching allocator reserves
 * most of its memory early).
 */
#define SHM_GPU_MEM_F_FROM_START	0x1u
/*
 * driver_used_bytes holds the driver's figure: NVML listed the process on
 * this GPU with its used memory at the last read.  Without it the figure
 * is not known (no NVML, a failed call, a value the driver does not give,
 * a process it does not list) and driver_used_bytes is 0.
 */
#define SHM_GPU_MEM_F_DRIVER		0x2u
/*
 * The row exists for the driver's figure alone: the probes have seen no
 * allocation, free or failure of the process on this GPU (allocations made
 * before the collector started, or only a CUDA context).  Always with
 * SHM_GPU_MEM_F_DRIVER, gpu_map SHM_GPU_MAP_DRIVER, cuda_device
 * SHM_GPU_UNKNOWN (the process's own ordinal is not known) and every
 * probe count 0; the row goes when the driver stops listing the process.
 */
#define SHM_GPU_MEM_F_DRIVER_ROW	0x4u
#define SHM_GPU_MEM_F_ALL_BITS		0x7u

/* Where shm_gpu.total_bytes came from. */
#define SHM_TOTAL_UNKNOWN	0u
#define SHM_TOTAL_NVML		1u
#define SHM_TOTAL_SIMULATED	2u
#define SHM_TOTAL_FLAG		3u	/* --gpu-memory-total */
#define SHM_TOTAL_MAX_SOURCE	3u

#define SHM_GPU_UUID_LEN	48u	/* "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", NUL-padded */
#define SHM_GPU_NAME_LEN	96u	/* "NVIDIA H100 80GB HBM3", NUL-padded */

/* Where shm_gpu.used_bytes came from. */
#define SHM_USED_PROCESSES	0u	/* the sum of the rows' used_bytes on this GPU */
#define SHM_USED_DRIVER		1u	/* NVML's device used memory, every process and context */
#define SHM_USED_MAX_SOURCE	1u

/* One GPU device seen on this node. */
struct shm_gpu {
	uint32_t gpu_id;		/* index as nvidia-smi numbers it */
	uint32_t total_source;		/* SHM_TOTAL_* */
	uint64_t total_bytes;		/* 0 when unknown */
	uint64_t used_bytes;		/* as used_source says */
	uint32_t processes;		/* rows holding memory here (probes' or driver's figure) */
	uint32_t used_source;		/* SHM_USED_* */
	char uuid[SHM_GPU_UUID_LEN];	/* from NVML; "" when unknown; a reader bounds it */
	char model_name[SHM_GPU_NAME_LEN];	/* from NVML; "" when unknown */
};

/*
 * One NCCL operation, all processes together.  duration: the call itself
 * (NCCL only enqueues work, so this is the host-side cost).  wait: from the
 * call to the end of the next stream/device synchronisation on the same
 * thread, an upper bound on when the collective finished on the GPU.
 * Each also in the log-linear buckets of collector/agg/hist.h (HIST_BUCKETS,
 * as struct shm_workload_latency's), for native histograms: all zero (a
 * writer that keeps none) or adding up to the series' count.
 */
struct shm_nccl_op {
	uint32_t op;			/* enum shm_nccl_op_kind; row i has op i */
	uint32_t reserved0;
	uint64_t calls;
	uint64_t bytes;			/* count x datatype size, summed */
	uint64_t errors;		/* calls that returned an error */
	struct shm_latency duration;
	struct shm_latency wait;
	uint64_t duration_fine[HIST_BUCKETS];
	uint64_t wait_fine[HIST_BUCKETS];
};

/* shm_nccl_comm.flags */
#define SHM_NCCL_COMM_LOCAL_ID	(1u << 0)	/* comm_id is not NCCL's: made from (pid, handle) */
/* Bounds a reader enforces on a communicator row (decades of a busy job). */
#define SHM_NCCL_MAX_RANKS	(1 << 24)
#define SHM_NCCL_MAX_CALLS	(1ull << 48)
#define SHM_NCCL_MAX_BYTES	(1ull << 62)
#define SHM_NCCL_MAX_STALL_NS	(1ull << 60)

/*
 * One NCCL communicator a watched process holds: one rank of it.  comm_id
 * is NCCL's commHash (the "commId 0x..." of NCCL's INFO log), the same in
 * every rank on every node, so ranks join on it; origin says how it was
 * derived.  wait: per collective, from its launch (the call, or the
 * ncclGroupEnd that launched it) to the return of the first host-blocking
 * CUDA call that covered its stream, an upper bound of its GPU completion.
 * gap: from a completion to the next call on this communicator while none
 * was pending, the rank's own time between collectives.  stalled_ns: while
 * calls are pending, since the later of the last completion and the moment
 * calls became pending; 0 when none is.
 */
struct shm_nccl_comm {
	uint32_t pid;
	int32_t rank;			/* -1 when not known */
	int32_t nranks;			/* -1 when not known */
	uint32_t gpu_id;		/* UINT32_MAX when unknown */
	uint64_t comm_id;		/* NCCL's commHash */
	uint64_t parent_id;		/* split, shrink: the parent's comm_id; else 0 */
	uint32_t origin;		/* enum shm_nccl_origin */
	uint32_t flags;			/* SHM_NCCL_COMM_* */
	uint64_t calls;			/* collective and p2p calls queued on it */
	uint64_t bytes;			/* their count x datatype size */
	uint64_t pending;		/* queued, not yet seen to complete */
	uint64_t stalled_ns;
	struct shm_latency wait;
	struct shm_latency gap;
	/* Each collective's time on the GPU, where NCCL runs Zernel's profiler plugin. */
	struct shm_latency gpu;
};

/*
 * Python in one watched process: whether its interpreter's frames are
 * read, and the stalls whose site is not known (sent over the per-process
 * rate bound, or taken without Python frames).
 */
#define SHM_PY_NONE		0u	/* not (yet) recognised as CPython */
#define SHM_PY_FRAMES		1u	/* supported: stall sites are kept */
#define SHM_PY_UNSUPPORTED	2u	/* CPython of a version without a layout */
#define SHM_PY_MISMATCH		3u	/* layout did not match the live process */
#define SHM_PY_MAX_STATUS	3u
#define SHM_PY_PROCS		256u

struct shm_py_proc {
	uint32_t pid;
	uint32_t status;		/* SHM_PY_* */
	uint32_t major, minor;		/* the interpreter's version; 0 unknown */
	uint64_t unsampled_stalls;	/* stalls over the threshold with no site */
	uint64_t unsampled_ns;
};

/*
 * Where a watched Python process lost time: one (pid, state, site) row.
 * The site is the innermost frame of the user's own code (not the
 * standard library, site-packages or dist-packages; the innermost frame
 * when there is none); leaf is the innermost frame.  Lines are 0 when
 * unknown.  Strings are NUL-padded; file keeps the end of a long path.
 */
#define SHM_SITE_FILE_LEN	128u
#define SHM_SITE_FUNC_LEN	64u
#define SHM_STALL_SITES		512u
#define SHM_SITE_TRUNCATED	(1u << 0)	/* deeper than the frames read */

struct shm_stall_site {
	uint32_t pid;
	uint32_t state;			/* enum shm_stall_state */
	uint32_t line;
	uint32_t leaf_line;
	uint64_t stalls;		/* episodes over the threshold */
	uint64_t total_ns;		/* their time */
	uint64_t max_ns;
	uint64_t last_mono_ns;		/* when the last one ended */
	int32_t native_stack;		/* the last user stack id taken at it; -1 none yet */
	uint32_t flags;			/* SHM_SITE_* */
	char file[SHM_SITE_FILE_LEN];
	char func[SHM_SITE_FUNC_LEN];
	char leaf_file[SHM_SITE_FILE_LEN];
	char leaf_func[SHM_SITE_FUNC_LEN];
};

/*
 * What one watched process did over the last header.window_ns (or since it
 * was first watched, when that is shorter: covered_ns says which), for
 * `zernel explain`: the waits of its threads by kind, its scheduler time,
 * and the Python stall time by state (sites and unsampled together).
 * Differences of cumulative counters sampled at least every window / 12.
 */
#define SHM_RECENT_SLOTS	12u

struct shm_proc_recent {
	uint32_t pid;
	uint32_t reserved0;
	uint64_t covered_ns;		/* the span the figures below cover */
	uint64_t input_wait_ns;		/* DataLoader (read/poll) waits */
	uint64_t futex_wait_ns;
	uint64_t barrier_wait_ns;
	uint64_t collective_wait_ns;	/* NCCL call to the end of its sync */
	uint64_t runq_ns;		/* run-queue delay */
	uint64_t blocked_ns;		/* off CPU while sleeping */
	uint64_t preempted_ns;		/* off CPU while runnable */
	uint64_t involuntary_switches;
	uint64_t failed_allocs;		/* GPU allocations that returned an error */
	/* Python stalls of its main thread (the training loop's) by state. */
	uint64_t stall_ns[SHM_STALL_STATE_COUNT];
	uint64_t stall_sites_ns;	/* of which a site is known */
	/* Its training threads' time by enum shm_thread_state (shm_proc's, windowed). */
	uint64_t thread_state_ns[SHM_STATE_COUNT];
};

/*
 * The recent notable events, for `zernel trace` (Chrome's trace format):
 * Python stalls with their site, NCCL calls, and the waits from a NCCL
 * call to the end of its synchronisation.  A ring of SHM_TRACE_EVENTS
 * kept by the collector, published oldest first; events the ring had to
 * drop to make room count as the table's overflows.
 */
#define SHM_TRACE_EVENTS	4096u
#define SHM_TRACE_NAME_LEN	96u

enum shm_trace_kind {
	SHM_TRACE_STALL = 0,		/* detail: enum shm_stall_state; name: its site */
	SHM_TRACE_NCCL_CALL,		/* detail: enum shm_nccl_op_kind */
	SHM_TRACE_NCCL_WAIT,		/* detail: enum shm_nccl_op_kind */
	SHM_TRACE_KIND_COUNT
};

struct shm_trace_event {
	uint32_t pid;
	uint32_t tid;
	uint32_t kind;			/* enum shm_trace_kind */
	uint32_t detail;
	uint64_t end_mono_ns;		/* when it ended (CLOCK_MONOTONIC) */
	uint64_t dur_ns;
	char name[SHM_TRACE_NAME_LEN];	/* NUL-padded; "" when it has none */
};

/*
 * Who a watched process is: its container, Kubernetes pod, Slurm job and
 * torch.distributed coordinates, as the collector found them without an
 * API server (collector/identity/ident_scan.h says where each comes from).  Row i
 * describes procs row i when its pid equals that row's pid; the table's
 * count is the procs table's.  Texts are NUL-terminated within their
 * field and "" when unknown; a reader checks both (they come from cgroup
 * names, directory names and environments that workloads choose) and
 * says "unknown" for anything else.  Numbers are -1 (ranks) or 0 (the
 * Slurm job) when unknown.
 */
#define SHM_ID_RUNTIME_NONE		0u	/* not in a container */
#define SHM_ID_RUNTIME_UNKNOWN		1u	/* a container id, no runtime in its name */
#define SHM_ID_RUNTIME_CONTAINERD	2u
#define SHM_ID_RUNTIME_CRIO		3u
#define SHM_ID_RUNTIME_DOCKER		4u
#define SHM_ID_RUNTIME_PODMAN		5u
#define SHM_ID_RUNTIME_MAX		5u

/* The pod's log directory is gone (pod deleted, processes still running): last names kept. */
#define SHM_ID_F_POD_GONE	0x1u
/* Identity was read at least once (else every field is unknown). */
#define SHM_ID_F_READ		0x2u
#define SHM_ID_F_ALL_BITS	0x3u

/* Ranks and sizes above this are nonsense (the collector refuses them). */
#define SHM_ID_RANK_MAX		((1 << 24) - 1)
/* Slurm numbers jobs with 32-bit ids. */
#define SHM_ID_SLURM_JOB_MAX	0xffffffffull

#define SHM_ID_NAMESPACE_LEN	64u	/* DNS label, 63 + NUL */
#define SHM_ID_POD_LEN		256u	/* DNS subdomain, 253 + NUL */
#define SHM_ID_CONTAINER_LEN	64u
#define SHM_ID_CONTAINER_ID_LEN	72u	/* 64 hex + NUL, padded */
#define SHM_ID_POD_UID_LEN	40u	/* 36 + NUL, padded */
#define SHM_ID_STEP_LEN		16u	/* Slurm step: a number, "batch", "extern" */
#define SHM_ID_RUN_ID_LEN	128u	/* TORCHELASTIC_RUN_ID; longer ones are unknown */

struct shm_identity {
	uint32_t pid;			/* procs[i].pid, or this row describes nothing */
	uint32_t runtime;		/* SHM_ID_RUNTIME_* */
	uint32_t flags;			/* SHM_ID_F_* */
	int32_t rank;			/* RANK */
	int32_t local_rank;		/* LOCAL_RANK */
	int32_t world_size;		/* WORLD_SIZE */
	int32_t group_rank;		/* GROUP_RANK (the node's index in an elastic job) */
	uint32_t reserved0;		/* zero */
	uint64_t slurm_job_id;		/* from the cgroup path, else SLURM_JOB_ID; 0 unknown */
	char slurm_step[SHM_ID_STEP_LEN];
	char container_id[SHM_ID_CONTAINER_ID_LEN];
	char pod_uid[SHM_ID_POD_UID_LEN];
	char namespace[SHM_ID_NAMESPACE_LEN];
	char pod[SHM_ID_POD_LEN];
	char container[SHM_ID_CONTAINER_LEN];
	char run_id[SHM_ID_RUN_ID_LEN];	/* TORCHELASTIC_RUN_ID */
};

/*
 * The latency histograms of a workload: the narrowest group of processes
 * their identity names, each sample counted in the workload its process
 * belonged to when it was taken.  The collector keeps a workload's row
 * while any process of it lives and SHM_WORKLOAD_LINGER_NS after the
 * last one exits, so its counts only grow while Prometheus can still
 * see it: a DataLoader worker that exits takes nothing away.  A process
 * whose identity is not read yet counts in the node's row (kind NODE).
 * A full table counts in its overflows each process left without a row.
 *
 * Kinds and their texts (NUL-terminated within their field; a reader
 * checks them like an identity's):
 *   NODE       no text: processes with no workload found
 *   POD        namespace, name: the pod
 *   POD_UID    name: the pod UID, its names not known
 *   CONTAINER  name: the container id
 *   SLURM_JOB  name: the job id in decimal
 *   RUN        name: TORCHELASTIC_RUN_ID
 */
#define SHM_WORKLOADS			64u
/* Rows a segment for procs processes has: a workload holds one at least. */
#define SHM_WORKLOADS_FOR(procs)	((procs) < SHM_WORKLOADS ? (procs) : SHM_WORKLOADS)
#define SHM_WORKLOAD_LINGER_NS		(10ull * 60 * 1000000000ull)

enum shm_workload_kind {
	SHM_WORKLOAD_NODE = 0,
	SHM_WORKLOAD_POD,
	SHM_WORKLOAD_POD_UID,
	SHM_WORKLOAD_CONTAINER,
	SHM_WORKLOAD_SLURM_JOB,
	SHM_WORKLOAD_RUN,
	SHM_WORKLOAD_KIND_COUNT
};

/*
 * One family's samples in a workload, cumulative: the classic buckets
 * (exact, as struct shm_latency's) and the log-linear ones of
 * collector/agg/hist.h (HIST_BUCKETS: 1/32 to 1/64 of their values wide,
 * exact below 64 ns, the last one holding everything from 2^37 ns), which
 * make the native histograms.  Invariant a reader checks: each set of
 * buckets adds up to count.
 */
struct shm_workload_latency {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t bucket[SHM_LAT_BUCKETS];	/* per bucket, not cumulative */
	uint64_t fine[HIST_BUCKETS];		/* per bucket, not cumulative */
};

struct shm_workload {
	uint32_t kind;			/* enum shm_workload_kind */
	uint32_t processes;		/* its processes alive at the publish */
	char namespace[SHM_ID_NAMESPACE_LEN];
	char name[SHM_ID_POD_LEN];
	struct shm_workload_latency lat[SHM_FAMILY_COUNT];
};

/* Self-telemetry of the collector. */
struct shm_stats {
	uint64_t events_total;		/* events aggregated */
	uint64_t events_dropped;	/* lost before aggregation (ring full, ...) */
	uint64_t publishes;		/* completed publishes */
	uint64_t last_publish_duration_ns;
	uint64_t probes_attached;
	uint64_t libraries_attached;
	uint64_t processes_evicted;
	uint64_t probes_refused;	/* uprobes and library files refused at the limits */
	/* The driver asked through cuGetProcAddress at start (collector/probes/coverage.h). */
	uint64_t entry_points_checked;	/* probed driver entry points compared */
	uint64_t entry_points_bypassed;	/* answered with another address than the probed symbol */
	/* NCCL calls and waits that could not be followed, per reason. */
	uint64_t nccl_id_unreadable;	/* uniqueId not readable at entry: local comm_id */
	uint64_t nccl_unknown_comm;	/* a call on a communicator never seen created */
	uint64_t nccl_bad_args;		/* unknown datatype or negative count: 0 bytes */
	uint64_t nccl_captured;		/* queued in a CUDA graph capture: no wait */
	uint64_t nccl_pending_dropped;	/* pending over its bound: no wait */
	uint64_t nccl_pending_ended;	/* its communicator destroyed or aborted first */
	uint64_t nccl_state_evicted;	/* streams or events evicted over their bound */
	uint64_t parser_restarts;	/* parser children killed or lost mid-request */
	uint64_t reserved[14];		/* zero */
};
_Static_assert(sizeof(struct shm_stats) == 256, "shm_stats is 256 bytes");

enum shm_table_id {
	SHM_TABLE_PROCS = 0,		/* struct shm_proc */
	SHM_TABLE_GPU_MEM,		/* struct shm_gpu_mem */
	SHM_TABLE_GPUS,			/* struct shm_gpu */
	SHM_TABLE_NCCL_OPS,		/* struct shm_nccl_op, capacity SHM_NCCL_OP_COUNT */
	SHM_TABLE_NCCL_COMMS,		/* struct shm_nccl_comm */
	SHM_TABLE_IDENTITY,		/* struct shm_identity, row i for procs row i */
	SHM_TABLE_PY_PROCS,		/* struct shm_py_proc, capacity SHM_PY_PROCS */
	SHM_TABLE_STALL_SITES,		/* struct shm_stall_site, capacity SHM_STALL_SITES */
	SHM_TABLE_PROC_RECENT,		/* struct shm_proc_recent, capacity procs */
	SHM_TABLE_TRACE,		/* struct shm_trace_event, capacity SHM_TRACE_EVENTS */
	SHM_TABLE_WORKLOADS,		/* struct shm_workload, capacity SHM_WORKLOADS_FOR(procs) */
	SHM_TABLE_COUNT
};

/*
 * Where a table lives.  offset, entry_size and capacity are fixed at
 * creation; count (rows in use, always the first count rows) and overflows
 * (rows the writer had to refuse because the table was full) change at
 * every publish.
 */
struct shm_table {
	uint64_t offset;		/* from the start of the segment */
	uint32_t entry_size;		/* sizeof the row struct */
	uint32_t capacity;
	uint32_t count;
	uint32_t reserved0;
	uint64_t overflows;
};
_Static_assert(sizeof(struct shm_table) == 32, "shm_table is 32 bytes");

#define SHM_MODE_BPF		1u
#define SHM_MODE_SIMULATE	2u

struct shm_header_fields {
	/* Fixed at creation. */
	uint64_t magic;			/* SHM_MAGIC */
	uint32_t layout_version;	/* SHM_LAYOUT_VERSION */
	uint32_t header_size;		/* SHM_HEADER_SIZE */
	uint64_t total_size;		/* the whole segment, bytes */
	uint64_t generation;		/* new value every collector start */
	uint32_t writer_pid;
	uint32_t mode;			/* SHM_MODE_* */
	uint32_t publish_interval_ms;
	uint32_t reserved0;
	uint64_t window_ns;		/* summary quantile window */

	/* The seqlock: odd while the writer is inside a publish. */
	uint64_t seq;

	/* Written under the seqlock at every publish. */
	uint64_t heartbeat_mono_ns;	/* CLOCK_MONOTONIC at publish */
	uint64_t heartbeat_real_ns;	/* CLOCK_REALTIME at publish */
	char scenario[32];		/* simulate scenario, NUL-padded; "" for BPF */
	struct shm_stats stats;
	struct shm_table table[SHM_TABLE_COUNT];
	/*
	 * Every sample of every watched process, node-wide: the quantiles a
	 * single number such as "CUDA launch p99" means, which cannot be
	 * derived from per-process quantiles.
	 */
	struct shm_latency node[SHM_FAMILY_COUNT];
};

/* The header is pinned to one page so tables can follow at a known offset. */
union shm_header {
	struct shm_header_fields h;
	uint8_t page[SHM_HEADER_SIZE];
};
_Static_assert(sizeof(union shm_header) == SHM_HEADER_SIZE, "header is one page");
_Static_assert(offsetof(struct shm_header_fields, seq) == 56, "seq offset is ABI");
_Static_assert(offsetof(struct shm_header_fields, table) % 8 == 0, "tables aligned");
_Static_assert(sizeof(struct shm_header_fields) <= SHM_HEADER_SIZE, "header fits its page");

_Static_assert(sizeof(struct shm_proc) % 8 == 0, "shm_proc aligned");
_Static_assert(sizeof(struct shm_gpu_mem) == 72, "shm_gpu_mem is 72 bytes");
_Static_assert(sizeof(struct shm_gpu) == 176, "shm_gpu is 176 bytes");
_Static_assert(sizeof(struct shm_nccl_comm) % 8 == 0, "shm_nccl_comm aligned");
_Static_assert(sizeof(struct shm_nccl_op) % 8 == 0, "shm_nccl_op aligned");
_Static_assert(sizeof(struct shm_py_proc) == 32, "shm_py_proc is 32 bytes");
_Static_assert(sizeof(struct shm_stall_site) == 440, "shm_stall_site is 440 bytes");
_Static_assert(sizeof(struct shm_proc_recent) % 8 == 0, "shm_proc_recent aligned");
_Static_assert(sizeof(struct shm_trace_event) == 128, "shm_trace_event is 128 bytes");
_Static_assert(sizeof(struct shm_workload_latency) ==
	       8 * (2 + SHM_LAT_BUCKETS + HIST_BUCKETS), "shm_workload_latency has no padding");
_Static_assert(sizeof(struct shm_workload) % 8 == 0, "shm_workload aligned");

/* Short name of a stall state ("input", ...); NULL when out of range. */
static inline const char *shm_stall_state_name(uint32_t state)
{
	static const char *const names[SHM_STALL_STATE_COUNT] = {
		"runq", "input", "gpu", "collective", "lock", "sleep", "other",
	};
	return state < SHM_STALL_STATE_COUNT ? names[state] : NULL;
}
_Static_assert(sizeof(struct shm_identity) == 680, "shm_identity is 680 bytes");

/* Short snake_case name of a family ("cuda_launch", ...); NULL when out of range. */
static inline const char *shm_family_name(uint32_t family)
{
	static const char *const names[SHM_FAMILY_COUNT] = {
		"cuda_launch", "cuda_graph_launch", "dataloader_wait",
		"futex_wait", "barrier_wait", "runq_delay", "cuda_sync",
	};
	return family < SHM_FAMILY_COUNT ? names[family] : NULL;
}

/* The label value of a gpu_map ("pci_order", ...); NULL when out of range. */
static inline const char *shm_gpu_map_name(uint32_t m)
{
	static const char *const names[SHM_GPU_MAP_COUNT] = {
		"ordinal", "only_one", "pci_order", "uuid", "mig_parent", "open_node",
		"fastest_first", "order_value", "no_node_list", "no_pci_id", "container",
		"ambiguous", "not_on_node", "mig", "invalid_env", "unreadable", "unknown",
		"driver",
	};
	return m < SHM_GPU_MAP_COUNT ? names[m] : NULL;
}

/* The label value of an NCCL op ("all_reduce", ...); NULL when out of range. */
static inline const char *shm_nccl_op_name(uint32_t op)
{
	static const char *const names[SHM_NCCL_OP_COUNT] = {
		"all_reduce", "all_gather", "reduce_scatter", "broadcast",
		"reduce", "send", "recv", "all_to_all", "gather", "scatter",
	};
	return op < SHM_NCCL_OP_COUNT ? names[op] : NULL;
}

#endif /* ZERNEL_SHM_LAYOUT_H */
