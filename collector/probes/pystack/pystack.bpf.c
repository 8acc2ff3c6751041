// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * The Python line behind a synchronisation that spins.  CUDA's syncs
 * often never leave the CPU (the driver spins while CPUs are free), so the
 * scheduler probe never sees them block: an entry and a return probe on
 * each take its time on the CPU (less the time off it, which the switches
 * already took), and when that reaches the threshold it is a GPU stall at
 * the calling line (collective where it completes NCCL collectives), with
 * the frames read at the return (bpf/pystack_walk.h; the stalls of blocked
 * and preempted threads come from the scheduler probe's switch program).
 * Loaded by zernel-collector as root.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/pystack_walk.h"
#include "bpf/coll_seen.h"

/* A synchronisation begins (the outermost of nested ones counts). */
SEC("uprobe")
int BPF_KPROBE(zp_sync)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid;
	struct zp_thread *t;

	if (!bpf_map_lookup_elem(&zp_procs, &tgid))
		return 0;
	t = bpf_task_storage_get(&zp_threads, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return 0;
	if (t->call_depth++ == 0) {
		t->call_ns = bpf_ktime_get_ns();
		t->call_off_ns = 0;
		t->call_out_ns = 0;
		t->call_coll = t->coll_pending || zs_coll_outstanding(tgid);
	}
	return 0;
}

/*
 * It returns: the part of it spent on the CPU, when it reaches the
 * threshold, is a stall at the calling line: a GPU stall, or a collective
 * one where it completes collectives: the thread's own, queued since its
 * last synchronisation, or another thread's (bpf/coll_seen.h).  Its time off the CPU was already taken at the
 * switches, with the state it blocked in.
 */
SEC("uretprobe")
int BPF_KRETPROBE(zp_sync_ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid, tid = task->pid;
	struct zp_thread *t = bpf_task_storage_get(&zp_threads, task, NULL, 0);
	struct zp_proc *pr;
	__u64 ips[ZP_NATIVE_FRAMES];
	__u64 now, on, span;
	__u32 state;

	if (!t || !t->call_depth || --t->call_depth)
		return 0;
	now = bpf_ktime_get_ns();
	state = t->call_coll ? SHM_STALL_COLLECTIVE : SHM_STALL_GPU;
	if (t->call_coll)
		t->coll_pending = 0;
	t->call_coll = 0;
	/*
	 * Still marked off the CPU: it came back unseen (collector/probes/sched/sched.bpf.c,
	 * unseen_return), at some time up to now.  Its time off is taken to
	 * now, so that no time off the CPU is taken for time spinning.
	 */
	if (t->call_out_ns && now > t->call_out_ns) {
		t->call_off_ns += now - t->call_out_ns;
		t->call_out_ns = 0;
	}
	span = now - t->call_ns;
	on = span > t->call_off_ns ? span - t->call_off_ns : 0;
	t->call_ns = 0;
	if (on < zp_threshold_ns)
		return 0;
	pr = bpf_map_lookup_elem(&zp_procs, &tgid);
	if (!pr)
		return 0;
	/* Frames not readable now: the stall still counts, as unsampled time. */
	if (zp_read_frames(pr, t, task, now, 0) != ZP_FRAMES_READ) {
		zp_count_unsampled(pr, on);
		return 0;
	}
	zp_keep_native_stack(t, zp_native_stack_in(ctx, ips));
	zp_send_stall(t, tgid, tid, now, state, on, span);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
