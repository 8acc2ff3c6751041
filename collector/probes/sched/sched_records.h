/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The scheduler family's records and what its program and the collector
 * share: a watched thread's switch, exit and migration, the states still
 * open, the collectives the collector knows of, the program's counters
 * and how it sorts system calls.
 * Part of the probe ABI (bpf/probe_abi.h, which numbers every record
 * type and includes this): BPF code and the collector read it through
 * that header.
 */
#ifndef ZERNEL_SCHED_RECORDS_H
#define ZERNEL_SCHED_RECORDS_H

#include "bpf/probe_abi.h"

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
 * What the collector's stream tracking knows of a process's NCCL
 * collectives, for the scheduler probe (collector/probes/sched/sched.bpf.c's zs_coll_known):
 * how many are queued and not yet known complete, as of the time of the
 * last of the process's records it has read.
 */
struct zs_coll_known {
	__u64 outstanding;
	__u64 at_ns;
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

_Static_assert(sizeof(struct zs_coll_known) == 16, "zs_coll_known is 16 bytes");
_Static_assert(sizeof(struct zev_sched_switch) == 80, "zev_sched_switch is 80 bytes");
_Static_assert(sizeof(struct zev_thread_exit) == 56, "zev_thread_exit is 56 bytes");
_Static_assert(sizeof(struct zev_sched_migrate) == 32, "zev_sched_migrate is 32 bytes");

#endif /* ZERNEL_SCHED_RECORDS_H */
