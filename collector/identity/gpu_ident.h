/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The physical GPU behind each process's CUDA device ordinals, for the
 * decoder: the first time a process is asked about, its environment,
 * cgroups and open device nodes are read (proc_identity) and its ordinals
 * mapped against the node's GPU list (gpu_map); the answer is kept until
 * the process exits or execs.  Root (other processes' /proc files).
 *
 * Every answer says how it was found or why it was not (enum
 * shm_gpu_map).  One fallback, labelled as such: on a node without a GPU
 * list (no NVML) a process that selects no device (neither
 * CUDA_VISIBLE_DEVICES nor NVIDIA_VISIBLE_DEVICES, not in a container)
 * keeps its ordinal as gpu_id, with gpu_map "ordinal".
 */
#ifndef ZERNEL_GPU_IDENT_H
#define ZERNEL_GPU_IDENT_H

#include <stddef.h>
#include <stdint.h>

#include "collector/gpu/gpu_map.h"

/* Processes whose maps are kept at once; more only cost a /proc read again. */
#define GPU_IDENT_SLOTS		1024u

struct gpu_ident;

/* nodes[0..n) is copied (n at most GPU_NODES_MAX; NULL, 0: no NVML).  NULL on ENOMEM. */
struct gpu_ident *gpu_ident_new(const struct gpu_node *nodes, size_t n);
void gpu_ident_free(struct gpu_ident *g);

/*
 * pid's CUDA device `ordinal`: returns an enum shm_gpu_map and sets
 * *gpu_id to the GPU's NVML index when the map resolves it, else to
 * SHM_GPU_UNKNOWN.
 */
uint32_t gpu_ident_map(struct gpu_ident *g, uint32_t pid, uint32_t ordinal, uint32_t *gpu_id);

/* pid exited or exec'ed: its map is read again when next asked for. */
void gpu_ident_forget(struct gpu_ident *g, uint32_t pid);

/* The same mapping from an identity already read (tests, and gpu_ident_map). */
uint32_t gpu_ident_resolve(const struct gpu_map *m, const struct proc_env *env, int in_container,
			   size_t n_nodes, uint32_t ordinal, uint32_t *gpu_id);

#endif /* ZERNEL_GPU_IDENT_H */
