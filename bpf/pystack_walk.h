/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/*
 * The Python frames of a watched thread, read from the interpreter's own
 * state: the thread's PyThreadState (found by native thread id in its
 * interpreter's list, then remembered), its current _PyInterpreterFrame
 * and the chain of previous frames, code object and last instruction of
 * each.  The walk has to happen while the thread's own address space is
 * mapped, and the stack it reads is the one of the stall as long as the
 * thread has run no user code since (a thread off the CPU runs none).
 * Where the kernel has BPF task work (Linux 6.18), the scheduler probe's
 * switch program (collector/probes/sched/sched.bpf.c) only notes when and why a thread left
 * the CPU; when it gets a CPU back after a stall over the threshold, a
 * task work walks its frames as it returns to user space
 * (zp_name_stall): only stalls pay for a walk.  Elsewhere the frames are
 * read at every switch away (zp_switch_out) and sent at the switch back if
 * the stall lasted.  Only training threads' stalls are read (the rule of
 * collector/probes/sched/sched.bpf.c): a DataLoader's feeder threads and other helpers wait
 * by design, and their waits would crowd out the stalls that matter.  A
 * synchronisation that spun reads them at its return (collector/probes/pystack/pystack.bpf.c).
 * At most zp_rate stacks a second per process.  Both objects include this
 * header and share its maps (the collector hands one object's descriptors
 * to the other).  BPF side only.
 */
#ifndef ZERNEL_BPF_PYSTACK_WALK_H
#define ZERNEL_BPF_PYSTACK_WALK_H

#include <bpf/bpf_core_read.h>

#include "bpf/watch.h"
#include "bpf/pystack.h"

/*
 * Words of a frame read at once: the offsets of its code and previous
 * frame are multiples of 8 below 64, and so is its instruction's from
 * 3.11 on; 3.10's f_lasti lies beyond and is read on its own
 * (py_layout_fits checks the layout).
 */
#define ZP_FRAME_WORDS	8

#include "bpf/pystack_span.h"

/*
 * The switch program's calls into this side, each a function of its own:
 * its stack is then a frame beside the program's other calls, not part of
 * the program's own, and the deepest chain of frames stays within the
 * kernel's 512 bytes (a kernel that rounds each frame up to 16 bytes
 * refused the program whole at 528).  Unused by the sync object.
 */
#define ZP_SWITCH_SUBPROG static __noinline __attribute__((unused))

const volatile __u64 zp_threshold_ns = 2000000;	/* --stall-threshold-ms */
const volatile __u32 zp_rate = 50;			/* stacks a second, per process */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ZP_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct zp_proc);
} zp_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ZP_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct zp_loader);
} zp_loaders SEC(".maps");

/* A Python site: its innermost frame's code object and instruction. */
struct zp_site {
	__u64 code, instr;
};

#define ZP_WANT_SITES	2

/* The thread's interpreter state and the frames it left the CPU with. */
/*
 * What every switch of the thread reads and writes comes first, within
 * one cache line; the frames, read only when a stall is named, after.
 */
struct zp_thread {
	__u64 out_ns;			/* left the CPU at; 0: on it, or nothing kept */
	__u32 state;			/* enum shm_stall_state of this episode */
	__u32 call_depth;		/* nesting of the synchronisation in flight */
	/* That synchronisation: entered at, time off the CPU in it. */
	__u64 call_ns;
	__u64 call_out_ns;		/* left the CPU inside it at; 0: on it */
	__u64 call_off_ns;
	__u64 tstate;			/* PyThreadState *; 0: not a Python thread */
	__u64 checked_ns;		/* when tstate was last looked for */
	__u64 ident;			/* what its interpreter names it by; 0: not known yet */
	__u64 walked_at;		/* frames[] read at the switch away numbered so */
	__u32 nframes;
	__s32 native_stack;		/* user stack id, of the site stack_code/instr */
	__u32 truncated;
	/* Touched at NCCL calls and synchronisations only. */
	__u32 coll_pending;		/* it queued NCCL collectives since its last sync */
	__u32 call_coll;		/* the sync in flight completes them */
	struct zev_py_frame frames[ZP_MAX_FRAMES];
	__u64 stack_code, stack_instr;	/* the innermost frame native_stack was taken at */
	/*
	 * The last two sites that stalled without one, newest first: take it
	 * there.  Two, so that a loop stalling at two lines in turn (a sleep,
	 * then a lock) gets both, where one would be taken over by each.
	 */
	struct zp_site want[ZP_WANT_SITES];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct zp_thread);
} zp_threads SEC(".maps");

