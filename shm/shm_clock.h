/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The writer's heartbeat on the reader's clock.  Both stamp CLOCK_MONOTONIC,
 * but a collector in another time namespace (unshare --time, an OCI
 * runtime's timeOffsets) counts from another base: read as ours, its
 * heartbeat would look hours old, or in the future, for as long as it runs.
 * The reader keeps one per segment it follows; pure arithmetic, no privilege.
 */
#ifndef ZERNEL_SHM_CLOCK_H
#define ZERNEL_SHM_CLOCK_H

#include <stdint.h>

/*
 * What the reader has seen of one segment's heartbeats: an estimate of the
 * writer's clock minus the reader's, kept within what two facts allow.  A
 * publish is read after it was stamped (so its age is never negative), and
 * a heartbeat that changed between two reads was stamped after the first
 * one, give or take the time a publish takes to show (one interval).  On
 * one clock the estimate stays 0 and ages are exact.
 */
struct shm_clock {
	uint64_t generation;	/* the segment the estimate is for */
	int64_t offset_ns;	/* writer's clock minus the reader's */
	uint64_t last_hb_ns;	/* heartbeat at the previous read (writer's clock) */
	uint64_t last_now_ns;	/* the reader's clock then; 0: no read yet */
};

/*
 * Records that at now_ns (the reader's CLOCK_MONOTONIC) the segment of
 * generation showed heartbeat hb_ns (the writer's, not 0), wall_age_ns old
 * by the wall clocks (the reader's CLOCK_REALTIME minus the writer's at the
 * publish).  interval_ns: the publish interval; limit_ns: the stale limit.
 * Returns that heartbeat on the reader's clock, never later than now_ns.
 */
uint64_t shm_clock_observe(struct shm_clock *c, uint64_t generation, uint64_t hb_ns,
			   int64_t wall_age_ns, uint64_t now_ns, uint64_t interval_ns,
			   uint64_t limit_ns);

#endif /* ZERNEL_SHM_CLOCK_H */
