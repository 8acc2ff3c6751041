/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The numbers the segment, the collector and the BPF programs must agree
 * on, defined once: latency families, watch reasons, NCCL operations, the
 * Prometheus latency buckets and the log-linear histogram scheme.
 *
 * Included by shm/shm_layout.h (the segment ABI), by collector/agg/hist.h and
 * by the BPF programs' ABI header (bpf/probe_abi.h).  BPF code cannot take
 * libc headers and sees the kernel's types through vmlinux.h, so this file
 * includes nothing and holds only enums and #defines: no types, no
 * functions.  Changing a value here changes the segment ABI
 * (SHM_LAYOUT_VERSION) and the probe ABI at once.
 */
#ifndef ZERNEL_SHM_CONSTS_H
#define ZERNEL_SHM_CONSTS_H

/* Latency families kept per process (and for the whole node). */
enum shm_family {
	SHM_FAMILY_CUDA_LAUNCH = 0,	/* cuLaunchKernel*, cudaLaunchKernel */
	SHM_FAMILY_CUDA_GRAPH_LAUNCH,	/* cuGraphLaunch, cudaGraphLaunch */
	SHM_FAMILY_DATALOADER_WAIT,	/* blocked in read/poll/io_uring waits */
	SHM_FAMILY_FUTEX_WAIT,		/* FUTEX_WAIT* durations */
	SHM_FAMILY_BARRIER_WAIT,	/* pthread_barrier_wait durations */
	SHM_FAMILY_RUNQ_DELAY,		/* wakeup to running */
	SHM_FAMILY_CUDA_SYNC,		/* cu/cudaStreamSynchronize, cuCtx/cudaDeviceSynchronize */
	SHM_FAMILY_COUNT
};

/*
 * What a training thread was doing during a stall whose Python site is
 * kept (shm_stall_site.state): waiting for a CPU, or blocked, by what it
 * blocked in.
 */
enum shm_stall_state {
	SHM_STALL_RUNQ = 0,		/* runnable, waiting for a CPU */
	SHM_STALL_INPUT,		/* reads, polls: data, DataLoader workers */
	SHM_STALL_GPU,			/* in a blocking CUDA call, or the driver's ioctl */
	SHM_STALL_COLLECTIVE,		/* in a NCCL call */
	SHM_STALL_LOCK,			/* futex: locks, conditions, queues */
	SHM_STALL_SLEEP,		/* nanosleep, clock_nanosleep */
	SHM_STALL_OTHER,		/* any other blocking syscall */
	SHM_STALL_STATE_COUNT
};

/*
 * Where a thread's time goes, per the scheduler (collector/probes/sched/sched.bpf.c): on a
 * CPU, runnable but waiting for one (the run queue), or blocked, split by
 * what it blocked in.  The states of a thread cover its whole watched
 * life, with no gap and no overlap.  Index of shm_proc.thread_state_ns and
 * the "state" label of zernel_thread_state_seconds_total.
 *   INPUT       read/recv families, poll/select/epoll watching a
 *               descriptor, io_uring_enter waiting for completions
 *   GPU         inside a blocking CUDA call (synchronisation, blocking
 *               copy, allocation, free)
 *   COLLECTIVE  inside an NCCL call, or in a synchronisation while NCCL
 *               collectives the thread queued are outstanding (that
 *               synchronisation also waits for compute kernels: the two
 *               cannot be told apart from the host)
 *   LOCK        futex waits, pthread_barrier_wait
 *   SLEEP       nanosleep, clock_nanosleep, poll/select watching none
 *   OTHER       anything else: page-fault I/O, other syscalls, 32-bit
 *               (compat) syscalls
 */
enum shm_thread_state {
	SHM_STATE_ONCPU = 0,
	SHM_STATE_RUNQ,
	SHM_STATE_INPUT,
	SHM_STATE_GPU,
	SHM_STATE_COLLECTIVE,
	SHM_STATE_LOCK,
	SHM_STATE_SLEEP,
	SHM_STATE_OTHER,
	SHM_STATE_COUNT
};

