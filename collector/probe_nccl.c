/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The NCCL module (bpf/nccl.bpf.c): collectives and point-to-point calls,
 * communicator creation, and the synchronisation calls of the driver and
 * runtime that end an NCCL wait.  Root-only.
 */
#include <errno.h>

#include "bpf/nccl.skel.h"
#include "collector/probe_module.h"

#define DRV	PROBE_LIB_CUDA
#define RT	PROBE_LIB_CUDART
#define NCCL	PROBE_LIB_NCCL

static const struct probe_uprobe nccl_uprobes[] = {
	{ NCCL, "ncclAllReduce",	"zn_all_reduce",	"zn_coll_ret" },
	{ NCCL, "ncclAllGather",	"zn_all_gather",	"zn_coll_ret" },
	{ NCCL, "ncclReduceScatter",	"zn_reduce_scatter",	"zn_coll_ret" },
	{ NCCL, "ncclBroadcast",	"zn_broadcast",		"zn_coll_ret" },
	{ NCCL, "ncclReduce",		"zn_reduce",		"zn_coll_ret" },
	{ NCCL, "ncclSend",		"zn_send",		"zn_coll_ret" },
	{ NCCL, "ncclRecv",		"zn_recv",		"zn_coll_ret" },
	{ NCCL, "ncclCommInitRank",	"zn_init_rank",		"zn_init_ret" },
	{ NCCL, "ncclCommInitRankConfig", "zn_init_rank",	"zn_init_ret" },
	{ NCCL, "ncclCommInitAll",	"zn_init_all",		"zn_init_ret" },
	{ RT,   "cudaStreamSynchronize",	NULL,	"zn_sync_ret" },
	{ RT,   "cudaStreamSynchronize_ptsz",	NULL,	"zn_sync_ret" },
	{ RT,   "cudaDeviceSynchronize",	NULL,	"zn_sync_ret" },
	{ DRV,  "cuStreamSynchronize",		NULL,	"zn_sync_ret" },
	{ DRV,  "cuStreamSynchronize_ptsz",	NULL,	"zn_sync_ret" },
	{ DRV,  "cuCtxSynchronize",		NULL,	"zn_sync_ret" },
};

static int nccl_open(void **skel, struct bpf_object **obj, const struct probes_opts *opts)
{
	struct nccl_bpf *s = nccl_bpf__open();

	(void)opts;
	if (!s)
		return -errno;
	*skel = s;
	*obj = s->obj;
	return 0;
}

static int nccl_load(void *skel)
{
	return nccl_bpf__load(skel);
}

static void nccl_destroy(void *skel)
{
	nccl_bpf__destroy(skel);
}

const struct probe_module probe_nccl_module = {
	.name = "nccl",
	.open = nccl_open,
	.load = nccl_load,
	.destroy = nccl_destroy,
	.uprobes = nccl_uprobes,
	.n_uprobes = sizeof(nccl_uprobes) / sizeof(nccl_uprobes[0]),
};
