// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * GPU memory per (process, device) from the CUDA driver and runtime
 * allocation calls, and the calling thread's current device from
 * cudaSetDevice and the driver's context calls.  Only successful calls
 * allocate or free; the collector pairs frees with their allocation.
 * Uprobes attached by zernel-collector (root) to every libcuda/libcudart.
 *
 * Counted: cuMemAlloc_v2, cuMemAllocAsync(_ptsz), cuMemAllocFromPoolAsync
 * (_ptsz), cuMemAllocPitch_v2 (pitch x height bytes), cudaMalloc and their
 * frees (cuMemFree_v2, cuMemFreeAsync(_ptsz), cudaFree); cuMemCreate and
 * cuMemRelease (VMM, PyTorch's expandable segments), device memory only.
 * A runtime call that reaches the driver on the same thread counts once,
 * as the runtime call.  The device is the allocation's own location for
 * cuMemCreate, else the calling thread's current device: cudaSetDevice,
 * or the device of its current context (cuCtxSetCurrent,
 * cuCtxPushCurrent_v2, cuCtxGetCurrent) as cuDevicePrimaryCtxRetain,
 * cuCtxCreate_v2/v3/v4 and cuCtxGetDevice(_v2) tell it, else device 0 (the
 * CUDA default).  The thread's device lives in task-local storage: it dies
 * with the thread, and an exec forgets it (collector/probes/watch/watch.bpf.c).  Not
 * followed: cuCtxPopCurrent (the previous context is not known), and
 * contexts made before the collector started until the program asks the
 * driver for its current context or device.
 *
 * A pool allocation counts on the calling thread's current device, not
 * on the pool's own (a pool of another device is not followed).  What a
 * pool keeps after its allocations are freed is followed from the calls
 * that name pools (cuDeviceGetDefaultMemPool, cuDeviceGetMemPool,
 * cuDeviceSetMemPool, cuMemPoolSetAttribute's release threshold,
 * cuMemPoolTrimTo, cuMemPoolDestroy); the synchronisations at which a pool gives memory
 * back are collector/probes/nccl/nccl.bpf.c's (collector/probes/gpu_mem/mempool.h).
 *
 * Not counted: cuMemAllocManaged, cuMemHostAlloc and other host or
 * managed memory, IPC imports
 * (cuIpcOpenMemHandle), cuMemMap of handles made elsewhere, and memory
 * that reaches the driver through internal, unexported entry points.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/watch.h"
#include "bpf/calls.h"
#include "bpf/pool_users.h"

/* Call classes: allocation calls nest in each other, context calls too. */
#define CLS_POOL	0	/* the calls that name a memory pool */
#define CLS_MEM		1
#define CLS_CTX		2	/* cudaSetDevice */
#define CLS_DRV_CTX	3	/* the driver's context calls, which it may make */

/* What a saved call is, for the shared return programs. */
enum mem_fn {
	FN_ALLOC = 1,		/* a0 out pointer, a1 bytes */
	FN_CREATE,		/* a0 out handle, a1 bytes, a2 device (or -1) */
	FN_FREE,		/* a0 pointer */
	FN_RELEASE,		/* a0 handle */
	FN_CTX_MADE,		/* a0 CUcontext *, a1 device: context created */
	FN_CTX_RETAIN,		/* a0 CUcontext *, a1 device: primary context */
	FN_CTX_CURRENT,		/* a0 CUcontext made current */
	FN_SET_DEVICE,		/* a1 device */
	FN_ALLOC_PITCH,		/* a0 out pointer, a1 height, a2 out pitch */
	FN_CTX_GET,		/* a0 CUcontext *: the current context */
	FN_CTX_GET_DEVICE,	/* a0 CUdevice *, a2 context (0: the current one) */
	FN_ALLOC_ASYNC,		/* as FN_ALLOC, a2 the pool (0: the device's current one) */
	/*
	 * A call that names a pool: fn is FN_POOL + its enum zmem_pool_op, a0
	 * the pool (DEFAULT, CURRENT: where the call writes it), a1 the bytes,
	 * a2 the device (-1: the thread's current one).
	 */
	FN_POOL = 0x100,
};

/* CUmemPool_attribute's release threshold, a cuuint64_t. */
#define CU_MEMPOOL_ATTR_RELEASE_THRESHOLD	4

#define CU_MEM_LOCATION_TYPE_DEVICE	1

/* (process, CUcontext) -> device, learnt when the context is created or retained. */
struct ctx_key {
	__u32 tgid;
	__u32 pad;
	__u64 ctx;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct ctx_key);
	__type(value, __s32);
} zm_ctx_dev SEC(".maps");

