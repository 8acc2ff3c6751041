/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Latency series (collector/agg/latency.h): exact cumulative Prometheus buckets,
 * and a sliding window of log-linear histograms for the summary quantiles.
 * Runs inside the collector's single-threaded aggregation loop.
 *
 * The window.  Time is cut into sub-windows of slot_len = window_ns /
 * LATENCY_WINDOW_SLOTS; sub-window number k holds the samples recorded with
 * now_ns in [k * slot_len, (k + 1) * slot_len).  At now_ns, with
 * n = now_ns / slot_len, the window is sub-windows n - SLOTS + 1 .. n: the
 * current, partial one plus the SLOTS - 1 whole ones before it, so it spans
 * between (SLOTS - 1) / SLOTS of window_ns and window_ns of the most recent
 * past (50 to 60 s by default).  A sample whose now_ns lies before the open
 * sub-window (a clock stepping back, a late event) counts in the open one:
 * the window never moves backwards.  A jump forward by a whole window or
 * more (a long idle spell) simply empties it.
 *
 * Memory.  The open sub-window is a full struct hist (8488 bytes), allocated
 * when it gets its first sample; a closed one keeps only its non-empty
 * buckets, 8 bytes each; struct latency_window is 256 bytes.  When nothing
 * is left in the window, latency_export frees it all, so an idle series
 * costs sizeof(struct latency_series) = 264 bytes and nothing else.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg/hist.h"
#include "collector/agg/latency.h"

_Static_assert(LATENCY_WINDOW_SLOTS >= 2, "the window needs closed sub-windows");

#define LATENCY_CLOSED		(LATENCY_WINDOW_SLOTS - 1u)

/* A closed sub-window's bucket: count << PAIR_INDEX_BITS | bucket index. */
#define PAIR_INDEX_BITS		11u
#define PAIR_INDEX_MASK		((1ull << PAIR_INDEX_BITS) - 1)
#define PAIR_COUNT_MAX		(UINT64_MAX >> PAIR_INDEX_BITS)
_Static_assert(HIST_BUCKETS <= (1u << PAIR_INDEX_BITS), "bucket index fits a pair");

struct latency_closed {
	uint64_t no;		/* sub-window number */
	uint64_t count;		/* 0 when the slot holds nothing */
	uint64_t min;
	uint64_t max;		/* exact, as recorded */
	uint64_t *pairs;
	uint32_t npairs;
	uint32_t reserved;
};

struct latency_window {
	uint64_t open_no;	/* number of the open sub-window */
	struct hist *open;	/* NULL until the open sub-window has a sample */
	struct latency_closed closed[LATENCY_CLOSED];	/* at no % LATENCY_CLOSED */
};
_Static_assert(sizeof(struct latency_window) == 256, "memory figure in the comment above");

/*
 * Export's merge target.  Thread-local so that two threads exporting never
 * share it; the collector has one thread, so in practice it is one buffer.
 */
static _Thread_local struct hist latency_scratch;

static const uint64_t latency_bounds[SHM_LAT_FINITE_BUCKETS] = SHM_LAT_BOUNDS_NS_INIT;

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