/* Return addresses of a user stack that make its id. */
#define ZP_NATIVE_FRAMES	32

#ifndef ZP_HAVE_TASK_WORK	/* the kernel's BTF is from before Linux 6.18 */
struct bpf_task_work {
	__u64 __opaque;
};
typedef int (*bpf_task_work_callback_t)(struct bpf_map *map, void *key, void *value);
#endif
/* Weak: a kernel without it loads the switch program that walks at every switch. */
extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
					      void *map__map, bpf_task_work_callback_t callback,
					      void *aux__prog) __ksym __weak;

/* A stall whose frames its thread's task work reads, by tid. */
struct zp_pending {
	struct bpf_task_work tw;
	__u64 ns;			/* its time off the CPU; 0: none pending */
	__u64 end_ns;			/* back on a CPU at */
	__u32 state;			/* enum shm_stall_state */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, ZP_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct zp_pending);
} zp_pending SEC(".maps");

/*
 * What the stalls' task works cost the threads they run in, per CPU:
 * [ZP_COST_RUNS] and [ZP_COST_NS].  They run as a thread returns to user
 * space, outside the kernel's statistics of the program that scheduled
 * them, so they are timed here (bench/bench_sched.c reads them).
 */
#define ZP_COST_RUNS	0
#define ZP_COST_NS	1

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} zp_walk_cost SEC(".maps");

/*
 * An id of a user stack, from its return addresses (FNV-1a): the same
 * stack, the same id; -1 for none.  The frames themselves are not kept.
 */
static __always_inline __s32 zp_stack_id(const __u64 *ips, long bytes)
{
	__u32 h = 2166136261u;

	if (bytes <= 0)
		return -1;
	for (int i = 0; i < ZP_NATIVE_FRAMES; i++) {
		if (i * (long)sizeof(__u64) >= bytes)
			break;
		h = (h ^ (__u32)ips[i]) * 16777619u;
		h = (h ^ (__u32)(ips[i] >> 32)) * 16777619u;
	}
	return (__s32)(h & 0x7fffffff);
}

/*
 * Room for a user stack's return addresses, per CPU, outside the BPF
 * stack: the switch program's chain of frames must stay within 512 bytes
 * on kernels without private BPF stacks, and 256 of them for this buffer
 * do not fit.  Only the switch program uses it: it runs with its run
 * queue locked and interrupts off, so nothing else runs on the CPU
 * between the unwind and the hash.  The sync probes and the task work,
 * which may be preempted, keep theirs on their own stacks.
 */
struct zp_ips {
	__u64 ips[ZP_NATIVE_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zp_ips);
} zp_ips_scratch SEC(".maps");

/* The user stack of the program's current thread, by its context, unwound into ips. */
static __always_inline __s32 zp_native_stack_in(void *ctx, __u64 *ips)
{
	return zp_stack_id(ips, bpf_get_stack(ctx, ips, ZP_NATIVE_FRAMES * sizeof(__u64),
					      BPF_F_USER_STACK));
}

/* The same in the switch program, into the per-CPU room; -1 for none. */
static __always_inline __s32 zp_native_stack(void *ctx)
{
	__u32 zero = 0;
	struct zp_ips *b = bpf_map_lookup_elem(&zp_ips_scratch, &zero);

	return b ? zp_native_stack_in(ctx, b->ips) : -1;
}

/*
 * The user stack just taken, as the one of t's innermost frame.  An unwind
 * that failed (its pages not resident at a switch) is not kept as taken:
 * the next stall at that site tries again, instead of it staying without
 * a stack for good.
 */
