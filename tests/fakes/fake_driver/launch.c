// SPDX-License-Identifier: BSD-2-Clause
/*
 * Kernel launches in the fake driver: checked like the driver checks them
 * (a loaded function, a usable stream, sane dimensions), then nothing runs.
 * A launch on a capturing stream becomes a kernel node of the graph being
 * captured, as with the real driver.  Test code.
 */
#include "tests/fakes/fake_driver/fd_module.h"

/* CUlaunchConfig */
struct launch_config {
	unsigned int grid[3];
	unsigned int block[3];
	unsigned int shared;
	void *stream;
	void *attrs;
	unsigned int n_attrs;
};

static CUresult launch(const char *sym, void *func, const unsigned int grid[3],
		       const unsigned int block[3], unsigned int shared, void *stream)
{
	struct fd_func *f = fd_func_check(func);
	struct fd_stream *s;
	CUresult rc;
	int captured = 0;

	s = fd_stream_check(stream, &rc);
	if (rc == CUDA_SUCCESS && !f)
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (rc == CUDA_SUCCESS && !s && !fd_current_ctx())
		rc = CUDA_ERROR_INVALID_CONTEXT;
	if (rc == CUDA_SUCCESS &&
	    (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || block[0] == 0 || block[1] == 0 ||
	     block[2] == 0 || (uint64_t)block[0] * block[1] * block[2] > 1024 || shared > 49152))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS && s && s->capture) {
		rc = fd_capture_kernel(s, f, grid, block, shared);
		captured = 1;
	}
	return fd_ret(sym, rc,
		      "kernel=%s grid=%u,%u,%u block=%u,%u,%u shared=%u stream=%p captured=%d",
		      f ? f->name : "?", grid[0], grid[1], grid[2], block[0], block[1], block[2],
		      shared, stream, captured);
}

#define LAUNCH_KERNEL(sym)							\
	FD_EXPORT CUresult sym(void *f, unsigned int gx, unsigned int gy, unsigned int gz,	\
			       unsigned int bx, unsigned int by, unsigned int bz,	\
			       unsigned int shared, void *stream, void **params, void **extra) \
	{									\
		const unsigned int grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz }; \
										\
		(void)params;							\
		(void)extra;							\
		return launch(#sym, f, grid, block, shared, stream);		\
	}
LAUNCH_KERNEL(cuLaunchKernel)
LAUNCH_KERNEL(cuLaunchKernel_ptsz)
LAUNCH_KERNEL(cuLaunchCooperativeKernel)
LAUNCH_KERNEL(cuLaunchCooperativeKernel_ptsz)

static CUresult launch_ex(const char *sym, const struct launch_config *c, void *f)
{
	if (!c)
		return fd_ret(sym, CUDA_ERROR_INVALID_VALUE, NULL);
	return launch(sym, f, c->grid, c->block, c->shared, c->stream);
}

FD_EXPORT CUresult cuLaunchKernelEx(const struct launch_config *c, void *f, void **params,
				    void **extra)
{
	(void)params;
	(void)extra;
	return launch_ex("cuLaunchKernelEx", c, f);
}

FD_EXPORT CUresult cuLaunchKernelEx_ptsz(const struct launch_config *c, void *f, void **params,
					 void **extra)
{
	(void)params;
	(void)extra;
	return launch_ex("cuLaunchKernelEx_ptsz", c, f);
}
