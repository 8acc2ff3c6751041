/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One server thread's view of the segment: the copy it looks at, shared
 * with the exporter's other threads through the one reader of the segment
 * (segment_hub.h), plus what it remembers across failures (the last
 * generation and heartbeat seen) so that a missing or stale collector is
 * reported as such rather than by replaying old values as fresh.
 */
#ifndef ZERNEL_SOURCE_H
#define ZERNEL_SOURCE_H

#include <stdint.h>

#include "catalog/catalog.h"
#include "exporter/segment_hub.h"

struct source {
	struct segment_hub *hub;	/* NULL when memory was short: always "missing" */
	struct hub_copy *copy;		/* of the last refresh; NULL when it gave none */
	enum shm_read_status status;	/* of the last refresh */
	char reason[192];		/* "" when fresh */
	int seen;			/* a valid snapshot was read at least once */
	uint64_t generation;		/* of the last valid snapshot */
	/* The last valid snapshot's heartbeat as written: which publish it was. */
	uint64_t heartbeat_mono_ns;
	/* That heartbeat on our clock, which the collector's may not be: for ages. */
	uint64_t published_ns;
	uint64_t heartbeat_real_ns;
	uint64_t refreshes;		/* refresh calls that returned OK */
};

void source_init(struct source *s, const char *shm_name);

/* Takes a new snapshot (remapping after a collector restart). */
enum shm_read_status source_refresh(struct source *s);

/* The snapshot when the last refresh was fresh, NULL otherwise. */
const struct shm_snapshot *source_fresh(const struct source *s);

/* 1 when the last refresh's copy is still the newest publish. */
int source_current(const struct source *s);

/* Nanoseconds since the last publish seen, at now_mono_ns; 0 if none. */
uint64_t source_age_ns(const struct source *s, uint64_t now_mono_ns);

/* Fills st (what every output says about the collector); st->reason points into s. */
void source_status(const struct source *s, uint64_t now_mono_ns, struct cat_status *st);

void source_close(struct source *s);

#endif /* ZERNEL_SOURCE_H */
