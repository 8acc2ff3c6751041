/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exporter's own counters: one atomic per catalog id (enum cat_stat in
 * catalog/catalog.h, which also says how each is exported).  The HTTP,
 * WebSocket and main threads touch them with relaxed atomics: each value
 * is independent, no ordering is implied.
 */
#ifndef ZERNEL_STATS_H
#define ZERNEL_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "catalog/catalog.h"

struct exporter_stats {
	_Atomic uint64_t v[CAT_STAT_COUNT];
};

/* The process-wide instance. */
extern struct exporter_stats exporter_stats;

static inline void stats_add(enum cat_stat id, uint64_t n)
{
	atomic_fetch_add_explicit(&exporter_stats.v[id], n, memory_order_relaxed);
}

static inline void stats_sub(enum cat_stat id, uint64_t n)
{
	atomic_fetch_sub_explicit(&exporter_stats.v[id], n, memory_order_relaxed);
}

static inline void stats_set(enum cat_stat id, uint64_t v)
{
	atomic_store_explicit(&exporter_stats.v[id], v, memory_order_relaxed);
}

#endif /* ZERNEL_STATS_H */
