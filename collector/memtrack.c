/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Live GPU allocations, as a chained hash over a fixed number of buckets;
 * nodes are allocated one by one up to the bound, so an idle collector
 * holds almost nothing.  Unprivileged logic inside the collector.
 */
#include <errno.h>
#include <stdlib.h>

#include "collector/memtrack.h"

#define MEMTRACK_BUCKETS	65536u

struct mt_node {
	struct mt_node *next;
	uint64_t addr;
	uint64_t bytes;
	uint32_t pid;
	uint32_t space;
	uint32_t gpu;
	uint32_t pad;
};

struct memtrack {
	struct mt_node *bucket[MEMTRACK_BUCKETS];
	size_t count;
	size_t max;
};

static size_t mt_hash(uint32_t pid, uint32_t space, uint64_t addr)
{
	uint64_t h = addr ^ ((uint64_t)pid << 32) ^ space;

	/* Device pointers are aligned: mix the high bits down. */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return (size_t)(h & (MEMTRACK_BUCKETS - 1));
}

struct memtrack *memtrack_new(size_t max_entries)
{
	struct memtrack *mt = calloc(1, sizeof(*mt));

	if (!mt)
		return NULL;
	mt->max = max_entries;
	return mt;
}

void memtrack_free(struct memtrack *mt)
{
	if (!mt)
		return;
	for (size_t i = 0; i < MEMTRACK_BUCKETS; i++) {
		struct mt_node *n = mt->bucket[i], *next;

		for (; n; n = next) {
			next = n->next;
			free(n);
		}
	}
	free(mt);
}

static struct mt_node **mt_find(struct memtrack *mt, uint32_t pid, uint32_t space,
				uint64_t addr)
{
	struct mt_node **pp = &mt->bucket[mt_hash(pid, space, addr)];

	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->addr == addr && (*pp)->pid == pid && (*pp)->space == space)
			return pp;
	return pp;
}

int memtrack_add(struct memtrack *mt, uint32_t pid, uint32_t space, uint64_t addr,
		 uint32_t gpu, uint64_t bytes, uint32_t *old_gpu, uint64_t *old_bytes)
{
	struct mt_node **pp = mt_find(mt, pid, space, addr), *n = *pp;
	int replaced = 0;

	if (n) {
		*old_gpu = n->gpu;
		*old_bytes = n->bytes;
		replaced = 1;
	} else {
		if (mt->count >= mt->max)
			return -ENOSPC;
		n = calloc(1, sizeof(*n));
		if (!n)
			return -ENOMEM;
		n->pid = pid;
		n->space = space;
		n->addr = addr;
		*pp = n;
		mt->count++;
	}
	n->gpu = gpu;
	n->bytes = bytes;
	return replaced;
}

int memtrack_take(struct memtrack *mt, uint32_t pid, uint32_t space, uint64_t addr,
		  uint32_t *gpu, uint64_t *bytes)
{
	struct mt_node **pp = mt_find(mt, pid, space, addr), *n = *pp;

	if (!n)
		return -ENOENT;
	*gpu = n->gpu;
	*bytes = n->bytes;
	*pp = n->next;
	free(n);
	mt->count--;
	return 0;
}

size_t memtrack_evict_pid(struct memtrack *mt, uint32_t pid)
{
	size_t evicted = 0;

	if (mt->count == 0)
		return 0;
	for (size_t i = 0; i < MEMTRACK_BUCKETS; i++) {
		struct mt_node **pp = &mt->bucket[i];

		while (*pp) {
			struct mt_node *n = *pp;

			if (n->pid == pid) {
				*pp = n->next;
				free(n);
				evicted++;
			} else {
				pp = &n->next;
			}
		}
	}
	mt->count -= evicted;
	return evicted;
}

size_t memtrack_count(const struct memtrack *mt)
{
	return mt->count;
}
