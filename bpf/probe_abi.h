/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The probe ABI: every record the BPF programs send to zernel-collector
 * through the shared ring buffer, one record type per event kind, and the
 * constants both sides use.  Included by BPF code (after vmlinux.h) and by
 * the collector (collector/probes/decode.c, which turns records into aggregation
 * calls, and the simulator, which makes the same records); fixed-width
 * types, explicit padding, sizes pinned below.
 *
 * Every record starts with struct zev_hdr, whose type names the record
 * that follows; the decoder checks the record's size against its type
 * before it reads a field.  The numbers the segment shares (latency
 * families, watch reasons, NCCL operations) come from shm/shm_consts.h and
 * are used as they are on both sides.
 */
#ifndef ZERNEL_BPF_PROBE_ABI_H
#define ZERNEL_BPF_PROBE_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "bpf/nccl_gpu_span.h"
#include "shm/shm_consts.h"

enum zev_type {
	ZEV_WATCH = 1,		/* struct zev_watch */
	ZEV_EXIT,		/* struct zev_exit */
	ZEV_MEM_ALLOC,		/* struct zev_mem_alloc */
	ZEV_MEM_FREE,		/* struct zev_mem_free */
	ZEV_MEM_FAIL,		/* struct zev_mem_fail */
	ZEV_LATENCY,		/* struct zev_latency */
	ZEV_NCCL_CALL,		/* struct zev_nccl_call */
	ZEV_NCCL_WAIT,		/* struct zev_nccl_wait */
	ZEV_NCCL_COMM,		/* struct zev_nccl_comm */
	ZEV_SCHED_SWITCH,	/* struct zev_sched_switch */
	ZEV_SCHED_MIGRATE,	/* struct zev_sched_migrate */
	ZEV_LIBC_PROBE,		/* struct zev_libc_probe */
	ZEV_PY_STALL,		/* struct zev_py_stall */
	ZEV_NCCL_ALLOC,		/* struct zev_nccl_alloc */
	ZEV_NCCL_GROUP,		/* struct zev_nccl_group */
	ZEV_CUDA_SYNC,		/* struct zev_cuda_sync */
	ZEV_CUDA_ORDER,		/* struct zev_cuda_order */
	ZEV_THREAD_EXIT,	/* struct zev_thread_exit */
	ZEV_LIB_LOADED,		/* struct zev_lib_loaded */
	ZEV_NCCL_END,		/* struct zev_nccl_end */
	ZEV_MEM_POOL,		/* struct zev_mem_pool */
	ZEV_NCCL_GPU,		/* struct zev_nccl_gpu */
	ZEV_TYPE_COUNT
};

struct zev_hdr {
	__u32 type;		/* enum zev_type */
	__u32 pid;		/* thread group id */
	__u32 tid;
	__u32 pad;		/* zero */
	__u64 ts_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
};

/*
 * A process is watched from now on, for reasons (or, already watched, it
 * exec'ed and has a new name).  start_ns: when its group leader started,
 * boot-relative; the BPF programs round it down to ZW_START_TICK_NS, the
 * precision of /proc/PID/stat, so a process seen by a probe and by a /proc
 * scan has one start time (the aggregation tells a reused pid by it).  The
 * collector warns at start where the kernel's clock tick differs.
 */
#define ZW_START_TICK_NS	10000000ull	/* 1 / USER_HZ (100 on x86 and arm64) */
/* Two start times, either rounded or not, of the same process. */
#define ZW_SAME_START(a, b)	((a) / ZW_START_TICK_NS == (b) / ZW_START_TICK_NS)

/* zev_watch.reasons: sent at exec; the program before it is gone. */
#define ZEV_WATCH_F_EXEC	(1u << 31)

struct zev_watch {
	struct zev_hdr hdr;
	__u32 reasons;		/* SHM_WATCH_*, ZEV_WATCH_F_EXEC */
	__u32 ppid;
	__u64 start_ns;
	char comm[SHM_COMM_LEN];	/* NUL-padded */
};

