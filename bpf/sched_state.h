/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The per-thread state the wait and scheduler probes (dataload, dist,
 * sched) keep in the kernel, and the syscall tracepoint records they read.
 * BPF side only: what they send is in bpf/probe_abi.h.
 */
#ifndef ZERNEL_BPF_SCHED_STATE_H
#define ZERNEL_BPF_SCHED_STATE_H

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

#endif /* ZERNEL_BPF_SCHED_STATE_H */
