/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Whether a process has NCCL collectives outstanding, any of its threads'
 * (DDP: autograd's thread calls NCCL, the main thread waits through
 * events), for the synchronisations that count as collective: the
 * scheduler's states (collector/probes/sched/sched.bpf.c) and the stall sites
 * (collector/probes/pystack/pystack.bpf.c), which share these maps.  What the scheduler probe
 * saw last (zs_coll_seen: when the process last entered an NCCL call, and
 * when a sync that completed collectives last returned) and what the
 * collector's stream tracking knows (zs_coll_known, collector/probes/nccl/nccl_track.h,
 * written after each drain of the ring, which can be a publish interval
 * behind): whichever is newer says.
 */
#ifndef ZERNEL_BPF_COLL_SEEN_H
#define ZERNEL_BPF_COLL_SEEN_H

#define ZS_COLL_PROCS		4096
/* How far apart two probes of one sync can see the time (they run in one trap). */
#define ZS_COLL_SAME_CALL_NS	100000ull

struct zs_coll_seen {
	__u64 queued_ns;	/* entry of its last NCCL call */
	__u64 synced_ns;	/* return of its last sync that completed collectives */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ZS_COLL_PROCS);
	__type(key, __u32);		/* tgid */
	__type(value, struct zs_coll_seen);
} zs_coll_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ZS_COLL_PROCS);
	__type(key, __u32);		/* tgid */
	__type(value, struct zs_coll_known);
} zs_coll_known SEC(".maps");

static __always_inline int zs_coll_outstanding(__u32 tgid)
{
	struct zs_coll_seen *seen = bpf_map_lookup_elem(&zs_coll_seen, &tgid);
	struct zs_coll_known *k;

	if (!seen)
		return 0;	/* no NCCL call yet */
	k = bpf_map_lookup_elem(&zs_coll_known, &tgid);
	/*
	 * The tracking has read the last call once it read a record after the
	 * call's entry (its own record is stamped at its return), and the last
	 * sync that completed collectives once it read that sync's (stamped in
	 * the same trap as this program's return, a little before or after).
	 */
	if (k && k->at_ns >= seen->queued_ns &&
	    k->at_ns + ZS_COLL_SAME_CALL_NS >= seen->synced_ns)
		return k->outstanding != 0;
	return seen->queued_ns > seen->synced_ns;
}

#endif /* ZERNEL_BPF_COLL_SEEN_H */
