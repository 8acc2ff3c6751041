/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The driver's memory figures at a slow cadence: every interval the
 * collector's main loop reads each GPU's used memory and its processes'
 * through NVML (collector/gpu/nvml.h) and hands them to the aggregation
 * (agg_gpu_device_used, agg_gpu_driver_procs).  NVML calls take
 * milliseconds, more on a sick GPU, so they are made just before a
 * publish (outside its seqlock), never on an event's path, and their share
 * of the loop is bounded: a read that takes long spaces the next ones out.  Each change
 * of what NVML can give (a call failing, a value it does not give) is one
 * log line, and the figures it cannot give are unknown, never stale.
 */
#ifndef ZERNEL_NVML_POLL_H
#define ZERNEL_NVML_POLL_H

#include <stdint.h>

#include "collector/agg/agg.h"
#include "collector/gpu/nvml.h"

/* NVML's share of the main loop's time at most 1 / NVML_POLL_SHARE. */
#define NVML_POLL_SHARE		20u

struct nvml_poll;

/* A reader of nv every interval_ms (nv stays the caller's); NULL on ENOMEM. */
struct nvml_poll *nvml_poll_new(struct nvml *nv, uint32_t interval_ms);
void nvml_poll_free(struct nvml_poll *p);

/* Reads when due at now_ns (the first call always is) into a; 1 when it read, else 0. */
int nvml_poll_run(struct nvml_poll *p, struct agg *a, uint64_t now_ns);

#endif /* ZERNEL_NVML_POLL_H */
