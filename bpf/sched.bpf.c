// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * Scheduler stalls of watched threads: time off CPU (preempted while still
 * runnable, or blocked), run-queue delay (from wakeup, or from preemption,
 * to running again) and migrations between CPUs.  BTF tracepoints on
 * sched_switch, sched_wakeup(_new) and sched_migrate_task; one event per
 * switch back onto a CPU.  Loaded by zernel-collector as root.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/watch.h"
#include "bpf/sched_state.h"

#define TASK_RUNNING	0

/*
 * tid -> state, for watched threads only.  Entries go with the thread
 * (sched_process_exit); the LRU bounds what a missed exit leaves behind.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ZS_MAX_TASKS);
	__type(key, __u32);
	__type(value, struct zs_task);
} zs_tasks SEC(".maps");

static __always_inline struct zs_task *task_state(struct task_struct *p, int create)
{
	__u32 tid = p->pid;
	struct zs_task *t = bpf_map_lookup_elem(&zs_tasks, &tid);
	struct zs_task zero = {};

	if (t || !create)
		return t;
	if (bpf_map_update_elem(&zs_tasks, &tid, &zero, BPF_NOEXIST) != 0 &&
	    bpf_map_lookup_elem(&zs_tasks, &tid) == NULL) {
		zw_drop(ZW_DROP_STATE_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&zs_tasks, &tid);
}

static __always_inline int watched(struct task_struct *p)
{
	__u32 tgid = p->tgid;

	return bpf_map_lookup_elem(&zw_watched, &tgid) != NULL;
}

static __always_inline void mark_runnable(struct task_struct *p)
{
	struct zs_task *t;

	if (!watched(p))
		return;
	t = task_state(p, 1);
	if (t)
		t->enq_ns = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(zs_wakeup, struct task_struct *p)
{
	mark_runnable(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(zs_wakeup_new, struct task_struct *p)
{
	mark_runnable(p);
	return 0;
}

static __always_inline void switch_out(struct task_struct *prev, int involuntary,
				       __u64 now)
{
	struct zs_task *t;

	t = task_state(prev, 1);
	if (!t)
		return;
	t->out_ns = now;
	t->involuntary = involuntary;
	/* Preempted: it waits on the run queue from now on. */
	t->enq_ns = involuntary ? now : 0;
}

static __always_inline void switch_in(struct task_struct *next, __u64 now)
{
	struct zev_sched_switch *e;
	struct zs_task *t;
	__u64 id;

	t = task_state(next, 0);
	if (!t || (!t->out_ns && !t->enq_ns))
		return;
	id = ((__u64)next->tgid << 32) | (__u32)next->pid;
	e = zw_reserve(sizeof(*e), ZEV_SCHED_SWITCH, id);
	if (e) {
		e->flags = 0;
		e->pad = 0;
		e->offcpu_ns = 0;
		e->runq_ns = 0;
		if (t->out_ns && now > t->out_ns) {
			e->flags |= ZS_SW_OFFCPU;
			e->offcpu_ns = now - t->out_ns;
			if (t->involuntary)
				e->flags |= ZS_SW_INVOLUNTARY;
		}
		if (t->enq_ns && now > t->enq_ns) {
			e->flags |= ZS_SW_RUNQ;
			e->runq_ns = now - t->enq_ns;
		}
		zw_submit(e);
	}
	t->out_ns = 0;
	t->enq_ns = 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(zs_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	int prev_watched = watched(prev);
	int next_watched = watched(next);
	__u64 now;

	/* Keeps the compiler from OR-ing the two map pointers. */
	barrier_var(prev_watched);
	barrier_var(next_watched);
	if (!prev_watched && !next_watched)
		return 0;
	now = bpf_ktime_get_ns();
	/* As the kernel counts nivcsw: preempted, or left while runnable. */
	if (prev_watched)
		switch_out(prev, preempt || prev_state == TASK_RUNNING, now);
	if (next_watched)
		switch_in(next, now);
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(zs_migrate, struct task_struct *p, int dest_cpu)
{
	struct zev_sched_migrate *e;
	__u64 id;

	/* The tracepoint also fires when the CPU does not change. */
	if (BPF_CORE_READ(p, thread_info.cpu) == (__u32)dest_cpu)
		return 0;
	if (!watched(p))
		return 0;
	id = ((__u64)p->tgid << 32) | (__u32)p->pid;
	e = zw_reserve(sizeof(*e), ZEV_SCHED_MIGRATE, id);
	if (!e)
		return 0;
	e->cpu = dest_cpu;
	e->pad = 0;
	zw_submit(e);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(zs_task_exit, struct task_struct *p)
{
	__u32 tid = p->pid;

	bpf_map_delete_elem(&zs_tasks, &tid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