static __always_inline void zp_keep_native_stack(struct zp_thread *t, __s32 id)
{
	if (id < 0)
		return;
	t->native_stack = id;
	t->stack_code = t->frames[0].code;
	t->stack_instr = t->frames[0].instr;
}

static __always_inline __u64 zp_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr) != 0)
		return 0;
	return v;
}

/* The PyThreadState naming ident in the main interpreter's thread list, or 0. */
static __always_inline __u64 zp_find_tstate(const struct zp_proc *pr, __u64 ident)
{
	__u64 interp = zp_read_ptr(pr->runtime + pr->off.runtime_interp_head);
	__u64 ts;

	if (!interp)
		return 0;
	ts = zp_read_ptr(interp + pr->off.interp_threads_head);
	for (int i = 0; i < ZP_MAX_TSTATES && ts; i++) {
		if (zp_read_ptr(ts + pr->off.tstate_native_tid) == ident)
			return ts;
		ts = zp_read_ptr(ts + pr->off.tstate_next);
	}
	return 0;
}

/* Deepest PID namespace a task may be in (the kernel's MAX_PID_NS_LEVEL). */
#define ZP_MAX_PID_NS_LEVEL	32

/*
 * The task's thread id in its own PID namespace: what gettid() answers
 * inside it, and so what CPython keeps as PyThreadState.native_thread_id.
 * In a pod it is not the host's id (task->pid): the pid at the deepest
 * level of the task's struct pid, read with bounded CO-RE reads.  0 when
 * unreadable.
 */
static __always_inline __u32 zp_ns_tid(struct task_struct *task)
{
	struct pid *p = BPF_CORE_READ(task, thread_pid);
	unsigned int level;
	int nr = 0;

	if (!p)
		return 0;
	level = BPF_CORE_READ(p, level);
	if (level >= ZP_MAX_PID_NS_LEVEL)
		return 0;
	if (level == 0)
		return task->pid;
	if (bpf_probe_read_kernel(&nr, sizeof(nr),
				  (const char *)p + bpf_core_field_offset(struct pid, numbers) +
					  level * bpf_core_type_size(struct upid) +
					  bpf_core_field_offset(struct upid, nr)) != 0)
		return 0;
	return nr > 0 ? (__u32)nr : 0;
}

#ifdef __TARGET_ARCH_arm64
/* arm64's saved TPIDR_EL0, by name (this build's vmlinux.h has x86's thread_struct). */
struct zp_arm64_thread {
	struct {
		unsigned long tp_value;
	} uw;
} __attribute__((preserve_access_index));

struct task_struct___zp_arm64 {
	struct zp_arm64_thread thread;
} __attribute__((preserve_access_index));

static __always_inline __u64 zp_thread_pointer(struct task_struct *task)
{
	return BPF_CORE_READ((struct task_struct___zp_arm64 *)task, thread.uw.tp_value);
}
#else
/* The FS base glibc and musl point at the thread's descriptor. */
static __always_inline __u64 zp_thread_pointer(struct task_struct *task)
{
	return BPF_CORE_READ(task, thread.fsbase);
}
#endif

/*
 * task's pthread_self(), which 3.10 names a thread state's thread by: the
 * main thread's is in _PyRuntime, and every thread's lies at the same
 * distance from its thread pointer, learned from the main thread's.  0
 * while not known (another thread before the main one was seen).
 */
static __always_inline __u64 zp_pthread_self(struct zp_proc *pr, struct task_struct *task)
{
	__u64 tp = zp_thread_pointer(task), main;

	if (task->pid == task->tgid) {
		main = zp_read_ptr(pr->runtime + pr->off.runtime_main_thread);
		if (main && tp && !pr->tp_known) {
			pr->tp_less_self = tp - main;
			pr->tp_known = 1;
		}
		return main;
	}
	return tp && pr->tp_known ? tp - pr->tp_less_self : 0;
}

/* What task's interpreter names it by in its thread state; 0 when not known. */
static __always_inline __u64 zp_ident(struct zp_proc *pr, struct task_struct *task)
{
	return pr->off.runtime_main_thread ? zp_pthread_self(pr, task) : zp_ns_tid(task);
}

