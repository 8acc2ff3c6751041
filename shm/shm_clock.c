/* SPDX-License-Identifier: BSD-2-Clause */
/* The writer's heartbeat on the reader's clock (see shm_clock.h).  No privilege. */
#include <string.h>

#include "shm/shm_clock.h"

uint64_t shm_clock_observe(struct shm_clock *c, uint64_t generation, uint64_t hb_ns,
			   int64_t wall_age_ns, uint64_t now_ns, uint64_t interval_ns,
			   uint64_t limit_ns)
{
	/* hb_ns - now_ns: the smallest offset this read allows (age 0). */
	int64_t floor_ns = (int64_t)(hb_ns - now_ns);

	/* A new collector may run on another clock: start from ours again. */
	if (c->generation != generation) {
		memset(c, 0, sizeof(*c));
		c->generation = generation;
	}
	/*
	 * First sight of a heartbeat stale or in the future on our clock: the
	 * wall clocks, which no namespace offsets, say how old it is.  A wall
	 * step between the two stamps could mislead them, by less than the
	 * limit, so they are asked only when the monotonic clocks disagree.
	 */
	if (!c->last_now_ns && (floor_ns > 0 || (uint64_t)-floor_ns > limit_ns) &&
	    wall_age_ns >= 0 && (uint64_t)wall_age_ns <= limit_ns)
		c->offset_ns = floor_ns + wall_age_ns;
	/*
	 * A new heartbeat stamped, by the estimate, well before the previous
	 * read, which did not show it: the writer's clock is behind ours by
	 * more than the estimate says.  Take the publish as just seen.
	 */
	if (c->last_now_ns && hb_ns != c->last_hb_ns &&
	    (int64_t)(c->last_now_ns - (hb_ns - (uint64_t)c->offset_ns)) > (int64_t)interval_ns)
		c->offset_ns = floor_ns;
	/* Stamped after this read, by the estimate: the writer's clock is ahead. */
	if (floor_ns > c->offset_ns)
		c->offset_ns = floor_ns;
	c->last_hb_ns = hb_ns;
	c->last_now_ns = now_ns;
	return hb_ns - (uint64_t)c->offset_ns;
}
