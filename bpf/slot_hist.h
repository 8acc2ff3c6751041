/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * BPF side of the in-kernel latency histograms (bpf/slot_hist_abi.h): the
 * maps of the process slots, the bucket of a value in both bucket sets, a
 * process's slot, and one sample added.  Included by the objects that keep
 * such histograms (the launch probe, the scheduler probe), after
 * vmlinux.h; each gets its own copy of the Prometheus bounds.
 */
#ifndef ZERNEL_BPF_SLOT_HIST_H
#define ZERNEL_BPF_SLOT_HIST_H

#include "bpf/slot_hist_abi.h"

/* The Prometheus bounds, the collector's own (read-only map, frozen at load). */
const volatile __u64 lh_bounds[SHM_LAT_FINITE_BUCKETS] = SHM_LAT_BOUNDS_NS_INIT;

/*
 * A latency object's process slots, sized by the collector before load
 * (collector/probes/slot_hist.c names them): hist_map, the histograms of
 * slot * LH_FAMILIES + family; slots_map, tgid -> slot; free_map, the
 * slots no process holds.
 */
#define LH_SLOT_MAPS(hist_map, slots_map, free_map)		\
struct {							\
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);		\
	__uint(max_entries, LH_MAX_SLOTS * LH_FAMILIES);	\
	__type(key, __u32);					\
	__type(value, struct lh_val);				\
} hist_map SEC(".maps");					\
								\
struct {							\
	__uint(type, BPF_MAP_TYPE_HASH);			\
	__uint(max_entries, LH_MAX_SLOTS);			\
	__type(key, __u32);		/* tgid */		\
	__type(value, struct lh_owner);				\
} slots_map SEC(".maps");					\
								\
struct {							\
	__uint(type, BPF_MAP_TYPE_QUEUE);			\
	__uint(max_entries, LH_MAX_SLOTS);			\
	__type(value, __u32);					\
} free_map SEC(".maps")

/* Position of the top bit of v > 0, without loops. */
static __always_inline __u32 lh_msb(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r;
}

/* collector/agg/hist.c's hist_bucket_index, without loops. */
static __always_inline __u32 lh_hist_index(__u64 v)
{
	__u32 shift;

	if (v < HIST_LINEAR_LIMIT)
		return (__u32)v;
	if (v > HIST_MAX_VALUE)
		return HIST_BUCKETS - 1;
	shift = lh_msb(v) - HIST_SUB_BITS;
	return (shift << HIST_SUB_BITS) + (__u32)(v >> shift);
}

/* The first bound >= v (le inclusive), SHM_LAT_FINITE_BUCKETS for +Inf: 5 steps. */
static __always_inline __u32 lh_prom_index(__u64 v)
{
	__u32 lo = 0, hi = SHM_LAT_FINITE_BUCKETS;

#pragma unroll
	for (int i = 0; i < 5; i++) {
		__u32 mid = (lo + hi) >> 1;

		if (lo >= hi || mid >= SHM_LAT_FINITE_BUCKETS)
			break;
		if (lh_bounds[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The slot of process tgid (start_ns: its start_boottime), + 1, from the
 * slots map and the queue of free slots; 0 when none is free, or when its
 * pid's last holder's slot is still to be released.
 */
static __always_inline __u32 lh_take_slot(void *slots, void *free_slots, __u32 tgid,
					  __u64 start_ns)
{
	struct lh_owner *have, mine = { .start_ns = start_ns };

	have = bpf_map_lookup_elem(slots, &tgid);
	if (have)
		return have->start_ns == start_ns ? have->slot + 1 : 0;
	if (bpf_map_pop_elem(free_slots, &mine.slot) != 0)
		return 0;
	if (bpf_map_update_elem(slots, &tgid, &mine, BPF_NOEXIST) != 0) {
		/* Another thread of the process got one meanwhile. */
		bpf_map_push_elem(free_slots, &mine.slot, 0);
		have = bpf_map_lookup_elem(slots, &tgid);
		return have && have->start_ns == start_ns ? have->slot + 1 : 0;
	}
	return mine.slot + 1;
}

/* One sample of ns in both bucket sets; the caller keeps others off v meanwhile. */
static __always_inline void lh_add(struct lh_val *v, __u64 ns)
{
	__u32 hi = lh_hist_index(ns), pi = lh_prom_index(ns);

	v->sum_ns += ns;
	if (ns > v->max_ns)
		v->max_ns = ns;
	if (pi < SHM_LAT_BUCKETS)
		v->prom[pi]++;
	if (hi < HIST_BUCKETS)
		v->hist[hi]++;
}

#endif /* ZERNEL_BPF_SLOT_HIST_H */
