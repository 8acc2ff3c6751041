/* SPDX-License-Identifier: BSD-2-Clause */
/* Placeholder until the BPF loader lands: the real mode is not available. */
#include <errno.h>

#include "collector/probes.h"
#include "common/log.h"

int probes_start(struct probes **out, struct agg *agg, const struct probes_opts *opts)
{
	(void)agg;
	(void)opts;
	*out = NULL;
	log_warnx("this build has no BPF probes; use --simulate");
	return -ENOSYS;
}

int probes_poll(struct probes *p, int timeout_ms)
{
	(void)p;
	(void)timeout_ms;
	return -ENOSYS;
}

void probes_stop(struct probes *p)
{
	(void)p;
}