/*
 * The remembered tstate of task, checked, or found again (at most every
 * ZP_RECHECK_NS), by the thread's id as the interpreter knows it.
 */
static __always_inline __u64 zp_thread_tstate(struct zp_proc *pr, struct zp_thread *t,
					   struct task_struct *task, __u64 now)
{
	__u64 ident;

	if (!t->ident)
		t->ident = zp_ident(pr, task);
	ident = t->ident;
	if (!ident)
		return 0;
	if (t->tstate && zp_read_ptr(t->tstate + pr->off.tstate_native_tid) == ident)
		return t->tstate;
	if (t->checked_ns && now < t->checked_ns + ZP_RECHECK_NS)
		return 0;
	t->checked_ns = now;
	t->tstate = zp_find_tstate(pr, ident);
	return t->tstate;
}

/* The innermost frame of the thread whose state is tstate; 0 for none. */
static __always_inline __u64 zp_current_frame(const struct zp_proc *pr, __u64 tstate)
{
	__u64 cframe;

	if (!pr->off.tstate_cframe)
		return zp_read_ptr(tstate + pr->off.cframe_current_frame);
	cframe = zp_read_ptr(tstate + pr->off.tstate_cframe);
	return cframe ? zp_read_ptr(cframe + pr->off.cframe_current_frame) : 0;
}

/*
 * The frames from the innermost one, frame, into t: through the switch
 * program's span s where it holds them (NULL: one read a frame).
 */
static __always_inline void zp_walk_frames(const struct zp_proc *pr, struct zp_thread *t,
					   __u64 frame, const struct zp_span *s)
{
	union zp_frame_buf b;
	__u32 n = 0;

	t->truncated = 0;
	for (int i = 0; i < ZP_MAX_FRAMES; i++) {
		if (!frame)
			break;
		if (zp_frame_read(pr, s, frame, &b) != 0)
			break;
		t->frames[i].code = b.f.code;
		if (zp_frames_stacked(pr))
			t->frames[i].instr = b.f.instr;
		else
			t->frames[i].instr = zp_read_ptr(frame + pr->off.frame_prev_instr);
		frame = b.f.previous;
		n = i + 1;
	}
	if (frame && n == ZP_MAX_FRAMES)
		t->truncated = 1;
	t->nframes = n;
}

/* Where a blocking thread's frames stand against its process's DataLoader. */
enum zp_loader_at {
	ZP_LOADER_UNKNOWN,	/* no DataLoader known, or its frames not readable now */
	ZP_LOADER_IN,		/* inside its next() */
	ZP_LOADER_OUT,		/* not within ZP_LOADER_DEPTH frames of it */
};

/*
 * The current thread (blocking, in the switch program) against its
 * process's DataLoader (zp_loaders): a global function, verified once
 * and apart from the switch program that calls it.  span: read the
 * frames through the span.  keep: the switch away walks them too
 * (zp_switch_out), so where the span holds them the check keeps the
 * innermost ZP_MAX_FRAMES in the thread's frames, as zp_walk_frames
 * would, going on past the DataLoader's until it has them, and marks them
 * read at this switch (walked_at): zp_read_frames then reads them no
 * second time.
 */
_Static_assert(ZP_LOADER_DEPTH >= ZP_MAX_FRAMES,
	       "the DataLoader check walks at least the frames it keeps for the walk");

