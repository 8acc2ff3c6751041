/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Python stall family (probe_family.h): the line of Python a training
 * thread stood at when it stalled.  The scheduler's switch program reads a
 * blocked or preempted thread's frames (bpf/pystack_walk.h, which both
 * objects include and whose maps they share); this object's programs
 * (pystack.bpf.c) read them at synchronisations that spin.  Each stall
 * comes as a record the event source names (the collector's
 * python/ reads the process's code objects through the parser child).
 * Root.
 */
#include <stdio.h>
#include <string.h>

#include "bpf/probe_abi.h"
#include "bpf/pystack.h"
#include "bpf/pystack.skel.h"
#include "collector/agg/agg_stall.h"
#include "collector/agg/agg_trace.h"
#include "collector/probes/cuda_calls.h"
#include "collector/probes/decode.h"
#include "collector/probes/family_rows.h"

PROBE_SKELETON(pystack)

void pystack_settings(const struct probes *p, __u64 *threshold_ns, __u32 *rate)
{
	if (p->opts.stall_threshold_ms)
		*threshold_ns = p->opts.stall_threshold_ms * 1000000ull;
	if (p->opts.stall_rate)
		*rate = p->opts.stall_rate;
}

/* Python stacks of syncs that spin: the stall threshold and rate bound. */
static int pystack_configure(void *skel, struct probes *p)
{
	struct pystack_bpf *s = skel;

	pystack_settings(p, &s->rodata->zp_threshold_ns, &s->rodata->zp_rate);
	return 0;
}

#define PY_SYNC(lib, sym)	PAIR(PROBE_OBJ_PYSTACK, lib, sym, "zp_sync", "zp_sync_ret")

static const struct probe_attach attach[] = {
	/*
	 * Python frames of synchronisations that spin (those of blocked and
	 * preempted threads are read by zs_switch).
	 */
	CUDA_STREAM_SYNCS(PY_SYNC),
	CUDA_EVENT_SYNCS(PY_SYNC),
};

/* "file:line in function", the end of the path kept when it is too long. */
static void site_name(const struct stall_frame *f, char *out, size_t len)
{
	char tail[SHM_TRACE_NAME_LEN / 2];
	size_t n = strnlen(f->file, sizeof(f->file));
	const char *file = f->file;

	if (n >= sizeof(tail))
		file += n - (sizeof(tail) - 1);
	memcpy(tail, file, strnlen(file, sizeof(tail) - 1));
	tail[strnlen(file, sizeof(tail) - 1)] = '\0';
	snprintf(out, len, "%s:%u in %.40s", tail, f->line, f->func);
}

/*
 * A Python stall: named by the event source (it alone can read the
 * process), counted without a site when it cannot be; the stalls the
 * kernel held back over the rate bound come with it, time included.
 */
static int dec_py_stall(struct decode *d, const void *rec)
{
	const struct zev_py_stall *e = rec;
	struct stall_where where;
	uint64_t span;
	int named;

	if (e->state >= SHM_STALL_STATE_COUNT || e->nframes > ZP_MAX_FRAMES)
		return -EINVAL;
	/* The trace draws a spinning synchronisation from its entry to its return. */
	span = e->span_ns > e->ns ? e->span_ns : e->ns;
	if (e->skipped)
		agg_stall_unsampled(d->agg, e->hdr.pid, e->skipped, e->skipped_ns);
	named = d->ops.py_where && d->ops.py_where(d->ops.ctx, e, &where) == 0;
	if (named) {
		char name[SHM_TRACE_NAME_LEN];

		site_name(&where.site, name, sizeof(name));
		agg_trace(d->agg, e->hdr.pid, e->hdr.tid, SHM_TRACE_STALL, e->state, e->hdr.ts_ns,
			  span, name);
	} else {
		agg_trace(d->agg, e->hdr.pid, e->hdr.tid, SHM_TRACE_STALL, e->state, e->hdr.ts_ns,
			  span, NULL);
	}
	agg_stall(d->agg, e->hdr.pid, e->hdr.tid, e->state, e->ns, e->hdr.ts_ns,
		  named ? &where : NULL);
	return 0;
}

static const struct probe_decoder decoders[] = {
	DECODER(ZEV_PY_STALL,	zev_py_stall,	dec_py_stall),
};

PROBE_FAMILY(pystack, pystack_configure, NULL, NULL);
