/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The scheduler module (bpf/sched.bpf.c): off-CPU time split by why the
 * thread left, run-queue delay and migrations.  Its tracepoints attach
 * with the others; this file turns its events into agg_* calls.  Root-only.
 */
#include <errno.h>

#include "bpf/sched.skel.h"
#include "bpf/sched_events.h"
#include "collector/probe_sched.h"
#include "shm/shm_layout.h"

int probe_sched_event(struct probes *p, const struct zev *e)
{
	switch (e->type) {
	case ZEV_SCHED_SWITCH:
		/* One context switch, counted once its off-CPU time is known. */
		if (e->arg & ZS_SW_OFFCPU)
			agg_offcpu(p->agg, e->pid, e->v0, (e->arg & ZS_SW_INVOLUNTARY) != 0);
		if (e->arg & ZS_SW_RUNQ)
			agg_latency(p->agg, e->pid, SHM_FAMILY_RUNQ_DELAY, e->ts_ns, e->v1);
		return 1;
	case ZEV_SCHED_MIGRATE:
		agg_migration(p->agg, e->pid);
		return 1;
	}
	return 0;
}

static int sched_open(void **skel, struct bpf_object **obj, const struct probes_opts *opts)
{
	struct sched_bpf *s = sched_bpf__open();

	(void)opts;
	if (!s)
		return -errno;
	*skel = s;
	*obj = s->obj;
	return 0;
}

static int sched_load(void *skel)
{
	return sched_bpf__load(skel);
}

static void sched_destroy(void *skel)
{
	sched_bpf__destroy(skel);
}

const struct probe_module probe_sched_module = {
	.name = "sched",
	.open = sched_open,
	.load = sched_load,
	.destroy = sched_destroy,
	.event = probe_sched_event,
};