__noinline int zp_loader_at(__u64 now, int span, int keep)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid, n = 0;
	struct zp_loader *l = bpf_map_lookup_elem(&zp_loaders, &tgid);
	int at = ZP_LOADER_OUT;
	union zp_frame_buf b;
	const struct zp_span *s;
	struct zp_proc *pr;
	struct zp_thread *t;
	__u64 frame, ts;

	if (!l || !l->code)
		return ZP_LOADER_UNKNOWN;
	pr = bpf_map_lookup_elem(&zp_procs, &tgid);
	if (!pr)
		return ZP_LOADER_UNKNOWN;
	t = bpf_task_storage_get(&zp_threads, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return ZP_LOADER_UNKNOWN;
	ts = zp_thread_tstate(pr, t, task, now);
	frame = ts ? zp_current_frame(pr, ts) : 0;
	if (!frame)
		return ZP_LOADER_UNKNOWN;
	s = span ? zp_span_for(pr, frame, task) : NULL;
	keep = keep && s;
	if (keep)
		t->truncated = 0;
	for (int i = 0; i < ZP_LOADER_DEPTH && frame; i++) {
		if (zp_frame_read(pr, s, frame, &b) != 0) {
			if (at != ZP_LOADER_IN)
				at = ZP_LOADER_UNKNOWN;
			break;
		}
		if (keep && i < ZP_MAX_FRAMES) {
			t->frames[i].code = b.f.code;
			t->frames[i].instr = b.f.instr;
			n = i + 1;
			if (n == ZP_MAX_FRAMES)
				t->truncated = b.f.previous != 0;
		}
		if ((b.f.code & ~l->tag_mask) == l->code)
			at = ZP_LOADER_IN;
		if (at == ZP_LOADER_IN && (!keep || i >= ZP_MAX_FRAMES - 1))
			break;
		frame = b.f.previous;
	}
	if (keep) {
		t->nframes = n;
		t->walked_at = zp_switch_number(task);
	}
	return at;
}

/* What zp_read_frames found of a thread at a stall. */
enum zp_frames {
	ZP_FRAMES_READ,		/* its frames are in t */
	ZP_FRAMES_UNREAD,	/* a Python thread whose frames are not readable now */
	ZP_FRAMES_NONE,		/* never found in the interpreter's list: no Python thread */
};

/*
 * task's frames into t; span: through the switch program's span
 * (zp_span_for), the one the DataLoader check of this switch read where
 * it did, its thread state and innermost frame then found already.  A
 * Python thread whose frames cannot be read now (its memory not
 * resident, its thread state going) still stalls: the caller counts that
 * as unsampled time; a thread the interpreter never listed has no site to
 * miss.
 */
static __always_inline enum zp_frames zp_read_frames(struct zp_proc *pr,
						     struct zp_thread *t,
						     struct task_struct *task, __u64 now, int span)
{
	__u64 known = t->tstate, ts, frame;
	const struct zp_span *s = span ? zp_span_now(task) : NULL;

	if (s && t->walked_at == zp_switch_number(task))
		return t->nframes ? ZP_FRAMES_READ : ZP_FRAMES_UNREAD;
	if (s) {
		ts = t->tstate;
		frame = zp_span_top(s);
	} else {
		ts = zp_thread_tstate(pr, t, task, now);
		frame = ts ? zp_current_frame(pr, ts) : 0;
		s = span ? zp_span_for(pr, frame, task) : NULL;
	}
	if (ts)
		zp_walk_frames(pr, t, frame, s);
	if (ts && t->nframes)
		return ZP_FRAMES_READ;
	t->nframes = 0;
	return ts || known ? ZP_FRAMES_UNREAD : ZP_FRAMES_NONE;
}

/* The thread's innermost frame is a site that stalled without a user stack. */
static __always_inline int zp_wanted(const struct zp_thread *t)
{
	for (int i = 0; i < ZP_WANT_SITES; i++)
		if (t->frames[0].code == t->want[i].code && t->frames[0].instr == t->want[i].instr)
			return 1;
	return 0;
}

/* How zp_switch_out reads a thread's frames. */
enum zp_walk {
	ZP_WALK_NONE,		/* not at all: not a training thread */
	ZP_WALK_EACH,		/* one read a frame */
	ZP_WALK_SPAN,		/* through the span (bpf/pystack_span.h) */
};

/*
 * prev (current) leaves the CPU, a stall in state (enum shm_stall_state)
 * if it lasts: remember where its Python code stands, when it is a
 * training thread (walk, enum zp_walk).  Returns 1 when it leaves inside
 * a synchronisation (zp_switch_in must then see it back).
 */
