/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The GPU memory family (probe_family.h): what each process holds on each
 * GPU.  Its programs (gpu_mem.bpf.c) time the driver's and runtime's
 * allocations and frees, follow the calls that set a thread's device and
 * the stream-ordered pools (cuMemPool*); its records are turned into the
 * process's (pid, GPU) row here, through the allocations it keeps
 * (memtrack.h) and what each pool holds (mempool.h).  Root.
 */
#include <errno.h>
#include <stdlib.h>

#include "bpf/gpu_mem.skel.h"
#include "bpf/probe_abi.h"
#include "collector/probes/decode.h"
#include "collector/probes/family_rows.h"
#include "collector/probes/gpu_mem/gpu_mem.h"
#include "collector/probes/gpu_mem/mempool.h"
#include "collector/probes/gpu_mem/memtrack.h"

PROBE_SKELETON(gpu_mem)

/* Live allocations and memory pools to track at most, per collector. */
#define GPU_MEM_MAX_ALLOCS	(1u << 20)
#define GPU_MEM_MAX_POOLS	4096u

/* What the decoders keep: each live allocation, and what each pool holds. */
struct gpu_mem_state {
	struct memtrack *mem;
	struct mempool *pools;
};

static struct gpu_mem_state *mem_of(const struct decode *d)
{
	return decode_state(d, PROBE_OBJ_GPU_MEM);
}

static void state_free(void *state)
{
	struct gpu_mem_state *m = state;

	memtrack_free(m->mem);
	mempool_free(m->pools);
	free(m);
}

static void *state_new(struct agg *agg)
{
	struct gpu_mem_state *m = calloc(1, sizeof(*m));

	(void)agg;
	if (!m)
		return NULL;
	m->mem = memtrack_new(GPU_MEM_MAX_ALLOCS);
	m->pools = mempool_new(GPU_MEM_MAX_POOLS);
	if (m->mem && m->pools)
		return m;
	state_free(m);
	return NULL;
}

static void proc_gone(void *state, uint32_t pid)
{
	struct gpu_mem_state *m = state;

	memtrack_evict_pid(m->mem, pid);
	mempool_evict_pid(m->pools, pid);
}

#define MEM(lib, sym, entry, ret)	PAIR(PROBE_OBJ_GPU_MEM, lib, sym, entry, ret)