/* The process (its last thread) is gone. */
struct zev_exit {
	struct zev_hdr hdr;
	/*
	 * The group leader's start_boottime, to the nanosecond: the exit of
	 * an earlier process under a pid, read after a later one took it,
	 * must not end what belongs to the later one (collector/probes/slot_hist.c).
	 */
	__u64 start_ns;
};

/* Allocation namespaces: device pointers and VMM handles never mix. */
#define ZMEM_SPACE_PTR		0u
#define ZMEM_SPACE_VMM		1u

/*
 * A successful allocation of bytes on gpu, at addr (pointer or handle).
 * A stream-ordered one (pooled 1) comes from pool, or from the device's
 * current pool when pool is 0.
 */
struct zev_mem_alloc {
	struct zev_hdr hdr;
	__u32 gpu;
	__u32 space;		/* ZMEM_SPACE_* */
	__u64 addr;
	__u64 bytes;
	__u32 pooled;
	__u32 pad;
	__u64 pool;		/* CUmemoryPool */
};

/* What a zev_mem_pool says of its pool. */
enum zmem_pool_op {
	ZMEM_POOL_DEFAULT = 0,	/* cuDeviceGetDefaultMemPool: dev's default pool */
	ZMEM_POOL_CURRENT,	/* cuDeviceGetMemPool: dev's current pool */
	ZMEM_POOL_SET,		/* cuDeviceSetMemPool: dev's current pool from now on */
	ZMEM_POOL_THRESHOLD,	/* cuMemPoolSetAttribute: release threshold = bytes */
	ZMEM_POOL_TRIM,		/* cuMemPoolTrimTo: keep at most bytes beyond what is in use */
	ZMEM_POOL_DESTROY,	/* cuMemPoolDestroy: gone once its allocations are freed */
	ZMEM_POOL_OP_COUNT
};

/* A successful call that names a memory pool. */
struct zev_mem_pool {
	struct zev_hdr hdr;
	__u32 op;		/* enum zmem_pool_op */
	__s32 dev;		/* CUDA ordinal: the call's, else the thread's current device */
	__u64 pool;		/* CUmemoryPool */
	__u64 bytes;
};

/* A successful free of what was allocated at addr; its size is looked up. */
struct zev_mem_free {
	struct zev_hdr hdr;
	__u32 space;		/* ZMEM_SPACE_* */
	__u32 pad;
	__u64 addr;
};

/* An allocation that returned an error. */
struct zev_mem_fail {
	struct zev_hdr hdr;
	__u32 gpu;
	__s32 ret;		/* the call's CUresult or cudaError_t */
	__u64 bytes;		/* asked for */
};

/* One latency sample of a family (launches without a histogram slot, waits). */
struct zev_latency {
	struct zev_hdr hdr;
	__u32 family;		/* enum shm_family */
	__u32 pad;
	__u64 ns;
};

/* Flags of an NCCL call (zev_nccl_call.flags): why its bytes are 0. */
#define ZN_CALL_BAD_DTYPE	(1u << 0)	/* datatype nccl.h does not know */
#define ZN_CALL_BAD_COUNT	(1u << 1)	/* count above INT64_MAX: a negative int */

/*
 * One NCCL call: its host-side duration, and what the wait needs: the
 * communicator (the ncclComm_t, joined to its identity by the collector),
 * the stream it was queued on and the thread's device.  ret 0 or 7
 * (ncclInProgress, a non-blocking communicator) means queued.
 */
struct zev_nccl_call {
	struct zev_hdr hdr;
	__u32 op;		/* enum shm_nccl_op_kind */
	__s32 ret;		/* ncclResult_t */
	__u64 bytes;		/* count x datatype size; 0 when flagged */
	__u64 ns;		/* entry to return */
	__u64 comm;		/* the ncclComm_t */
	__u64 stream;		/* the cudaStream_t (0: the legacy default stream) */
	__s32 dev;		/* the thread's current device */
	__u32 flags;		/* ZN_CALL_* */
};

/*
 * A collective is done: from its call to the end of the next synchronisation.
 * Only the simulator sends it; the probes send the synchronisations
 * (zev_cuda_sync) and the collector pairs them with the calls.
 */
