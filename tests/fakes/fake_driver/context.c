// SPDX-License-Identifier: BSD-2-Clause
/*
 * Contexts of the fake driver: one primary context per device, retained
 * and released like the real one, contexts made by cuCtxCreate, and a
 * per-thread stack of current contexts.  Test code.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "tests/fakes/fake_driver/fake_driver.h"

#define CTX_STACK	16

/* CU_LIMIT_* defaults of a T4, by limit number. */
static const size_t limit_defaults[] = {
	1024,			/* STACK_SIZE */
	1048576,		/* PRINTF_FIFO_SIZE */
	8388608,		/* MALLOC_HEAP_SIZE */
	2,			/* DEV_RUNTIME_SYNC_DEPTH */
	2048,			/* DEV_RUNTIME_PENDING_LAUNCH_COUNT */
	32,			/* MAX_L2_FETCH_GRANULARITY */
	0,			/* PERSISTING_L2_CACHE_SIZE */
};

#define N_LIMITS (sizeof(limit_defaults) / sizeof(limit_defaults[0]))

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fd_ctx *primary[FD_MAX_DEVICES];
static _Atomic uint64_t next_id = 1;

static __thread struct fd_ctx *ctx_stack[CTX_STACK];
static __thread int ctx_depth;

uint64_t fd_next_id(void)
{
	return atomic_fetch_add(&next_id, 1);
}

static struct fd_ctx *ctx_new(CUdevice dev, int is_primary, unsigned int flags)
{
	struct fd_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->magic = FD_MAGIC_CTX;
	c->dev = dev;
	c->primary = is_primary;
	c->flags = flags;
	return c;
}

struct fd_ctx *fd_primary_ctx(CUdevice dev)
{
	struct fd_ctx *c;

	if (!fd_valid_device(dev))
		return NULL;
	pthread_mutex_lock(&ctx_lock);
	if (!primary[dev])
		primary[dev] = ctx_new(dev, 1, 0);
	c = primary[dev];
	pthread_mutex_unlock(&ctx_lock);
	return c;
}

struct fd_ctx *fd_ctx_check(void *ctx)
{
	struct fd_ctx *c = ctx;

	return c && c->magic == FD_MAGIC_CTX ? c : NULL;
}

struct fd_ctx *fd_current_ctx(void)
{
	return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

/* The real driver's cuCtxSetCurrent replaces the top of the stack. */
static void set_current(struct fd_ctx *c)
{
	if (ctx_depth == 0) {
		if (!c)
			return;
		ctx_depth = 1;
	}
	ctx_stack[ctx_depth - 1] = c;
	if (!c)
		ctx_depth--;
}

FD_EXPORT CUresult cuDevicePrimaryCtxRetain(void **pctx, CUdevice dev)
{
	struct fd_ctx *c;

	if (!pctx)
		return fd_ret("cuDevicePrimaryCtxRetain", CUDA_ERROR_INVALID_VALUE, NULL);
	c = fd_primary_ctx(dev);
	if (!c)
		return fd_ret("cuDevicePrimaryCtxRetain", CUDA_ERROR_INVALID_DEVICE, "dev=%d", dev);
	pthread_mutex_lock(&ctx_lock);
	c->refs++;
	pthread_mutex_unlock(&ctx_lock);
	*pctx = c;
	return fd_ret("cuDevicePrimaryCtxRetain", CUDA_SUCCESS, "dev=%d ctx=%p", dev, (void *)c);
}

FD_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	struct fd_ctx *c = fd_primary_ctx(dev);
	CUresult rc = CUDA_SUCCESS;

	if (!c)
		return fd_ret("cuDevicePrimaryCtxRelease", CUDA_ERROR_INVALID_DEVICE, "dev=%d",
			      dev);
	pthread_mutex_lock(&ctx_lock);
	if (c->refs > 0)
		c->refs--;
	else
		rc = CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_unlock(&ctx_lock);
	return fd_ret("cuDevicePrimaryCtxRelease", rc, "dev=%d", dev);
}

