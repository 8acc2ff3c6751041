/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * From BPF events to the aggregation: the ring-buffer callback.  Events
 * come from our own programs, but their size and enums are still checked
 * before use.  Runs in the collector's main loop (root).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "bpf/events.h"
#include "collector/memtrack.h"
#include "collector/probe_module.h"
#include "common/log.h"

static void on_alloc(struct probes *p, const struct zev *e)
{
	uint32_t old_gpu;
	uint64_t old_bytes;
	int r;

	r = memtrack_add(p->mem, e->pid, (uint32_t)e->v2, e->v0, e->arg, e->v1,
			 &old_gpu, &old_bytes);
	if (r == 1) {
		/* Its free went unseen (an unprobed path): it is gone now. */
		agg_gpu_free(p->agg, e->pid, old_gpu, old_bytes);
	} else if (r < 0) {
		/* Untracked: counted, but its free will not subtract. */
		agg_count_dropped(p->agg, 1);
	}
	agg_gpu_alloc(p->agg, e->pid, e->arg, e->v1);
}

static void on_free(struct probes *p, const struct zev *e)
{
	uint32_t gpu;
	uint64_t bytes;

	/* A pointer we never saw allocated (before we started): nothing to do. */
	if (memtrack_take(p->mem, e->pid, (uint32_t)e->v2, e->v0, &gpu, &bytes) != 0)
		return;
	agg_gpu_free(p->agg, e->pid, gpu, bytes);
}

/*
 * The kernel's start time in /proc's clock-tick precision, so that the
 * same process seen by a probe and by a /proc scan has one start time
 * (the aggregation takes a different one for a reused pid).
 */
static uint64_t start_in_ticks(uint64_t boot_ns)
{
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t tick = hz > 0 ? 1000000000ull / (uint64_t)hz : 1;

	return boot_ns / tick * tick;
}

int probe_events_handle(void *ctx, void *data, size_t size)
{
	struct probes *p = ctx;
	const struct zev *e = data;
	char comm[ZEV_COMM_LEN + 1];

	if (size < sizeof(*e)) {
		log_warnx("short BPF event (%zu bytes), ignored", size);
		return 0;
	}
	p->handled++;
	switch (e->type) {
	case ZEV_WATCH:
		memcpy(comm, e->comm, ZEV_COMM_LEN);
		comm[ZEV_COMM_LEN] = '\0';
		probes_watch(p, e->pid, (uint32_t)e->v0, e->arg & SHM_WATCH_ALL_BITS, comm,
			     start_in_ticks(e->v1), 0);
		break;
	case ZEV_EXIT:
		probes_unwatch(p, e->pid);
		break;
	case ZEV_MEM_ALLOC:
		if (e->v2 <= ZMEM_SPACE_VMM)
			on_alloc(p, e);
		break;
	case ZEV_MEM_FREE:
		if (e->v2 <= ZMEM_SPACE_VMM)
			on_free(p, e);
		break;
	case ZEV_MEM_FAIL:
		agg_gpu_alloc_failed(p->agg, e->pid, e->arg);
		break;
	case ZEV_LATENCY:
		if (e->arg < SHM_FAMILY_COUNT)
			agg_latency(p->agg, e->pid, (enum shm_family)e->arg, e->ts_ns, e->v0);
		break;
	case ZEV_NCCL_CALL:
		if (e->arg < SHM_NCCL_OP_COUNT)
			agg_nccl_call(p->agg, (enum shm_nccl_op_kind)e->arg, e->v0, e->v1,
				      e->v2 != 0, e->ts_ns);
		break;
	case ZEV_NCCL_WAIT:
		if (e->arg < SHM_NCCL_OP_COUNT)
			agg_nccl_wait(p->agg, (enum shm_nccl_op_kind)e->arg, e->v0, e->ts_ns);
		break;
	case ZEV_NCCL_COMM:
		agg_nccl_comm(p->agg, e->pid, (int32_t)e->v1, (int32_t)e->v2,
			      e->arg == ZEV_GPU_UNKNOWN ? UINT32_MAX : e->arg, e->v0);
		break;
	default:
		for (size_t i = 0; i < p->n_mod; i++)
			if (p->mod[i].mod->event && p->mod[i].mod->event(p, e))
				return 0;
		log_debug("unknown BPF event type %u", e->type);
		break;
	}
	return 0;
}
