/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/*
 * A thread's Python frames read in one copy at a switch away.  From 3.11
 * on, CPython pushes a call's _PyInterpreterFrame on its thread's data
 * stack, each callee above its caller, so the innermost frame and most of
 * its callers lie in the few kilobytes that end with it.  One user read of
 * those bytes costs about what two or three reads of one frame do, where
 * the walk took one read per frame (bench-sched's profile by section: the
 * frames were about half the switch program's time).  A frame outside
 * the span (a generator's, which lives in its generator object; a chain
 * deeper than the span; 3.10's, on the heap) is read on its own as
 * before, so the walk reads the same words either way: the thread is off
 * its CPU and nothing else writes its frames.
 *
 * The span is per CPU, outside the BPF stack, and only the switch program
 * uses it (as zp_ips_scratch): it runs with its run queue locked, so
 * nothing else on the CPU fills it between the read and the walk.  The
 * DataLoader check and the walk of one switch share it (zp_span_for).
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
	__u64 tid, ns;		/* read for this thread at this switch */
	__u64 w[ZP_SPAN_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zp_span);
} zp_span_scratch SEC(".maps");

/* Frames on the interpreter's data stack: from 3.11 (3.10's f_lasti lies past the words read). */
static __always_inline int zp_frames_stacked(const struct zp_proc *pr)
{
	return pr->off.frame_prev_instr < ZP_FRAME_WORDS * 8;
}

/*
 * The span that ends with the innermost frame top of thread tid, at the
 * switch of time now: the one already read for it, else read now.  When
 * the span's first bytes are not mapped (a shallow stack near the start
 * of its chunk), the bytes from top's page on.  NULL: frames are read one
 * by one.
 */
static __always_inline struct zp_span *zp_span_for(const struct zp_proc *pr, __u64 top,
						   __u64 tid, __u64 now)
{
	__u64 end = top + ZP_FRAME_WORDS * 8, lo;
	__u32 zero = 0;
	struct zp_span *s;
	__u64 size;

	if (!top || (top & 7) || !zp_frames_stacked(pr) || end < ZP_SPAN_BYTES)
		return NULL;
	s = bpf_map_lookup_elem(&zp_span_scratch, &zero);
	if (!s)
		return NULL;
	if (s->end == end && s->tid == tid && s->ns == now)
		return s;
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
	s->tid = tid;
	s->ns = now;
	return s;
}

/*
 * The first ZP_FRAME_WORDS words of the frame at address frame, into buf:
 * from the span when it holds them, else read.  0, or -1 when unreadable.
 */
static __always_inline int zp_frame_words(const struct zp_span *s, __u64 frame, __u64 *buf)
{
	__u64 i;

	if (s && frame >= s->lo && frame + ZP_FRAME_WORDS * 8 <= s->end && !(frame & 7)) {
		i = (frame - s->lo) >> 3;
		if (i <= ZP_SPAN_WORDS - ZP_FRAME_WORDS) {
			for (int k = 0; k < ZP_FRAME_WORDS; k++)
				buf[k] = s->w[i + k];
			return 0;
		}
	}
	return bpf_probe_read_user(buf, ZP_FRAME_WORDS * 8, (const void *)frame) == 0 ? 0 : -1;
}

#endif /* ZERNEL_BPF_PYSTACK_SPAN_H */
