/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Python code of the simulated training job: the lines where its
 * trainers wait, named as the probes' frames would be (a train.py of the
 * user's and the PyTorch frames below it).  The simulator sends stalls
 * whose frames carry a site number as their code object; sim_py_where is
 * the decoder's py_where for them.  Unprivileged.
 */
#ifndef ZERNEL_SIM_SITES_H
#define ZERNEL_SIM_SITES_H

#include "collector/agg/agg_stall.h"

enum sim_site {
	SIM_SITE_NEXT_BATCH = 1,	/* for batch in loader */
	SIM_SITE_BACKWARD,		/* loss.backward(): DDP's all_reduce */
	SIM_SITE_BARRIER,		/* dist.barrier(): its caller blocks in futex */
	SIM_SITE_SYNC,			/* loss.item(): spins in the driver's sync */
	SIM_SITE_COUNT
};

struct zev_py_stall;

/* decode_ops.py_where of the simulator (ctx unused). */
int sim_py_where(void *ctx, const struct zev_py_stall *rec, struct stall_where *out);

#endif /* ZERNEL_SIM_SITES_H */