struct zev_nccl_wait {
	struct zev_hdr hdr;
	__u32 op;		/* enum shm_nccl_op_kind */
	__u32 pad;
	__u64 ns;
};

#define ZEV_GPU_UNKNOWN		0xffffffffu

/*
 * A thread's CUDA device and current context, kept by the probes for the
 * thread's life (bpf/watch.h's zw_curdev); the collector only sizes it.
 */
struct zw_thread_gpu {
	__s32 dev;		/* valid when has_dev */
	__u32 has_dev;
	__u64 ctx;		/* the current CUcontext as last seen; 0: not known */
};


#define ZN_ID_BYTES		128	/* NCCL_UNIQUE_ID_BYTES */

/*
 * A communicator call returned (or, SHM_NCCL_ORIGIN_SPLIT with comm 0, a split
 * that created nothing here: NCCL_SPLIT_NOCOLOR still counts as a split of
 * the parent).  id_ok: the 128 bytes of the ncclUniqueId were read at
 * entry; 0 when the stack or commIds could not be read.
 */
struct zev_nccl_comm {
	struct zev_hdr hdr;
	__u32 gpu;		/* ZEV_GPU_UNKNOWN when not known */
	__s32 rank;		/* -1: not known yet (a split child) */
	__s32 nranks;		/* -1: not known yet */
	__u32 origin;		/* enum shm_nccl_origin */
	__u64 comm;		/* the ncclComm_t, as NCCL's handle */
	__u64 parent;		/* split, shrink: the parent's ncclComm_t */
	__u64 out;		/* split, shrink: the ncclComm_t * NCCL sets to the child */
	__s32 color;		/* split: its colour */
	__s32 ret;		/* ncclResult_t */
	__u32 id_ok;
	__u32 pad;
	__u8 id[ZN_ID_BYTES];	/* ncclUniqueId.internal */
};

/*
 * NCCL's own view of a communicator's size and rank, from commAlloc (an
 * internal symbol of libnccl's .symtab): how a split child learns them.
 */
struct zev_nccl_alloc {
	struct zev_hdr hdr;
	__u64 comm;
	__u64 parent;		/* a split or shrink child's parent; 0: none */
	__s32 rank;
	__s32 nranks;
};

/* How a communicator's end came (zev_nccl_end). */
enum zn_end_kind {
	ZN_END_FINALIZE = 0,	/* ncclCommFinalize: its operations flushed; the handle lives on */
	ZN_END_DESTROY,		/* ncclCommDestroy: the handle is freed */
	ZN_END_ABORT,		/* ncclCommAbort: the handle is freed, its operations abandoned */
	ZN_END_KIND_COUNT
};

/*
 * ncclCommFinalize, ncclCommDestroy or ncclCommAbort returned ret on comm
 * (the outermost of them: Destroy finalizes through the same entry point).
 */
struct zev_nccl_end {
	struct zev_hdr hdr;
	__u64 comm;
	__s32 ret;
	__u32 how;		/* enum zn_end_kind */
	__u64 ns;		/* inside the call: entered at hdr.ts_ns - ns */
};

/* A collective's time on the GPU, from Zernel's NCCL profiler plugin. */
struct zev_nccl_gpu {
	struct zev_hdr hdr;
	struct zernel_nccl_gpu_span span;
};

/* ncclGroupStart (end 0) or ncclGroupEnd (end 1) was entered. */
struct zev_nccl_group {
	struct zev_hdr hdr;
	__u32 end;
	__u32 pad;
};

/* What a zev_cuda_sync says has finished. */
enum zn_sync_kind {
	ZN_SYNC_STREAM = 0,	/* cudaStreamSynchronize, cuStreamSynchronize: handle = stream */
	ZN_SYNC_EVENT,		/* cudaEventSynchronize, cuEventSynchronize: handle = event */
	ZN_SYNC_EVENT_QUERY,	/* cudaEventQuery, cuEventQuery returned success */
	ZN_SYNC_DEVICE,		/* cudaDeviceSynchronize, cuCtxSynchronize: dev */
	ZN_SYNC_STREAM_QUERY,	/* cudaStreamQuery, cuStreamQuery returned success */
	ZN_SYNC_KIND_COUNT
};

