// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * GPU memory per (process, device) from the CUDA driver and runtime
 * allocation calls, and the calling thread's current device from
 * cudaSetDevice and the driver's context calls.  Only successful calls
 * allocate or free; the collector pairs frees with their allocation.
 * Uprobes attached by zernel-collector (root) to every libcuda/libcudart.
 *
 * Counted: cuMemAlloc_v2, cuMemAllocAsync(_ptsz), cudaMalloc and their
 * frees (cuMemFree_v2, cuMemFreeAsync(_ptsz), cudaFree); cuMemCreate and
 * cuMemRelease (VMM, PyTorch's expandable segments), device memory only.
 * A runtime call that reaches the driver on the same thread counts once,
 * as the runtime call.  The device is the allocation's own location for
 * cuMemCreate, else the calling thread's current device: cudaSetDevice,
 * cuCtxSetCurrent / cuCtxPushCurrent_v2 of a context whose device was seen
 * at cuDevicePrimaryCtxRetain / cuCtxCreate_v2/v3/v4, else device 0 (the
 * CUDA default).  Not followed: cuCtxPopCurrent (the previous context is
 * not known) and contexts made before the collector started.
 *
 * Not counted: cuMemAllocManaged, cuMemAllocPitch, cuMemHostAlloc and
 * other host or managed memory, cuMemAllocFromPoolAsync, IPC imports
 * (cuIpcOpenMemHandle), cuMemMap of handles made elsewhere, and memory
 * that reaches the driver through internal, unexported entry points.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/watch.h"
#include "bpf/calls.h"

/* Call classes: allocation calls nest in each other, context calls too. */
#define CLS_MEM		1
#define CLS_CTX		2

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
};

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

/* cuMemAlloc_v2(CUdeviceptr *, size_t), cuMemAllocAsync(.., stream), cudaMalloc(void **, size_t) */
SEC("uprobe")
int BPF_KPROBE(zm_alloc, void *dptr, __u64 size)
{
	mem_enter(CLS_MEM, FN_ALLOC, (__u64)dptr, size, 0);
	return 0;
}

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
SEC("uprobe")
int BPF_KPROBE(zm_free, __u64 ptr)
{
	mem_enter(CLS_MEM, FN_FREE, ptr, 0, 0);
	return 0;
}

/* cuMemRelease(handle) */
SEC("uprobe")
int BPF_KPROBE(zm_release, __u64 handle)
{
	mem_enter(CLS_MEM, FN_RELEASE, handle, 0, 0);
	return 0;
}

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

static __always_inline void emit_alloc(__u64 id, const struct zc_call *c, __u32 dev, __u64 addr)
{
	struct zev_mem_alloc *e = zw_reserve(sizeof(*e), ZEV_MEM_ALLOC, id);

	if (!e)
		return;
	e->gpu = dev;
	e->space = c->fn == FN_CREATE ? ZMEM_SPACE_VMM : ZMEM_SPACE_PTR;
	e->addr = addr;
	e->bytes = c->a1;
	zw_submit(e);
}

static __always_inline void emit_fail(__u64 id, const struct zc_call *c, __u32 dev, int ret)
{
	struct zev_mem_fail *e = zw_reserve(sizeof(*e), ZEV_MEM_FAIL, id);

	if (!e)
		return;
	e->gpu = dev;
	e->ret = ret;
	e->bytes = c->a1;
	zw_submit(e);
}

SEC("uretprobe")
int BPF_KRETPROBE(zm_mem_ret, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct zc_call c;
	__u64 val = 0;
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
	emit_alloc(id, &c, (__u32)dev, val);
	return 0;
}

/* cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) */
SEC("uprobe")
int BPF_KPROBE(zm_ctx_retain, void *pctx, int dev)
{
	mem_enter(CLS_CTX, FN_CTX_RETAIN, (__u64)pctx, (__u64)(__s64)dev, 0);
	return 0;
}

/* cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) */
SEC("uprobe")
int BPF_KPROBE(zm_ctx_create2, void *pctx, unsigned int flags, int dev)
{
	mem_enter(CLS_CTX, FN_CTX_MADE, (__u64)pctx, (__u64)(__s64)dev, 0);
	return 0;
}

/* cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *, int n, unsigned int flags, CUdevice dev) */
SEC("uprobe")
int BPF_KPROBE(zm_ctx_create3, void *pctx, void *params, int n, unsigned int flags, int dev)
{
	mem_enter(CLS_CTX, FN_CTX_MADE, (__u64)pctx, (__u64)(__s64)dev, 0);
	return 0;
}

/* cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *, unsigned int flags, CUdevice dev) */
SEC("uprobe")
int BPF_KPROBE(zm_ctx_create4, void *pctx, void *params, unsigned int flags, int dev)
{
	mem_enter(CLS_CTX, FN_CTX_MADE, (__u64)pctx, (__u64)(__s64)dev, 0);
	return 0;
}

/* cuCtxSetCurrent(CUcontext), cuCtxPushCurrent_v2(CUcontext) */
SEC("uprobe")
int BPF_KPROBE(zm_ctx_current, void *ctx_)
{
	mem_enter(CLS_CTX, FN_CTX_CURRENT, (__u64)ctx_, 0, 0);
	return 0;
}

/* cudaSetDevice(int device) */
SEC("uprobe")
int BPF_KPROBE(zm_set_device, int dev)
{
	mem_enter(CLS_CTX, FN_SET_DEVICE, 0, (__u64)(__s64)dev, 0);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(zm_ctx_ret, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct ctx_key key = { .tgid = id >> 32 };
	struct zc_call c;
	__s32 dev, *known;

	if (!zc_exit(CLS_CTX, &c) || ret != 0)
		return 0;
	dev = (__s32)c.a1;
	switch (c.fn) {
	case FN_CTX_RETAIN:
	case FN_CTX_MADE:
		if (!c.a0 || bpf_probe_read_user(&key.ctx, sizeof(key.ctx), (void *)c.a0) != 0)
			return 0;
		bpf_map_update_elem(&zm_ctx_dev, &key, &dev, BPF_ANY);
		if (c.fn == FN_CTX_RETAIN)
			return 0;	/* retained, not made current */
		break;
	case FN_CTX_CURRENT:
		key.ctx = c.a0;
		known = bpf_map_lookup_elem(&zm_ctx_dev, &key);
		if (!known)
			return 0;	/* a context we did not see created */
		dev = *known;
		break;
	case FN_SET_DEVICE:
		break;
	default:
		return 0;
	}
	if (dev < 0)
		return 0;
	bpf_map_update_elem(&zw_curdev, &id, &dev, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