FD_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	struct fd_ctx *c = fd_primary_ctx(dev);

	if (!c || !flags || !active)
		return fd_ret("cuDevicePrimaryCtxGetState", CUDA_ERROR_INVALID_VALUE, "dev=%d",
			      dev);
	pthread_mutex_lock(&ctx_lock);
	*flags = c->flags;
	*active = c->refs > 0;
	pthread_mutex_unlock(&ctx_lock);
	return fd_ret("cuDevicePrimaryCtxGetState", CUDA_SUCCESS, "dev=%d flags=%u active=%d", dev,
		      *flags, *active);
}

FD_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	struct fd_ctx *c = fd_primary_ctx(dev);

	if (!c)
		return fd_ret("cuDevicePrimaryCtxSetFlags_v2", CUDA_ERROR_INVALID_DEVICE,
			      "dev=%d", dev);
	c->flags = flags;
	return fd_ret("cuDevicePrimaryCtxSetFlags_v2", CUDA_SUCCESS, "dev=%d flags=%u", dev, flags);
}

FD_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
	struct fd_ctx *c = fd_primary_ctx(dev);

	if (!c)
		return fd_ret("cuDevicePrimaryCtxReset", CUDA_ERROR_INVALID_DEVICE, "dev=%d", dev);
	/* What the runtime keeps in the context goes, through its destructors. */
	for (int i = 0; i < FD_CTX_SLOTS; i++) {
		struct fd_ctx_slot s = c->slots[i];

		if (!s.key)
			continue;
		c->slots[i].key = NULL;
		if (s.dtor)
			s.dtor(c, s.key, s.value);
	}
	c->refs = 0;
	return fd_ret("cuDevicePrimaryCtxReset", CUDA_SUCCESS, "dev=%d", dev);
}

FD_EXPORT CUresult cuCtxCreate_v2(void **pctx, unsigned int flags, CUdevice dev)
{
	struct fd_ctx *c;

	if (!pctx)
		return fd_ret("cuCtxCreate_v2", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!fd_valid_device(dev))
		return fd_ret("cuCtxCreate_v2", CUDA_ERROR_INVALID_DEVICE, "dev=%d", dev);
	c = ctx_new(dev, 0, flags);
	if (!c)
		return fd_ret("cuCtxCreate_v2", CUDA_ERROR_OUT_OF_MEMORY, NULL);
	c->refs = 1;
	if (ctx_depth < CTX_STACK)
		ctx_stack[ctx_depth++] = c;
	*pctx = c;
	return fd_ret("cuCtxCreate_v2", CUDA_SUCCESS, "dev=%d ctx=%p", dev, (void *)c);
}

FD_EXPORT CUresult cuCtxSetCurrent(void *ctx)
{
	struct fd_ctx *c = fd_ctx_check(ctx);

	if (ctx && !c)
		return fd_ret("cuCtxSetCurrent", CUDA_ERROR_INVALID_CONTEXT, "ctx=%p", ctx);
	set_current(c);
	return fd_ret("cuCtxSetCurrent", CUDA_SUCCESS, "ctx=%p", ctx);
}

FD_EXPORT CUresult cuCtxGetCurrent(void **pctx)
{
	if (!pctx)
		return fd_ret("cuCtxGetCurrent", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!fd_initialised())
		return fd_ret("cuCtxGetCurrent", CUDA_ERROR_NOT_INITIALIZED, NULL);
	*pctx = fd_current_ctx();
	return fd_ret("cuCtxGetCurrent", CUDA_SUCCESS, "ctx=%p", *pctx);
}

FD_EXPORT CUresult cuCtxPushCurrent_v2(void *ctx)
{
	struct fd_ctx *c = fd_ctx_check(ctx);

	if (!c)
		return fd_ret("cuCtxPushCurrent_v2", CUDA_ERROR_INVALID_CONTEXT, "ctx=%p", ctx);
	if (ctx_depth == CTX_STACK)
		return fd_ret("cuCtxPushCurrent_v2", CUDA_ERROR_OUT_OF_MEMORY, "ctx=%p", ctx);
	ctx_stack[ctx_depth++] = c;
	return fd_ret("cuCtxPushCurrent_v2", CUDA_SUCCESS, "ctx=%p", ctx);
}

