// SPDX-License-Identifier: BSD-2-Clause
/*
 * Device memory of the fake driver.  Allocations are carved, never reused,
 * from one address range reserved at first use: device pointers are then
 * unique and never collide with the host's, and copies really copy, so a
 * workload can check its data round trip.  Freed ranges go back to
 * PROT_NONE, so a stale host touch faults.  Test code.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tests/fakes/fake_driver/fake_driver.h"

#define ARENA_SIZE	(64ull << 30)	/* address space only: MAP_NORESERVE */
#define ALLOC_ALIGN	4096ull		/* whole pages, so a free can drop them */
#define DEV_MEM		(15ull << 30)	/* what cuDeviceTotalMem_v2 says */

/* CUpointer_attribute, CUmemorytype */
enum {
	PTR_CONTEXT = 1, PTR_MEMORY_TYPE = 2, PTR_DEVICE_POINTER = 3, PTR_HOST_POINTER = 4,
	PTR_SYNC_MEMOPS = 6, PTR_BUFFER_ID = 7, PTR_IS_MANAGED = 8, PTR_DEVICE_ORDINAL = 9,
	PTR_RANGE_START = 11, PTR_RANGE_SIZE = 12, PTR_MAPPED = 13, PTR_MEMPOOL = 17,
};
#define CU_MEMORYTYPE_DEVICE	2

/* CUmemPool_attribute */
enum {
	POOL_REUSE_FOLLOW_EVENTS = 1, POOL_REUSE_OPPORTUNISTIC, POOL_REUSE_INTERNAL,
	POOL_RELEASE_THRESHOLD, POOL_RESERVED_CURRENT, POOL_RESERVED_HIGH, POOL_USED_CURRENT,
	POOL_USED_HIGH,
};

struct alloc {
	CUdeviceptr base;
	size_t size;
	CUdevice dev;
	int live;
	uint64_t id;
	void *pool;		/* stream-ordered: the pool it came from */
};

/*
 * A memory pool (CUmemoryPool): each device's default one is all there is.
 * As the driver's: the pool reserves device memory when its allocations
 * outgrow what it holds, keeps what they free, and gives memory back only
 * down to its release threshold at a synchronisation (stream, event or
 * context; the threshold is 0 until set) or down to what cuMemPoolTrimTo
 * keeps, never below what its live allocations use.  Bytes are exact here;
 * a GPU reserves in larger granules.
 */
struct pool {
	uint32_t magic;
	CUdevice dev;
	uint64_t threshold;
	uint64_t used, used_high;
	uint64_t reserved, reserved_high;
};

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *arena;
static size_t arena_used;
/* Every allocation ever made, in address order since the arena only grows. */
static struct alloc *allocs;
static size_t n_allocs, cap_allocs;
static size_t dev_used[FD_MAX_DEVICES];
static struct pool pools[FD_MAX_DEVICES];

static CUdevice current_dev(void)
{
	struct fd_ctx *c = fd_current_ctx();

	return c ? c->dev : -1;
}

static size_t page_round(size_t n)
{
	return (n + ALLOC_ALIGN - 1) & ~(ALLOC_ALIGN - 1);
}