ZP_SWITCH_SUBPROG int zp_switch_out(void *ctx, struct task_struct *prev, __u32 state,
					 __u64 now, int walk)
{
	__u32 tgid = prev->tgid;
	struct zp_proc *pr = bpf_map_lookup_elem(&zp_procs, &tgid);
	struct zp_thread *t;
	enum zp_frames got;
	int in_call;

	if (!pr)
		return 0;
	/* A thread inside a synchronisation has its state already (zp_sync). */
	t = bpf_task_storage_get(&zp_threads, prev, NULL,
				 walk ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!t) {
		if (walk)
			zw_drop(ZW_DROP_STATE_FULL);
		return 0;
	}
	in_call = t->call_depth != 0;
	if (in_call)
		t->call_out_ns = now;
	t->out_ns = 0;
	if (!walk)
		return in_call;
	got = zp_read_frames(pr, t, prev, now, walk == ZP_WALK_SPAN);
	t->state = state;
	if (got != ZP_FRAMES_READ) {
		/* A stall that follows counts as unsampled time (zp_switch_in). */
		if (got == ZP_FRAMES_UNREAD)
			t->out_ns = now;
		return in_call;
	}
	/*
	 * Unwinding the user stack costs more than the whole Python walk, and
	 * most switches are no stall: it is taken only where the thread left
	 * the CPU at the innermost site of a stall sent without one (a loop
	 * waits on the same call again), and kept while it leaves from there.
	 */
	if (zp_wanted(t) &&
	    (t->frames[0].code != t->stack_code || t->frames[0].instr != t->stack_instr))
		zp_keep_native_stack(t, zp_native_stack(ctx));
	t->out_ns = now;
	return in_call;
}

/* A stall of ns sent without its site: the next one sent carries the count. */
static __always_inline void zp_count_unsampled(struct zp_proc *pr, __u64 ns)
{
	__sync_fetch_and_add(&pr->skipped, 1);
	__sync_fetch_and_add(&pr->skipped_ns, ns);
}

/*
 * The process's entry when this stall may be sent within its rate; a
 * stall over the bound is counted there, time included, and the next
 * one sent carries the count, so no stall time is lost.
 */
static __always_inline struct zp_proc *zp_rate_ok(__u32 tgid, __u64 now, __u64 ns)
{
	struct zp_proc *pr = bpf_map_lookup_elem(&zp_procs, &tgid);

	if (!pr)
		return NULL;
	if (now >= pr->window_start_ns + 1000000000ull) {
		pr->window_start_ns = now;
		pr->window_sent = 0;
	}
	if (pr->window_sent >= zp_rate) {
		zp_count_unsampled(pr, ns);
		return NULL;
	}
	pr->window_sent++;
	return pr;
}

/*
 * Sends t's frames as a stall of ns in state, its process's rate allowing
 * it (pr); span: see zev_py_stall.
 */
static __always_inline void zp_emit_stall(struct zp_proc *pr, struct zp_thread *t, __u32 tgid,
					  __u32 tid, __u64 now, __u32 state, __u64 ns, __u64 span)
{
	struct zev_py_stall *e;

	e = zw_reserve_at(sizeof(*e), ZEV_PY_STALL, ((__u64)tgid << 32) | tid, now);
	if (!e)
		return;
	e->state = state;
	e->nframes = t->nframes;
	e->ns = ns;
	e->span_ns = span;
	/* The user stack of this site, or none yet: then the next stall here takes it. */
	if (t->frames[0].code == t->stack_code && t->frames[0].instr == t->stack_instr) {
		e->native_stack = t->native_stack;
	} else {
		e->native_stack = -1;
		/* A preemption falls anywhere: its line is no site to wait at. */
		if (state != SHM_STALL_RUNQ && !zp_wanted(t)) {
			t->want[1] = t->want[0];
			t->want[0].code = t->frames[0].code;
			t->want[0].instr = t->frames[0].instr;
		}
	}
	e->truncated = t->truncated;
	e->pad = 0;
	/* Taken by subtraction: what other CPUs add meanwhile stays for the next. */
	e->skipped = (__u32)pr->skipped;
	e->skipped_ns = pr->skipped_ns;
	__sync_fetch_and_add(&pr->skipped, -(__u64)e->skipped);
	__sync_fetch_and_add(&pr->skipped_ns, -e->skipped_ns);
	__builtin_memcpy(e->frames, t->frames, sizeof(e->frames));
	if (pr->name_wakes < ZP_NAME_WAKES && !bpf_map_lookup_elem(&zp_loaders, &tgid)) {
		pr->name_wakes++;
		zw_submit_wake(e);
		return;
	}
	zw_submit(e);
}

