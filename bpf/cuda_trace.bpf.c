// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * CPU-side latency of CUDA kernel launches and graph launches, entry to
 * return, once per API call: a runtime launch that reaches the driver's
 * launch on the same thread is one launch, timed at the runtime level.
 * Uprobes attached by zernel-collector (root) to every libcuda/libcudart.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/watch.h"
#include "bpf/calls.h"

/* The classes are the latency families (enum shm_family) plus one. */
#define CLS_LAUNCH	1	/* SHM_FAMILY_CUDA_LAUNCH + 1 */
#define CLS_GRAPH	2	/* SHM_FAMILY_CUDA_GRAPH_LAUNCH + 1 */

static __always_inline void launch_enter(__u32 cls)
{
	zc_enter(ZW_WATCH_CUDA, cls, cls, 0, 0, 0);
}

static __always_inline void launch_exit(__u32 cls)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	struct zc_call c;
	struct zev *e;

	if (!zc_exit(cls, &c))
		return;
	e = zw_reserve_at(ZEV_LATENCY, id, now);
	if (!e)
		return;
	e->arg = cls - 1;
	e->v0 = now - c.start_ns;
	zw_submit(e);
}

SEC("uprobe")
int BPF_KPROBE(zt_launch)
{
	launch_enter(CLS_LAUNCH);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(zt_launch_ret)
{
	launch_exit(CLS_LAUNCH);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(zt_graph)
{
	launch_enter(CLS_GRAPH);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(zt_graph_ret)
{
	launch_exit(CLS_GRAPH);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
