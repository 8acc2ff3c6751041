/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sim_sites.h.  Lines and paths are those of a typical DDP script on
 * Debian's python3-torch.
 */
#include <errno.h>
#include <string.h>

#include "bpf/probe_abi.h"
#include "collector/sim/sim_sites.h"

static const struct {
	struct stall_frame site, leaf;
} sites[SIM_SITE_COUNT] = {
	[SIM_SITE_NEXT_BATCH] = {
		{ "/workspace/train.py", "train", 142 },
		{ "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py",
		  "_MultiProcessingDataLoaderIter._next_data", 1328 },
	},
	[SIM_SITE_BACKWARD] = {
		{ "/workspace/train.py", "train", 151 },
		{ "/usr/lib/python3/dist-packages/torch/autograd/__init__.py", "backward", 200 },
	},
	[SIM_SITE_BARRIER] = {
		{ "/workspace/train.py", "train", 158 },
		{ "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
		  "barrier", 3328 },
	},
	/* Tensor.item() is C: the user's line is the innermost Python frame. */
	[SIM_SITE_SYNC] = {
		{ "/workspace/train.py", "train", 154 },
		{ "/workspace/train.py", "train", 154 },
	},
};

int sim_py_where(void *ctx, const struct zev_py_stall *rec, struct stall_where *out)
{
	uint64_t id = rec->nframes ? rec->frames[0].code : 0;

	(void)ctx;
	if (id == 0 || id >= SIM_SITE_COUNT)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->site = sites[id].site;
	out->leaf = sites[id].leaf;
	out->native_stack = -1;
	return 0;
}
