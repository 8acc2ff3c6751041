/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exporter's alerting service (see alerts.h): rules, engine, webhooks
 * and the alerts thread.  Prepared before the sandbox, run after it,
 * unprivileged; the only input it reads is the segment (validated by
 * shm_reader) and the rules file (checked by alert_rules).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "common/log.h"
#include "common/util.h"
#include "exporter/alerts/alerts.h"
#include "exporter/alerts/webhook_sender.h"
#include "exporter/prom/prom_write.h"
#include "exporter/source.h"

#define EVAL_MIN_MS	50u	/* at most 20 evaluations a second */
#define EVAL_DOWN_MS	1000u	/* cadence while the collector is not fresh */
#define EVAL_SLACK_MS	50u	/* after the next publish is due */

struct alerts {
	char rules_path[4096];		/* "" for the built-in defaults */
	char shm_name[256];
	struct alert_engine *engine;
	struct webhook *webhook;

	pthread_t thread;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* CLOCK_MONOTONIC */
	int stop;
};

static void notify(void *arg, const struct alert_notice *n)
{
	struct alerts *a = arg;

	/* Never blocks: a full queue drops its oldest entry (counted). */
	webhook_enqueue(a->webhook, n);
}

int alerts_new(struct alerts **out, const struct alerts_options *o, const char *shm_name,
	       const char *external_url)
{
	struct url urls[WEBHOOK_MAX_TARGETS];
	struct webhook_opts wo;
	struct alert_ruleset rs;
	struct alerts *a;
	pthread_condattr_t ca;
	char err[1024];
	int r;

	if (o->n_webhooks > WEBHOOK_MAX_TARGETS)
		return -E2BIG;
	for (size_t i = 0; i < o->n_webhooks; i++) {
		if (webhook_url_parse(o->webhooks[i], &urls[i], err, sizeof(err)) < 0) {
			log_warnx("%s", err);
			return -EINVAL;
		}
	}
	if (o->rules_path)
		r = alert_rules_load(o->rules_path, &rs, err, sizeof(err));
	else
		r = alert_rules_default(&rs);
	if (r < 0) {
		log_warnx("alerts: %s", o->rules_path ? err : strerror(-r));
		return r;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		alert_ruleset_free(&rs);
		return -ENOMEM;
	}
	snprintf(a->rules_path, sizeof(a->rules_path), "%s", o->rules_path ? o->rules_path : "");
	snprintf(a->shm_name, sizeof(a->shm_name), "%s", shm_name);
	pthread_mutex_init(&a->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cv, &ca);
	pthread_condattr_destroy(&ca);

	webhook_opts_default(&wo);
	wo.external_url = external_url;
	r = webhook_new(&a->webhook, urls, o->n_webhooks, &wo);
	if (r < 0) {
		alert_ruleset_free(&rs);
		alerts_free(a);
		return r;
	}
	a->engine = alert_engine_new(&rs, notify, a);
	if (!a->engine) {
		r = -errno;
		alerts_free(a);
		return r;
	}
	log_info("alerts: %zu rules from %s, %zu webhooks", alert_engine_rule_count(a->engine),
		 o->rules_path ? o->rules_path : "built-in defaults", o->n_webhooks);
	*out = a;
	return 0;
}

/* Sleeps until deadline or stop; returns stop. */
static int nap(struct alerts *a, uint64_t ms)
{
	uint64_t deadline = now_mono_ns() + ms * NSEC_PER_MSEC;
	struct timespec ts = {
		.tv_sec = (time_t)(deadline / NSEC_PER_SEC),
		.tv_nsec = (long)(deadline % NSEC_PER_SEC),
	};
	int stop;

	pthread_mutex_lock(&a->mu);
	while (!a->stop && now_mono_ns() < deadline)
		if (pthread_cond_timedwait(&a->cv, &a->mu, &ts) == ETIMEDOUT)
			break;
	stop = a->stop;
	pthread_mutex_unlock(&a->mu);
	return stop;
}