/*
 * A host-blocking CUDA call returned success in a process that uses NCCL,
 * or a stream, event or device synchronisation in one that allocates from
 * memory pools (not from inside an NCCL call, whose own synchronisations
 * are NCCL's).
 */
struct zev_cuda_sync {
	struct zev_hdr hdr;
	__u32 kind;		/* enum zn_sync_kind */
	__s32 dev;		/* the thread's current device */
	__u64 handle;
};

/* What a zev_cuda_order says about two handles. */
enum zn_order_kind {
	ZN_ORDER_RECORD = 0,	/* cudaEventRecord(event = a, stream = b) */
	ZN_ORDER_WAIT,		/* cudaStreamWaitEvent(stream = a, event = b) */
	ZN_ORDER_CAPTURE_BEGIN,	/* cudaStreamBeginCapture(stream = a) */
	ZN_ORDER_CAPTURE_END,	/* cudaStreamEndCapture(stream = a) */
	ZN_ORDER_KIND_COUNT
};

/* An ordering between streams and events, in a process that uses NCCL. */
struct zev_cuda_order {
	struct zev_hdr hdr;
	__u32 kind;		/* enum zn_order_kind */
	__s32 dev;
	__u64 a;
	__u64 b;
};

#define ZS_SW_OFFCPU		(1u << 0)	/* offcpu_ns is valid */
#define ZS_SW_INVOLUNTARY	(1u << 1)	/* it left the CPU still runnable */
#define ZS_SW_RUNQ		(1u << 2)	/* runq_ns is valid */
#define ZS_SW_ONCPU		(1u << 3)	/* oncpu_ns is valid */
#define ZS_SW_BLOCKED		(1u << 4)	/* blocked_ns and blocked_state are valid */
#define ZS_SW_TRAINING		(1u << 5)	/* a training thread: count its states */
#define ZS_SW_FUTEX		(1u << 6)	/* the block was a futex wait, outside
						   pthread_barrier_wait: a sync sample */

/*
 * A watched thread got a CPU back.  Its time since it last got one is
 * oncpu_ns + blocked_ns + runq_ns, in that order: on the CPU, blocked
 * (left it sleeping, until its wakeup), then runnable (from the wakeup,
 * or from a preemption, until now).  offcpu_ns is blocked_ns + runq_ns.
 */
struct zev_sched_switch {
	struct zev_hdr hdr;
	__u32 flags;		/* ZS_SW_* */
	__u32 blocked_state;	/* enum shm_thread_state, one of the blocked ones */
	__u64 oncpu_ns;		/* its previous time on a CPU, outside the calls below */
	__u64 offcpu_ns;	/* since it left the CPU */
	__u64 runq_ns;		/* since it became runnable */
	__u64 blocked_ns;	/* from leaving the CPU to its wakeup */
	/*
	 * The rest of its previous time on a CPU (ZS_SW_ONCPU): inside
	 * blocking CUDA calls, where the driver spins waiting for the GPU
	 * (gpu); inside NCCL calls or the syncs that complete them (collective).
	 */
	__u64 gpu_ns;
	__u64 coll_ns;
};

/* A watched thread exits: its last time on a CPU. */
struct zev_thread_exit {
	struct zev_hdr hdr;
	__u32 flags;		/* ZS_SW_ONCPU, ZS_SW_TRAINING */
	__u32 pad;
	__u64 oncpu_ns;		/* as zev_sched_switch's three */
	__u64 gpu_ns;
	__u64 coll_ns;
};

/*
 * A training thread's state still open as the collector reads the task
 * iterator zs_open_states (no header: the iterator's output is not the
 * ring): the time so far of the stint, block or queueing it is in.
 */
struct zs_open_state {
	__u32 tgid;
	__u32 tid;
	__u64 ns[SHM_STATE_COUNT];	/* by enum shm_thread_state */
};

