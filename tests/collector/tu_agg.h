/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The aggregation suites' fixture: an agg publishing into a real segment,
 * read back through shm_reader (which validates every row), and the rows
 * looked up in that snapshot.  Unprivileged.
 */
#ifndef ZERNEL_TU_AGG_H
#define ZERNEL_TU_AGG_H

#include <stdint.h>

#include "collector/agg/agg.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"

struct tu_agg {
	char name[64];
	struct shm_writer w;
	int created;
	struct agg *a;
	struct shm_reader r;
	struct shm_snapshot snap;
};

/* A 60 s quantile window, a 1 s publish interval; mode is SHM_MODE_*. */
void tu_agg_open(struct tu_agg *fx, struct shm_capacity cap, uint32_t mode);
void tu_agg_close(struct tu_agg *fx);
/* Publishes now (scenario may be NULL) and takes a validated snapshot. */
const struct shm_header_fields *tu_agg_publish(struct tu_agg *fx, const char *scenario);

const struct shm_gpu_mem *tu_agg_mem(const struct tu_agg *fx, uint32_t pid, uint32_t gpu);
const struct shm_proc *tu_agg_proc(const struct tu_agg *fx, uint32_t pid);
const struct shm_gpu *tu_agg_gpu(const struct tu_agg *fx, uint32_t gpu);
/* The workload row of kind named name ("" for the node), or NULL. */
const struct shm_workload *tu_agg_workload(const struct tu_agg *fx, uint32_t kind,
					   const char *name);

#endif /* ZERNEL_TU_AGG_H */
