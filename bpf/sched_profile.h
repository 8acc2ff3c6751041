/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parts of the switch program (collector/probes/sched/sched.bpf.c) that `make bench-sched`
 * turns off one at a time, to find what each costs a run: its profile by
 * section.  The collector sets them from ZERNEL_BENCH_SCHED_SKIP, which
 * only the benchmark sets; at 0 each test is of a constant the verifier
 * folds, so the program that watches is the whole one.  Turning a part
 * off changes what the later parts see (a switch away not noted leaves
 * the switch back nothing to time), as the benchmark's table says.
 */
#ifndef ZERNEL_BPF_SCHED_PROFILE_H
#define ZERNEL_BPF_SCHED_PROFILE_H

enum zs_profile_skip {
	ZS_SKIP_FRAMES_OUT	= 1u << 0,	/* Python frames at a switch away */
	ZS_SKIP_FRAMES_IN	= 1u << 1,	/* Python frames at a switch back */
	ZS_SKIP_UNSEEN		= 1u << 2,	/* returns to the CPU no switch showed */
	ZS_SKIP_OUT		= 1u << 3,	/* a switch away: the thread's state */
	ZS_SKIP_IN		= 1u << 4,	/* a switch back: time off the CPU, accounting */
	ZS_SKIP_LOADER		= 1u << 5,	/* the DataLoader check at a switch away */
	ZS_SKIP_SPAN		= 1u << 6,	/* frames read at once (bpf/pystack_span.h) */
	/* The DataLoader check's frames kept for the walk (which still takes its span). */
	ZS_SKIP_SHARED		= 1u << 7,
	ZS_SKIP_ALL		= (1u << 8) - 1,	/* all but the watched tests and the clock */
};

#endif /* ZERNEL_BPF_SCHED_PROFILE_H */
