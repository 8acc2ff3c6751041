/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What each process's CUDA memory pools (cudaMallocAsync, PyTorch's
 * cudaMallocAsync backend) hold from the driver, so that a process's GPU
 * memory means one thing under every allocator: the device memory it holds
 * from the driver.  A pool works as the driver documents it:
 *   - it reserves device memory when its allocations outgrow what it holds,
 *     and keeps what they free;
 *   - at a stream, event or context synchronisation it gives back what it
 *     holds above its release threshold (0 until cuMemPoolSetAttribute sets
 *     it; PyTorch sets the largest value, so its pool keeps everything);
 *   - cuMemPoolTrimTo gives back what it holds above the bytes kept;
 *   - never below what its live allocations use;
 *   - cuMemPoolDestroy gives back all but that at once, and the rest as
 *     its allocations are freed.
 * The bytes are the allocations' own: a GPU reserves in larger granules,
 * so the driver's figure can be above this one by less than a granule per
 * pool (2 MiB on current GPUs).  A synchronisation settles every pool of
 * the process, on every device.
 *
 * A pool is known by its handle, or, for cuMemAllocAsync before the
 * process has asked for its device's pool, as that device's default pool,
 * merged into the handle once cuDeviceGetDefaultMemPool (or
 * cuDeviceGetMemPool before any cuDeviceSetMemPool) names it.
 * Collector-internal, single-threaded; bounded at creation, and at
 * MEMPOOL_PER_PROC pools a process (beyond, its allocations count as not
 * pooled).
 */
#ifndef ZERNEL_MEMPOOL_H
#define ZERNEL_MEMPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/probe_abi.h"

struct mempool;

#define MEMPOOL_PER_PROC	64u

/* Where memory a pool gives back is counted: pid's figure on gpu goes down by bytes. */
typedef void (*mempool_release_fn)(void *ctx, uint32_t pid, uint32_t gpu, uint64_t bytes);

/* NULL with errno set (EINVAL for 0 or more than 65536 pools). */
struct mempool *mempool_new(size_t max_pools);
void mempool_free(struct mempool *mp);

/*
 * An allocation of bytes from pool (0: device dev's current pool), counted
 * on gpu.  *grown: what the pool reserved for it (0 when what it kept was
 * enough); *key: the pool, to hand back at the free.  -ENOSPC when the
 * table is full: the allocation is then not pooled (*grown = bytes).
 */
int mempool_alloc(struct mempool *mp, uint32_t pid, int32_t dev, uint32_t gpu, uint64_t pool,
		  uint64_t bytes, uint64_t *grown, uint64_t *key);

/*
 * An allocation of the pool key went back to it, which keeps the memory
 * (a destroyed pool gives it back: release).
 */
void mempool_freed(struct mempool *mp, uint32_t pid, uint64_t key, uint64_t bytes,
		   mempool_release_fn release, void *ctx);

/*
 * A call that names a pool (struct zev_mem_pool): its device's default or
 * current pool, its release threshold, a trim or its end, which give back
 * at once.
 * -EINVAL for an unknown op, -ENOSPC when the table is full.
 */
int mempool_named(struct mempool *mp, uint32_t pid, enum zmem_pool_op op, int32_t dev,
		  uint64_t pool, uint64_t bytes, mempool_release_fn release, void *ctx);

/* A synchronisation in pid: each of its pools gives back what is above its threshold. */
void mempool_sync(struct mempool *mp, uint32_t pid, mempool_release_fn release, void *ctx);

/* Forgets pid's pools; returns how many. */
size_t mempool_evict_pid(struct mempool *mp, uint32_t pid);

size_t mempool_count(const struct mempool *mp);

#endif /* ZERNEL_MEMPOOL_H */
