/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Live GPU allocations on the collector's keyindex, keyed by (address,
 * pid and space); the index is sized for the bound at creation and touched
 * only as allocations arrive, so an idle collector holds almost nothing.
 * Unprivileged logic inside the collector.
 */
#include <errno.h>
#include <stdlib.h>

#include "collector/agg/keyindex.h"
#include "collector/probes/gpu_mem/memtrack.h"

/* Chains of about 16 at the bound, a quarter of a megabyte of heads. */
#define MEMTRACK_BUCKETS	65536u

struct memtrack {
	struct keyindex ix;
	struct memtrack_alloc *val;	/* per slot */
};

static uint64_t mt_owner(uint32_t pid, uint32_t space)
{
	return (uint64_t)pid << 32 | space;
}

struct memtrack *memtrack_new(size_t max_entries)
{
	struct memtrack *mt;

	if (max_entries == 0 || max_entries > UINT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	mt = calloc(1, sizeof(*mt));
	if (!mt)
		return NULL;
	if (keyindex_init(&mt->ix, (uint32_t)max_entries, MEMTRACK_BUCKETS) < 0 ||
	    !(mt->val = calloc(max_entries, sizeof(*mt->val)))) {
		memtrack_free(mt);
		errno = ENOMEM;
		return NULL;
	}
	return mt;
}

void memtrack_free(struct memtrack *mt)
{
	if (!mt)
		return;
	keyindex_destroy(&mt->ix);
	free(mt->val);
	free(mt);
}

int memtrack_add(struct memtrack *mt, uint32_t pid, uint32_t space, uint64_t addr,
		 const struct memtrack_alloc *a, struct memtrack_alloc *old)
{
	int32_t s = keyindex_find(&mt->ix, addr, mt_owner(pid, space));
	int replaced = 0;

	if (s >= 0) {
		*old = mt->val[s];
		replaced = 1;
	} else {
		s = keyindex_insert(&mt->ix, addr, mt_owner(pid, space));
		if (s < 0)
			return -ENOSPC;
	}
	mt->val[s] = *a;
	return replaced;
}

int memtrack_take(struct memtrack *mt, uint32_t pid, uint32_t space, uint64_t addr,
		  struct memtrack_alloc *a)
{
	int32_t s = keyindex_find(&mt->ix, addr, mt_owner(pid, space));

	if (s < 0)
		return -ENOENT;
	*a = mt->val[s];
	keyindex_remove(&mt->ix, s);
	return 0;
}

size_t memtrack_evict_pid(struct memtrack *mt, uint32_t pid)
{
	size_t evicted = 0;

	if (mt->ix.used == 0)
		return 0;
	for (uint32_t s = 0; s < keyindex_top(&mt->ix); s++) {
		if (keyindex_live(&mt->ix, s) && mt->ix.key[s].b >> 32 == pid) {
			keyindex_remove(&mt->ix, (int32_t)s);
			evicted++;
		}
	}
	return evicted;
}

size_t memtrack_count(const struct memtrack *mt)
{
	return mt->ix.used;
}
