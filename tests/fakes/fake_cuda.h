/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The few CUDA/NCCL types the fake libraries and the test workloads share.
 * Layouts follow cuda.h and nccl.h where the probes read them
 * (CUmemAllocationProp); the rest is opaque.  Test code, no privilege.
 *
 * Controls, so tests know the ground truth:
 *   - an allocation of 0 bytes or more than FAKE_MEM_LIMIT fails with
 *     CUDA_ERROR_OUT_OF_MEMORY (2); freeing FAKE_BAD_PTR fails (1);
 *   - cuLaunchKernel / cudaLaunchKernel busy-wait sharedMemBytes ns,
 *     cuGraphLaunch busy-waits (uintptr_t)graph ns, and the stream
 *     synchronisations sleep (uintptr_t)stream ns;
 *   - NCCL calls busy-wait $FAKE_NCCL_NS ns (read at load) and fail with
 *     ncclInvalidArgument (4) when count == FAKE_NCCL_BAD_COUNT, or return
 *     ncclInProgress (7, queued by a non-blocking communicator) when count
 *     == FAKE_NCCL_IN_PROGRESS_COUNT;
 *   - event synchronisations sleep (uintptr_t)event ns.
 */
#ifndef ZERNEL_FAKE_CUDA_H
#define ZERNEL_FAKE_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define FAKE_MEM_LIMIT		(1ull << 40)
#define FAKE_BAD_PTR		1ull
#define FAKE_NCCL_BAD_COUNT	0xdeadull
#define FAKE_NCCL_IN_PROGRESS_COUNT	0xbeefull
#define FAKE_MAX_DEVICES	16

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUfunction;
typedef void *CUgraphExec;
typedef uint64_t CUmemGenericAllocationHandle;

struct fake_mem_location {
	int type;			/* CU_MEM_LOCATION_TYPE_DEVICE = 1 */
	int id;
};

/* CUmemAllocationProp */
struct fake_mem_prop {
	int type;			/* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
	int requested_handle_types;
	struct fake_mem_location location;
	void *win32_metadata;
	unsigned char alloc_flags[8];
};

/* CUlaunchConfig */
struct fake_launch_config {
	unsigned int grid[3];
	unsigned int block[3];
	unsigned int shared_mem_bytes;
	CUstream stream;
	void *attrs;
	unsigned int num_attrs;
};

struct fake_dim3 {
	unsigned int x, y, z;
};

/* ncclUniqueId: 128 bytes, passed by value. */
struct fake_nccl_id {
	char internal[128];
};

/* The head of ncclConfig_t (nccl.h, NCCL 2.28): blocking 0 makes calls non-blocking. */
struct fake_nccl_config {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking;
};

static inline uint64_t fake_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void fake_busy_ns(uint64_t ns)
{
	uint64_t end;

	if (ns == 0)
		return;
	end = fake_now_ns() + ns;
	while (fake_now_ns() < end)
		;
}

#endif /* ZERNEL_FAKE_CUDA_H */