static const struct probe_attach attach[] = {
	/* GPU memory: allocations and frees, and the calls that set the device. */
	MEM(DRV, "cuMemAlloc_v2",		"zm_alloc",	"zm_mem_ret"),
	WITH_PTSZ(MEM, DRV, "cuMemAllocAsync", "zm_alloc_async", "zm_mem_ret"),
	WITH_PTSZ(MEM, DRV, "cuMemAllocFromPoolAsync", "zm_alloc_pool", "zm_mem_ret"),
	MEM(DRV, "cuMemAllocPitch_v2",		"zm_alloc_pitch", "zm_mem_ret"),
	MEM(DRV, "cuMemFree_v2",		"zm_free",	"zm_mem_ret"),
	WITH_PTSZ(MEM, DRV, "cuMemFreeAsync", "zm_free", "zm_mem_ret"),
	MEM(DRV, "cuMemCreate",			"zm_create",	"zm_mem_ret"),
	MEM(DRV, "cuMemRelease",		"zm_release",	"zm_mem_ret"),
	MEM(DRV, "cuDeviceGetDefaultMemPool",	"zm_pool_default", "zm_pool_ret"),
	MEM(DRV, "cuDeviceGetMemPool",		"zm_pool_current", "zm_pool_ret"),
	MEM(DRV, "cuDeviceSetMemPool",		"zm_pool_set",	"zm_pool_ret"),
	MEM(DRV, "cuMemPoolSetAttribute",	"zm_pool_attr",	"zm_pool_ret"),
	MEM(DRV, "cuMemPoolTrimTo",		"zm_pool_trim",	"zm_pool_ret"),
	MEM(DRV, "cuMemPoolDestroy",		"zm_pool_destroy", "zm_pool_ret"),
	MEM(RT,  "cudaMalloc",			"zm_alloc",	"zm_mem_ret"),
	MEM(RT,  "cudaFree",			"zm_free",	"zm_mem_ret"),
	MEM(DRV, "cuDevicePrimaryCtxRetain",	"zm_ctx_retain", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxCreate_v2",		"zm_ctx_create2", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxCreate_v3",		"zm_ctx_create3", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxCreate_v4",		"zm_ctx_create4", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxSetCurrent",		"zm_ctx_current", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxPushCurrent_v2",		"zm_ctx_current", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxGetCurrent",		"zm_ctx_get",	"zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxGetDevice",		"zm_ctx_get_device", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxGetDevice_v2",		"zm_ctx_get_device2", "zm_drv_ctx_ret"),
	MEM(RT,  "cudaSetDevice",		"zm_set_device", "zm_ctx_ret"),
};

/*
 * The aggregation's key of pid's CUDA device ordinal: the physical GPU, or
 * the ordinal marked unmapped; the row is told how.  Allocations keep the
 * key, so a free lands where its allocation did.
 */
static uint32_t gpu_key(struct decode *d, uint32_t pid, uint32_t ordinal)
{
	uint32_t gpu = ordinal, how = SHM_GPU_MAP_ORDINAL;

	if (d->ops.gpu_of) {
		how = d->ops.gpu_of(d->ops.ctx, pid, ordinal, &gpu);
		if (!shm_gpu_map_resolved(how) || gpu & AGG_GPU_UNMAPPED)
			gpu = AGG_GPU_UNMAPPED | (ordinal & ~AGG_GPU_UNMAPPED);
	}
	if (d->ops.from_start && !agg_gpu_has(d->agg, pid, gpu))
		agg_gpu_from_start(d->agg, pid, gpu, d->ops.from_start(d->ops.ctx, pid));
	if (how != SHM_GPU_MAP_ORDINAL || gpu != ordinal)
		agg_gpu_mapped(d->agg, pid, gpu, ordinal, how);
	return gpu;
}

/* Memory a pool gave back to the driver: the process holds less. */
static void pool_released(void *ctx, uint32_t pid, uint32_t gpu, uint64_t bytes)
{
	struct decode *d = ctx;

	agg_gpu_released(d->agg, pid, gpu, bytes);
}

/* What an allocation made the process hold: its bytes, or what its pool had to reserve. */
static uint64_t mem_taken(struct decode *d, const struct zev_mem_alloc *e,
			  struct memtrack_alloc *a)
{
	uint64_t grown;

	if (!e->pooled || e->space != ZMEM_SPACE_PTR)
		return a->bytes;
	if (mempool_alloc(mem_of(d)->pools, e->hdr.pid, (int32_t)e->gpu, a->gpu, e->pool, a->bytes,
			  &grown, &a->pool) < 0)
		agg_count_dropped(d->agg, 1);	/* counted as if not pooled */
	return grown;
}

/* An allocation's memory went back: to the driver, or to its pool, which keeps it. */
static void mem_given_back(struct decode *d, uint32_t pid, const struct memtrack_alloc *a)
{
	if (a->pool) {
		mempool_freed(mem_of(d)->pools, pid, a->pool, a->bytes, pool_released, d);
		agg_gpu_free(d->agg, pid, a->gpu, 0);
	} else {
		agg_gpu_free(d->agg, pid, a->gpu, a->bytes);
	}
}

static int dec_mem_alloc(struct decode *d, const void *rec)
{
	const struct zev_mem_alloc *e = rec;
	struct memtrack_alloc a = { .bytes = e->bytes }, old;
	uint64_t taken;

	if (e->space > ZMEM_SPACE_VMM || e->pooled > 1)
		return -EINVAL;
	a.gpu = gpu_key(d, e->hdr.pid, e->gpu);
	/* Its address was live: its free went unseen (an unprobed path), it is gone now. */
	if (memtrack_take(mem_of(d)->mem, e->hdr.pid, e->space, e->addr, &old) == 0)
		mem_given_back(d, e->hdr.pid, &old);
	taken = mem_taken(d, e, &a);
	/* Untracked: counted, but its free will not subtract (nor go back to its pool). */
	if (memtrack_add(mem_of(d)->mem, e->hdr.pid, e->space, e->addr, &a, &old) < 0)
		agg_count_dropped(d->agg, 1);
	agg_gpu_alloc(d->agg, e->hdr.pid, a.gpu, taken);
	return 0;
}

static int dec_mem_free(struct decode *d, const void *rec)
{
	const struct zev_mem_free *e = rec;
	struct memtrack_alloc a;

	if (e->space > ZMEM_SPACE_VMM)
		return -EINVAL;
	/* A pointer we never saw allocated (before we started): nothing to do. */
	if (memtrack_take(mem_of(d)->mem, e->hdr.pid, e->space, e->addr, &a) != 0)
		return 0;
	mem_given_back(d, e->hdr.pid, &a);
	return 0;
}

static int dec_mem_pool(struct decode *d, const void *rec)
{
	const struct zev_mem_pool *e = rec;

	if (e->op >= ZMEM_POOL_OP_COUNT)
		return -EINVAL;
	if (mempool_named(mem_of(d)->pools, e->hdr.pid, e->op, e->dev, e->pool, e->bytes,
			  pool_released, d) == -ENOSPC)
		agg_count_dropped(d->agg, 1);
	return 0;
}

static int dec_mem_fail(struct decode *d, const void *rec)
{
	const struct zev_mem_fail *e = rec;

	agg_gpu_alloc_failed(d->agg, e->hdr.pid, gpu_key(d, e->hdr.pid, e->gpu));
	return 0;
}

void gpu_mem_pools_synced(struct decode *d, uint32_t pid)
{
	mempool_sync(mem_of(d)->pools, pid, pool_released, d);
}

static const struct probe_decoder decoders[] = {
	DECODER(ZEV_MEM_ALLOC,	zev_mem_alloc,	dec_mem_alloc),
	DECODER(ZEV_MEM_FREE,	zev_mem_free,	dec_mem_free),
	DECODER(ZEV_MEM_FAIL,	zev_mem_fail,	dec_mem_fail),
	DECODER(ZEV_MEM_POOL,	zev_mem_pool,	dec_mem_pool),
};

static const struct probe_state_ops state = {
	.make = state_new, .free = state_free, .proc_gone = proc_gone,
};

PROBE_FAMILY(gpu_mem, NULL, NULL, &state);
