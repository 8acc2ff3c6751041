/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The GPU memory module (bpf/gpu_mem.bpf.c): which symbol gets which
 * program.  Allocation and free calls of the driver and the runtime, and
 * the calls that change the thread's current device.  Root-only.
 */
#include <errno.h>

#include "bpf/gpu_mem.skel.h"
#include "collector/probe_module.h"

#define DRV	PROBE_LIB_CUDA
#define RT	PROBE_LIB_CUDART

static const struct probe_uprobe gpu_mem_uprobes[] = {
	{ DRV, "cuMemAlloc_v2",		"zm_alloc",	"zm_mem_ret" },
	{ DRV, "cuMemAllocAsync",	"zm_alloc",	"zm_mem_ret" },
	{ DRV, "cuMemAllocAsync_ptsz",	"zm_alloc",	"zm_mem_ret" },
	{ DRV, "cuMemFree_v2",		"zm_free",	"zm_mem_ret" },
	{ DRV, "cuMemFreeAsync",	"zm_free",	"zm_mem_ret" },
	{ DRV, "cuMemFreeAsync_ptsz",	"zm_free",	"zm_mem_ret" },
	{ DRV, "cuMemCreate",		"zm_create",	"zm_mem_ret" },
	{ DRV, "cuMemRelease",		"zm_release",	"zm_mem_ret" },
	{ RT,  "cudaMalloc",		"zm_alloc",	"zm_mem_ret" },
	{ RT,  "cudaFree",		"zm_free",	"zm_mem_ret" },
	{ DRV, "cuDevicePrimaryCtxRetain", "zm_ctx_retain", "zm_ctx_ret" },
	{ DRV, "cuCtxCreate_v2",	"zm_ctx_create2", "zm_ctx_ret" },
	{ DRV, "cuCtxCreate_v3",	"zm_ctx_create3", "zm_ctx_ret" },
	{ DRV, "cuCtxCreate_v4",	"zm_ctx_create4", "zm_ctx_ret" },
	{ DRV, "cuCtxSetCurrent",	"zm_ctx_current", "zm_ctx_ret" },
	{ DRV, "cuCtxPushCurrent_v2",	"zm_ctx_current", "zm_ctx_ret" },
	{ RT,  "cudaSetDevice",		"zm_set_device", "zm_ctx_ret" },
};

static int gpu_mem_open(void **skel, struct bpf_object **obj, const struct probes_opts *opts)
{
	struct gpu_mem_bpf *s = gpu_mem_bpf__open();

	(void)opts;
	if (!s)
		return -errno;
	*skel = s;
	*obj = s->obj;
	return 0;
}

static int gpu_mem_load(void *skel)
{
	return gpu_mem_bpf__load(skel);
}

static void gpu_mem_destroy(void *skel)
{
	gpu_mem_bpf__destroy(skel);
}

const struct probe_module probe_gpu_mem_module = {
	.name = "gpu_mem",
	.open = gpu_mem_open,
	.load = gpu_mem_load,
	.destroy = gpu_mem_destroy,
	.uprobes = gpu_mem_uprobes,
	.n_uprobes = sizeof(gpu_mem_uprobes) / sizeof(gpu_mem_uprobes[0]),
};
