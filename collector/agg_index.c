/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The aggregation's fixed-capacity hash index (agg_impl.h): allocated once
 * at its table's capacity, so lookups never allocate while events flow.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg_impl.h"

static uint32_t idx_hash(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (uint32_t)key;
}

int agg_index_init(struct agg_index *ix, uint32_t cap)
{
	uint32_t buckets = 16;

	while (buckets < 2 * (uint64_t)cap)
		buckets <<= 1;
	memset(ix, 0, sizeof(*ix));
	ix->cap = cap;
	ix->mask = buckets - 1;
	ix->head = malloc(buckets * sizeof(*ix->head));
	ix->next = calloc(cap ? cap : 1, sizeof(*ix->next));
	ix->key = calloc(cap ? cap : 1, sizeof(*ix->key));
	ix->live = calloc(cap ? cap : 1, sizeof(*ix->live));
	if (!ix->head || !ix->next || !ix->key || !ix->live)
		return -ENOMEM;
	for (uint32_t b = 0; b < buckets; b++)
		ix->head[b] = -1;
	for (uint32_t s = 0; s < cap; s++)
		ix->next[s] = s + 1 < cap ? (int32_t)(s + 1) : -1;
	ix->free_head = cap ? 0 : -1;
	return 0;
}

void agg_index_destroy(struct agg_index *ix)
{
	free(ix->head);
	free(ix->next);
	free(ix->key);
	free(ix->live);
	memset(ix, 0, sizeof(*ix));
}

int32_t agg_index_find(const struct agg_index *ix, uint64_t key)
{
	for (int32_t s = ix->head[idx_hash(key) & ix->mask]; s >= 0; s = ix->next[s])
		if (ix->key[s] == key)
			return s;
	return -1;
}

/* A fresh slot for key (which must not be present), or -1 when full. */
int32_t agg_index_insert(struct agg_index *ix, uint64_t key)
{
	uint32_t b = idx_hash(key) & ix->mask;
	int32_t s = ix->free_head;

	if (s < 0)
		return -1;
	ix->free_head = ix->next[s];
	ix->key[s] = key;
	ix->live[s] = 1;
	ix->next[s] = ix->head[b];
	ix->head[b] = s;
	ix->used++;
	return s;
}

void agg_index_remove(struct agg_index *ix, int32_t slot)
{
	int32_t *link = &ix->head[idx_hash(ix->key[slot]) & ix->mask];

	while (*link >= 0 && *link != slot)
		link = &ix->next[*link];
	if (*link != slot)
		return;
	*link = ix->next[slot];
	ix->live[slot] = 0;
	ix->next[slot] = ix->free_head;
	ix->free_head = slot;
	ix->used--;
}