unsigned int latency_bucket_of(uint64_t value_ns)
{
	unsigned int lo = 0, hi = SHM_LAT_FINITE_BUCKETS;

	/* The first bound >= value: le is inclusive. */
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (latency_bounds[mid] < value_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void latency_init(struct latency_series *s, uint64_t window_ns)
{
	memset(s, 0, sizeof(*s));
	if (window_ns == 0)
		window_ns = LATENCY_DEFAULT_WINDOW_NS;
	/* Below this a sub-window would last 0 ns. */
	if (window_ns < LATENCY_WINDOW_SLOTS)
		window_ns = LATENCY_WINDOW_SLOTS;
	s->window_ns = window_ns;
}

static uint64_t sub_window_of(const struct latency_series *s, uint64_t now_ns)
{
	uint64_t len = s->window_ns / LATENCY_WINDOW_SLOTS;

	return now_ns / (len ? len : 1);
}

static void closed_clear(struct latency_closed *c)
{
	free(c->pairs);
	memset(c, 0, sizeof(*c));
}

/* Moves the open histogram into its closed slot in sparse form. */
static int window_compact(struct latency_window *w)
{
	struct latency_closed *c = &w->closed[w->open_no % LATENCY_CLOSED];
	const struct hist *h = w->open;
	uint32_t n = 0;

	closed_clear(c);
	for (size_t i = 0; i < HIST_BUCKETS; i++)
		n += h->bucket[i] != 0;
	c->pairs = malloc(n * sizeof(*c->pairs));
	if (!c->pairs)
		return -ENOMEM;
	for (size_t i = 0; i < HIST_BUCKETS; i++) {
		uint64_t cnt = h->bucket[i];

		if (cnt == 0)
			continue;
		if (cnt > PAIR_COUNT_MAX)
			cnt = PAIR_COUNT_MAX;
		c->pairs[c->npairs++] = cnt << PAIR_INDEX_BITS | i;
	}
	c->no = w->open_no;
	c->count = h->count;
	c->min = h->min;
	c->max = h->max;
	return 0;
}

/*
 * Makes now_no the open sub-window: closes the open one, drops what fell
 * out of the window.  keep_open keeps the open histogram's memory for a
 * sample about to be recorded.  -ENOMEM when a closed sub-window had to be
 * dropped for want of memory.
 */
static int window_advance(struct latency_window *w, uint64_t now_no, int keep_open)
{
	int err = 0;

	if (now_no <= w->open_no)
		return 0;
	for (unsigned int i = 0; i < LATENCY_CLOSED; i++) {
		struct latency_closed *c = &w->closed[i];

		/* Closed numbers are below open_no, hence below now_no. */
		if (c->count && now_no - c->no > LATENCY_CLOSED)
			closed_clear(c);
	}
	if (w->open && w->open->count && now_no - w->open_no <= LATENCY_CLOSED)
		err = window_compact(w);
	if (w->open) {
		if (keep_open) {
			hist_reset(w->open);
		} else {
			free(w->open);
			w->open = NULL;
		}
	}
	w->open_no = now_no;
	return err;
}

static int window_is_empty(const struct latency_window *w)
{
	if (w->open && w->open->count)
		return 0;
	for (unsigned int i = 0; i < LATENCY_CLOSED; i++)
		if (w->closed[i].count)
			return 0;
	return 1;
}

static void window_free(struct latency_window *w)
{
	if (!w)
		return;
	for (unsigned int i = 0; i < LATENCY_CLOSED; i++)
		closed_clear(&w->closed[i]);
	free(w->open);
	free(w);
}

/*
 * The open sub-window's histogram for a sample at now_ns, allocated as
 * needed; NULL when out of memory.  *err reports a closed sub-window lost.
 */
static struct hist *window_open_at(struct latency_series *s, uint64_t now_ns, int *err)
{
	struct latency_window *w = s->window;
	uint64_t no = sub_window_of(s, now_ns);

	*err = 0;
	if (!w) {
		w = calloc(1, sizeof(*w));
		if (!w)
			return NULL;
		w->open_no = no;
		s->window = w;
	} else {
		*err = window_advance(w, no, 1);
	}
	if (!w->open) {
		w->open = malloc(sizeof(*w->open));
		if (!w->open)
			return NULL;
		hist_reset(w->open);
	}
	return w->open;
}

int latency_record(struct latency_series *s, uint64_t now_ns, uint64_t value_ns)
{
	struct hist *h;
	int err;

	if (!s)
		return -EINVAL;
	s->count = add_sat(s->count, 1);
	s->sum_ns = add_sat(s->sum_ns, value_ns);
	s->bucket[latency_bucket_of(value_ns)]++;

	h = window_open_at(s, now_ns, &err);
	if (!h)
		return -ENOMEM;
	hist_record(h, value_ns);
	return err;
}

int latency_record_batch(struct latency_series *s, uint64_t now_ns, const uint64_t *hist_counts,
			 const uint64_t *prom_counts, uint64_t count, uint64_t sum_ns,
			 uint64_t max_ns)
{
	uint64_t n = 0, lo, top;
	size_t first = HIST_BUCKETS, last = 0;
	struct hist *h;
	int err;

	if (!s || !prom_counts)
		return -EINVAL;
	for (unsigned int i = 0; i < SHM_LAT_BUCKETS; i++)
		n = add_sat(n, prom_counts[i]);
	if (n != count)
		return -EINVAL;
	s->count = add_sat(s->count, count);
	s->sum_ns = add_sat(s->sum_ns, sum_ns);
	for (unsigned int i = 0; i < SHM_LAT_BUCKETS; i++)
		s->bucket[i] = add_sat(s->bucket[i], prom_counts[i]);

	n = 0;
	for (size_t i = 0; hist_counts && i < HIST_BUCKETS; i++) {
		if (!hist_counts[i])
			continue;
		if (first == HIST_BUCKETS)
			first = i;
		last = i;
		n = add_sat(n, hist_counts[i]);
	}
	if (n == 0)
		return 0;
	h = window_open_at(s, now_ns, &err);
	if (!h)
		return -ENOMEM;
	for (size_t i = first; i <= last; i++)
		h->bucket[i] += hist_counts[i];
	h->count = add_sat(h->count, n);
	h->sum = add_sat(h->sum, sum_ns);
	/* The batch's extremes must lie in its end buckets. */
	lo = hist_bucket_lower(first);
	top = hist_bucket_lower(last);
	if (max_ns < top)
		max_ns = top;
	if (last < HIST_BUCKETS - 1 && max_ns > top + hist_bucket_width(last) - 1)
		max_ns = top + hist_bucket_width(last) - 1;
	if (lo < h->min)
		h->min = lo;
	if (max_ns > h->max)
		h->max = max_ns;
	return err;
}

void latency_export(struct latency_series *s, uint64_t now_ns, struct shm_latency *out)
{
	struct hist *m = &latency_scratch;
	struct latency_window *w;

	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	out->count = s->count;
	out->sum_ns = s->sum_ns;
	memcpy(out->bucket, s->bucket, sizeof(out->bucket));

	w = s->window;
	if (!w)
		return;
	/* A closed sub-window lost here to ENOMEM only shortens the window. */
	(void)window_advance(w, sub_window_of(s, now_ns), 0);
	if (window_is_empty(w)) {
		window_free(w);
		s->window = NULL;
		return;
	}

	if (w->open)
		*m = *w->open;
	else
		hist_reset(m);
	for (unsigned int i = 0; i < LATENCY_CLOSED; i++) {
		const struct latency_closed *c = &w->closed[i];

		if (!c->count)
			continue;
		for (uint32_t j = 0; j < c->npairs; j++)
			m->bucket[c->pairs[j] & PAIR_INDEX_MASK] += c->pairs[j] >> PAIR_INDEX_BITS;
		m->count = add_sat(m->count, c->count);
		if (c->min < m->min)
			m->min = c->min;
		if (c->max > m->max)
			m->max = c->max;
	}
	out->window_count = m->count;
	out->window_p50_ns = hist_quantile(m, 0.50);
	out->window_p90_ns = hist_quantile(m, 0.90);
	out->window_p99_ns = hist_quantile(m, 0.99);
	out->window_max_ns = m->max;
}

void latency_destroy(struct latency_series *s)
{
	if (!s)
		return;
	window_free(s->window);
	latency_init(s, s->window_ns);
}
