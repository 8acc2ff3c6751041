// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * The kernel's floor for the scheduler-probe benchmark: programs that do
 * nothing, on the tracepoints of the scheduler probe that an unwatched
 * process crosses (every switch on the node, and every wakeup where the
 * collector times run-queue waits from sched_wakeup).  Whatever Zernel
 * costs above this is its own work.  Loaded by bench_sched (root).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(floor_wakeup, struct task_struct *p)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
