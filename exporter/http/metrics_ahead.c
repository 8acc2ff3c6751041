/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The /metrics render thread (see metrics_ahead.h).  Unprivileged; nothing
 * in it is fatal: a failed render leaves the view without a body, and the
 * scrape answers 500 as it would have.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "exporter/http/metrics_ahead.h"
#include "exporter/stats.h"
#include "shm/shm_layout.h"

int metrics_ahead_init(struct metrics_ahead *a, const char *shm_name, size_t limit)
{
	pthread_condattr_t ca;
	int err;

	memset(a, 0, sizeof(*a));
	err = pthread_mutex_init(&a->lock, NULL);
	if (err)
		return -err;
	/* Waits are timed on the monotonic clock: wall-clock steps do not stretch them. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	err = pthread_cond_init(&a->wake, &ca);
	if (!err && (err = pthread_cond_init(&a->ready, &ca)))
		pthread_cond_destroy(&a->wake);
	pthread_condattr_destroy(&ca);
	if (err) {
		pthread_mutex_destroy(&a->lock);
		return -err;
	}
	source_init(&a->src, shm_name);
	a->limit = limit;
	for (unsigned int i = 0; i < METRICS_FORMS; i++) {
		for (unsigned int k = 0; k < SCRAPE_FORECAST_REQUESTS; k++)
			atomic_init(&a->asked_ns[i][k], 0);
	}
	atomic_init(&a->last_scrape_ns, 0);
	atomic_init(&a->scrape_gap_ns, 0);
	a->view.status = SHM_READ_MISSING;
	snprintf(a->view.reason, sizeof(a->view.reason), "not read yet");
	return 0;
}

/* Nothing was published since the last snapshot: the seqlock did not move. */
static int unchanged(const struct metrics_ahead *a)
{
	return source_current(&a->src);
}

/*
 * Scrapes come often enough that a publish is worth rendering before they
 * ask: the last two within METRICS_AHEAD_EAGER_MS of each other, the last
 * within it of now.  One scrape after a quiet spell (a Prometheus every
 * 15 s, a curl) does not keep renders ahead of the next.
 */
static int eager(struct metrics_ahead *a, uint64_t now)
{
	uint64_t last = atomic_load(&a->last_scrape_ns);
	uint64_t gap = atomic_load(&a->scrape_gap_ns);

	return last && now - last < METRICS_AHEAD_EAGER_MS * NSEC_PER_MSEC &&
	       gap && gap < METRICS_AHEAD_EAGER_MS * NSEC_PER_MSEC;
}

/*
 * The forms (METRICS_FORM_BITs) whose steady scraper's next request is
 * near: each publish seen in its window is rendered, so one that comes
 * just before the request does not leave it nothing to serve.
 */
static unsigned int forecast_forms(const struct metrics_ahead *a, uint64_t now)
{
	unsigned int forms = 0;

	for (unsigned int i = 0; i < METRICS_FORMS; i++) {
		struct scrape_forecast_input in = {
			.render_ns = a->render_ns,
			.poll_ns = METRICS_AHEAD_POLL_MS * NSEC_PER_MSEC,
			.publish_ns = a->publish_ns,
		};
		struct scrape_forecast_window w;

		for (unsigned int k = 0; k < SCRAPE_FORECAST_REQUESTS; k++)
			in.asked_ns[k] = atomic_load(&a->asked_ns[i][k]);

		if (scrape_forecast_window(&in, &w) && now >= w.from_ns && now < w.until_ns)
			forms |= 1u << i;
	}
	return forms;
}

static void step(struct metrics_ahead *a, int demand)
{
	struct metrics_body *body = NULL, *old;
	const struct shm_snapshot *snap;
	uint64_t now = now_mono_ns();
	int render_error = 0, same = 0;
	unsigned int forecast = forecast_forms(a, now);

	if (a->have_view && unchanged(a) && !demand && !forecast &&
	    now - a->last_full_ns < METRICS_AHEAD_REFRESH_MS * NSEC_PER_MSEC)
		return;
	/* A scrape waiting has seen a publish this thread has not: look now. */
	if (demand || !a->have_view || !unchanged(a) ||
	    now - a->last_full_ns >= METRICS_AHEAD_REFRESH_MS * NSEC_PER_MSEC) {
		source_refresh(&a->src);
		a->last_full_ns = now;
	}
	snap = source_fresh(&a->src);
	if (snap) {
		pthread_mutex_lock(&a->lock);
		body = a->view.body;
		same = a->view.heartbeat_mono_ns == snap->hdr->heartbeat_mono_ns &&
		       a->view.generation == snap->hdr->generation;
		if (metrics_body_current(body, snap))
			metrics_body_ref(body);
		else
			body = NULL;
		/* A publish that failed to render is not tried again. */
		if (!body && same)
			render_error = a->view.render_error;
		pthread_mutex_unlock(&a->lock);
		a->publish_ns = (uint64_t)snap->hdr->publish_interval_ms * NSEC_PER_MSEC;
		if (!body && !render_error && (demand || forecast || eager(a, now))) {
			body = metrics_body_new(snap, a->limit, METRICS_TEXT);
			if (body)
				metrics_body_render(body, snap,
						    metrics_ahead_forms(a, now) | forecast);
			else
				render_error = -errno;
			a->render_ns = now_mono_ns() - now;
		}
	}
	pthread_mutex_lock(&a->lock);
	old = a->view.body;
	a->view.status = a->src.status;
	snprintf(a->view.reason, sizeof(a->view.reason), "%s", a->src.reason);
	a->view.seen = a->src.seen;
	a->view.generation = a->src.generation;
	a->view.heartbeat_mono_ns = a->src.heartbeat_mono_ns;
	a->view.published_ns = a->src.published_ns;
	a->view.heartbeat_real_ns = a->src.heartbeat_real_ns;
	a->view.body = body;
	a->view.render_error = render_error;
	a->have_view = 1;
	pthread_cond_broadcast(&a->ready);
	pthread_mutex_unlock(&a->lock);
	metrics_body_unref(old);
}

static struct timespec after_ms(unsigned int ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

static void *ahead_thread(void *arg)
{
	struct metrics_ahead *a = arg;

	while (!atomic_load(&a->stop)) {
		struct timespec until = after_ms(METRICS_AHEAD_POLL_MS);
		int demand;

		pthread_mutex_lock(&a->lock);
		while (!a->demand && !atomic_load(&a->stop) &&
		       pthread_cond_timedwait(&a->wake, &a->lock, &until) == 0)
			;
		demand = a->demand;
		a->demand = 0;
		pthread_mutex_unlock(&a->lock);
		step(a, demand);
		pthread_mutex_lock(&a->lock);
		a->looks++;
		pthread_cond_broadcast(&a->ready);
		pthread_mutex_unlock(&a->lock);
	}
	return NULL;
}

int metrics_ahead_start(struct metrics_ahead *a)
{
	int err;

	step(a, 0);
	err = pthread_create(&a->thread, NULL, ahead_thread, a);
	if (err)
		return -err;
	a->started = 1;
	return 0;
}

/* The view holds the publish (generation, heartbeat) or a later one, rendered or failed. */
static int view_reached(const struct metrics_view *w, uint64_t generation, uint64_t heartbeat)
{
	if (w->status != SHM_READ_OK)
		return 1;	/* nothing to render: the scrape reports what it saw */
	if (w->generation != generation || w->heartbeat_mono_ns < heartbeat)
		return 0;
	return w->body || w->render_error;
}

/* The view has a body of this collector at most behind_ns older than heartbeat. */
static int view_recent(const struct metrics_view *w, uint64_t generation, uint64_t heartbeat,
		       uint64_t behind_ns)
{
	return w->status == SHM_READ_OK && w->body && w->generation == generation &&
	       w->heartbeat_mono_ns + behind_ns >= heartbeat;
}

int metrics_ahead_view(struct metrics_ahead *a, uint64_t generation, uint64_t heartbeat,
		       uint64_t behind_ns, struct metrics_view *v)
{
	struct timespec until = after_ms(METRICS_AHEAD_WAIT_MS);
	uint64_t now = now_mono_ns(), asked = 0;
	uint64_t before = atomic_exchange(&a->last_scrape_ns, now);
	int have, err = 0, looked = 0, waited = 0, recent;

	atomic_store(&a->scrape_gap_ns, before && now > before ? now - before : 0);
	pthread_mutex_lock(&a->lock);
	/*
	 * The publish before, while this one renders: nobody waits, and the
	 * thread is told when scrapes come often; a rare scraper's next
	 * request comes long after this publish (its render is forecast).
	 */
	recent = view_recent(&a->view, generation, heartbeat, behind_ns);
	if (a->started && recent && !view_reached(&a->view, generation, heartbeat) &&
	    !a->demand && eager(a, now)) {
		a->demand = 1;
		pthread_cond_signal(&a->wake);
	}
	while (a->started && !recent && !err && !view_reached(&a->view, generation, heartbeat)) {
		/*
		 * Another generation after a look taken since we asked: the
		 * collector restarted again; that one is the newest.
		 */
		if (looked && a->view.generation != generation)
			break;
		if (!a->demand) {
			a->demand = 1;
			asked = a->looks;
			pthread_cond_signal(&a->wake);
		}
		err = pthread_cond_timedwait(&a->ready, &a->lock, &until);
		waited = 1;
		looked = a->looks > asked + 1 || (a->looks > asked && !a->demand);
	}
	*v = a->view;
	if (v->body)
		metrics_body_ref(v->body);
	have = a->have_view;
	pthread_mutex_unlock(&a->lock);
	if (waited)
		stats_add(CAT_STAT_SCRAPES_WAITED, 1);
	return have && (v->body || v->status != SHM_READ_OK) ? 0 : -EAGAIN;
}

void metrics_ahead_want(struct metrics_ahead *a, enum metrics_format f, int gzip,
			uint64_t now_ns)
{
	atomic_ullong *t = a->asked_ns[METRICS_FORM_INDEX(f, gzip)];

	/*
	 * Only the event loop asks; the render thread reads times at most one
	 * request old, and a forecast from a torn read is one render at most.
	 */
	if (now_ns <= atomic_load(&t[0]))
		return;
	for (unsigned int k = SCRAPE_FORECAST_REQUESTS - 1; k > 0; k--)
		atomic_store(&t[k], atomic_load(&t[k - 1]));
	atomic_store(&t[0], now_ns);
}

unsigned int metrics_ahead_forms(struct metrics_ahead *a, uint64_t now_ns)
{
	unsigned int forms = 0;

	for (unsigned int i = 0; i < METRICS_FORMS; i++) {
		uint64_t last = atomic_load(&a->asked_ns[i][0]);
		uint64_t before = atomic_load(&a->asked_ns[i][1]);
		uint64_t keep = before ? 2 * (last - before) : 0;

		if (keep < METRICS_AHEAD_EAGER_MS * NSEC_PER_MSEC)
			keep = METRICS_AHEAD_EAGER_MS * NSEC_PER_MSEC;
		if (keep > METRICS_AHEAD_FORM_KEEP_MS * NSEC_PER_MSEC)
			keep = METRICS_AHEAD_FORM_KEEP_MS * NSEC_PER_MSEC;
		if (last && (now_ns <= last || now_ns - last <= keep))
			forms |= 1u << i;
	}
	return forms;
}

void metrics_view_status(const struct metrics_view *v, uint64_t now_mono_ns,
			 struct cat_status *st)
{
	st->status = v->status;
	st->reason = v->reason;
	st->seen = v->seen;
	st->generation = v->generation;
	st->age_ns = v->seen && now_mono_ns > v->published_ns ? now_mono_ns - v->published_ns : 0;
	st->last_update_real_ns = v->heartbeat_real_ns;
}

void metrics_ahead_stop(struct metrics_ahead *a)
{
	if (!a->started)
		return;
	pthread_mutex_lock(&a->lock);
	atomic_store(&a->stop, 1);
	pthread_cond_signal(&a->wake);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	a->started = 0;
}

void metrics_ahead_free(struct metrics_ahead *a)
{
	metrics_ahead_stop(a);
	metrics_body_unref(a->view.body);
	a->view.body = NULL;
	source_close(&a->src);
	pthread_cond_destroy(&a->wake);
	pthread_cond_destroy(&a->ready);
	pthread_mutex_destroy(&a->lock);
}
