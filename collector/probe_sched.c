/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The scheduler module (bpf/sched.bpf.c): off-CPU time split by why the
 * thread left, run-queue delay and migrations.  Its tracepoints attach
 * with the others; its records go through collector/decode.c.  Root-only.
 */
#include <errno.h>

#include "bpf/sched.skel.h"
#include "collector/probe_sched.h"

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
};