/* A pool allocation draws on its pool, which grows by what it lacks. */
static CUresult mem_alloc(CUdeviceptr *dptr, size_t size, struct pool *pool)
{
	size_t len = page_round(size), grow = len;
	CUdevice dev = current_dev();
	struct alloc *a;

	if (!dptr || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&mem_lock);
	if (!arena) {
		void *m = mmap(NULL, ARENA_SIZE, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		arena = m == MAP_FAILED ? NULL : m;
	}
	if (n_allocs == cap_allocs) {
		size_t cap = cap_allocs ? 2 * cap_allocs : 1024;
		struct alloc *na = realloc(allocs, cap * sizeof(*na));

		if (na) {
			allocs = na;
			cap_allocs = cap;
		}
	}
	if (pool) {
		struct pool *pl = pool;

		dev = pl->dev;
		grow = pl->used + size > pl->reserved ? pl->used + size - pl->reserved : 0;
	}
	if (!arena || n_allocs == cap_allocs || len > ARENA_SIZE - arena_used ||
	    dev_used[dev] + grow > DEV_MEM ||
	    mprotect(arena + arena_used, len, PROT_READ | PROT_WRITE) != 0) {
		pthread_mutex_unlock(&mem_lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a = &allocs[n_allocs++];
	a->base = (CUdeviceptr)(uintptr_t)(arena + arena_used);
	a->size = size;
	a->dev = dev;
	a->live = 1;
	a->id = fd_next_id();
	a->pool = pool;
	arena_used += len;
	dev_used[dev] += grow;
	if (pool) {
		pool->used += size;
		pool->reserved += grow;
		if (pool->used > pool->used_high)
			pool->used_high = pool->used;
		if (pool->reserved > pool->reserved_high)
			pool->reserved_high = pool->reserved;
	}
	*dptr = a->base;
	pthread_mutex_unlock(&mem_lock);
	return CUDA_SUCCESS;
}

/* The live allocation holding p, or NULL; mem_lock held. */
static struct alloc *mem_lookup(CUdeviceptr p)
{
	size_t lo = 0, hi = n_allocs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (allocs[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	lo--;
	return allocs[lo].live && p < allocs[lo].base + allocs[lo].size ? &allocs[lo] : NULL;
}

/* Frees the allocation at p; *dev: its device (-1 when there is none). */
static CUresult mem_free(CUdeviceptr p, CUdevice *dev)
{
	struct alloc *a;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	*dev = -1;
	if (p == 0)
		return CUDA_SUCCESS;
	pthread_mutex_lock(&mem_lock);
	a = mem_lookup(p);
	if (a && a->base == p) {
		size_t len = page_round(a->size);

		*dev = a->dev;
		a->live = 0;
		/* Back to its pool, which keeps the memory; else to the device. */
		if (a->pool)
			((struct pool *)a->pool)->used -= a->size;
		else
			dev_used[a->dev] -= len;
		madvise((void *)(uintptr_t)a->base, len, MADV_DONTNEED);
		mprotect((void *)(uintptr_t)a->base, len, PROT_NONE);
		rc = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

/* A copy of the live allocation holding p; 0 when there is none. */
static int mem_find(CUdeviceptr p, struct alloc *out)
{
	struct alloc *a;

	pthread_mutex_lock(&mem_lock);
	a = mem_lookup(p);
	if (a)
		*out = *a;
	pthread_mutex_unlock(&mem_lock);
	return a != NULL;
}

int fd_mem_range(CUdeviceptr p, size_t n)
{
	struct alloc a;

	return mem_find(p, &a) && n <= a.base + a.size - p;
}

/* The device's default pool. */
static struct pool *pool_of(CUdevice dev)
{
	if (!fd_valid_device(dev))
		return NULL;
	pthread_mutex_lock(&mem_lock);
	pools[dev].magic = FD_MAGIC_POOL;
	pools[dev].dev = dev;
	pthread_mutex_unlock(&mem_lock);
	return &pools[dev];
}

static struct pool *pool_check(void *pool)
{
	struct pool *p = pool;

	return p && p->magic == FD_MAGIC_POOL ? p : NULL;
}

FD_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
	CUresult rc = mem_alloc(dptr, size, NULL);

	return fd_ret("cuMemAlloc_v2", rc, "size=%zu dev=%d ptr=%#llx", size, current_dev(),
		      rc == CUDA_SUCCESS ? (unsigned long long)*dptr : 0ull);
}

/* Rows padded to 512 bytes, the texture pitch alignment of the GPUs the fake shows. */
#define FD_PITCH_ALIGN	512u

FD_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
				      unsigned int element_size)
{
	size_t row = (width + FD_PITCH_ALIGN - 1) / FD_PITCH_ALIGN * FD_PITCH_ALIGN;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	if (dptr && pitch && width && height &&
	    (element_size == 4 || element_size == 8 || element_size == 16)) {
		rc = mem_alloc(dptr, row * height, NULL);
		if (rc == CUDA_SUCCESS)
			*pitch = row;
	}
	return fd_ret("cuMemAllocPitch_v2", rc, "width=%zu height=%zu pitch=%zu dev=%d ptr=%#llx",
		      width, height, rc == CUDA_SUCCESS ? row : 0, current_dev(),
		      rc == CUDA_SUCCESS ? (unsigned long long)*dptr : 0ull);
}

FD_EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	CUdevice dev;
	CUresult rc = mem_free(p, &dev);

	return fd_ret("cuMemFree_v2", rc, "ptr=%#llx dev=%d", (unsigned long long)p, dev);
}

static CUresult alloc_async(const char *sym, CUdeviceptr *dptr, size_t size, void *pool,
			    void *stream)
{
	struct pool *pl = pool ? pool_check(pool) : pool_of(current_dev());
	CUresult rc;

	if (!fd_stream_check(stream, &rc) && rc != CUDA_SUCCESS)
		return fd_ret(sym, rc, "stream=%p", stream);
	if (!pl)
		return fd_ret(sym, pool ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_CONTEXT,
			      "pool=%p", pool);
	rc = mem_alloc(dptr, size, pl);
	return fd_ret(sym, rc, "size=%zu dev=%d stream=%p ptr=%#llx", size, current_dev(), stream,
		      rc == CUDA_SUCCESS ? (unsigned long long)*dptr : 0ull);
}

static CUresult free_async(const char *sym, CUdeviceptr p, void *stream)
{
	CUdevice dev;
	CUresult rc;

	if (!fd_stream_check(stream, &rc) && rc != CUDA_SUCCESS)
		return fd_ret(sym, rc, "stream=%p", stream);
	rc = mem_free(p, &dev);
	return fd_ret(sym, rc, "ptr=%#llx dev=%d stream=%p", (unsigned long long)p, dev, stream);
}

FD_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, void *stream)
{
	return alloc_async("cuMemAllocAsync", dptr, size, NULL, stream);
}

FD_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, void *stream)
{
	return alloc_async("cuMemAllocAsync_ptsz", dptr, size, NULL, stream);
}

FD_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, void *pool, void *stream)
{
	return alloc_async("cuMemAllocFromPoolAsync", dptr, size, pool, stream);
}

FD_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size, void *pool,
						void *stream)
{
	return alloc_async("cuMemAllocFromPoolAsync_ptsz", dptr, size, pool, stream);
}

