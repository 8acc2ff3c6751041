/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Maps shared by every Zernel BPF object, and the helpers that use them.
 * Each object that includes this header declares the same maps; the
 * collector loads one object first and hands its map fds to the others
 * (bpf_map__reuse_fd before load), so all programs see ONE watched-process
 * set, ONE ring buffer, ONE loss counter and ONE per-thread device table.
 * A new object joins by including this header, as a probe family of its
 * own (collector/probes/probe_family.h).  Records are those of
 * bpf/probe_abi.h: zw_reserve hands out one with its header filled, and
 * the caller sets every other field, padding included (ring-buffer memory
 * is not zeroed).
 */
#ifndef ZERNEL_BPF_WATCH_H
#define ZERNEL_BPF_WATCH_H

#include "bpf/probe_abi.h"

#define ZW_MAX_WATCHED		16384
#define ZW_MAX_THREADS		16384
/* 128k events of 64 bytes: over two seconds of a busy node. */
#define ZW_RINGBUF_BYTES	(8u << 20)
/*
 * A quarter full wakes the reader: more than a publish interval brings on
 * a quiet node, and a burst is drained well before the buffer fills.
 */
#define ZW_RINGBUF_WAKE_BYTES	(ZW_RINGBUF_BYTES / 4)

/* An array of one bit per tgid that the collector maps too (zw_bit, zw_set_bit). */
#define ZW_TGID_BITS(name)						\
	struct {							\
		__uint(type, BPF_MAP_TYPE_ARRAY);			\
		__uint(map_flags, BPF_F_MMAPABLE);			\
		__uint(max_entries, ZW_WATCHED_WORDS);			\
		__type(key, __u32);					\
		__type(value, __u64);					\
	} name SEC(".maps")

/* tgid -> SHM_WATCH_* reasons. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ZW_MAX_WATCHED);
	__type(key, __u32);
	__type(value, __u32);
} zw_watched SEC(".maps");

/*
 * The same set, one bit per tgid: what every context switch and wakeup on
 * the node tests, an array load the verifier inlines instead of a hash
 * lookup.  Set only once zw_watched holds the process, cleared when it
 * leaves it (here and in the collector, which maps the array and uses
 * atomic operations too: neighbours share a word).
 */
ZW_TGID_BITS(zw_watched_bits);

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, ZW_RINGBUF_BYTES);
} zw_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ZW_DROP_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} zw_drops SEC(".maps");

/*
 * Watched tgids whose libc user space was asked to probe for
 * pthread_barrier_wait (collector/probes/sched/sched.bpf.c, ZEV_LIBC_PROBE), or that forked
 * from one and run its program still: a child maps its parent's libc, so
 * user space need not read the child's maps again to find it.  A new
 * program (exec) may map another, and leaves the set.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ZW_MAX_WATCHED);
	__type(key, __u32);
	__type(value, __u8);
} zw_libc_seen SEC(".maps");

/*
 * Each thread's CUDA device and current context (collector/probes/gpu_mem/gpu_mem.bpf.c), in
 * task-local storage: freed when the thread exits, so a reused thread id
 * starts with nothing.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct zw_thread_gpu);
} zw_curdev SEC(".maps");

/* tgid's bit in bits, an array of __u64 words indexed by tgid / 64. */
static __always_inline int zw_bit(void *bits, __u32 tgid)
{
	__u32 word = tgid / 64;
	__u64 *w = bpf_map_lookup_elem(bits, &word);

	return w && (*w >> (tgid % 64)) & 1;
}

/* Neighbours share a word: atomic operations. */
static __always_inline void zw_set_bit(void *bits, __u32 tgid, int on)
{
	__u32 word = tgid / 64;
	__u64 *w = bpf_map_lookup_elem(bits, &word);
	__u64 bit = 1ull << (tgid % 64);

	if (!w)
		return;
	if (on)
		__sync_fetch_and_or(w, bit);
	else
		__sync_fetch_and_and(w, ~bit);
}

static __always_inline int zw_is_watched(__u32 tgid)
{
	return zw_bit(&zw_watched_bits, tgid);
}

static __always_inline void zw_mark_watched(__u32 tgid, int on)
{
	zw_set_bit(&zw_watched_bits, tgid, on);
}

