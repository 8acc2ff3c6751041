/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The collector's one hash table: a fixed-capacity index from a 128-bit key
 * (two 64-bit words) to a slot in [0, cap).  Callers keep their rows in
 * arrays indexed by slot: the aggregation's process and GPU-memory rows,
 * the live GPU allocations (memtrack) and what the launch histograms have
 * already handed over.  A slot stays put while its key lives, so rows never
 * move.  Collector-internal, single-threaded.
 *
 * Memory is allocated once, at init, and touched only as it is used: slots
 * are handed out from a high-water mark (released ones first, newest
 * first), every link is stored as slot + 1 so that zeroed memory means
 * "empty", and nothing is initialised up front.  An index of a million
 * slots that holds ten keys has touched a few pages.
 */
#ifndef ZERNEL_KEYINDEX_H
#define ZERNEL_KEYINDEX_H

#include <stdint.h>

struct keyindex_key {
	uint64_t a;
	uint64_t b;
};

struct keyindex {
	uint32_t cap;			/* slots */
	uint32_t used;			/* live slots */
	uint32_t top;			/* slots ever handed out: [0, top) */
	uint32_t mask;			/* buckets - 1 */
	uint32_t free_head;		/* a released slot + 1; 0 when none */
	uint32_t *head;			/* per bucket: first slot + 1; 0 empty */
	uint32_t *next;			/* per slot: next in its chain or the free list, + 1 */
	struct keyindex_key *key;	/* per slot */
	uint8_t *live;			/* per slot */
};

/*
 * buckets: a power of two, or 0 for the smallest one at least twice cap.
 * Returns 0 or -ENOMEM (then keyindex_destroy is still safe).
 */
int keyindex_init(struct keyindex *ix, uint32_t cap, uint32_t buckets);
void keyindex_destroy(struct keyindex *ix);

/* The slot holding (a, b), or -1. */
int32_t keyindex_find(const struct keyindex *ix, uint64_t a, uint64_t b);
/* A new slot for (a, b), which must be absent; -1 when the index is full. */
int32_t keyindex_insert(struct keyindex *ix, uint64_t a, uint64_t b);
void keyindex_remove(struct keyindex *ix, int32_t slot);

/* Slots to look at when walking every key: live ones lie below this. */
static inline uint32_t keyindex_top(const struct keyindex *ix)
{
	return ix->top;
}

static inline int keyindex_live(const struct keyindex *ix, uint32_t slot)
{
	return slot < ix->top && ix->live[slot];
}

#endif /* ZERNEL_KEYINDEX_H */
