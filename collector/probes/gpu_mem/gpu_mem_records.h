/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The GPU memory family's records: allocations, frees, failures and the
 * calls that name a memory pool.
 * Part of the probe ABI (bpf/probe_abi.h, which numbers every record
 * type and includes this): BPF code and the collector read it through
 * that header.
 */
#ifndef ZERNEL_GPU_MEM_RECORDS_H
#define ZERNEL_GPU_MEM_RECORDS_H

#include "bpf/probe_abi.h"

/* Allocation namespaces: device pointers and VMM handles never mix. */
#define ZMEM_SPACE_PTR		0u
#define ZMEM_SPACE_VMM		1u

/*
 * A successful allocation of bytes on gpu, at addr (pointer or handle).
 * A stream-ordered one (pooled 1) comes from pool, or from the device's
 * current pool when pool is 0.
 */
struct zev_mem_alloc {
	struct zev_hdr hdr;
	__u32 gpu;
	__u32 space;		/* ZMEM_SPACE_* */
	__u64 addr;
	__u64 bytes;
	__u32 pooled;
	__u32 pad;
	__u64 pool;		/* CUmemoryPool */
};

/* What a zev_mem_pool says of its pool. */
enum zmem_pool_op {
	ZMEM_POOL_DEFAULT = 0,	/* cuDeviceGetDefaultMemPool: dev's default pool */
	ZMEM_POOL_CURRENT,	/* cuDeviceGetMemPool: dev's current pool */
	ZMEM_POOL_SET,		/* cuDeviceSetMemPool: dev's current pool from now on */
	ZMEM_POOL_THRESHOLD,	/* cuMemPoolSetAttribute: release threshold = bytes */
	ZMEM_POOL_TRIM,		/* cuMemPoolTrimTo: keep at most bytes beyond what is in use */
	ZMEM_POOL_DESTROY,	/* cuMemPoolDestroy: gone once its allocations are freed */
	ZMEM_POOL_OP_COUNT
};

/* A successful call that names a memory pool. */
struct zev_mem_pool {
	struct zev_hdr hdr;
	__u32 op;		/* enum zmem_pool_op */
	__s32 dev;		/* CUDA ordinal: the call's, else the thread's current device */
	__u64 pool;		/* CUmemoryPool */
	__u64 bytes;
};

/* A successful free of what was allocated at addr; its size is looked up. */
struct zev_mem_free {
	struct zev_hdr hdr;
	__u32 space;		/* ZMEM_SPACE_* */
	__u32 pad;
	__u64 addr;
};

/* An allocation that returned an error. */
struct zev_mem_fail {
	struct zev_hdr hdr;
	__u32 gpu;
	__s32 ret;		/* the call's CUresult or cudaError_t */
	__u64 bytes;		/* asked for */
};

_Static_assert(sizeof(struct zev_mem_alloc) == 64, "zev_mem_alloc is 64 bytes");
_Static_assert(sizeof(struct zev_mem_pool) == 48, "zev_mem_pool is 48 bytes");
_Static_assert(sizeof(struct zev_mem_free) == 40, "zev_mem_free is 40 bytes");
_Static_assert(sizeof(struct zev_mem_fail) == 40, "zev_mem_fail is 40 bytes");

#endif /* ZERNEL_GPU_MEM_RECORDS_H */
