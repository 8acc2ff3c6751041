/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The first half of gpu_map: the GPUs CUDA enumerates for a process before
 * CUDA_VISIBLE_DEVICES applies, and their order (see gpu_map.h).  Pure.
 */
#ifndef ZERNEL_GPU_BASE_H
#define ZERNEL_GPU_BASE_H

#include "collector/gpu/gpu_map.h"

/* One GPU of that set, as far as it is known. */
struct gpu_slot {
	int32_t node;			/* index into the caller's nodes[], or -1 */
	int32_t index;			/* NVML index, or -1 */
	int32_t minor;			/* or -1 */
	uint32_t mig;			/* a MIG instance (its parent in the fields above) */
	uint32_t parent_known;		/* for a MIG instance: the fields above are its parent's */
	char uuid[GPU_UUID_MAX];	/* full UUID, or "" */
};

struct gpu_base {
	uint32_t known;			/* the set is known: slot[0..n) */
	uint32_t why;			/* enum gpu_how when not known */
	uint32_t ordered;		/* slot[] is in CUDA's order */
	uint32_t order_why;		/* enum gpu_how when not ordered */
	uint32_t order_how;		/* how a position resolves when ordered */
	uint32_t n;
	uint32_t flags;			/* GPU_MAP_F_NVIDIA_IGNORED */
	uint32_t slurm;			/* a Slurm job's: a device cgroup may narrow it, per task */
	struct gpu_slot slot[GPU_VISIBLE_MAX];
};

/*
 * Fills b; n_nodes is at most GPU_NODES_MAX.  fds (NULL: not known) are the
 * GPU nodes the process has open, which settle a Slurm job's numbering
 * where its variables read two ways.
 */
void gpu_base_build(const struct proc_env *env, int in_container, const struct gpu_fds *fds,
		    const struct gpu_node *nodes, size_t n_nodes, struct gpu_base *b);
/*
 * A Slurm job's set narrowed to the GPUs the process has open, in CUDA's
 * order again: a device cgroup per task lets each task open, and CUDA
 * enumerate, only its own GPUs of the step's.  1 when b changed.
 */
int gpu_base_only_open(const struct proc_env *env, const struct gpu_fds *fds,
		       const struct gpu_node *nodes, struct gpu_base *b);
/* Fills s from nodes[i]. */
void gpu_slot_from_node(struct gpu_slot *s, const struct gpu_node *nodes, int i);
/*
 * The node whose UUID starts with prefix (a full UUID is its own prefix):
 * its index, -1 when none, -2 when several.
 */
int gpu_node_by_uuid(const struct gpu_node *nodes, size_t n_nodes, const char *prefix);

#endif /* ZERNEL_GPU_BASE_H */