FD_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, void *stream)
{
	return free_async("cuMemFreeAsync", p, stream);
}

FD_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, void *stream)
{
	return free_async("cuMemFreeAsync_ptsz", p, stream);
}

FD_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	CUdevice dev = current_dev();

	if (!free_bytes || !total)
		return fd_ret("cuMemGetInfo_v2", CUDA_ERROR_INVALID_VALUE, NULL);
	if (dev < 0)
		return fd_ret("cuMemGetInfo_v2", CUDA_ERROR_INVALID_CONTEXT, NULL);
	pthread_mutex_lock(&mem_lock);
	*total = DEV_MEM;
	*free_bytes = *total - dev_used[dev];
	pthread_mutex_unlock(&mem_lock);
	return fd_ret("cuMemGetInfo_v2", CUDA_SUCCESS, "free=%zu total=%zu", *free_bytes, *total);
}

FD_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
	struct alloc a;

	if (!mem_find(p, &a))
		return fd_ret("cuMemGetAddressRange_v2", CUDA_ERROR_NOT_FOUND, "ptr=%#llx",
			      (unsigned long long)p);
	if (base)
		*base = a.base;
	if (size)
		*size = a.size;
	return fd_ret("cuMemGetAddressRange_v2", CUDA_SUCCESS, "ptr=%#llx", (unsigned long long)p);
}

