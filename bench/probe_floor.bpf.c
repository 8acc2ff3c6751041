// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * The kernel's floor for the probe-cost benchmark: an entry and a return
 * program that do nothing, on the same uprobe Zernel uses.  Whatever
 * Zernel costs above this is its own work.  Loaded by bench_probes (root).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("uprobe")
int BPF_KPROBE(floor_enter)
{
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(floor_exit)
{
	return 0;
}

/*
 * The floor plus what any entry-to-return timing needs: one clock read on
 * each side.  The store keeps the read from being optimised away.
 */
__u64 clock_sink;

SEC("uprobe")
int BPF_KPROBE(clock_enter)
{
	clock_sink = bpf_ktime_get_ns();
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(clock_exit)
{
	clock_sink = bpf_ktime_get_ns();
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
