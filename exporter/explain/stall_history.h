/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The history behind /api/stalls?since=SECONDS: the cumulative figures
 * explain's shares and stall sites are drawn from, sampled from the
 * segment at a fixed period, so that a span the caller chooses is the
 * difference between the newest snapshot and the sample nearest to its
 * start.  Owned by the HTTP thread (no lock); runs unprivileged on
 * validated snapshots; all its memory is allocated once, at start.
 */
#ifndef ZERNEL_STALL_HISTORY_H
#define ZERNEL_STALL_HISTORY_H

#include <stdint.h>

#include "shm/shm_reader.h"

/*
 * One sample every 5 s (the collector publishes every second by
 * default: a span is then within half a period of the one asked), 121 of
 * them: ten minutes back from the newest, which covers the "what is it
 * doing lately" an operator asks of explain; longer is the collector's
 * lifetime totals' job.
 */
#define STALL_HISTORY_PERIOD_NS		(5ull * 1000000000ull)
#define STALL_HISTORY_SAMPLES		121u
/*
 * Per sample: processes kept (those that look like trainers first, then
 * the rest while room is left; DataLoader workers are many but never
 * judged) and every stall site the collector can hold.  About 47 KB a
 * sample, 5.7 MB in all.
 */
#define STALL_HISTORY_PROCS		256u
#define STALL_HISTORY_SITES		SHM_STALL_SITES

struct stall_history;

/* The history, every sample allocated; NULL with errno set. */
struct stall_history *stall_history_new(void);
void stall_history_free(struct stall_history *h);

/*
 * Takes a sample of snap when STALL_HISTORY_PERIOD_NS has passed on the
 * collector's clock since the last one; forgets every sample when the
 * collector restarted (a new generation) or its clock went back.
 * Returns 1 when a sample was taken, else 0.
 */
int stall_history_note(struct stall_history *h, const struct shm_snapshot *snap);

/* A span of the history ending at a snapshot (stall_history_window). */
struct stall_window {
	const struct stall_history *h;
	const struct shm_snapshot *snap;
	int base;			/* the sample it starts at; -1: none older than snap */
	uint64_t now_ns;		/* snap's heartbeat */
	uint64_t asked_ns;
	uint64_t span_ns;		/* now_ns - the base sample's time; 0 without one */
	uint64_t held_ns;		/* now_ns - the oldest sample's time */
	int covered;			/* the history reaches back as far as asked */
	uint64_t procs_dropped;		/* the newest sample's processes over its bound */
	uint64_t sites_dropped;		/* and sites */
};

/*
 * The span of asked_ns ending at snap: from the sample nearest to its
 * start among those older than snap (the oldest when the history is
 * shorter: covered says so).
 */
void stall_history_window(const struct stall_history *h, const struct shm_snapshot *snap,
			  uint64_t asked_ns, struct stall_window *w);

/*
 * What p did over the window, as a recent row (the same fields the
 * collector's window fills, stall_ns from its sites' time by state), its
 * covered_ns from its first sample when it came after the window's
 * start.  0, or -ENOENT when no sample of the window holds p.
 */
int stall_window_proc(const struct stall_window *w, const struct shm_proc *p,
		      struct shm_proc_recent *out);

/* A site's stalls and time over the window (its whole totals when it is newer). */
void stall_window_site(const struct stall_window *w, const struct shm_stall_site *s,
		       uint64_t *stalls, uint64_t *ns);

#endif /* ZERNEL_STALL_HISTORY_H */