/*
 * task, of a watched process, queues an NCCL collective (collector/probes/sched/sched.bpf.c's
 * NCCL call probe): its next synchronisation completes it, and the time
 * that synchronisation spins is time at a collective, as the scheduler
 * probe tells the same synchronisation when it blocks.
 */
static __always_inline void zp_collective_queued(struct task_struct *task)
{
	__u32 tgid = task->tgid;
	struct zp_thread *t;

	if (!bpf_map_lookup_elem(&zp_procs, &tgid))
		return;
	t = bpf_task_storage_get(&zp_threads, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t)
		t->coll_pending = 1;
}

/* Sends t's frames as a stall of ns in state, within the process's rate. */
static __always_inline void zp_send_stall(struct zp_thread *t, __u32 tgid, __u32 tid, __u64 now,
					  __u32 state, __u64 ns, __u64 span)
{
	struct zp_proc *pr = zp_rate_ok(tgid, now, ns);

	if (pr)
		zp_emit_stall(pr, t, tgid, tid, now, state, ns, span);
}

/*
 * The task work of a stall: its thread returns to user space, still at the
 * Python lines it stalled at, its own memory mapped.  The frames are read
 * and sent, with the user stack's id: unwound only when the innermost
 * frame is not the one it was last taken at (a loop stalls at the same
 * site again and again, entered from the same native stack).
 */
static __always_inline void zp_name_stall_at(struct zp_pending *p, __u64 now)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct zp_thread *t = bpf_task_storage_get(&zp_threads, task, NULL, 0);
	__u32 tgid = task->tgid, tid = task->pid;
	struct zp_proc *pr = bpf_map_lookup_elem(&zp_procs, &tgid);
	__u64 ips[ZP_NATIVE_FRAMES];
	__u64 ns = p->ns;
	enum zp_frames got;

	p->ns = 0;
	if (!t || !pr || !ns)
		return;
	got = zp_read_frames(pr, t, task, now, 0);
	if (got != ZP_FRAMES_READ) {
		if (got == ZP_FRAMES_UNREAD)
			zp_count_unsampled(pr, ns);
		return;
	}
	if (t->frames[0].code != t->stack_code || t->frames[0].instr != t->stack_instr)
		zp_keep_native_stack(t, zp_stack_id(ips, bpf_get_task_stack(task, ips, sizeof(ips),
									       BPF_F_USER_STACK)));
	zp_emit_stall(pr, t, tgid, tid, p->end_ns, p->state, ns, 0);
}

static __always_inline void zp_cost_add(__u32 slot, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(&zp_walk_cost, &slot);

	if (c)
		*c += v;
}

static int zp_name_stall(struct bpf_map *map, void *key, void *value)
{
	__u64 t0 = bpf_ktime_get_ns();

	zp_name_stall_at(value, t0);
	zp_cost_add(ZP_COST_RUNS, 1);
	zp_cost_add(ZP_COST_NS, bpf_ktime_get_ns() - t0);
	return 0;
}

/*
 * prev leaves the CPU: inside a synchronisation the frames time, its time
 * off it is not the call's time on it.  Returns 1 when it is inside one.
 * When and why it leaves, the deferred walk takes from the scheduler
 * probe's own state (zp_switch_in's off and state).
 */
static __always_inline int zp_switch_out_note(struct task_struct *prev, __u64 now)
{
	struct zp_thread *t = bpf_task_storage_get(&zp_threads, prev, NULL, 0);

	/* zp_sync made the state of a thread inside one. */
	if (!t || !t->call_depth)
		return 0;
	t->call_out_ns = now;
	return 1;
}

/*
 * A stall of next over the threshold, within its process's rate: its
 * frames are read by a task work as it returns to user space.  One still
 * pending (the thread blocked again before it ran user code) takes no
 * second: this one is counted as over the rate, time included.
 */
