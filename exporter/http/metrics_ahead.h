/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Renders the segment part of /metrics in a thread of its own, which
 * follows the segment (its own reader and snapshot).  While scrapes come
 * often (two within METRICS_AHEAD_EAGER_MS), each new publish is rendered
 * ahead, in every form whose scraper is expected back (see
 * METRICS_AHEAD_FORM_KEEP_MS), before it is handed over:
 * a scrape then takes the latest body, renders only its per-request part,
 * and never waits for a render, which would otherwise stall every scrape
 * arriving during one (tens of ms with 1,000 processes).  A scrape still
 * reads the segment itself, so a fault is reported at once.  A scrape that
 * arrives while the publish it saw is being rendered takes the one before,
 * with that publish's own status (the response describes one publish
 * throughout, at most one publish interval older than it could be); one
 * that finds no body that recent wakes the thread and waits for the render.
 * When scrapes are rare (Prometheus every 15 s), a publish is rendered only
 * for a scrape: no CPU goes to renders nobody reads.  A scraper that asks
 * at a steady interval finds its body rendered just before it comes
 * (scrape_forecast.h); a scrape that finds no body recent enough asks for
 * the render and waits.
 * Unprivileged; started after the sandbox
 * (threads are allowed, see sandbox_filter.c).
 */
#ifndef ZERNEL_METRICS_AHEAD_H
#define ZERNEL_METRICS_AHEAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "exporter/http/metrics_body.h"
#include "exporter/http/scrape_forecast.h"
#include "exporter/source.h"

/*
 * How often the thread looks at the segment's seqlock (a load), and how
 * often it takes a full snapshot even when nothing changed, so that a
 * collector gone quiet is reported stale within that.
 */
#define METRICS_AHEAD_POLL_MS		20
#define METRICS_AHEAD_REFRESH_MS	250
/* Scrapes closer than this keep the renders ahead of them while they last. */
#define METRICS_AHEAD_EAGER_MS		3000
/* The longest a scrape waits for a render it asked for. */
#define METRICS_AHEAD_WAIT_MS		5000
/*
 * A form (text or protobuf, gzipped or not) is rendered ahead while the
 * scraper that asks for it is expected back: for twice the gap between the
 * last two requests for it, at least METRICS_AHEAD_EAGER_MS, at most this
 * long.
 * A Prometheus asks for one form at its interval; a form somebody fetched
 * once (a curl, a browser) stops costing a render a publish.
 */
#define METRICS_AHEAD_FORM_KEEP_MS	300000

/* What a scrape needs of the segment: its status and the matching body. */
struct metrics_view {
	enum shm_read_status status;
	char reason[192];
	int seen;
	uint64_t generation;
	uint64_t heartbeat_mono_ns;	/* as written: which publish */
	uint64_t published_ns;		/* on our clock: its age */
	uint64_t heartbeat_real_ns;
	struct metrics_body *body;	/* referenced; NULL unless status is OK */
	int render_error;		/* -errno: this publish could not be rendered */
};

struct metrics_ahead {
	pthread_t thread;
	int started;
	atomic_int stop;
	pthread_mutex_t lock;		/* guards view and demand */
	pthread_cond_t wake;		/* the thread: a scrape waits for a render */
	pthread_cond_t ready;		/* the scrapes: the view changed */
	int demand;			/* a scrape waits for a fresh look */
	uint64_t looks;			/* steps taken by the thread */
	atomic_ullong last_scrape_ns;
	atomic_ullong scrape_gap_ns;	/* between the last two scrapes, any form */
	struct metrics_view view;
	struct source src;		/* the thread's own */
	size_t limit;			/* of each form */
	/* Per form, by METRICS_FORM_INDEX: its last requests, newest first (0: none). */
	atomic_ullong asked_ns[METRICS_FORMS][SCRAPE_FORECAST_REQUESTS];
	/* The thread's own, for its forecasts (scrape_forecast.h): */
	uint64_t render_ns;		/* the last render, its look at the segment included */
	uint64_t publish_ns;		/* the collector's publish interval, as last seen */
	uint64_t last_full_ns;
	int have_view;			/* a first snapshot was taken */
};

/* Prepares a for the segment shm_name; nothing runs yet.  0 or -errno. */
int metrics_ahead_init(struct metrics_ahead *a, const char *shm_name, size_t limit);
/* Takes a first snapshot now (so the first scrape has one), then starts the thread. */
int metrics_ahead_start(struct metrics_ahead *a);
/*
 * Copies into v the view of the publish (generation, heartbeat) the
 * scrape saw, of a later one, or of one at most behind_ns older while that
 * one renders, with its own reference on the body (the caller drops it
 * with metrics_body_unref).  When the thread has rendered none of those,
 * asks it to and waits (up to METRICS_AHEAD_WAIT_MS).  0; -EAGAIN when no
 * body came (v then has none, or an older one).
 */
int metrics_ahead_view(struct metrics_ahead *a, uint64_t generation, uint64_t heartbeat,
		       uint64_t behind_ns, struct metrics_view *v);
/* A scrape asked for form f at now_ns: render it ahead while it is expected back. */
void metrics_ahead_want(struct metrics_ahead *a, enum metrics_format f, int gzip,
			uint64_t now_ns);
/* The METRICS_FORM_BITs expected back at now_ns (see METRICS_AHEAD_FORM_KEEP_MS). */
unsigned int metrics_ahead_forms(struct metrics_ahead *a, uint64_t now_ns);
void metrics_ahead_stop(struct metrics_ahead *a);
void metrics_ahead_free(struct metrics_ahead *a);

/* The status a scrape reports at now_mono_ns, from v (st->reason points into v). */
void metrics_view_status(const struct metrics_view *v, uint64_t now_mono_ns,
			 struct cat_status *st);

#endif /* ZERNEL_METRICS_AHEAD_H */
