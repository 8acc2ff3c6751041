/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CUDA launch module (bpf/cuda_trace.bpf.c): every kernel-launch entry
 * point of the driver and the runtime, per-thread-stream (_ptsz) forms
 * included, and the graph launches in their own series.  Root-only.
 */
#include <errno.h>

#include "bpf/cuda_trace.skel.h"
#include "collector/probe_module.h"

#define DRV	PROBE_LIB_CUDA
#define RT	PROBE_LIB_CUDART

static const struct probe_uprobe cuda_trace_uprobes[] = {
	{ DRV, "cuLaunchKernel",		"zt_launch", "zt_launch_ret" },
	{ DRV, "cuLaunchKernel_ptsz",		"zt_launch", "zt_launch_ret" },
	{ DRV, "cuLaunchKernelEx",		"zt_launch", "zt_launch_ret" },
	{ DRV, "cuLaunchKernelEx_ptsz",		"zt_launch", "zt_launch_ret" },
	{ RT,  "cudaLaunchKernel",		"zt_launch", "zt_launch_ret" },
	{ RT,  "cudaLaunchKernel_ptsz",		"zt_launch", "zt_launch_ret" },
	{ RT,  "cudaLaunchKernelExC",		"zt_launch", "zt_launch_ret" },
	{ RT,  "cudaLaunchKernelExC_ptsz",	"zt_launch", "zt_launch_ret" },
	{ DRV, "cuGraphLaunch",			"zt_graph", "zt_graph_ret" },
	{ DRV, "cuGraphLaunch_ptsz",		"zt_graph", "zt_graph_ret" },
	{ RT,  "cudaGraphLaunch",		"zt_graph", "zt_graph_ret" },
	{ RT,  "cudaGraphLaunch_ptsz",		"zt_graph", "zt_graph_ret" },
};

static int cuda_trace_open(void **skel, struct bpf_object **obj, const struct probes_opts *opts)
{
	struct cuda_trace_bpf *s = cuda_trace_bpf__open();

	(void)opts;
	if (!s)
		return -errno;
	*skel = s;
	*obj = s->obj;
	return 0;
}

static int cuda_trace_load(void *skel)
{
	return cuda_trace_bpf__load(skel);
}

static void cuda_trace_destroy(void *skel)
{
	cuda_trace_bpf__destroy(skel);
}

const struct probe_module probe_cuda_trace_module = {
	.name = "cuda_trace",
	.open = cuda_trace_open,
	.load = cuda_trace_load,
	.destroy = cuda_trace_destroy,
	.uprobes = cuda_trace_uprobes,
	.n_uprobes = sizeof(cuda_trace_uprobes) / sizeof(cuda_trace_uprobes[0]),
};