static __always_inline void zp_defer_stall(struct task_struct *next, struct zp_thread *t,
					   __u64 now, __u64 ns, __u32 state)
{
	struct zp_pending fresh = {}, *p;
	__u32 tid = next->pid, tgid = next->tgid;
	struct zp_proc *pr;

	/* Not a Python thread when last looked for: again only after a while. */
	if (!t->tstate && t->checked_ns && now < t->checked_ns + ZP_RECHECK_NS)
		return;
	p = bpf_map_lookup_elem(&zp_pending, &tid);
	if (!p) {
		bpf_map_update_elem(&zp_pending, &tid, &fresh, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&zp_pending, &tid);
		if (!p) {
			zw_drop(ZW_DROP_STATE_FULL);
			return;
		}
	}
	if (p->ns) {
		pr = bpf_map_lookup_elem(&zp_procs, &tgid);
		if (pr)
			zp_count_unsampled(pr, ns);
		return;
	}
	if (!zp_rate_ok(tgid, now, ns))
		return;
	p->ns = ns;
	p->end_ns = now;
	p->state = state;
	if (bpf_task_work_schedule_resume_impl(next, &p->tw, &zp_pending, zp_name_stall, NULL) != 0) {
		p->ns = 0;
		zw_drop(ZW_DROP_STATE_FULL);
	}
}

/*
 * p got its CPU back at back, after off away, with no switch seen
 * (collector/probes/sched/sched.bpf.c, unseen_return), and has run its code since: the
 * frames now are not those it stalled at, so a stall over the threshold
 * counts as unsampled, time included (off 0: not a training thread's).
 */
static __always_inline void zp_returned_unseen(struct task_struct *p, __u64 back, __u64 off)
{
	struct zp_thread *t = bpf_task_storage_get(&zp_threads, p, NULL, 0);
	__u32 tgid = p->tgid;
	struct zp_proc *pr;

	if (t) {
		if (t->call_out_ns && back > t->call_out_ns)
			t->call_off_ns += back - t->call_out_ns;
		t->call_out_ns = 0;
		t->out_ns = 0;
	}
	if (off < zp_threshold_ns)
		return;
	pr = bpf_map_lookup_elem(&zp_procs, &tgid);
	if (pr)
		zp_count_unsampled(pr, off);
}

/*
 * next gets a CPU after off (0: not known, or not a training thread's
 * stall) away, in stall state state: a stall long enough is sent with the
 * frames kept at the switch away, or (deferred) named by a task work.
 */
ZP_SWITCH_SUBPROG void zp_switch_in(struct task_struct *next, __u64 now, int deferred,
					 __u64 off, __u32 state)
{
	struct zp_thread *t = bpf_task_storage_get(&zp_threads, next, NULL, 0);
	__u32 tgid = next->tgid;
	__u64 ns;

	if (t && t->call_out_ns) {
		if (now > t->call_out_ns)
			t->call_off_ns += now - t->call_out_ns;
		t->call_out_ns = 0;
	}
	if (deferred) {
		if (off < zp_threshold_ns)
			return;
		/* A thread of an interpreter has its state from its first stall on. */
		if (!t) {
			if (!bpf_map_lookup_elem(&zp_procs, &tgid))
				return;
			t = bpf_task_storage_get(&zp_threads, next, NULL,
						 BPF_LOCAL_STORAGE_GET_F_CREATE);
			if (!t) {
				zw_drop(ZW_DROP_STATE_FULL);
				return;
			}
		}
		zp_defer_stall(next, t, now, off, state);
		return;
	}
	if (!t || !t->out_ns)
		return;
	ns = now > t->out_ns ? now - t->out_ns : 0;
	t->out_ns = 0;
	if (ns < zp_threshold_ns)
		return;
	if (t->nframes) {
		zp_send_stall(t, tgid, next->pid, now, t->state, ns, 0);
	} else {
		struct zp_proc *pr = bpf_map_lookup_elem(&zp_procs, &tgid);

		if (pr)
			zp_count_unsampled(pr, ns);
	}
}

#endif /* ZERNEL_BPF_PYSTACK_WALK_H */
