/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The driver's memory figures in the aggregation (see agg.h): a GPU's used
 * memory and each process's, as NVML reads them every few seconds.  They
 * stand beside the probes' figures, never in place of them: the difference
 * (the CUDA context, allocations the probes did not see) is the point.
 * Runs in the collector's main loop; no privilege of its own.
 */
#include <errno.h>

#include "collector/agg/agg_impl.h"

int agg_gpu_device_used(struct agg *a, uint32_t gpu, int known, uint64_t used_bytes)
{
	int err;
	struct shm_gpu *g = agg_gpu_node_row(a, gpu, &err);

	if (!g)
		return err;
	g->used_source = known ? SHM_USED_DRIVER : SHM_USED_PROCESSES;
	/* The sum of the rows is made at each publish (agg_publish.c). */
	g->used_bytes = known ? used_bytes : 0;
	return 0;
}

/* The row that takes pid's figure on gpu, made for the figure alone when it has none. */
static struct shm_gpu_mem *driver_row(struct agg *a, uint32_t pid, uint32_t gpu)
{
	struct shm_gpu_mem *m = agg_mem_find(a, pid, gpu);
	int err;

	if (m)
		return m;
	m = agg_mem_insert(a, pid, gpu, &err);
	if (!m)
		return NULL;
	/* Its CUDA ordinal is the process's own and not known here. */
	m->cuda_device = SHM_GPU_UNKNOWN;
	m->gpu_map = SHM_GPU_MAP_DRIVER;
	m->flags = SHM_GPU_MEM_F_DRIVER_ROW;
	return m;
}

int agg_gpu_driver_procs(struct agg *a, uint32_t gpu, const struct agg_driver_proc *procs,
			 size_t n, int known)
{
	uint32_t top = keyindex_top(&a->mem_idx);
	int rows = 0;

	if (gpu & AGG_GPU_UNMAPPED)
		return -EINVAL;
	/* 1. Every row of the GPU forgets the last read: a figure is only ever the latest. */
	for (uint32_t s = 0; s < top; s++) {
		struct shm_gpu_mem *m = &a->mem[s];

		if (keyindex_live(&a->mem_idx, s) && m->gpu_id == gpu) {
			m->flags &= ~SHM_GPU_MEM_F_DRIVER;
			m->driver_used_bytes = 0;
		}
	}
	/* 2. The figures listed now. */
	for (size_t i = 0; known && i < n; i++) {
		struct shm_gpu_mem *m;

		if (procs[i].used_bytes == AGG_DRIVER_NOT_AVAILABLE ||
		    !agg_proc_is_watched(a, procs[i].pid) ||
		    !(m = driver_row(a, procs[i].pid, gpu)))
			continue;
		if (!(m->flags & SHM_GPU_MEM_F_DRIVER)) {
			m->flags |= SHM_GPU_MEM_F_DRIVER;
			m->driver_used_bytes = 0;
			rows++;
		}
		/* Saturated below NVML's "not available", which the segment never holds. */
		m->driver_used_bytes = procs[i].used_bytes >= UINT64_MAX - 1 - m->driver_used_bytes ?
				       UINT64_MAX - 1 : m->driver_used_bytes + procs[i].used_bytes;
	}
	/* 3. Rows of the figure alone whose process is no longer listed go. */
	top = keyindex_top(&a->mem_idx);
	for (uint32_t s = 0; s < top; s++) {
		const struct shm_gpu_mem *m = &a->mem[s];

		if (keyindex_live(&a->mem_idx, s) && m->gpu_id == gpu &&
		    (m->flags & SHM_GPU_MEM_F_DRIVER_ROW) && !(m->flags & SHM_GPU_MEM_F_DRIVER))
			keyindex_remove(&a->mem_idx, (int32_t)s);
	}
	return rows;
}
