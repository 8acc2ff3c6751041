/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where a value falls in the log-linear buckets of shm_consts.h
 * (HIST_BUCKETS): the collector counts into them (collector/agg/hist.h says
 * why and what they are worth) and the exporter reads them back from a
 * workload's row (struct shm_workload_latency) to make native histograms.
 */
#ifndef ZERNEL_SHM_HIST_H
#define ZERNEL_SHM_HIST_H

#include <stddef.h>
#include <stdint.h>

#include "shm/shm_consts.h"

size_t hist_bucket_index(uint64_t value);
uint64_t hist_bucket_lower(size_t index);	/* smallest value in the bucket */
uint64_t hist_bucket_width(size_t index);

#endif /* ZERNEL_SHM_HIST_H */
