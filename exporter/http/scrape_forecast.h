/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * When to render /metrics ahead of scrapers that ask at a steady
 * interval.  A Prometheus scrapes each target every scrape_interval (15 s
 * by default) at a fixed offset, too rarely for the render thread to keep
 * every publish rendered (metrics_ahead.h), so without a forecast each of
 * its scrapes waits for a render: the text of 1,000 processes and its gzip
 * take about 12 ms on a 2-core VM.
 *
 * The next request is forecast from the one before the last: it comes a
 * period after it, the period being the time between the last request and
 * the one two before it.  One scraper every g seconds makes that the last
 * request plus g; two Prometheus replicas at the same interval, at their
 * own offsets, make it the other replica's next scrape.  Once two such
 * periods agree (within an eighth), each publish seen within a lead of
 * the expected time is rendered: the body is ready when the request
 * comes, for about the render it would have waited for (two when a
 * publish falls within the window).
 *
 * The lead covers twice the last render, two of the thread's polls and
 * the scrapers' jitter (the two periods' difference); the window runs as
 * long after the expected time, for a request as late as it may be early.
 * A scrape takes a body of a publish up to 1.5 publish intervals older
 * than the one it sees (metrics_ahead_view), and a render takes the
 * latest publish, at most one interval old: a render started up to half
 * an interval before the scrape serves it, so a longer lead forecasts
 * nothing.  The scrape checks the body's age itself, so a forecast that
 * misses costs a wait, never an older body.
 */
#ifndef ZERNEL_SCRAPE_FORECAST_H
#define ZERNEL_SCRAPE_FORECAST_H

#include <stdint.h>

/* Periods that differ by more than 1/SCRAPE_FORECAST_STEADY of the last are no interval. */
#define SCRAPE_FORECAST_STEADY		8
/* The requests a forecast looks back on: the last and three before it. */
#define SCRAPE_FORECAST_REQUESTS	4

struct scrape_forecast_input {
	/* Monotonic times of the last requests, newest first; 0 where none. */
	uint64_t asked_ns[SCRAPE_FORECAST_REQUESTS];
	uint64_t render_ns;	/* how long the last render took */
	uint64_t poll_ns;	/* how often the render thread looks */
	uint64_t publish_ns;	/* the collector's publish interval */
};

/* When to render each publish for the next request: from_ns <= now < until_ns. */
struct scrape_forecast_window {
	uint64_t from_ns;
	uint64_t until_ns;
};

/*
 * The window of the next request (monotonic ns): 1, or 0 when no request
 * can be forecast (fewer than four requests, periods that are no steady
 * interval, a lead longer than half a publish interval, or one of half
 * the period or more).
 */
int scrape_forecast_window(const struct scrape_forecast_input *in,
			   struct scrape_forecast_window *w);

#endif /* ZERNEL_SCRAPE_FORECAST_H */