static __always_inline void zw_drop(__u32 slot)
{
	__u64 *n = bpf_map_lookup_elem(&zw_drops, &slot);

	if (n)
		*n += 1;
}

/* A record of size bytes (sizeof one of probe_abi.h's), header filled. */
static __always_inline void *zw_reserve_at(__u32 size, __u32 type, __u64 pid_tgid, __u64 now)
{
	struct zev_hdr *h = bpf_ringbuf_reserve(&zw_events, size, 0);

	if (!h) {
		zw_drop(ZW_DROP_RINGBUF);
		return NULL;
	}
	h->type = type;
	h->pid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->pad = 0;
	h->ts_ns = now;
	return h;
}

static __always_inline void *zw_reserve(__u32 size, __u32 type, __u64 pid_tgid)
{
	return zw_reserve_at(size, type, pid_tgid, bpf_ktime_get_ns());
}

/*
 * Waking the reader for every event would cost more than the probe itself:
 * the collector drains the buffer before each publish instead, and is
 * woken early only once the buffer holds ZW_RINGBUF_WAKE_BYTES.
 */
static __always_inline void zw_submit(void *rec)
{
	__u64 waiting = bpf_ringbuf_query(&zw_events, BPF_RB_AVAIL_DATA);

	bpf_ringbuf_submit(rec, waiting >= ZW_RINGBUF_WAKE_BYTES ? BPF_RB_FORCE_WAKEUP :
								    BPF_RB_NO_WAKEUP);
}

/* The same, waking the reader now: a record it should act on soon. */
static __always_inline void zw_submit_wake(void *rec)
{
	bpf_ringbuf_submit(rec, BPF_RB_FORCE_WAKEUP);
}

/* Tells user space that task (tgid) is watched, with why, parent and name. */
static __always_inline void zw_emit_watch(struct task_struct *task, __u32 reasons)
{
	__u64 id = ((__u64)BPF_CORE_READ(task, tgid) << 32) | BPF_CORE_READ(task, pid);
	struct zev_watch *e = zw_reserve(sizeof(*e), ZEV_WATCH, id);
	__u64 start;

	if (!e)
		return;
	e->reasons = reasons;
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	start = BPF_CORE_READ(task, group_leader, start_boottime);
	e->start_ns = start / ZW_START_TICK_NS * ZW_START_TICK_NS;
	__builtin_memset(e->comm, 0, sizeof(e->comm));
	BPF_CORE_READ_STR_INTO(&e->comm, task, group_leader, comm);
	zw_submit(e);
}

/* ORs reasons into tgid's entry; emits ZEV_WATCH when something changed. */
static __always_inline void zw_watch_task(struct task_struct *task, __u32 tgid,
					  __u32 reasons)
{
	__u32 *cur = bpf_map_lookup_elem(&zw_watched, &tgid);
	__u32 val;

	if (cur && (*cur & reasons) == reasons)
		return;
	val = (cur ? *cur : 0) | reasons;
	if (bpf_map_update_elem(&zw_watched, &tgid, &val, BPF_ANY) != 0)
		zw_drop(ZW_DROP_WATCHED_FULL);
	else
		zw_mark_watched(tgid, 1);
	/* Reported even when the table is full: user space still counts it. */
	zw_emit_watch(task, reasons);
}

/*
 * Called at the entry of every library probe: a process that calls into
 * libcuda/libnccl is watched from its first call, even between two
 * /proc scans.  The fast path is one hash lookup.
 */
static __always_inline void zw_watch_current(__u64 pid_tgid, __u32 reasons)
{
	__u32 tgid = pid_tgid >> 32;
	__u32 *cur = bpf_map_lookup_elem(&zw_watched, &tgid);

	if (cur && (*cur & reasons) == reasons)
		return;
	zw_watch_task((struct task_struct *)bpf_get_current_task(), tgid, reasons);
}

/* The calling thread's current device; 0 (CUDA's default) when never set. */
static __always_inline __s32 zw_current_device(__u64 pid_tgid)
{
	struct zw_thread_gpu *t = bpf_task_storage_get(&zw_curdev, bpf_get_current_task_btf(), 0, 0);

	(void)pid_tgid;
	return t && t->has_dev ? t->dev : 0;
}

#endif /* ZERNEL_BPF_WATCH_H */
