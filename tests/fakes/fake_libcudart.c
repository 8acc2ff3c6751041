// SPDX-License-Identifier: BSD-2-Clause
/*
 * A fake CUDA runtime (libcudart.so) over the fake driver: like the real
 * one, its calls reach the driver's exported functions on the same thread,
 * which is what the probes must not count twice.  Test code.
 */
#include "tests/fakes/fake_cuda.h"

#define EXPORT __attribute__((visibility("default"), noinline))

typedef int cudaError_t;

#define cudaSuccess			0
#define cudaErrorInvalidValue		1
#define cudaErrorMemoryAllocation	2
#define cudaErrorInvalidDevice		101

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size);
CUresult cuMemFree_v2(CUdeviceptr p);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			unsigned int bx, unsigned int by, unsigned int bz,
			unsigned int shared_mem_bytes, CUstream s, void **params, void **extra);
CUresult cuGraphLaunch(CUgraphExec g, CUstream s);
CUresult cuStreamSynchronize(CUstream s);
CUresult cuCtxSynchronize(void);

static cudaError_t from_cu(CUresult r)
{
	switch (r) {
	case 0: return cudaSuccess;
	case 2: return cudaErrorMemoryAllocation;
	case 101: return cudaErrorInvalidDevice;
	default: return cudaErrorInvalidValue;
	}
}

EXPORT cudaError_t cudaSetDevice(int dev)
{
	CUcontext ctx;
	CUresult r = cuDevicePrimaryCtxRetain(&ctx, dev);

	if (r == 0)
		r = cuCtxSetCurrent(ctx);
	return from_cu(r);
}

EXPORT cudaError_t cudaMalloc(void **p, size_t size)
{
	return from_cu(cuMemAlloc_v2((CUdeviceptr *)p, size));
}

EXPORT cudaError_t cudaFree(void *p)
{
	return from_cu(cuMemFree_v2((CUdeviceptr)(uintptr_t)p));
}

EXPORT cudaError_t cudaLaunchKernel(const void *func, struct fake_dim3 grid, struct fake_dim3 block,
				    void **args, size_t shared_mem, CUstream s)
{
	return from_cu(cuLaunchKernel((CUfunction)func, grid.x, grid.y, grid.z, block.x, block.y,
				      block.z, (unsigned int)shared_mem, s, args, NULL));
}

EXPORT cudaError_t cudaGraphLaunch(CUgraphExec g, CUstream s)
{
	return from_cu(cuGraphLaunch(g, s));
}

EXPORT cudaError_t cudaStreamSynchronize(CUstream s)
{
	return from_cu(cuStreamSynchronize(s));
}

EXPORT cudaError_t cudaDeviceSynchronize(void)
{
	return from_cu(cuCtxSynchronize());
}

CUresult cuEventRecord(void *ev, CUstream s);
CUresult cuEventSynchronize(void *ev);
CUresult cuEventQuery(void *ev);
CUresult cuStreamQuery(CUstream s);
CUresult cuStreamWaitEvent(CUstream s, void *ev, unsigned int flags);
CUresult cuStreamBeginCapture_v2(CUstream s, int mode);
CUresult cuStreamEndCapture(CUstream s, void **graph);

/* Like NVIDIA's, each reaches the driver's call on the same thread. */
EXPORT cudaError_t cudaEventRecord(void *ev, CUstream s)
{
	return from_cu(cuEventRecord(ev, s));
}

EXPORT cudaError_t cudaEventSynchronize(void *ev)
{
	return from_cu(cuEventSynchronize(ev));
}

EXPORT cudaError_t cudaEventQuery(void *ev)
{
	return from_cu(cuEventQuery(ev));
}

EXPORT cudaError_t cudaStreamQuery(CUstream s)
{
	return from_cu(cuStreamQuery(s));
}

EXPORT cudaError_t cudaStreamWaitEvent(CUstream s, void *ev, unsigned int flags)
{
	return from_cu(cuStreamWaitEvent(s, ev, flags));
}

EXPORT cudaError_t cudaStreamBeginCapture(CUstream s, int mode)
{
	return from_cu(cuStreamBeginCapture_v2(s, mode));
}

EXPORT cudaError_t cudaStreamEndCapture(CUstream s, void **graph)
{
	return from_cu(cuStreamEndCapture(s, graph));
}