static __always_inline void mem_enter(__u32 cls, __u32 fn, __u64 a0, __u64 a1, __u64 a2)
{
	zc_enter(SHM_WATCH_CUDA, cls, fn, a0, a1, a2);
}

/* A program name(params) that saves the call fn of class cls (a0, a1, a2) for its return. */
#define ZM_ENTER_PROG(name, cls, fn, a0, a1, a2, params...)	\
	ZC_ENTER_PROG(name, SHM_WATCH_CUDA, cls, fn, a0, a1, a2, ##params)

/* cuMemAlloc_v2(CUdeviceptr *, size_t), cuMemAllocAsync(.., stream), cudaMalloc(void **, size_t) */
ZM_ENTER_PROG(zm_alloc, CLS_MEM, FN_ALLOC, (__u64)dptr, size, 0, void *dptr, __u64 size)

/* cuMemAllocAsync(CUdeviceptr *, size_t, stream): from the device's current pool */
ZM_ENTER_PROG(zm_alloc_async, CLS_MEM, FN_ALLOC_ASYNC, (__u64)dptr, size, 0, void *dptr, __u64 size)

/* cuMemAllocFromPoolAsync(CUdeviceptr *, size_t, CUmemoryPool, stream) */
ZM_ENTER_PROG(zm_alloc_pool, CLS_MEM, FN_ALLOC_ASYNC, (__u64)dptr, size, pool,
	      void *dptr, __u64 size, __u64 pool)

/* cuMemAllocPitch_v2(CUdeviceptr *, size_t *pitch, size_t width, size_t height, unsigned int) */
ZM_ENTER_PROG(zm_alloc_pitch, CLS_MEM, FN_ALLOC_PITCH, (__u64)dptr, height, (__u64)pitch,
	      void *dptr, void *pitch, __u64 width, __u64 height)

/* cuMemCreate(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, flags) */
SEC("uprobe")
int BPF_KPROBE(zm_create, void *handle, __u64 size, void *prop)
{
	/* CUmemAllocationProp: type, requestedHandleTypes, location {type, id} */
	__s32 loc[2] = {};
	__s64 dev = -1;

	if (prop && bpf_probe_read_user(loc, sizeof(loc), (char *)prop + 8) == 0 &&
	    loc[0] == CU_MEM_LOCATION_TYPE_DEVICE)
		dev = loc[1];
	mem_enter(CLS_MEM, FN_CREATE, (__u64)handle, size, (__u64)dev);
	return 0;
}

/* cuMemFree_v2(ptr), cuMemFreeAsync(ptr, stream), cudaFree(ptr) */
ZM_ENTER_PROG(zm_free, CLS_MEM, FN_FREE, ptr, 0, 0, __u64 ptr)

/* cuMemRelease(handle) */
ZM_ENTER_PROG(zm_release, CLS_MEM, FN_RELEASE, handle, 0, 0, __u64 handle)

static __always_inline void emit_free(__u64 id, const struct zc_call *c)
{
	struct zev_mem_free *e = zw_reserve(sizeof(*e), ZEV_MEM_FREE, id);

	if (!e)
		return;
	e->space = c->fn == FN_RELEASE ? ZMEM_SPACE_VMM : ZMEM_SPACE_PTR;
	e->pad = 0;
	e->addr = c->a0;
	zw_submit(e);
}

static __always_inline void emit_alloc(__u64 id, const struct zc_call *c, __u32 dev, __u64 addr,
				       __u64 bytes)
{
	struct zev_mem_alloc *e = zw_reserve(sizeof(*e), ZEV_MEM_ALLOC, id);

	if (!e)
		return;
	e->gpu = dev;
	e->space = c->fn == FN_CREATE ? ZMEM_SPACE_VMM : ZMEM_SPACE_PTR;
	e->addr = addr;
	e->bytes = bytes;
	e->pooled = c->fn == FN_ALLOC_ASYNC;
	e->pad = 0;
	e->pool = c->fn == FN_ALLOC_ASYNC ? c->a2 : 0;
	zw_submit(e);
}

static __always_inline void emit_fail(__u64 id, const struct zc_call *c, __u32 dev, int ret)
{
	struct zev_mem_fail *e = zw_reserve(sizeof(*e), ZEV_MEM_FAIL, id);

	if (!e)
		return;
	e->gpu = dev;
	e->ret = ret;
	/* A pitched allocation's asked size is width x height: not kept. */
	e->bytes = c->fn == FN_ALLOC_PITCH ? 0 : c->a1;
	zw_submit(e);
}

SEC("uretprobe")
int BPF_KRETPROBE(zm_mem_ret, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct zc_call c;
	__u64 val = 0, bytes, pitch = 0;
	__s64 dev;

	if (!zc_exit(CLS_MEM, &c))
		return 0;
	dev = c.fn == FN_CREATE ? (__s64)c.a2 : zw_current_device(id);
	if (dev < 0)
		return 0;	/* not device memory */
	if (c.fn == FN_FREE || c.fn == FN_RELEASE) {
		if (ret == 0 && c.a0 != 0)
			emit_free(id, &c);
		return 0;
	}
	if (ret != 0) {
		emit_fail(id, &c, (__u32)dev, ret);
		return 0;
	}
	if (!c.a0 || bpf_probe_read_user(&val, sizeof(val), (void *)c.a0) != 0)
		return 0;	/* cannot tell what was allocated */
	bytes = c.a1;
	if (c.fn == FN_ALLOC_PITCH) {
		if (!c.a2 || bpf_probe_read_user(&pitch, sizeof(pitch), (void *)c.a2) != 0)
			return 0;
		bytes = pitch * c.a1;
	}
	emit_alloc(id, &c, (__u32)dev, val, bytes);
	if (c.fn == FN_ALLOC_ASYNC) {
		__u32 tgid = id >> 32;
		__u8 one = 1;

		if (!bpf_map_lookup_elem(&zm_pool_users, &tgid))
			bpf_map_update_elem(&zm_pool_users, &tgid, &one, BPF_ANY);
	}
	return 0;
}

/*
 * A call that names a pool, op of enum zmem_pool_op: its pool, bytes and
 * device (-1: the thread's current one).
 */
#define ZM_POOL_PROG(name, op, pool, bytes, dev, params...)	\
	ZM_ENTER_PROG(name, CLS_POOL, FN_POOL + (op), pool, bytes, (__u64)(__s64)(dev), ##params)

/* cuDeviceGetDefaultMemPool(CUmemoryPool *, CUdevice) */
ZM_POOL_PROG(zm_pool_default, ZMEM_POOL_DEFAULT, (__u64)ppool, 0, dev, void *ppool, int dev)

/* cuDeviceGetMemPool(CUmemoryPool *, CUdevice) */
ZM_POOL_PROG(zm_pool_current, ZMEM_POOL_CURRENT, (__u64)ppool, 0, dev, void *ppool, int dev)

/* cuDeviceSetMemPool(CUdevice, CUmemoryPool) */
ZM_POOL_PROG(zm_pool_set, ZMEM_POOL_SET, pool, 0, dev, int dev, __u64 pool)

/* cuMemPoolSetAttribute(CUmemoryPool, CUmemPool_attribute, void *value) */
SEC("uprobe")
int BPF_KPROBE(zm_pool_attr, __u64 pool, int attr, void *value)
{
	__u64 bytes;

	if (attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD || !value ||
	    bpf_probe_read_user(&bytes, sizeof(bytes), value) != 0)
		return 0;
	mem_enter(CLS_POOL, FN_POOL + ZMEM_POOL_THRESHOLD, pool, bytes, (__u64)-1);
	return 0;
}

/* cuMemPoolTrimTo(CUmemoryPool, size_t minBytesToKeep) */
ZM_POOL_PROG(zm_pool_trim, ZMEM_POOL_TRIM, pool, keep, -1, __u64 pool, __u64 keep)

/* cuMemPoolDestroy(CUmemoryPool) */
ZM_POOL_PROG(zm_pool_destroy, ZMEM_POOL_DESTROY, pool, 0, -1, __u64 pool)

SEC("uretprobe")
int BPF_KRETPROBE(zm_pool_ret, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct zev_mem_pool *e;
	struct zc_call c;
	__u64 pool;
	__u32 op;

	if (!zc_exit(CLS_POOL, &c) || ret != 0 || c.fn < FN_POOL)
		return 0;
	op = c.fn - FN_POOL;
	pool = c.a0;
	/* The getters return the pool through their first argument. */
	if ((op == ZMEM_POOL_DEFAULT || op == ZMEM_POOL_CURRENT) &&
	    (!c.a0 || bpf_probe_read_user(&pool, sizeof(pool), (void *)c.a0) != 0))
		return 0;
	if (!pool)
		return 0;
	e = zw_reserve(sizeof(*e), ZEV_MEM_POOL, id);
	if (!e)
		return 0;
	e->op = op;
	e->dev = (__s64)c.a2 >= 0 ? (__s32)c.a2 : zw_current_device(id);
	e->pool = pool;
	e->bytes = c.a1;
	zw_submit(e);
	return 0;
}

/* cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) */
ZM_ENTER_PROG(zm_ctx_retain, CLS_DRV_CTX, FN_CTX_RETAIN, (__u64)pctx, (__u64)(__s64)dev, 0,
	      void *pctx, int dev)

/* cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) */
ZM_ENTER_PROG(zm_ctx_create2, CLS_DRV_CTX, FN_CTX_MADE, (__u64)pctx, (__u64)(__s64)dev, 0,
	      void *pctx, unsigned int flags, int dev)

/* cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *, int n, unsigned int flags, CUdevice dev) */
ZM_ENTER_PROG(zm_ctx_create3, CLS_DRV_CTX, FN_CTX_MADE, (__u64)pctx, (__u64)(__s64)dev, 0,
	      void *pctx, void *params, int n, unsigned int flags, int dev)

/* cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *, unsigned int flags, CUdevice dev) */
ZM_ENTER_PROG(zm_ctx_create4, CLS_DRV_CTX, FN_CTX_MADE, (__u64)pctx, (__u64)(__s64)dev, 0,
	      void *pctx, void *params, unsigned int flags, int dev)

/* cuCtxSetCurrent(CUcontext), cuCtxPushCurrent_v2(CUcontext) */
ZM_ENTER_PROG(zm_ctx_current, CLS_DRV_CTX, FN_CTX_CURRENT, (__u64)ctx_, 0, 0, void *ctx_)

/* cuCtxGetCurrent(CUcontext *pctx) */
ZM_ENTER_PROG(zm_ctx_get, CLS_DRV_CTX, FN_CTX_GET, (__u64)pctx, 0, 0, void *pctx)

/* cuCtxGetDevice(CUdevice *dev): of the current context */
ZM_ENTER_PROG(zm_ctx_get_device, CLS_DRV_CTX, FN_CTX_GET_DEVICE, (__u64)pdev, 0, 0, void *pdev)

/* cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx): ctx NULL is the current one */
ZM_ENTER_PROG(zm_ctx_get_device2, CLS_DRV_CTX, FN_CTX_GET_DEVICE, (__u64)pdev, 0, (__u64)ctx_,
	      void *pdev, void *ctx_)

/* cudaSetDevice(int device) */
ZM_ENTER_PROG(zm_set_device, CLS_CTX, FN_SET_DEVICE, 0, (__u64)(__s64)dev, 0, int dev)

static __always_inline struct zw_thread_gpu *thread_gpu(void)
{
	return bpf_task_storage_get(&zw_curdev, bpf_get_current_task_btf(), 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
}

static __always_inline void thread_set_dev(struct zw_thread_gpu *t, __s32 dev)
{
	if (dev < 0)
		return;
	t->dev = dev;
	t->has_dev = 1;
}

/* cudaSetDevice: the runtime's own word for the thread's device. */
SEC("uretprobe")
int BPF_KRETPROBE(zm_ctx_ret, int ret)
{
	struct zw_thread_gpu *t;
	struct zc_call c;

	if (!zc_exit(CLS_CTX, &c) || ret != 0 || c.fn != FN_SET_DEVICE)
		return 0;
	t = thread_gpu();
	if (t)
		thread_set_dev(t, (__s32)c.a1);
	return 0;
}

/*
 * The driver's context calls.  A context's device is learnt where the
 * driver says it (created, retained, asked for), and the thread's current
 * context where it is set or asked for; whichever comes second sets the
 * thread's device.  NVIDIA's runtime gets its primary contexts through a
 * private entry point, makes one current, and only then retains it or asks
 * for its device: the order this follows.
 */
SEC("uretprobe")
int BPF_KRETPROBE(zm_drv_ctx_ret, int ret)
{
	struct ctx_key key = { .tgid = bpf_get_current_pid_tgid() >> 32 };
	struct zw_thread_gpu *t;
	struct zc_call c;
	__s32 dev = -1, *known;
	__u64 cur = 0;

	if (!zc_exit(CLS_DRV_CTX, &c) || ret != 0)
		return 0;
	t = thread_gpu();
	if (!t)
		return 0;
	switch (c.fn) {
	case FN_CTX_RETAIN:
	case FN_CTX_MADE:
		if (!c.a0 || bpf_probe_read_user(&key.ctx, sizeof(key.ctx), (void *)c.a0) != 0)
			return 0;
		dev = (__s32)c.a1;
		bpf_map_update_elem(&zm_ctx_dev, &key, &dev, BPF_ANY);
		if (c.fn == FN_CTX_MADE)
			t->ctx = key.ctx;	/* a created context is made current */
		if (t->ctx == key.ctx)
			thread_set_dev(t, dev);
		return 0;
	case FN_CTX_CURRENT:
	case FN_CTX_GET:
		cur = c.a0;
		if (c.fn == FN_CTX_GET &&
		    (!c.a0 || bpf_probe_read_user(&cur, sizeof(cur), (void *)c.a0) != 0))
			return 0;
		t->ctx = cur;
		key.ctx = cur;
		known = cur ? bpf_map_lookup_elem(&zm_ctx_dev, &key) : NULL;
		if (known)
			thread_set_dev(t, *known);
		return 0;
	case FN_CTX_GET_DEVICE:
		if (!c.a0 || bpf_probe_read_user(&dev, sizeof(dev), (void *)c.a0) != 0)
			return 0;
		key.ctx = c.a2 ? c.a2 : t->ctx;
		if (key.ctx)
			bpf_map_update_elem(&zm_ctx_dev, &key, &dev, BPF_ANY);
		if (!c.a2 || c.a2 == t->ctx)
			thread_set_dev(t, dev);
		return 0;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
