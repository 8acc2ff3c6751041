/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exporter's own counters.  They are the only state its threads share:
 * the HTTP thread, the WebSocket thread and the main thread touch them with
 * relaxed atomics (each value is independent; no ordering is implied).
 */
#ifndef ZERNEL_STATS_H
#define ZERNEL_STATS_H

#include <stdatomic.h>
#include <stdint.h>

struct exporter_stats {
	_Atomic uint64_t start_real_ns;		/* CLOCK_REALTIME at start */
	_Atomic uint64_t scrapes;		/* GET/HEAD /metrics answered */
	_Atomic uint64_t http_requests;		/* every HTTP request answered */
	_Atomic uint64_t http_connections;	/* open now */
	_Atomic uint64_t http_rejected;		/* refused at the connection limit */
	_Atomic uint64_t ws_clients;		/* connected now */
	_Atomic uint64_t ws_connections;	/* accepted since start */
	_Atomic uint64_t ws_frames_sent;	/* snapshots handed to a client */
	_Atomic uint64_t ws_frames_dropped;	/* skipped: client had not taken the last */
	_Atomic uint64_t ws_stalled_closed;	/* clients closed for staying stalled */
	_Atomic uint64_t ws_rejected;		/* refused at the connection limit */
	_Atomic uint64_t ws_bad_input;		/* clients closed for what they sent */
	_Atomic uint64_t ws_feed_bytes;		/* size of the last snapshot */
};

/* The process-wide instance. */
extern struct exporter_stats exporter_stats;

static inline void stats_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static inline void stats_sub(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_sub_explicit(c, n, memory_order_relaxed);
}

static inline void stats_set(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, v, memory_order_relaxed);
}

static inline uint64_t stats_get(const _Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

#endif /* ZERNEL_STATS_H */
