/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ring of recent notable events (shm_trace_event), part of the
 * aggregation and published with it for `zernel trace`.  Bounded: when
 * full, the oldest event makes room and counts as an overflow.
 * Collector-internal.
 */
#ifndef ZERNEL_AGG_TRACE_H
#define ZERNEL_AGG_TRACE_H

#include <stdint.h>

#include "collector/agg/agg.h"

/* One event of a watched process; name may be NULL.  -ENOENT when unwatched. */
int agg_trace(struct agg *a, uint32_t pid, uint32_t tid, enum shm_trace_kind kind,
	      uint32_t detail, uint64_t end_ns, uint64_t dur_ns, const char *name);

#endif /* ZERNEL_AGG_TRACE_H */
