/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The per-thread state the scheduler probe (collector/probes/sched/sched.bpf.c) keeps for
 * watched threads, in task-local storage: the kernel frees it with the
 * thread, so a thread that exits mid-wait or a reused tid leaves nothing
 * behind.  BPF side only: what the probe sends is in bpf/probe_abi.h.
 */
#ifndef ZERNEL_BPF_SCHED_STATE_H
#define ZERNEL_BPF_SCHED_STATE_H

/* Off the CPU for no reason the probe knows yet (first seen switching in). */
#define ZS_NONE			0xffffffffu

struct zs_task {
	__u64 in_ns;		/* got its CPU at; 0 while off it or unknown */
	__u64 out_ns;		/* left the CPU at; 0 while on it */
	__u64 wake_ns;		/* woken at, after out_ns; 0 when not (yet) */
	__u64 last_cuda_ns;	/* its last CUDA launch, allocation or sync began */
	__u64 ep_start_ns;	/* open input episode: its first block; 0 none */
	__u64 ep_resume_ns;	/* back on the CPU after its last block of the episode */
	__u64 barrier_ns;	/* inside pthread_barrier_wait since; 0 not */
	__u64 run_delay_out;	/* its sched_info.run_delay as it left the CPU */
	__u64 incall_on_ns;	/* on its CPU inside a blocking CUDA or an NCCL call since */
	__u64 incall_gpu_ns;	/* of this stint on the CPU: inside blocking CUDA calls */
	__u64 incall_coll_ns;	/* ... inside NCCL calls, or syncs completing collectives */
	/* Probes run while it was marked off its CPU (a return unseen): kept aside. */
	__u64 unseen_first_ns;	/* the first such probe; 0 none */
	__u64 unseen_on_ns;	/* inside a call since, as incall_on_ns */
	__u64 unseen_gpu_ns;	/* as incall_gpu_ns, from the first such probe */
	__u64 unseen_coll_ns;	/* as incall_coll_ns, from the first such probe */
	__u32 block;		/* enum shm_thread_state of the block; ZS_NONE preempted */
	__u32 futex;		/* the block is a futex wait outside a barrier */
	__u32 gpu_depth;	/* nesting of blocking CUDA calls it is inside */
	__u32 coll_depth;	/* nesting of NCCL calls it is inside */
	__u32 coll_pending;	/* it queued collectives since its last sync */
	__u32 sync_coll;	/* the sync it is inside completes collectives */
	__u32 ep_training;	/* the episode's thread was a training thread */
	__u32 exited;		/* sched_process_exit seen: ignore its last switch */
	__u32 slot;		/* its process's slot (bpf/slot_hist_abi.h) + 1; 0 none yet */
	__u8 libc_seen;		/* its process's libc was reported (report_libc) */
	__u8 py_call;		/* left the CPU inside a synchronisation the frames time */
	__u8 stall;		/* enum shm_stall_state its Python frames would stall in */
	__u8 unseen_first;	/* what it was inside (ZS_IN_*) up to unseen_first_ns */
	__u8 ep_block;		/* the block it is in belongs to the open episode */
};

#endif /* ZERNEL_BPF_SCHED_STATE_H */
