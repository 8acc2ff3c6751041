/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CUDA launch family (probe_family.h): how long kernel and graph
 * launches and the host's synchronisations take.  Its programs
 * (cuda_trace.bpf.c) time each call and add it to its process's per-CPU
 * histograms (bpf/slot_hist.h), which the loader drains before each
 * publish (slot_hist.h); a process without a slot sends each call as a
 * record.  Root.
 */
#include <errno.h>

#include "bpf/cuda_trace.skel.h"
#include "bpf/probe_abi.h"
#include "bpf/slot_hist_abi.h"
#include "collector/probes/decode.h"
#include "collector/probes/family_rows.h"
#include "collector/probes/slot_hist.h"

PROBE_SKELETON(cuda_trace)

/* The per-CPU launch histograms, sized within their memory budget. */
static int cuda_trace_configure(void *skel, struct probes *p)
{
	struct cuda_trace_bpf *s = skel;

	p->lh_slots = slot_hist_slots(p->ncpu, p->opts.process_slots);
	bpf_map__set_max_entries(s->maps.zt_hist, SLOT_HIST_MAP_SLOTS(p->lh_slots) * LH_FAMILIES);
	bpf_map__set_max_entries(s->maps.zt_slots, SLOT_HIST_MAP_SLOTS(p->lh_slots));
	bpf_map__set_max_entries(s->maps.zt_free, SLOT_HIST_MAP_SLOTS(p->lh_slots));
	return 0;
}

#define LAUNCH(lib, sym, entry, ret)	PAIR(PROBE_OBJ_CUDA_TRACE, lib, sym, entry, ret)

static const struct probe_attach attach[] = {
	/* Kernel launches (_ptsz: per-thread default stream) and graph launches. */
	LAUNCH(DRV, "cuLaunchKernel",		"zt_launch",	"zt_launch_ret"),
	LAUNCH(DRV, "cuLaunchKernel_ptsz",	"zt_launch",	"zt_launch_ret"),
	LAUNCH(DRV, "cuLaunchKernelEx",		"zt_launch",	"zt_launch_ret"),
	LAUNCH(DRV, "cuLaunchKernelEx_ptsz",	"zt_launch",	"zt_launch_ret"),
	LAUNCH(RT,  "cudaLaunchKernel",		"zt_launch",	"zt_launch_ret"),
	LAUNCH(RT,  "cudaLaunchKernel_ptsz",	"zt_launch",	"zt_launch_ret"),
	LAUNCH(RT,  "cudaLaunchKernelExC",	"zt_launch",	"zt_launch_ret"),
	LAUNCH(RT,  "cudaLaunchKernelExC_ptsz",	"zt_launch",	"zt_launch_ret"),
	LAUNCH(DRV, "cuLaunchCooperativeKernel", "zt_launch",	"zt_launch_ret"),
	LAUNCH(DRV, "cuLaunchCooperativeKernel_ptsz", "zt_launch", "zt_launch_ret"),
	LAUNCH(RT,  "cudaLaunchCooperativeKernel", "zt_launch",	"zt_launch_ret"),
	LAUNCH(RT,  "cudaLaunchCooperativeKernel_ptsz", "zt_launch", "zt_launch_ret"),
	LAUNCH(DRV, "cuGraphLaunch",		"zt_graph",	"zt_graph_ret"),
	LAUNCH(DRV, "cuGraphLaunch_ptsz",	"zt_graph",	"zt_graph_ret"),
	LAUNCH(RT,  "cudaGraphLaunch",		"zt_graph",	"zt_graph_ret"),
	LAUNCH(RT,  "cudaGraphLaunch_ptsz",	"zt_graph",	"zt_graph_ret"),

	/* Host waits for the GPU: stream and device synchronisation. */
	LAUNCH(RT,  "cudaStreamSynchronize",	"zt_sync",	"zt_sync_ret"),
	LAUNCH(RT,  "cudaStreamSynchronize_ptsz", "zt_sync",	"zt_sync_ret"),
	LAUNCH(RT,  "cudaDeviceSynchronize",	"zt_sync",	"zt_sync_ret"),
	LAUNCH(DRV, "cuStreamSynchronize",	"zt_sync",	"zt_sync_ret"),
	LAUNCH(DRV, "cuStreamSynchronize_ptsz",	"zt_sync",	"zt_sync_ret"),
	LAUNCH(DRV, "cuCtxSynchronize",		"zt_sync",	"zt_sync_ret"),
	LAUNCH(DRV, "cuCtxSynchronize_v2",	"zt_sync",	"zt_sync_ret"),
};

static int dec_latency(struct decode *d, const void *rec)
{
	const struct zev_latency *e = rec;

	if (e->family >= SHM_FAMILY_COUNT)
		return -EINVAL;
	agg_latency(d->agg, e->hdr.pid, (enum shm_family)e->family, e->hdr.ts_ns, e->ns);
	return 0;
}

static const struct probe_decoder decoders[] = {
	DECODER(ZEV_LATENCY,	zev_latency,	dec_latency),
};

PROBE_FAMILY(cuda_trace, cuda_trace_configure, NULL, NULL);
