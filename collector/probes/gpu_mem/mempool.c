/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The pools of every process in one compact array, searched in full: a
 * node has a pool or two per training process, and the array keeps only
 * those (a removal moves the last into the hole).  Collector-internal.
 */
#include <errno.h>
#include <stdlib.h>

#include "collector/probes/gpu_mem/mempool.h"

#define MEMPOOL_MAX		65536u
/* A device's default pool before its handle is known; handles are user addresses. */
#define DEFAULT_KEY(dev)	(1ull << 63 | (uint32_t)(dev))
#define NO_DEV			INT32_MIN
#define NO_GPU			UINT32_MAX

struct pool {
	uint32_t pid;
	uint32_t gpu;		/* NO_GPU until its first allocation */
	uint64_t key;		/* handle, or DEFAULT_KEY */
	int32_t default_of;	/* the device whose default pool this is, or NO_DEV */
	int32_t current_of;	/* the device it was made current on, or NO_DEV */
	uint64_t used;		/* its live allocations */
	uint64_t reserved;	/* what it holds from the driver */
	uint64_t threshold;
	int destroyed;		/* cuMemPoolDestroy: goes once used is 0 */
};

struct mempool {
	struct pool *pools;
	size_t n, max;
};

struct mempool *mempool_new(size_t max_pools)
{
	struct mempool *mp;

	if (max_pools == 0 || max_pools > MEMPOOL_MAX) {
		errno = EINVAL;
		return NULL;
	}
	mp = calloc(1, sizeof(*mp));
	if (!mp)
		return NULL;
	mp->pools = calloc(max_pools, sizeof(*mp->pools));
	if (!mp->pools) {
		free(mp);
		errno = ENOMEM;
		return NULL;
	}
	mp->max = max_pools;
	return mp;
}

void mempool_free(struct mempool *mp)
{
	if (!mp)
		return;
	free(mp->pools);
	free(mp);
}

static struct pool *by_key(struct mempool *mp, uint32_t pid, uint64_t key)
{
	for (size_t i = 0; i < mp->n; i++)
		if (mp->pools[i].pid == pid && mp->pools[i].key == key)
			return &mp->pools[i];
	return NULL;
}

/* The pool pid named device dev's default (current 0) or made its current one (current 1). */
static struct pool *of_device(struct mempool *mp, uint32_t pid, int32_t dev, int current)
{
	for (size_t i = 0; i < mp->n; i++) {
		const struct pool *p = &mp->pools[i];

		if (p->pid == pid && (current ? p->current_of : p->default_of) == dev)
			return &mp->pools[i];
	}
	return NULL;
}

static struct pool *default_of(struct mempool *mp, uint32_t pid, int32_t dev)
{
	struct pool *p = of_device(mp, pid, dev, 0);

	return p ? p : by_key(mp, pid, DEFAULT_KEY(dev));
}

static struct pool *current_of(struct mempool *mp, uint32_t pid, int32_t dev)
{
	return of_device(mp, pid, dev, 1);
}

static struct pool *add(struct mempool *mp, uint32_t pid, uint64_t key)
{
	struct pool *p;
	size_t mine = 0;

	for (size_t i = 0; i < mp->n; i++)
		mine += mp->pools[i].pid == pid;
	if (mp->n == mp->max || mine >= MEMPOOL_PER_PROC)
		return NULL;
	p = &mp->pools[mp->n++];
	*p = (struct pool){ .pid = pid, .gpu = NO_GPU, .key = key, .default_of = NO_DEV,
			    .current_of = NO_DEV };
	return p;
}

static void drop(struct mempool *mp, struct pool *p)
{
	*p = mp->pools[--mp->n];
}

/* The pool of a handle the process used; a key handed out before it was named still finds it. */
static struct pool *find(struct mempool *mp, uint32_t pid, uint64_t key)
{
	struct pool *p = by_key(mp, pid, key);

	if (!p && key & 1ull << 63)
		p = default_of(mp, pid, (int32_t)(uint32_t)key);
	return p;
}

static void shrink(struct pool *p, uint64_t keep, mempool_release_fn release, void *ctx)
{
	uint64_t floor = p->used > keep ? p->used : keep;

	if (p->reserved <= floor)
		return;
	if (p->gpu != NO_GPU)
		release(ctx, p->pid, p->gpu, p->reserved - floor);
	p->reserved = floor;
}