static void *alerts_thread(void *arg)
{
	struct alerts *a = arg;
	struct source src;
	uint64_t last_gen = 0, last_hb = 0, last_eval = 0;

	pthread_setname_np(pthread_self(), "zernel-alerts");
	source_init(&src, a->shm_name);
	do {
		enum shm_read_status st = source_refresh(&src);
		uint64_t now = now_mono_ns(), wait_ms = EVAL_DOWN_MS;
		uint64_t age = source_age_ns(&src, now);
		const struct shm_snapshot *snap = source_fresh(&src);

		if (snap) {
			const struct shm_header_fields *h = snap->hdr;
			uint64_t interval = (uint64_t)h->publish_interval_ms * NSEC_PER_MSEC;

			if (h->generation != last_gen || h->heartbeat_mono_ns != last_hb) {
				alert_engine_eval(a->engine, snap, age, now, now_real_ns());
				last_gen = h->generation;
				last_hb = h->heartbeat_mono_ns;
				last_eval = now;
			}
			/* Wake just after the next publish is due. */
			wait_ms = age < interval ? (interval - age) / NSEC_PER_MSEC : 0;
			wait_ms += EVAL_SLACK_MS;
		} else if (st == SHM_READ_BUSY) {
			/* The writer is mid-publish or died there: look again soon. */
			wait_ms = 100;
			if (now - last_eval >= EVAL_DOWN_MS * NSEC_PER_MSEC)
				wait_ms = EVAL_MIN_MS;
		} else if (now - last_eval >= EVAL_DOWN_MS * NSEC_PER_MSEC - EVAL_MIN_MS * NSEC_PER_MSEC) {
			alert_engine_eval(a->engine, NULL, age, now, now_real_ns());
			last_eval = now;
			last_gen = last_hb = 0;
		}
		if (wait_ms < EVAL_MIN_MS)
			wait_ms = EVAL_MIN_MS;
		if (wait_ms > EVAL_DOWN_MS)
			wait_ms = EVAL_DOWN_MS;
		if (nap(a, wait_ms))
			break;
	} while (1);
	source_close(&src);
	return NULL;
}

int alerts_fork_sender(struct alerts *a, const struct sandbox_opts *sandbox)
{
	return webhook_sender_fork(a->webhook, sandbox);
}

int alerts_start(struct alerts *a)
{
	int err = webhook_start(a->webhook);

	if (err)
		return err;
	err = pthread_create(&a->thread, NULL, alerts_thread, a);
	if (err)
		return -err;
	a->started = 1;
	return 0;
}

int alerts_reload(struct alerts *a)
{
	if (!a)
		return 0;
	if (!a->rules_path[0]) {
		log_info("alerts: SIGHUP: no --alerts file, the built-in rules stay");
		return 0;
	}
	log_info("alerts: SIGHUP: reloading %s", a->rules_path);
	return alert_engine_reload(a->engine, a->rules_path, now_mono_ns(), now_real_ns());
}

void alerts_free(struct alerts *a)
{
	if (!a)
		return;
	if (a->started) {
		pthread_mutex_lock(&a->mu);
		a->stop = 1;
		pthread_cond_broadcast(&a->cv);
		pthread_mutex_unlock(&a->mu);
		pthread_join(a->thread, NULL);
	}
	/* The engine's last transitions may still be queued: the webhooks go last. */
	alert_engine_free(a->engine);
	webhook_free(a->webhook);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

int alerts_render_prom(struct alerts *a, struct prom_out *out)
{
	int err;

	if (!a)
		return prom_out_error(out);
	err = alert_engine_render_prom(a->engine, out);
	if (!err)
		err = webhook_render_prom(a->webhook, out);
	return err;
}

struct json_object *alerts_feed_json(struct alerts *a)
{
	return a ? alert_engine_feed_json(a->engine) : json_object_new_array();
}

struct alert_engine *alerts_engine(struct alerts *a)
{
	return a->engine;
}

struct webhook *alerts_webhook(struct alerts *a)
{
	return a->webhook;
}
