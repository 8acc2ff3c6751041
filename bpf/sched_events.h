/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the wait and scheduler probes (dataload, dist, sched) add to the
 * shared event stream of events.h, and the per-thread state they keep.
 * Included by BPF code (after vmlinux.h) and by the collector; fixed-width
 * types and explicit padding only.
 */
#ifndef ZERNEL_BPF_SCHED_EVENTS_H
#define ZERNEL_BPF_SCHED_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * Scheduler events, numbered far above enum zev_type so that the two sets
 * never collide.  Both use struct zev.
 *   ZEV_SCHED_SWITCH: a watched thread got a CPU back.  arg ZS_SW_* flags,
 *     v0 time off CPU (ns, when ZS_SW_OFFCPU), v1 run-queue delay (ns,
 *     when ZS_SW_RUNQ).
 *   ZEV_SCHED_MIGRATE: a watched thread moved to another CPU; arg the
 *     destination CPU.
 *   ZEV_DIST_PROC: a watched process made its first futex wait: the
 *     collector looks for the libc it maps (pthread_barrier_wait).
 */
#define ZEV_SCHED_SWITCH	0x100u
#define ZEV_SCHED_MIGRATE	0x101u
#define ZEV_DIST_PROC		0x102u

#define ZS_SW_OFFCPU		(1u << 0)	/* v0 is valid */
#define ZS_SW_INVOLUNTARY	(1u << 1)	/* it left the CPU still runnable */
#define ZS_SW_RUNQ		(1u << 2)	/* v1 is valid */

/*
 * The records of the per-syscall tracepoints (syscalls/sys_enter_NAME,
 * sys_exit_NAME).  Not vmlinux.h's trace_event_raw_sys_enter, which is the
 * raw_syscalls record: here the syscall number is an int.
 */
struct zs_sys_enter {
	__u64 common;		/* struct trace_entry */
	__s32 nr;
	__u32 pad;
	__u64 args[6];		/* only as many as the syscall has */
};

struct zs_sys_exit {
	__u64 common;
	__s32 nr;
	__u32 pad;
	__s64 ret;
};

/*
 * Per-thread "syscall in flight" state of dataload and dist, in task-local
 * storage (kept between calls: start_ns 0 means none in flight).
 */
struct zs_inflight {
	__u64 start_ns;
	__u64 nvcsw;		/* voluntary switches at entry: a change = it slept */
	__s64 id;		/* syscall number, checked at exit */
};

/* Per-thread scheduler state of sched, for watched threads. */
#define ZS_MAX_TASKS		32768

struct zs_task {
	__u64 out_ns;		/* left the CPU at; 0 while on it */
	__u64 enq_ns;		/* became runnable at; 0 when unknown */
	__u32 involuntary;	/* how it left */
	__u32 pad;
};

/* Threads inside pthread_barrier_wait, processes already reported (dist). */
#define ZS_MAX_BARRIER		16384
#define ZS_MAX_PROCS		16384

#endif /* ZERNEL_BPF_SCHED_EVENTS_H */
