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

char LICENSE[] SEC("license") = "Dual BSD/GPL";
