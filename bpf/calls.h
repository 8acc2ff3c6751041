/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-thread "call in flight" state for uprobe + uretprobe pairs, shared by
 * the library probes.  It lives in task-local storage: no hashing on the
 * hot path, and the kernel frees it when the thread exits, so a thread that
 * dies inside a call leaks nothing.  A call made from inside another
 * probed call of the same class on the same thread (cudaMalloc reaching
 * cuMemAlloc_v2, cudaLaunchKernel reaching cuLaunchKernel) only bumps a
 * depth counter, so each API call is counted once, at its outermost level.
 */
#ifndef ZERNEL_BPF_CALLS_H
#define ZERNEL_BPF_CALLS_H

#define ZC_CLASSES	4		/* classes per object, power of two */
/* A call "in flight" this long lost its return (longjmp, unwinding). */
#define ZC_STALE_NS	(30ull * 1000000000ull)

struct zc_call {
	__u64 start_ns;
	__u64 a0;		/* saved arguments, meaning per call */
	__u64 a1;
	__u64 a2;
	__u32 fn;		/* which function, per object */
	__u32 depth;		/* nesting within the class; 0 = idle */
};

struct zc_task {
	struct zc_call cls[ZC_CLASSES];
	__u32 watched;		/* SHM_WATCH_* this thread already reported */
	__u32 user;		/* the object's own (cuda_trace: histogram slot + 1) */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct zc_task);
} zc_calls SEC(".maps");

static __always_inline struct zc_task *zc_task(__u64 flags)
{
	return bpf_task_storage_get(&zc_calls, bpf_get_current_task_btf(), 0, flags);
}

/*
 * Records the entry of fn, in a process watched (for `reasons`) from now
 * on.  Returns 1 when this is the outermost call of its class on the
 * thread (and the arguments were saved), 0 when nested.
 */
static __always_inline int zc_enter(__u32 reasons, __u32 cls, __u32 fn, __u64 a0, __u64 a1,
				    __u64 a2)
{
	struct zc_task *t = zc_task(BPF_LOCAL_STORAGE_GET_F_CREATE);
	struct zc_call *c;
	__u64 now;

	if (!t) {
		zw_drop(ZW_DROP_STATE_FULL);
		return 0;
	}
	/* Once per thread, not once per call: the hot path stays map-free. */
	if ((t->watched & reasons) != reasons) {
		zw_watch_current(bpf_get_current_pid_tgid(), reasons);
		t->watched |= reasons;
	}
	c = &t->cls[cls & (ZC_CLASSES - 1)];
	now = bpf_ktime_get_ns();
	if (c->depth && now - c->start_ns < ZC_STALE_NS) {
		c->depth++;
		return 0;
	}
	c->fn = fn;
	c->depth = 1;
	c->a0 = a0;
	c->a1 = a1;
	c->a2 = a2;
	c->start_ns = now;
	return 1;
}

/*
 * At a return: copies out the outermost call of cls and marks the class
 * idle, and returns 1; returns 0 for a nested return or an unknown call.
 * For callers that already hold the thread's zc_task.
 */
static __always_inline int zc_task_exit(struct zc_task *t, __u32 cls, struct zc_call *out)
{
	struct zc_call *c = &t->cls[cls & (ZC_CLASSES - 1)];

	if (c->depth == 0)
		return 0;
	if (c->depth > 1) {
		c->depth--;
		return 0;
	}
	*out = *c;
	c->depth = 0;
	return 1;
}

/* zc_task_exit for the current thread. */
static __always_inline int zc_exit(__u32 cls, struct zc_call *out)
{
	struct zc_task *t = zc_task(0);

	return t ? zc_task_exit(t, cls, out) : 0;
}

/*
 * A uprobe program name(params) that only records the entry of fn (as
 * zc_enter) for the return program of its class, which does the work.
 */
#define ZC_ENTER_PROG(name, reasons, cls, fn, a0, a1, a2, params...)	\
SEC("uprobe")								\
int BPF_KPROBE(name, ##params)						\
{									\
	zc_enter(reasons, cls, fn, a0, a1, a2);				\
	return 0;							\
}

#endif /* ZERNEL_BPF_CALLS_H */
