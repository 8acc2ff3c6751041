/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The watched-process module: fork, exec and exit tracepoints that keep
 * the shared watched set (bpf/watch.bpf.c).  Loaded first, so it owns the
 * maps every other module shares.  Root-only.
 */
#include <errno.h>
#include <string.h>

#include "bpf/probe_abi.h"
#include "bpf/watch.skel.h"
#include "collector/probe_module.h"
#include "common/log.h"

static int watch_open(void **skel, struct bpf_object **obj, const struct probes_opts *opts)
{
	struct watch_bpf *s = watch_bpf__open();
	size_t n = opts->n_comms;

	if (!s)
		return -errno;
	if (n > ZW_MAX_COMMS) {
		log_warnx("only the first %d --comm names are matched at exec", ZW_MAX_COMMS);
		n = ZW_MAX_COMMS;
	}
	for (size_t i = 0; i < n; i++)
		strncpy((char *)s->rodata->comms[i], opts->comms[i], SHM_COMM_LEN - 1);
	s->rodata->n_comms = (__u32)n;
	*skel = s;
	*obj = s->obj;
	return 0;
}

static int watch_load(void *skel)
{
	return watch_bpf__load(skel);
}

static void watch_destroy(void *skel)
{
	watch_bpf__destroy(skel);
}

const struct probe_module probe_watch_module = {
	.name = "watch",
	.open = watch_open,
	.load = watch_load,
	.destroy = watch_destroy,
};
