/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One reader of the segment for the whole exporter.  Its threads (the
 * metrics server and its render thread, the feed, the alerts) each look
 * at the segment at their own pace; each publish is copied and validated
 * once, by whichever of them asks first after it, and the others share
 * that copy.  A copy is immutable and reference counted: a thread keeps
 * the one it holds until it asks again, however many publishes came
 * since, and the last thread done with a copy gives its buffer back for
 * the next one.  The buffers are as many as can be in use at once, one
 * per thread and one, whatever the threads' pace.  Thread-safe.
 */
#ifndef ZERNEL_SEGMENT_HUB_H
#define ZERNEL_SEGMENT_HUB_H

#include <stdint.h>

#include "shm/shm_reader.h"

struct segment_hub;

/* A shared, validated copy of one publish; read only. */
struct hub_copy {
	struct shm_snapshot snap;
	struct segment_hub *hub;
	_Atomic uint32_t refs;
};

/* What one look at the segment found. */
struct hub_read {
	enum shm_read_status status;
	/* The copy (OK or STALE), held for the caller: hub_copy_release it.  NULL otherwise. */
	struct hub_copy *copy;
	uint64_t published_ns;		/* its heartbeat on our clock */
};

/*
 * The hub of the segment name, made at its first user: every user of a
 * name in this process shares one.  NULL when memory is short.
 */
struct segment_hub *segment_hub_get(const char *name);
/* One user fewer; the last one closes the reader.  Its copies must be released first. */
void segment_hub_put(struct segment_hub *h);

/*
 * Looks at the segment now: a copy made for this publish, or the one
 * shared already.  Gives up held (the caller's copy from its last look,
 * or NULL) whatever it finds.
 */
void segment_hub_read(struct segment_hub *h, struct hub_copy *held, struct hub_read *out,
		      char *reason, size_t len);

/* 1 when nothing was published since c was copied (the seqlock word did not move). */
int segment_hub_current(struct segment_hub *h, const struct hub_copy *c);

/* What a hub did and keeps (for tests). */
struct hub_counts {
	uint64_t copies;	/* made since the hub was, one per publish seen */
	unsigned int buffers;	/* kept for copies, in use or spare */
};

void segment_hub_counts(struct segment_hub *h, struct hub_counts *out);

void hub_copy_release(struct hub_copy *c);

#endif /* ZERNEL_SEGMENT_HUB_H */
