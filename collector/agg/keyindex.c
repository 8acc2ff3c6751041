/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fixed-capacity hash index of keyindex.h: separate chaining through a
 * per-slot next[] array, so a lookup never allocates while events flow.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg/keyindex.h"

/* MurmurHash3's finaliser: device pointers and pids differ in few bits. */
static uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

static uint32_t bucket_of(const struct keyindex *ix, uint64_t a, uint64_t b)
{
	return (uint32_t)fmix64(a ^ fmix64(b)) & ix->mask;
}

int keyindex_init(struct keyindex *ix, uint32_t cap, uint32_t buckets)
{
	size_t n = cap ? cap : 1;

	memset(ix, 0, sizeof(*ix));
	if (buckets == 0) {
		buckets = 16;
		while (buckets < 2 * (uint64_t)cap && buckets < (1u << 31))
			buckets <<= 1;
	}
	if (buckets & (buckets - 1))
		return -EINVAL;
	ix->cap = cap;
	ix->mask = buckets - 1;
	/* calloc: large arrays come as untouched zero pages. */
	ix->head = calloc(buckets, sizeof(*ix->head));
	ix->next = calloc(n, sizeof(*ix->next));
	ix->key = calloc(n, sizeof(*ix->key));
	ix->live = calloc(n, sizeof(*ix->live));
	if (!ix->head || !ix->next || !ix->key || !ix->live)
		return -ENOMEM;
	return 0;
}

void keyindex_destroy(struct keyindex *ix)
{
	free(ix->head);
	free(ix->next);
	free(ix->key);
	free(ix->live);
	memset(ix, 0, sizeof(*ix));
}

int32_t keyindex_find(const struct keyindex *ix, uint64_t a, uint64_t b)
{
	for (uint32_t s = ix->head[bucket_of(ix, a, b)]; s; s = ix->next[s - 1])
		if (ix->key[s - 1].a == a && ix->key[s - 1].b == b)
			return (int32_t)(s - 1);
	return -1;
}

int32_t keyindex_insert(struct keyindex *ix, uint64_t a, uint64_t b)
{
	uint32_t h = bucket_of(ix, a, b), s;

	if (ix->free_head) {
		s = ix->free_head - 1;
		ix->free_head = ix->next[s];
	} else if (ix->top < ix->cap) {
		s = ix->top++;
	} else {
		return -1;
	}
	ix->key[s].a = a;
	ix->key[s].b = b;
	ix->live[s] = 1;
	ix->next[s] = ix->head[h];
	ix->head[h] = s + 1;
	ix->used++;
	return (int32_t)s;
}

void keyindex_remove(struct keyindex *ix, int32_t slot)
{
	uint32_t s = (uint32_t)slot, *link;

	if (slot < 0 || !keyindex_live(ix, s))
		return;
	link = &ix->head[bucket_of(ix, ix->key[s].a, ix->key[s].b)];
	while (*link && *link != s + 1)
		link = &ix->next[*link - 1];
	if (!*link)
		return;
	*link = ix->next[s];
	ix->live[s] = 0;
	/* The next insert takes it: freed slots are reused newest first. */
	ix->next[s] = ix->free_head;
	ix->free_head = s + 1;
	ix->used--;
}
