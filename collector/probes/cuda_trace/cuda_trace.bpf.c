// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * CPU-side latency of CUDA kernel launches and graph launches, entry to
 * return, and the time the host waits in stream and device
 * synchronisation, once per API call: a runtime launch that reaches the driver's
 * launch on the same thread is one launch, timed at the runtime level.
 * Latencies are added to in-kernel histograms (bpf/slot_hist_abi.h) that
 * the collector reads at its poll cadence: no event per launch.  Uprobes
 * attached by zernel-collector (root) to every libcuda/libcudart.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/watch.h"
#include "bpf/calls.h"
#include "bpf/slot_hist.h"

/*
 * A launch's call class (calls.h) is its latency family: one class per
 * family, so a runtime launch nests over the driver's of the same family.
 * Synchronisations are a third class: a runtime sync over the driver's is
 * one wait.  They are few next to launches and go out as events.
 */
_Static_assert(LH_FAMILIES <= ZC_CLASSES, "a call class per launch family");
#define ZT_SYNC_CLASS	(SHM_FAMILY_CUDA_SYNC & (ZC_CLASSES - 1))
_Static_assert(ZT_SYNC_CLASS >= LH_FAMILIES, "syncs have a call class of their own");

/* Sizes set by the collector before load (bpf/slot_hist_abi.h). */
LH_SLOT_MAPS(zt_hist, zt_slots, zt_free);

/*
 * The process's slot, + 1; 0 when none is free, or when its pid's last
 * holder's slot is still to be released.  Once per thread: the answer is
 * kept in the thread's call state.
 */
static __noinline __u32 lh_slot_of(__u32 tgid)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return lh_take_slot(&zt_slots, &zt_free, tgid,
			    BPF_CORE_READ(task, group_leader, start_boottime));
}

/* Without a slot: the event path, as for every other latency family. */
static __noinline void lh_send(__u64 id, __u64 now, __u32 family, __u64 ns)
{
	struct zev_latency *e = zw_reserve_at(sizeof(*e), ZEV_LATENCY, id, now);

	if (!e)
		return;
	e->family = family;
	e->pad = 0;
	e->ns = ns;
	zw_submit(e);
}

static __always_inline void launch_exit(__u32 family)
{
	__u64 now = bpf_ktime_get_ns();
	struct zc_task *t = zc_task(0);
	__u32 key;
	struct lh_val *v;
	struct zc_call c;
	__u64 ns, id;

	if (!t || !zc_task_exit(t, family, &c))
		return;
	ns = now - c.start_ns;
	if (family >= LH_FAMILIES) {
		lh_send(bpf_get_current_pid_tgid(), now, family, ns);
		return;
	}
	if (!t->user) {
		id = bpf_get_current_pid_tgid();
		t->user = lh_slot_of(id >> 32);
		if (!t->user) {
			lh_send(id, now, family, ns);
			return;
		}
	}
	key = (t->user - 1) * LH_FAMILIES + family;
	v = bpf_map_lookup_elem(&zt_hist, &key);
	if (!v)
		return;
	/*
	 * Per-CPU, but a uprobe program runs with preemption on: another
	 * thread of the process may run this on the same CPU while this one
	 * is between a load and its store.  busy marks the window; the
	 * preempting launch, finding it set, goes out as an event instead,
	 * so the plain additions lose nothing.
	 */
	if (*(volatile __u32 *)&v->busy) {
		lh_send(bpf_get_current_pid_tgid(), now, family, ns);
		return;
	}
	*(volatile __u32 *)&v->busy = 1;
	barrier();
	lh_add(v, ns);
	barrier();
	*(volatile __u32 *)&v->busy = 0;
}

/* A family's programs: name at the call's entry, ret_name at its return. */
#define ZT_LAUNCH_PROGS(name, ret_name, family)			\
ZC_ENTER_PROG(name, SHM_WATCH_CUDA, family, family, 0, 0, 0)	\
								\
SEC("uretprobe")						\
int BPF_KRETPROBE(ret_name)					\
{								\
	launch_exit(family);					\
	return 0;						\
}

ZT_LAUNCH_PROGS(zt_launch, zt_launch_ret, SHM_FAMILY_CUDA_LAUNCH)
ZT_LAUNCH_PROGS(zt_graph, zt_graph_ret, SHM_FAMILY_CUDA_GRAPH_LAUNCH)

/* cudaStreamSynchronize, cudaDeviceSynchronize, cuStreamSynchronize, cuCtxSynchronize(_v2) */
ZT_LAUNCH_PROGS(zt_sync, zt_sync_ret, SHM_FAMILY_CUDA_SYNC)

char LICENSE[] SEC("license") = "Dual BSD/GPL";