/* A watched thread moved to another CPU. */
struct zev_sched_migrate {
	struct zev_hdr hdr;
	__u32 cpu;		/* destination */
	__u32 pad;
};

/*
 * A watched process made its first futex wait: probe pthread_barrier_wait
 * in the libc it maps (a container's, a bundled runtime's).
 */
struct zev_libc_probe {
	struct zev_hdr hdr;
};

/*
 * A process's dynamic loader changed its list of libraries, or is about
 * to (dlopen, dlclose, start-up): look at its maps now.
 */
struct zev_lib_loaded {
	struct zev_hdr hdr;
};

/*
 * A watched Python thread stalled for ns (above the threshold): its
 * Python frames as the interpreter held them when the stall began,
 * innermost first.  A frame is its code object's address and the address
 * of its last instruction; the collector reads the code object (file,
 * function, line table) from the process, which still holds it.
 */
#define ZP_MAX_FRAMES		16

struct zev_py_frame {
	__u64 code;		/* PyCodeObject * */
	__u64 instr;		/* _Py_CODEUNIT *: the instruction being run */
};

struct zev_py_stall {
	struct zev_hdr hdr;	/* ts_ns: when the stall ended */
	__u32 state;		/* enum shm_stall_state */
	__u32 nframes;		/* frames[] in use; 0: no Python frame */
	__u64 ns;		/* how long it lasted */
	__s32 native_stack;	/* id of the user stack (a hash of its return addresses); < 0: none */
	__u32 truncated;	/* 1: the stack has more than ZP_MAX_FRAMES */
	/* Stalls of this process not sent since the last one (rate bound). */
	__u32 skipped;
	__u32 pad;
	__u64 skipped_ns;
	/*
	 * A synchronisation that spun: from its entry to its return, the
	 * stalls off the CPU inside it included (ns is its time on the CPU);
	 * 0 for every other stall, which spans ns.
	 */
	__u64 span_ns;
	struct zev_py_frame frames[ZP_MAX_FRAMES];
};

/*
 * What the collector's stream tracking knows of a process's NCCL
 * collectives, for the scheduler probe (collector/probes/sched/sched.bpf.c's zs_coll_known):
 * how many are queued and not yet known complete, as of the time of the
 * last of the process's records it has read.
 */
struct zs_coll_known {
	__u64 outstanding;
	__u64 at_ns;
};

_Static_assert(sizeof(struct zev_hdr) == 24, "zev_hdr is 24 bytes");
_Static_assert(sizeof(struct zev_watch) == 56, "zev_watch is 56 bytes");
_Static_assert(sizeof(struct zev_exit) == 32, "zev_exit is 32 bytes");
_Static_assert(sizeof(struct zs_coll_known) == 16, "zs_coll_known is 16 bytes");
_Static_assert(sizeof(struct zev_mem_alloc) == 64, "zev_mem_alloc is 64 bytes");
_Static_assert(sizeof(struct zev_mem_pool) == 48, "zev_mem_pool is 48 bytes");
_Static_assert(sizeof(struct zev_mem_free) == 40, "zev_mem_free is 40 bytes");
_Static_assert(sizeof(struct zev_mem_fail) == 40, "zev_mem_fail is 40 bytes");
_Static_assert(sizeof(struct zev_latency) == 40, "zev_latency is 40 bytes");
_Static_assert(sizeof(struct zev_nccl_call) == 72, "zev_nccl_call is 72 bytes");
_Static_assert(sizeof(struct zev_nccl_wait) == 40, "zev_nccl_wait is 40 bytes");
_Static_assert(sizeof(struct zev_nccl_comm) == 208, "zev_nccl_comm is 208 bytes");
_Static_assert(sizeof(struct zev_nccl_alloc) == 48, "zev_nccl_alloc is 48 bytes");
_Static_assert(sizeof(struct zev_nccl_group) == 32, "zev_nccl_group is 32 bytes");
_Static_assert(sizeof(struct zev_nccl_end) == 48, "zev_nccl_end is 48 bytes");
_Static_assert(sizeof(struct zev_nccl_gpu) == 72, "zev_nccl_gpu is 72 bytes");
_Static_assert(sizeof(struct zev_cuda_sync) == 40, "zev_cuda_sync is 40 bytes");
_Static_assert(sizeof(struct zev_cuda_order) == 48, "zev_cuda_order is 48 bytes");
_Static_assert(sizeof(struct zev_sched_switch) == 80, "zev_sched_switch is 80 bytes");
_Static_assert(sizeof(struct zev_thread_exit) == 56, "zev_thread_exit is 56 bytes");
_Static_assert(sizeof(struct zev_sched_migrate) == 32, "zev_sched_migrate is 32 bytes");
_Static_assert(sizeof(struct zev_libc_probe) == 24, "zev_libc_probe is 24 bytes");
_Static_assert(sizeof(struct zev_lib_loaded) == 24, "zev_lib_loaded is 24 bytes");
_Static_assert(sizeof(struct zev_py_stall) == 72 + 16 * ZP_MAX_FRAMES, "zev_py_stall size");
_Static_assert(sizeof(struct zw_thread_gpu) == 16, "zw_thread_gpu is 16 bytes");

