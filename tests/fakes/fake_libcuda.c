// SPDX-License-Identifier: BSD-2-Clause
/*
 * A fake CUDA driver (libcuda.so.1) exporting the real symbol names with
 * controlled sizes, delays and return codes (see fake_cuda.h), so the
 * probes can be checked against ground truth without a GPU.  Test code.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "tests/fakes/fake_cuda.h"

#define EXPORT __attribute__((visibility("default"), noinline))

#define CUDA_SUCCESS			0
#define CUDA_ERROR_INVALID_VALUE	1
#define CUDA_ERROR_OUT_OF_MEMORY	2
#define CUDA_ERROR_INVALID_DEVICE	101

static _Atomic uint64_t next_addr = 0x7f0000000000ull;
static _Atomic uint64_t next_handle = 1000;

static CUresult fake_alloc(CUdeviceptr *dptr, size_t size)
{
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	if (size == 0 || size > FAKE_MEM_LIMIT)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Distinct, aligned, never reused: like device addresses. */
	*dptr = atomic_fetch_add(&next_addr, (size + 0xfffff) & ~0xfffffull);
	return CUDA_SUCCESS;
}

static CUresult fake_free(CUdeviceptr p)
{
	return p == FAKE_BAD_PTR ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

EXPORT CUresult cuInit(unsigned int flags) { (void)flags; return CUDA_SUCCESS; }

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) { return fake_alloc(dptr, size); }
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { return fake_free(p); }

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s)
{
	(void)s;
	return fake_alloc(dptr, size);
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	(void)s;
	return fake_free(p);
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			    const struct fake_mem_prop *prop, unsigned long long flags)
{
	(void)flags;
	if (!handle || !prop || prop->location.id < 0 || prop->location.id >= FAKE_MAX_DEVICES)
		return CUDA_ERROR_INVALID_VALUE;
	if (size == 0 || size > FAKE_MEM_LIMIT)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*handle = atomic_fetch_add(&next_handle, 1);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
	return h == FAKE_BAD_PTR ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* Contexts are device numbers in disguise. */
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	if (!pctx || dev < 0 || dev >= FAKE_MAX_DEVICES)
		return CUDA_ERROR_INVALID_DEVICE;
	*pctx = (CUcontext)(uintptr_t)(0x1000 + dev);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	(void)flags;
	return cuDevicePrimaryCtxRetain(pctx, dev);
}

EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, void *params, unsigned int flags, CUdevice dev)
{
	(void)params;
	(void)flags;
	return cuDevicePrimaryCtxRetain(pctx, dev);
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) { return ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) { return cuCtxSetCurrent(ctx); }

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			       unsigned int bx, unsigned int by, unsigned int bz,
			       unsigned int shared_mem_bytes, CUstream s, void **params, void **extra)
{
	(void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz;
	(void)s; (void)params; (void)extra;
	fake_busy_ns(shared_mem_bytes);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
				    unsigned int bx, unsigned int by, unsigned int bz,
				    unsigned int shared_mem_bytes, CUstream s, void **params,
				    void **extra)
{
	(void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz;
	(void)s; (void)params; (void)extra;
	fake_busy_ns(shared_mem_bytes);
	return CUDA_SUCCESS;
}

/* As the driver declares it: no extra, and kernelParams required (not looked at here). */
EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
					  unsigned int gz, unsigned int bx, unsigned int by,
					  unsigned int bz, unsigned int shared_mem_bytes, CUstream s,
					  void **params)
{
	/* Not through cuLaunchKernel: its probes would see a launch of their own. */
	(void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz;
	(void)s; (void)params;
	fake_busy_ns(shared_mem_bytes);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernelEx(const struct fake_launch_config *config, CUfunction f,
				 void **params, void **extra)
{
	(void)f; (void)params; (void)extra;
	if (!config)
		return CUDA_ERROR_INVALID_VALUE;
	fake_busy_ns(config->shared_mem_bytes);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphLaunch(CUgraphExec g, CUstream s)
{
	(void)s;
	fake_busy_ns((uintptr_t)g);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	struct timespec ts = { .tv_sec = (uintptr_t)s / 1000000000u,
			       .tv_nsec = (uintptr_t)s % 1000000000u };

	nanosleep(&ts, NULL);
	return CUDA_SUCCESS;
}

/* The fake's work is done as soon as it is queued: a query finds it complete. */
EXPORT CUresult cuStreamQuery(CUstream s)
{
	(void)s;
	return CUDA_SUCCESS;
}

/*
 * Spins FAKE_SYNC_SPIN_NS (default 0) on the CPU, as the real driver does
 * while it has CPUs to spare (cudaDeviceScheduleSpin, or Auto).
 */
EXPORT CUresult cuCtxSynchronize(void)
{
	const char *spin = getenv("FAKE_SYNC_SPIN_NS");

	fake_busy_ns(spin ? strtoull(spin, NULL, 10) : 0);
	return CUDA_SUCCESS;
}

/*
 * Events and stream order: an event is any non-null handle; synchronising
 * one sleeps (uintptr_t)event ns, as a stream does.  Capture is accepted.
 */
EXPORT CUresult cuEventRecord(void *ev, CUstream s)
{
	(void)s;
	return ev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuEventSynchronize(void *ev)
{
	struct timespec ts = { .tv_sec = (uintptr_t)ev / 1000000000u,
			       .tv_nsec = (long)((uintptr_t)ev % 1000000000u) };

	if (!ev)
		return CUDA_ERROR_INVALID_VALUE;
	nanosleep(&ts, NULL);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuEventQuery(void *ev)
{
	return ev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuStreamWaitEvent(CUstream s, void *ev, unsigned int flags)
{
	(void)s;
	(void)flags;
	return ev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, int mode)
{
	(void)mode;
	return s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuStreamEndCapture(CUstream s, void **graph)
{
	if (graph)
		*graph = (void *)0x1;
	return s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