int mempool_alloc(struct mempool *mp, uint32_t pid, int32_t dev, uint32_t gpu, uint64_t pool,
		  uint64_t bytes, uint64_t *grown, uint64_t *key)
{
	struct pool *p;

	if (pool)
		p = find(mp, pid, pool);
	else if (!(p = current_of(mp, pid, dev)))
		p = default_of(mp, pid, dev);
	/* A handle the driver gave a new pool after the old one was destroyed. */
	if (p && p->destroyed) {
		drop(mp, p);
		p = NULL;
	}
	if (!p)
		p = add(mp, pid, pool ? pool : DEFAULT_KEY(dev));
	if (!p) {
		*grown = bytes;
		*key = 0;
		return -ENOSPC;
	}
	if (p->gpu == NO_GPU)
		p->gpu = gpu;
	p->used = bytes > UINT64_MAX - p->used ? UINT64_MAX : p->used + bytes;
	*grown = p->used > p->reserved ? p->used - p->reserved : 0;
	p->reserved += *grown;
	*key = p->key;
	return 0;
}

void mempool_freed(struct mempool *mp, uint32_t pid, uint64_t key, uint64_t bytes,
		   mempool_release_fn release, void *ctx)
{
	struct pool *p = find(mp, pid, key);

	if (!p)
		return;
	p->used = bytes > p->used ? 0 : p->used - bytes;
	if (!p->destroyed)
		return;
	shrink(p, 0, release, ctx);
	if (p->used == 0)
		drop(mp, p);
}

/*
 * Handle h is dev's default pool: the pool known as that (by DEFAULT_KEY,
 * from allocations before the name) and the one known by h become one.
 */
static struct pool *name_default(struct mempool *mp, uint32_t pid, int32_t dev, uint64_t h)
{
	struct pool *p = by_key(mp, pid, h), *d = by_key(mp, pid, DEFAULT_KEY(dev));

	if (d && p) {
		p->used += d->used;
		p->reserved += d->reserved;
		if (p->gpu == NO_GPU)
			p->gpu = d->gpu;
		drop(mp, d);
		p = by_key(mp, pid, h);	/* drop may have moved it */
	} else if (d) {
		d->key = h;
		p = d;
	} else if (!p) {
		p = add(mp, pid, h);
	}
	if (p)
		p->default_of = dev;
	return p;
}

int mempool_named(struct mempool *mp, uint32_t pid, enum zmem_pool_op op, int32_t dev,
		  uint64_t pool, uint64_t bytes, mempool_release_fn release, void *ctx)
{
	struct pool *p, *was;

	switch (op) {
	case ZMEM_POOL_DEFAULT:
		return name_default(mp, pid, dev, pool) ? 0 : -ENOSPC;
	case ZMEM_POOL_CURRENT:
		/* Until a pool is set, the current one is the default. */
		if (!current_of(mp, pid, dev))
			return name_default(mp, pid, dev, pool) ? 0 : -ENOSPC;
		return 0;
	case ZMEM_POOL_SET:
		was = current_of(mp, pid, dev);
		p = find(mp, pid, pool);
		if (!p && !(p = add(mp, pid, pool)))
			return -ENOSPC;
		if (was)
			was->current_of = NO_DEV;
		p->current_of = dev;
		return 0;
	case ZMEM_POOL_THRESHOLD:
	case ZMEM_POOL_TRIM:
		p = find(mp, pid, pool);
		if (!p && !(p = add(mp, pid, pool)))
			return -ENOSPC;
		if (op == ZMEM_POOL_THRESHOLD)
			p->threshold = bytes;
		else
			shrink(p, bytes, release, ctx);
		return 0;
	case ZMEM_POOL_DESTROY:
		p = find(mp, pid, pool);
		if (!p)
			return 0;	/* nothing allocated from it that was seen */
		shrink(p, 0, release, ctx);
		p->destroyed = 1;
		p->default_of = p->current_of = NO_DEV;
		if (p->used == 0)
			drop(mp, p);
		return 0;
	default:
		return -EINVAL;
	}
}

void mempool_sync(struct mempool *mp, uint32_t pid, mempool_release_fn release, void *ctx)
{
	for (size_t i = 0; i < mp->n; i++)
		if (mp->pools[i].pid == pid)
			shrink(&mp->pools[i], mp->pools[i].threshold, release, ctx);
}

size_t mempool_evict_pid(struct mempool *mp, uint32_t pid)
{
	size_t evicted = 0;

	for (size_t i = 0; i < mp->n;) {
		if (mp->pools[i].pid == pid) {
			drop(mp, &mp->pools[i]);
			evicted++;
		} else {
			i++;
		}
	}
	return evicted;
}

size_t mempool_count(const struct mempool *mp)
{
	return mp->n;
}