/* Slots of the per-CPU loss counter (zw_drops). */
enum zw_drop_slot {
	ZW_DROP_RINGBUF = 0,	/* ring buffer full: event lost */
	ZW_DROP_WATCHED_FULL,	/* watched-process table full */
	ZW_DROP_STATE_FULL,	/* per-thread call table refused an entry */
	ZW_DROP_SLOTS
};

/*
 * What the scheduler probe could not see directly (per-CPU counters of
 * collector/probes/sched/sched.bpf.c, zs_counts).  Blocks of watched threads it could not tie
 * to a 64-bit system call are counted as SHM_STATE_OTHER.  A return to a
 * CPU that no sched_switch showed is timed from the kernel's sched_info,
 * or, without it, leaves the stint around it uncounted.
 */
enum zs_count_slot {
	ZS_COUNT_NOT_SYSCALL = 0,	/* blocked outside a syscall (page fault I/O) */
	ZS_COUNT_COMPAT,		/* inside a 32-bit (compat) syscall */
	ZS_COUNT_NO_REGS,		/* no saved user registers (kernel thread) */
	ZS_COUNT_RETURN_TIMED,		/* an unseen return, timed from sched_info */
	ZS_COUNT_RETURN_LOST,		/* an unseen return not timed: stint uncounted */
	ZS_COUNT_SLOTS
};

/*
 * System calls the scheduler probe sorts blocks by (its sysclass table,
 * filled by the collector from <sys/syscall.h> of the machine it runs on).
 */
#define ZS_SYSCALL_MAX		512
enum zs_sysclass {
	ZS_SYS_OTHER = 0,
	ZS_SYS_INPUT,		/* read/recv families, epoll */
	ZS_SYS_URING,		/* io_uring_enter: input when it waits for completions */
	ZS_SYS_FUTEX,		/* futex(2): lock when its op waits */
	ZS_SYS_FUTEX2,		/* futex_waitv, futex_wait: always lock */
	ZS_SYS_SLEEP,		/* nanosleep, clock_nanosleep */
	ZS_SYS_IOCTL,		/* ioctl: other, but a Python stall there is in the GPU driver */
	/*
	 * select, pselect6: input, but a sleep with no descriptor set (how
	 * CPython 3.10's time.sleep waits); poll, ppoll: the same with no
	 * descriptor.
	 */
	ZS_SYS_SELECT,
	ZS_SYS_POLL,
};

/* --comm names the kernel matches at exec. */
#define ZW_MAX_COMMS		8

/*
 * The watched set as one bit per tgid (zw_watched_bits in bpf/watch.h),
 * words of 64 bits up to the kernel's PID_MAX_LIMIT on 64-bit machines;
 * the collector maps it to keep it in step with zw_watched.
 */
#define ZW_PID_LIMIT		(1u << 22)
#define ZW_WATCHED_WORDS	(ZW_PID_LIMIT / 64)

#endif /* ZERNEL_BPF_PROBE_ABI_H */