/* Why a process is watched (bits of shm_proc.watch_reason). */
#define SHM_WATCH_CUDA		(1u << 0)	/* mapped libcuda/libcudart */
#define SHM_WATCH_NCCL		(1u << 1)	/* mapped libnccl */
#define SHM_WATCH_DESCENDANT	(1u << 2)	/* child of a watched process */
#define SHM_WATCH_PID		(1u << 3)	/* named with --pid */
#define SHM_WATCH_COMM		(1u << 4)	/* named with --comm */
#define SHM_WATCH_SIMULATED	(1u << 5)	/* invented by --simulate */
#define SHM_WATCH_ALL_BITS	0x3fu

/* Process names, NUL-padded: the kernel's TASK_COMM_LEN. */
#define SHM_COMM_LEN		16u

/* NCCL operations, index of shm_nccl_op in its table and its "op" label. */
enum shm_nccl_op_kind {
	SHM_NCCL_ALL_REDUCE = 0,
	SHM_NCCL_ALL_GATHER,
	SHM_NCCL_REDUCE_SCATTER,
	SHM_NCCL_BROADCAST,
	SHM_NCCL_REDUCE,
	SHM_NCCL_SEND,
	SHM_NCCL_RECV,
	SHM_NCCL_ALL_TO_ALL,		/* NCCL 2.28 */
	SHM_NCCL_GATHER,		/* NCCL 2.28 */
	SHM_NCCL_SCATTER,		/* NCCL 2.28 */
	SHM_NCCL_OP_COUNT
};

/* How an NCCL communicator was made, and so what its comm_id is. */
enum shm_nccl_origin {
	SHM_NCCL_ORIGIN_INIT_RANK = 0,	/* ncclCommInitRank(Config): commHash of the uniqueId */
	SHM_NCCL_ORIGIN_SCALABLE,	/* ncclCommInitRankScalable: of commIds[0] */
	SHM_NCCL_ORIGIN_INIT_ALL,	/* ncclCommInitAll: one process, no uniqueId seen */
	SHM_NCCL_ORIGIN_SPLIT,		/* ncclCommSplit: from the parent's, NCCL's rule */
	SHM_NCCL_ORIGIN_SHRINK,		/* ncclCommShrink: from the parent's, NCCL's rule */
	SHM_NCCL_ORIGIN_COUNT
};

/*
 * Latency buckets exported as Prometheus classic histograms: upper bounds in
 * nanoseconds, 1-2.5-5 per decade from 100 ns to 100 s, then +Inf.  The
 * collector counts every observation into exactly one bucket (le is
 * inclusive), so cumulative counts at these bounds are exact, not estimated.
 * The launch probe counts into the same buckets in the kernel.
 */
#define SHM_LAT_FINITE_BUCKETS	28u
#define SHM_LAT_BUCKETS		(SHM_LAT_FINITE_BUCKETS + 1u)	/* + +Inf */
#define SHM_LAT_BOUNDS_NS_INIT {					\
	100ull, 250ull, 500ull,						\
	1000ull, 2500ull, 5000ull,					\
	10000ull, 25000ull, 50000ull,					\
	100000ull, 250000ull, 500000ull,				\
	1000000ull, 2500000ull, 5000000ull,				\
	10000000ull, 25000000ull, 50000000ull,				\
	100000000ull, 250000000ull, 500000000ull,			\
	1000000000ull, 2500000000ull, 5000000000ull,			\
	10000000000ull, 25000000000ull, 50000000000ull,			\
	100000000000ull }

/*
 * The log-linear histogram behind the summary quantiles (collector/agg/hist.h
 * says why and states the error bound): values below HIST_LINEAR_LIMIT are
 * exact, each power of two above is cut into 2^HIST_SUB_BITS buckets, up to
 * 2^HIST_MAX_EXPONENT ns.  The launch probe buckets in the kernel with it.
 */
#define HIST_SUB_BITS		5u			/* 32 buckets per octave */
#define HIST_LINEAR_LIMIT	(2u << HIST_SUB_BITS)	/* 64: exact below */
#define HIST_MAX_EXPONENT	37u			/* range ends at 2^37 ns */
#define HIST_BUCKETS		(HIST_LINEAR_LIMIT + \
				 (HIST_MAX_EXPONENT - HIST_SUB_BITS - 1u) * (1u << HIST_SUB_BITS))
#define HIST_MAX_VALUE		((1ull << HIST_MAX_EXPONENT) - 1)

#endif /* ZERNEL_SHM_CONSTS_H */
