/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The JSON snapshot the WebSocket feed pushes (json-c), generated from the
 * metric catalog: its objects, keys, key order and units are the
 * catalog's (catalog/cat_feed.c), its contract docs/feed.schema.json.
 * Output size is bounded: the catalog bounds every array (processes: the
 * top ones by GPU memory and launches; a process's stall_sites: its
 * longest; gpu_utilization, nccl_comms), with totals saying what was left
 * out.
 */
#ifndef ZERNEL_FEED_JSON_H
#define ZERNEL_FEED_JSON_H

#include "catalog/catalog.h"
#include "common/sbuf.h"
#include "exporter/alerts/alerts.h"
#include "exporter/stats.h"
#include "shm/shm_reader.h"

#define FEED_MAX_BYTES		(16u << 20)	/* a bug, not a big node, past this */

/*
 * Appends one snapshot as a JSON object.  snap is used only when st says
 * the data is fresh; otherwise every array is empty, every number 0, the
 * collector's telemetry absent, and collector_up false with the reason.
 * alerts (may be NULL: none) gives the alerts array.
 */
int feed_render(struct sbuf *out, const struct shm_snapshot *snap, const struct cat_status *st,
		const struct exporter_stats *stats, struct alerts *alerts);
/*
 * The same snapshot with every watched process in processes, not only the
 * top CAT_FEED_TOP_PROCS that every push carries, each with every one of
 * its stall sites: GET /snapshot.
 */
int feed_render_full(struct sbuf *out, const struct shm_snapshot *snap,
		     const struct cat_status *st, const struct exporter_stats *stats,
		     struct alerts *alerts);

#endif /* ZERNEL_FEED_JSON_H */
