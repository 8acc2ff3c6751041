/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The JSON snapshot the WebSocket feed pushes (json-c).  The seed's keys
 * come first and keep their meaning; the rest is what a live view needs.
 * Output size is bounded: at most FEED_MAX_PROCESSES processes and
 * FEED_MAX_GPU_ROWS (pid, gpu) rows, with totals saying what was left out.
 */
#ifndef ZERNEL_FEED_JSON_H
#define ZERNEL_FEED_JSON_H

#include "common/sbuf.h"
#include "exporter/source.h"
#include "exporter/stats.h"
#include "shm/shm_reader.h"

#define FEED_MAX_PROCESSES	1024u
#define FEED_MAX_GPU_ROWS	4096u
#define FEED_MAX_COMMS		1024u
#define FEED_MAX_BYTES		(16u << 20)	/* a bug, not a big node, past this */

/*
 * Appends the snapshot as one JSON object.  snap is NULL unless st says the
 * data is fresh; then every data list is empty and every number 0, and
 * collector_up is false with the reason.
 */
int feed_render(struct sbuf *out, const struct shm_snapshot *snap,
		const struct source_status *st, const struct exporter_stats *stats);

#endif /* ZERNEL_FEED_JSON_H */
