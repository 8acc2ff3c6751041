/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Lines that a peer can cause, kept to one per window: a flood of bad
 * requests costs the journal a line every ten seconds, not one a request.
 * The line that is written says how many it stands for.  One limiter per
 * kind of line, used by one thread at a time.
 */
#ifndef ZERNEL_LOG_LIMIT_H
#define ZERNEL_LOG_LIMIT_H

#include <stdint.h>

#define LOG_LIMIT_WINDOW_NS	(10ull * 1000000000ull)

struct log_limit {
	uint64_t last_ns;	/* when a line was last written; 0: never */
	uint64_t held;		/* lines not written since */
};

/*
 * Called for each line that is due, at now_ns (CLOCK_MONOTONIC).  Returns
 * 0 when it is to be held back, or how many lines writing it now stands
 * for: itself and those held back since the last one written.
 */
uint64_t log_limit_take(struct log_limit *l, uint64_t now_ns);

#endif /* ZERNEL_LOG_LIMIT_H */