FD_EXPORT CUresult cuCtxPopCurrent_v2(void **pctx)
{
	struct fd_ctx *c = fd_current_ctx();

	if (!c)
		return fd_ret("cuCtxPopCurrent_v2", CUDA_ERROR_INVALID_CONTEXT, NULL);
	ctx_depth--;
	if (pctx)
		*pctx = c;
	return fd_ret("cuCtxPopCurrent_v2", CUDA_SUCCESS, "ctx=%p", (void *)c);
}

FD_EXPORT CUresult cuCtxGetDevice(CUdevice *dev)
{
	struct fd_ctx *c = fd_current_ctx();

	if (!dev)
		return fd_ret("cuCtxGetDevice", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!c)
		return fd_ret("cuCtxGetDevice", CUDA_ERROR_INVALID_CONTEXT, NULL);
	*dev = c->dev;
	return fd_ret("cuCtxGetDevice", CUDA_SUCCESS, "dev=%d", *dev);
}

FD_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *dev, void *ctx)
{
	struct fd_ctx *c = ctx ? fd_ctx_check(ctx) : fd_current_ctx();

	if (!dev)
		return fd_ret("cuCtxGetDevice_v2", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!c)
		return fd_ret("cuCtxGetDevice_v2", CUDA_ERROR_INVALID_CONTEXT, "ctx=%p", ctx);
	*dev = c->dev;
	return fd_ret("cuCtxGetDevice_v2", CUDA_SUCCESS, "ctx=%p dev=%d", ctx, *dev);
}

FD_EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
	struct fd_ctx *c = fd_current_ctx();

	if (!flags || !c)
		return fd_ret("cuCtxGetFlags", CUDA_ERROR_INVALID_CONTEXT, NULL);
	*flags = c->flags;
	return fd_ret("cuCtxGetFlags", CUDA_SUCCESS, "flags=%u", *flags);
}

FD_EXPORT CUresult cuCtxGetApiVersion(void *ctx, unsigned int *version)
{
	if (!version)
		return fd_ret("cuCtxGetApiVersion", CUDA_ERROR_INVALID_VALUE, NULL);
	/* Every context speaks the v2 API: 3020, as the driver reports. */
	*version = 3020;
	return fd_ret("cuCtxGetApiVersion", CUDA_SUCCESS, "ctx=%p", ctx);
}

FD_EXPORT CUresult cuCtxGetLimit(size_t *value, int limit)
{
	if (!value || limit < 0 || (size_t)limit >= N_LIMITS)
		return fd_ret("cuCtxGetLimit", CUDA_ERROR_INVALID_VALUE, "limit=%d", limit);
	*value = limit_defaults[limit];
	return fd_ret("cuCtxGetLimit", CUDA_SUCCESS, "limit=%d value=%zu", limit, *value);
}

FD_EXPORT CUresult cuCtxSetLimit(int limit, size_t value)
{
	if (limit < 0 || (size_t)limit >= N_LIMITS)
		return fd_ret("cuCtxSetLimit", CUDA_ERROR_INVALID_VALUE, "limit=%d", limit);
	return fd_ret("cuCtxSetLimit", CUDA_SUCCESS, "limit=%d value=%zu", limit, value);
}

FD_EXPORT CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
	/* Turing: two priorities, 0 (lowest) and -1. */
	if (least)
		*least = 0;
	if (greatest)
		*greatest = -1;
	return fd_ret("cuCtxGetStreamPriorityRange", CUDA_SUCCESS, NULL);
}

FD_EXPORT CUresult cuCtxGetCacheConfig(int *config)
{
	if (!config)
		return fd_ret("cuCtxGetCacheConfig", CUDA_ERROR_INVALID_VALUE, NULL);
	*config = 0;	/* CU_FUNC_CACHE_PREFER_NONE */
	return fd_ret("cuCtxGetCacheConfig", CUDA_SUCCESS, NULL);
}

FD_EXPORT CUresult cuCtxSetCacheConfig(int config)
{
	return fd_ret("cuCtxSetCacheConfig", CUDA_SUCCESS, "config=%d", config);
}
