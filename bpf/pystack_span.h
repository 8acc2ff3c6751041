/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/*
 * A thread's Python frames read in one copy at a switch away.  From 3.11
 * on, CPython pushes a call's _PyInterpreterFrame on its thread's data
 * stack, each callee above its caller, so the innermost frame and most of
 * its callers lie in the few kilobytes that end with it.  One user read of
 * those bytes costs about what two or three reads of one frame do, where
 * the walk took one read per frame (bench-sched's profile by section: the
 * frames were about half the switch program's time).  A frame outside
 * the span (a generator's, which lives in its generator object; an entry
 * frame that 3.12 on keeps on the C stack; a caller in an earlier chunk of
 * the data stack, or deeper than the span) is read on its own as before,
 * so the walk reads the same words either way: the thread is off its CPU
 * and nothing else writes its frames.  3.10's frames are objects on the
 * heap, read one by one as before.
 *
 * The span is per CPU, outside the BPF stack, and only the switch program
 * uses it (as zp_ips_scratch): it runs with its run queue locked, so
 * nothing else on the CPU fills it between the read and the walk.  The
 * DataLoader check and the walk of one switch share it: the check reads
 * it (zp_span_for), the walk finds it read at this switch (zp_span_now)
 * and starts from its innermost frame (zp_span_top).  The task work and
 * the sync probes, which may be preempted, read frame by frame.
 * BPF side only.
 */
#ifndef ZERNEL_BPF_PYSTACK_SPAN_H
#define ZERNEL_BPF_PYSTACK_SPAN_H

#include "bpf/pystack.h"

#define ZP_SPAN_BYTES	4096
#define ZP_SPAN_WORDS	(ZP_SPAN_BYTES / 8)
#define ZP_PAGE_MASK	4095ull

struct zp_span {
	__u64 lo, end;		/* the thread's bytes [lo, end) are in w from w[0]; end 0: none */
	/* Read for the thread (its id and start) at its switch away numbered so. */
	__u64 tid, started_ns, switches;
	__u64 w[ZP_SPAN_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zp_span);
} zp_span_scratch SEC(".maps");

/*
 * Frames on the interpreter's data stack, their instruction within the
 * words read: from 3.11 (3.10's f_lasti lies past them).
 */
static __always_inline int zp_frames_stacked(const struct zp_proc *pr)
{
	return pr->off.frame_prev_instr < ZP_FRAME_WORDS * 8;
}

/*
 * A number of the switch away task is making: the kernel counts each of
 * a thread's switches (nvcsw, nivcsw), so no two of them share one, where
 * two can share a time (a clock that did not move in between).
 */
static __always_inline __u64 zp_switch_number(struct task_struct *task)
{
	return task->nvcsw + task->nivcsw;
}

/*
 * The span already read for task at the switch away it is making (the
 * DataLoader check reads it before the walk), or NULL.  Its innermost
 * frame is the one at the end.
 */
static __always_inline struct zp_span *zp_span_now(struct task_struct *task)
{
	__u32 zero = 0;
	struct zp_span *s = bpf_map_lookup_elem(&zp_span_scratch, &zero);

	if (!s || !s->end || s->tid != (__u32)task->pid || s->started_ns != task->start_time ||
	    s->switches != zp_switch_number(task))
		return NULL;
	return s;
}

/* The innermost frame of the span: its words end it. */
static __always_inline __u64 zp_span_top(const struct zp_span *s)
{
	return s->end - ZP_FRAME_WORDS * 8;
}

/*
 * The span that ends with the innermost frame top of task, read now for
 * the switch away it is making (its callers ask zp_span_now first, or
 * read first).  When the span's first bytes are not mapped (a shallow
 * stack near the start of its chunk), the bytes from top's page on.
 * NULL: frames are read one by one.
 */
static __always_inline struct zp_span *zp_span_for(const struct zp_proc *pr, __u64 top,
						   struct task_struct *task)
{
	__u64 end = top + ZP_FRAME_WORDS * 8, lo, size;
	__u32 zero = 0;
	struct zp_span *s;

	if (!top || (top & 7) || !zp_frames_stacked(pr) || end < ZP_SPAN_BYTES)
		return NULL;
	s = bpf_map_lookup_elem(&zp_span_scratch, &zero);
	if (!s)
		return NULL;
	s->end = 0;
	lo = end - ZP_SPAN_BYTES;
	if (bpf_probe_read_user(s->w, ZP_SPAN_BYTES, (const void *)lo) != 0) {
		lo = top & ~ZP_PAGE_MASK;
		size = end - lo;
		if (size > ZP_SPAN_BYTES)
			return NULL;
		if (bpf_probe_read_user(s->w, size, (const void *)lo) != 0)
			return NULL;
	}
	s->lo = lo;
	s->end = end;
	s->tid = (__u32)task->pid;
	s->started_ns = task->start_time;
	s->switches = zp_switch_number(task);
	return s;
}

/*
 * A frame's first ZP_FRAME_WORDS words as read, then what a walk takes of
 * them: one buffer for both, on stacks within the kernel's 512 bytes (the
 * task work's callback uses 360, the switch program's chain 264).
 */
union zp_frame_buf {
	__u64 w[ZP_FRAME_WORDS];
	struct {
		__u64 code;
		__u64 previous;
		__u64 instr;	/* where it lies in the words read (from 3.11) */
	} f;
};

/*
 * The fields of the frame at address frame into b->f: from the span when
 * it holds the frame's first words, else from one read of them.  0, or -1
 * when unreadable.
 */
static __always_inline int zp_frame_read(const struct zp_proc *pr, const struct zp_span *s,
					 __u64 frame, union zp_frame_buf *b)
{
	__u32 ci = (pr->off.frame_code >> 3) & 7, pi = (pr->off.frame_previous >> 3) & 7;
	__u32 ii = (pr->off.frame_prev_instr >> 3) & 7;
	__u64 code, previous, instr, i;

	if (s && frame >= s->lo && frame + ZP_FRAME_WORDS * 8 <= s->end && !(frame & 7)) {
		i = (frame - s->lo) >> 3;
		if (i <= ZP_SPAN_WORDS - ZP_FRAME_WORDS) {
			b->f.code = s->w[i + ci];
			b->f.previous = s->w[i + pi];
			b->f.instr = s->w[i + ii];
			return 0;
		}
	}
	if (bpf_probe_read_user(b->w, sizeof(b->w), (const void *)frame) != 0)
		return -1;
	code = b->w[ci];
	previous = b->w[pi];
	instr = b->w[ii];
	b->f.code = code;
	b->f.previous = previous;
	b->f.instr = instr;
	return 0;
}

#endif /* ZERNEL_BPF_PYSTACK_SPAN_H */
