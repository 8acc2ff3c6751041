/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One server thread's view of the segment: its own reader and private
 * snapshot copy, plus what it remembers across failures (the last
 * generation and heartbeat seen) so that a missing or stale collector is
 * reported as such rather than by replaying old values as fresh.
 */
#ifndef ZERNEL_SOURCE_H
#define ZERNEL_SOURCE_H

#include <stdint.h>

#include "shm/shm_reader.h"

struct source {
	struct shm_reader reader;
	struct shm_snapshot snap;
	enum shm_read_status status;	/* of the last refresh */
	char reason[192];		/* "" when fresh */
	int seen;			/* a valid snapshot was read at least once */
	uint64_t generation;		/* of the last valid snapshot */
	uint64_t heartbeat_mono_ns;	/* of the last valid snapshot */
	uint64_t heartbeat_real_ns;
	uint64_t refreshes;		/* refresh calls that returned OK */
};

/* What both outputs say about the collector, independent of the data. */
struct source_status {
	enum shm_read_status status;	/* SHM_READ_OK: the data is fresh */
	const char *reason;		/* why not fresh; "" when fresh */
	int seen;			/* the fields below are known */
	uint64_t generation;		/* of the last valid snapshot */
	uint64_t age_ns;		/* since the last publish seen */
	uint64_t last_update_real_ns;	/* wall-clock time of that publish */
};

void source_init(struct source *s, const char *shm_name);

/* Takes a new snapshot (remapping after a collector restart). */
enum shm_read_status source_refresh(struct source *s);

/* The snapshot when the last refresh was fresh, NULL otherwise. */
const struct shm_snapshot *source_fresh(const struct source *s);

/* Nanoseconds since the last publish seen, at now_mono_ns; 0 if none. */
uint64_t source_age_ns(const struct source *s, uint64_t now_mono_ns);

/* Fills st from the last refresh; st->reason points into s. */
void source_status(const struct source *s, uint64_t now_mono_ns, struct source_status *st);

void source_close(struct source *s);

#endif /* ZERNEL_SOURCE_H */
