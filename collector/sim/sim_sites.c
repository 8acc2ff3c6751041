/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sim_sites.h.  Lines and paths are those of a typical DDP script on
 * Debian's python3-torch.
 */
#include <errno.h>
#include <string.h>

#include "bpf/probe_abi.h"
#include "collector/sim/sim_sites.h"

#define TRAIN_PY	"/workspace/train.py"
#define TORCH_PY	"/usr/lib/python3/dist-packages/torch/"

/*
 * Each site: the training loop's line (train() in train.py), then the
 * innermost Python frame, inside torch.
 */
#define SITE(line, leaf_file, leaf_func, leaf_line) \
	{ { TRAIN_PY, "train", line }, { leaf_file, leaf_func, leaf_line } }

static const struct {
	struct stall_frame site, leaf;
} sites[SIM_SITE_COUNT] = {
	[SIM_SITE_NEXT_BATCH] = SITE(142, TORCH_PY "utils/data/dataloader.py",
				     "_MultiProcessingDataLoaderIter._next_data", 1328),
	[SIM_SITE_BACKWARD] = SITE(151, TORCH_PY "autograd/__init__.py", "backward", 200),
	[SIM_SITE_BARRIER] = SITE(158, TORCH_PY "distributed/distributed_c10d.py", "barrier", 3328),
	/* Tensor.item() is C: the user's line is the innermost Python frame. */
	[SIM_SITE_SYNC] = SITE(154, TRAIN_PY, "train", 154),
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