static CUresult ptr_attr(void *data, int attr, const struct alloc *a)
{
	switch (attr) {
	case PTR_CONTEXT: *(void **)data = fd_primary_ctx(a->dev); break;
	case PTR_MEMORY_TYPE: *(unsigned int *)data = CU_MEMORYTYPE_DEVICE; break;
	case PTR_DEVICE_POINTER: *(CUdeviceptr *)data = a->base; break;
	case PTR_HOST_POINTER: *(void **)data = NULL; break;
	case PTR_SYNC_MEMOPS: *(int *)data = 0; break;
	case PTR_BUFFER_ID: *(unsigned long long *)data = a->id; break;
	case PTR_IS_MANAGED: *(int *)data = 0; break;
	case PTR_DEVICE_ORDINAL: *(int *)data = a->dev; break;
	case PTR_RANGE_START: *(CUdeviceptr *)data = a->base; break;
	case PTR_RANGE_SIZE: *(size_t *)data = a->size; break;
	case PTR_MAPPED: *(int *)data = 1; break;
	case PTR_MEMPOOL: *(void **)data = a->pool; break;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

FD_EXPORT CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
	struct alloc a;

	if (!data)
		return fd_ret("cuPointerGetAttribute", CUDA_ERROR_INVALID_VALUE, NULL);
	/* Not the fake's: plain host memory, unknown to the driver. */
	if (!mem_find(p, &a))
		return fd_ret("cuPointerGetAttribute", CUDA_ERROR_INVALID_VALUE,
			      "attr=%d ptr=%#llx", attr, (unsigned long long)p);
	return fd_ret("cuPointerGetAttribute", ptr_attr(data, attr, &a), "attr=%d ptr=%#llx", attr,
		      (unsigned long long)p);
}

FD_EXPORT CUresult cuPointerGetAttributes(unsigned int n, int *attrs, void **data, CUdeviceptr p)
{
	struct alloc a;
	int known = mem_find(p, &a);

	if (!attrs || !data)
		return fd_ret("cuPointerGetAttributes", CUDA_ERROR_INVALID_VALUE, NULL);
	for (unsigned int i = 0; i < n; i++) {
		if (known) {
			ptr_attr(data[i], attrs[i], &a);
			continue;
		}
		/* Host memory: the driver answers "unregistered host" for each. */
		if (attrs[i] == PTR_MEMORY_TYPE || attrs[i] == PTR_DEVICE_ORDINAL)
			*(int *)data[i] = attrs[i] == PTR_DEVICE_ORDINAL ? -2 : 0;
		else if (attrs[i] == PTR_CONTEXT || attrs[i] == PTR_HOST_POINTER ||
			 attrs[i] == PTR_DEVICE_POINTER)
			*(void **)data[i] = NULL;
	}
	return fd_ret("cuPointerGetAttributes", CUDA_SUCCESS, "n=%u ptr=%#llx known=%d", n,
		      (unsigned long long)p, known);
}

/* -------------------------------------------------------------------------
 * Pools: cudaMallocAsync asks for the device's default one.
 */

FD_EXPORT CUresult cuDeviceGetDefaultMemPool(void **pool, CUdevice dev)
{
	struct pool *p = pool_of(dev);

	if (!pool || !p)
		return fd_ret("cuDeviceGetDefaultMemPool", CUDA_ERROR_INVALID_DEVICE, "dev=%d",
			      dev);
	*pool = p;
	return fd_ret("cuDeviceGetDefaultMemPool", CUDA_SUCCESS, "dev=%d pool=%p", dev, *pool);
}

FD_EXPORT CUresult cuDeviceGetMemPool(void **pool, CUdevice dev)
{
	struct pool *p = pool_of(dev);

	if (!pool || !p)
		return fd_ret("cuDeviceGetMemPool", CUDA_ERROR_INVALID_DEVICE, "dev=%d", dev);
	*pool = p;
	return fd_ret("cuDeviceGetMemPool", CUDA_SUCCESS, "dev=%d pool=%p", dev, *pool);
}

FD_EXPORT CUresult cuMemPoolGetAttribute(void *pool, int attr, void *value)
{
	struct pool *p = pool_check(pool);
	CUresult rc = CUDA_SUCCESS;

	if (!p || !value)
		return fd_ret("cuMemPoolGetAttribute", CUDA_ERROR_INVALID_VALUE, "pool=%p", pool);
	pthread_mutex_lock(&mem_lock);
	switch (attr) {
	case POOL_REUSE_FOLLOW_EVENTS: case POOL_REUSE_OPPORTUNISTIC: case POOL_REUSE_INTERNAL:
		*(int *)value = 1; break;
	case POOL_RELEASE_THRESHOLD: *(uint64_t *)value = p->threshold; break;
	case POOL_RESERVED_CURRENT: *(uint64_t *)value = p->reserved; break;
	case POOL_RESERVED_HIGH: *(uint64_t *)value = p->reserved_high; break;
	case POOL_USED_CURRENT: *(uint64_t *)value = p->used; break;
	case POOL_USED_HIGH: *(uint64_t *)value = p->used_high; break;
	default: rc = CUDA_ERROR_INVALID_VALUE; break;
	}
	pthread_mutex_unlock(&mem_lock);
	return fd_ret("cuMemPoolGetAttribute", rc, "pool=%p attr=%d", pool, attr);
}

FD_EXPORT CUresult cuMemPoolSetAttribute(void *pool, int attr, void *value)
{
	struct pool *p = pool_check(pool);
	CUresult rc = CUDA_SUCCESS;

	if (!p || !value)
		return fd_ret("cuMemPoolSetAttribute", CUDA_ERROR_INVALID_VALUE, "pool=%p", pool);
	pthread_mutex_lock(&mem_lock);
	switch (attr) {
	case POOL_REUSE_FOLLOW_EVENTS: case POOL_REUSE_OPPORTUNISTIC: case POOL_REUSE_INTERNAL:
		break;
	case POOL_RELEASE_THRESHOLD: p->threshold = *(uint64_t *)value; break;
	/* The high marks can only be reset, to 0, which restarts them at the current use. */
	case POOL_RESERVED_HIGH: p->reserved_high = p->reserved; break;
	case POOL_USED_HIGH: p->used_high = p->used; break;
	default: rc = CUDA_ERROR_INVALID_VALUE; break;
	}
	pthread_mutex_unlock(&mem_lock);
	return fd_ret("cuMemPoolSetAttribute", rc, "pool=%p attr=%d value=%llu", pool, attr,
		      (unsigned long long)*(uint64_t *)value);
}

/* Gives back what the pool holds above keep, but never what its allocations use. */
static void pool_shrink(struct pool *p, uint64_t keep)
{
	uint64_t floor = p->used > keep ? p->used : keep;

	if (p->reserved <= floor)
		return;
	dev_used[p->dev] -= p->reserved - floor;
	p->reserved = floor;
}

FD_EXPORT CUresult cuMemPoolTrimTo(void *pool, size_t keep)
{
	struct pool *p = pool_check(pool);

	if (!p)
		return fd_ret("cuMemPoolTrimTo", CUDA_ERROR_INVALID_VALUE, "pool=%p", pool);
	pthread_mutex_lock(&mem_lock);
	pool_shrink(p, keep);
	pthread_mutex_unlock(&mem_lock);
	return fd_ret("cuMemPoolTrimTo", CUDA_SUCCESS, "pool=%p keep=%zu", pool, keep);
}

void fd_pools_settle(void)
{
	pthread_mutex_lock(&mem_lock);
	for (int d = 0; d < FD_MAX_DEVICES; d++)
		if (pools[d].magic == FD_MAGIC_POOL)
			pool_shrink(&pools[d], pools[d].threshold);
	pthread_mutex_unlock(&mem_lock);
}
