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
#include "collector/probes/cuda_calls.h"
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

/* Each of the family's three timings: a kernel launch, a graph launch, a host wait. */
#define KERNEL(lib, sym)	PAIR(PROBE_OBJ_CUDA_TRACE, lib, sym, "zt_launch", "zt_launch_ret")
#define GRAPH(lib, sym)		PAIR(PROBE_OBJ_CUDA_TRACE, lib, sym, "zt_graph", "zt_graph_ret")
#define SYNC(lib, sym)		PAIR(PROBE_OBJ_CUDA_TRACE, lib, sym, "zt_sync", "zt_sync_ret")

static const struct probe_attach attach[] = {
	CUDA_KERNEL_LAUNCHES(KERNEL),
	CUDA_GRAPH_LAUNCHES(GRAPH),
	/* Host waits for the GPU: stream and device synchronisation. */
	CUDA_STREAM_SYNCS(SYNC),
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
