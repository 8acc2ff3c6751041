/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Webhook queues and delivery threads (see webhook.h).  Unprivileged: the
 * threads start after the sandbox and only open outgoing TCP connections;
 * in the exporter they run in the webhook sender's process
 * (webhook_sender.c), and the serving process hands it rendered payloads.
 * Memory is bounded: queue_len payloads of at most WEBHOOK_MAX_PAYLOAD
 * bytes per target.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/log.h"
#include "common/util.h"
#include "exporter/alerts/webhook.h"
#include "exporter/alerts/webhook_http.h"
#include "exporter/prom/prom_write.h"

struct payload {
	char *data;
	size_t len;
};

/*
 * A target's counts, in memory shared with the webhook sender's process
 * (MAP_SHARED, made before it is forked): it counts, the serving process
 * renders them.
 */
struct tally {
	_Atomic uint64_t sent, failures, retries, dropped, queued;
	_Atomic int last_status;
};

struct target {
	struct webhook *w;
	size_t index;
	struct url url;
	pthread_t thread;
	int started;
	struct tally *tally;

	/* Under w->mu. */
	struct payload *q;	/* ring of w->opts.queue_len */
	size_t head, n;
};

struct webhook {
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* CLOCK_MONOTONIC: back-off waits */
	int stop;
	struct webhook_opts opts;
	char receiver[64];
	char external_url[256];
	struct target *t;
	size_t n;
	struct tally *tallies;	/* one a target, shared */
	size_t tallies_size;
	int sender;		/* the sender's socket, or -1: delivered here */
	_Atomic int sender_lost;
};

void webhook_opts_default(struct webhook_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->receiver = "zernel";
	o->external_url = "";
	o->queue_len = WEBHOOK_DEFAULT_QUEUE;
	o->max_tries = WEBHOOK_DEFAULT_TRIES;
	o->backoff_ms = WEBHOOK_DEFAULT_BACKOFF_MS;
	o->max_backoff_ms = WEBHOOK_DEFAULT_MAX_BACKOFF_MS;
	o->timeout_ms = WEBHOOK_DEFAULT_TIMEOUT_MS;
}

/* ---- payload ----------------------------------------------------------- */

static struct json_object *labels_obj(const struct alert_notice *n)
{
	struct json_object *o = json_object_new_object();

	for (unsigned int i = 0; o && i < n->n_labels; i++)
		json_object_object_add(o, n->labels[i].name,
				       json_object_new_string(n->labels[i].value));
	return o;
}

static struct json_object *annotations_obj(const struct alert_notice *n)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "summary", json_object_new_string(n->summary));
	if (n->description[0])
		json_object_object_add(o, "description", json_object_new_string(n->description));
	return o;
}

static const char *alertname_of(const struct alert_notice *n)
{
	for (unsigned int i = 0; i < n->n_labels; i++)
		if (strcmp(n->labels[i].name, "alertname") == 0)
			return n->labels[i].value;
	return "";
}

int webhook_payload(const struct alert_notice *n, const char *receiver,
		    const char *external_url, struct sbuf *out)
{
	struct json_object *root = json_object_new_object(), *alerts, *a, *g;
	const char *status = n->resolved ? "resolved" : "firing", *text;
	char ts[40], fp[24], key[ALERT_NAME_MAX + 48], gen[300];
	size_t len;
	int err;

	if (!root)
		return -ENOMEM;
	alerts = json_object_new_array();
	a = json_object_new_object();
	g = json_object_new_object();
	json_object_object_add(root, "version", json_object_new_string("4"));
	/* Alertmanager's form: route matchers, then the group's labels. */
	snprintf(key, sizeof(key), "{}:{alertname=\"%s\"}", alertname_of(n));
	json_object_object_add(root, "groupKey", json_object_new_string(key));
	json_object_object_add(root, "truncatedAlerts", json_object_new_int(0));
	json_object_object_add(root, "status", json_object_new_string(status));
	json_object_object_add(root, "receiver", json_object_new_string(receiver));
	json_object_object_add(g, "alertname", json_object_new_string(alertname_of(n)));
	json_object_object_add(root, "groupLabels", g);
	json_object_object_add(root, "commonLabels", labels_obj(n));
	json_object_object_add(root, "commonAnnotations", annotations_obj(n));
	json_object_object_add(root, "externalURL", json_object_new_string(external_url));

	json_object_object_add(a, "status", json_object_new_string(status));
	json_object_object_add(a, "labels", labels_obj(n));
	json_object_object_add(a, "annotations", annotations_obj(n));
	alert_time_rfc3339(n->starts_real_ns, ts, sizeof(ts));
	json_object_object_add(a, "startsAt", json_object_new_string(ts));
	alert_time_rfc3339(n->resolved ? n->ends_real_ns : 0, ts, sizeof(ts));
	json_object_object_add(a, "endsAt", json_object_new_string(ts));
	snprintf(gen, sizeof(gen), "%s%s", external_url, *external_url ? "/metrics" : "");
	json_object_object_add(a, "generatorURL", json_object_new_string(gen));
	snprintf(fp, sizeof(fp), "%016" PRIx64, n->fingerprint);
	json_object_object_add(a, "fingerprint", json_object_new_string(fp));
	json_object_array_add(alerts, a);
	json_object_object_add(root, "alerts", alerts);

	text = json_object_to_json_string_length(root, JSON_C_TO_STRING_PLAIN |
						 JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	err = text ? sbuf_append(out, text, len) : -ENOMEM;
	json_object_put(root);
	return err ? err : sbuf_error(out);
}

/* ---- delivery ---------------------------------------------------------- */

static void wait_until(struct webhook *w, uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline_ns / NSEC_PER_SEC),
		.tv_nsec = (long)(deadline_ns % NSEC_PER_SEC),
	};

	/* Under w->mu; returns early on stop. */
	while (!w->stop && now_mono_ns() < deadline_ns)
		if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT)
			break;
}

/* Tries one payload until delivered, refused or out of tries; w->mu not held. */
static void deliver(struct target *t, const struct payload *p)
{
	struct webhook *w = t->w;
	uint64_t backoff = w->opts.backoff_ms;
	char why[256];

	for (unsigned int attempt = 1;; attempt++) {
		int st = webhook_http_post(&t->url, p->data, p->len, w->opts.timeout_ms,
					   why, sizeof(why));
		int stop;

		atomic_store(&t->tally->last_status, st);
		if (st >= 200 && st < 300) {
			atomic_fetch_add(&t->tally->sent, 1);
			log_debug("webhook %zu: delivered (HTTP %d)", t->index, st);
			return;
		}
		if (st > 0)
			snprintf(why, sizeof(why), "%.200s answered HTTP %d", t->url.authority, st);
		/* 4xx: the receiver refuses this payload; sending it again will not help. */
		if ((st >= 400 && st < 500) || attempt >= w->opts.max_tries) {
			atomic_fetch_add(&t->tally->failures, 1);
			log_warnx("webhook %zu: giving up after %u %s: %s", t->index, attempt,
				  attempt == 1 ? "try" : "tries", why);
			return;
		}
		log_info("webhook %zu: try %u failed (%s); again in %" PRIu64 " ms", t->index,
			 attempt, why, backoff);
		pthread_mutex_lock(&w->mu);
		wait_until(w, now_mono_ns() + backoff * NSEC_PER_MSEC);
		stop = w->stop;
		pthread_mutex_unlock(&w->mu);
		if (stop) {
			atomic_fetch_add(&t->tally->failures, 1);
			return;
		}
		atomic_fetch_add(&t->tally->retries, 1);
		backoff = backoff * 2 > w->opts.max_backoff_ms ? w->opts.max_backoff_ms : backoff * 2;
	}
}

static void *target_thread(void *arg)
{
	struct target *t = arg;
	struct webhook *w = t->w;

	pthread_setname_np(pthread_self(), "zernel-webhook");
	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct payload p;

		while (!w->stop && t->n == 0)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->stop)
			break;
		p = t->q[t->head];
		t->head = (t->head + 1) % w->opts.queue_len;
		t->n--;
		atomic_store(&t->tally->queued, t->n);
		pthread_mutex_unlock(&w->mu);
		deliver(t, &p);
		free(p.data);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int webhook_queue_payload(struct webhook *w, const char *data, size_t len)
{
	int ret = 0;

	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < w->n; i++) {
		struct target *t = &w->t[i];
		struct payload p = { .data = malloc(len + 1), .len = len };

		if (!p.data) {
			atomic_fetch_add(&t->tally->dropped, 1);
			ret = -ENOMEM;
			continue;
		}
		memcpy(p.data, data, len);
		p.data[len] = '\0';
		if (t->n == w->opts.queue_len) {
			/* The newest state matters most: push out the oldest. */
			free(t->q[t->head].data);
			t->head = (t->head + 1) % w->opts.queue_len;
			t->n--;
			atomic_fetch_add(&t->tally->dropped, 1);
			ret = -ENOSPC;
		}
		t->q[(t->head + t->n) % w->opts.queue_len] = p;
		t->n++;
		atomic_store(&t->tally->queued, t->n);
	}
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return ret;
}

/*
 * To the sender's process, without waiting: a sender that is behind (its
 * socket full) or gone costs this payload, counted as dropped at every
 * target.
 */
static int send_to_sender(struct webhook *w, const struct sbuf *b)
{
	int err;

	if (send(w->sender, b->data, b->len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)b->len)
		return 0;
	err = -errno;
	if ((err == -EPIPE || err == -ECONNRESET) && !atomic_exchange(&w->sender_lost, 1))
		log_error("webhook: the sender process is gone (%s): notifications are dropped "
			  "from now on", strerror(-err));
	else if (err != -EAGAIN)
		log_warnx("webhook: a notification not handed to the sender: %s", strerror(-err));
	for (size_t i = 0; i < w->n; i++)
		atomic_fetch_add(&w->t[i].tally->dropped, 1);
	return err == -EAGAIN ? -ENOSPC : err;
}

int webhook_enqueue(struct webhook *w, const struct alert_notice *n)
{
	struct sbuf b;
	int err;

	if (!w || !w->n)
		return 0;
	sbuf_init(&b, WEBHOOK_MAX_PAYLOAD, 0);
	err = webhook_payload(n, w->receiver, w->external_url, &b);
	if (err) {
		log_warnx("webhook: cannot render a notification: %s", strerror(-err));
		sbuf_free(&b);
		return err;
	}
	err = w->sender >= 0 ? send_to_sender(w, &b) : webhook_queue_payload(w, b.data, b.len);
	sbuf_free(&b);
	return err;
}

/* ---- life cycle -------------------------------------------------------- */

int webhook_new(struct webhook **out, const struct url *urls, size_t n,
		const struct webhook_opts *opts)
{
	struct webhook *w;
	pthread_condattr_t ca;

	if (n > WEBHOOK_MAX_TARGETS || !opts->queue_len || !opts->max_tries)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->opts = *opts;
	snprintf(w->receiver, sizeof(w->receiver), "%s", opts->receiver ? opts->receiver : "zernel");
	snprintf(w->external_url, sizeof(w->external_url), "%s",
		 opts->external_url ? opts->external_url : "");
	w->opts.receiver = w->receiver;
	w->opts.external_url = w->external_url;
	w->sender = -1;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	w->t = calloc(n ? n : 1, sizeof(*w->t));
	w->tallies_size = (n ? n : 1) * sizeof(*w->tallies);
	w->tallies = mmap(NULL, w->tallies_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			  -1, 0);
	if (w->tallies == MAP_FAILED)
		w->tallies = NULL;
	if (!w->t || !w->tallies) {
		webhook_free(w);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		w->t[i].w = w;
		w->t[i].tally = &w->tallies[i];
		w->t[i].index = i;
		w->t[i].url = urls[i];
		w->t[i].q = calloc(opts->queue_len, sizeof(*w->t[i].q));
		w->n = i + 1;
		if (!w->t[i].q) {
			webhook_free(w);
			return -ENOMEM;
		}
	}
	*out = w;
	return 0;
}

int webhook_start(struct webhook *w)
{
	for (size_t i = 0; w && i < w->n; i++) {
		int err;

		if (w->sender >= 0) {
			log_info("webhook %zu: %s, sent by the webhook sender", i, w->t[i].url.text);
			continue;
		}
		err = pthread_create(&w->t[i].thread, NULL, target_thread, &w->t[i]);
		if (err)
			return -err;
		w->t[i].started = 1;
		log_info("webhook %zu: %s", i, w->t[i].url.text);
	}
	return 0;
}

void webhook_use_sender(struct webhook *w, int fd)
{
	w->sender = fd;
}

void webhook_stop(struct webhook *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	for (size_t i = 0; i < w->n; i++) {
		if (w->t[i].started)
			pthread_join(w->t[i].thread, NULL);
		w->t[i].started = 0;
	}
}

void webhook_free(struct webhook *w)
{
	if (!w)
		return;
	webhook_stop(w);
	for (size_t i = 0; w->t && i < w->n; i++) {
		for (size_t k = 0; w->t[i].q && k < w->t[i].n; k++)
			free(w->t[i].q[(w->t[i].head + k) % w->opts.queue_len].data);
		free(w->t[i].q);
	}
	free(w->t);
	if (w->tallies)
		munmap(w->tallies, w->tallies_size);
	/* The sender sees the end of its socket, and ends. */
	if (w->sender >= 0)
		close(w->sender);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

size_t webhook_count(const struct webhook *w)
{
	return w ? w->n : 0;
}

void webhook_get_counts(struct webhook *w, size_t i, struct webhook_counts *c)
{
	memset(c, 0, sizeof(*c));
	if (!w || i >= w->n)
		return;
	c->sent = atomic_load(&w->t[i].tally->sent);
	c->failures = atomic_load(&w->t[i].tally->failures);
	c->retries = atomic_load(&w->t[i].tally->retries);
	c->dropped = atomic_load(&w->t[i].tally->dropped);
	c->queued = atomic_load(&w->t[i].tally->queued);
	c->last_status = atomic_load(&w->t[i].tally->last_status);
}

int webhook_render_prom(struct webhook *w, struct prom_out *o)
{
	static const enum cat_id fam[] = {
		CAT_ID_WEBHOOK_INFO, CAT_ID_WEBHOOK_SENT, CAT_ID_WEBHOOK_FAILURES,
		CAT_ID_WEBHOOK_RETRIES, CAT_ID_WEBHOOK_DROPPED, CAT_ID_WEBHOOK_QUEUE,
	};

	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		const struct cat_metric *m = cat_metric(fam[f]);

		prom_family_of(o, m, 0);
		for (size_t i = 0; w && i < w->n; i++) {
			struct webhook_counts c;
			char labels[URL_HOST_MAX + 64], idx[24];
			uint64_t v = 1;

			webhook_get_counts(w, i, &c);
			switch (fam[f]) {
			case CAT_ID_WEBHOOK_SENT:	v = c.sent; break;
			case CAT_ID_WEBHOOK_FAILURES:	v = c.failures; break;
			case CAT_ID_WEBHOOK_RETRIES:	v = c.retries; break;
			case CAT_ID_WEBHOOK_DROPPED:	v = c.dropped; break;
			case CAT_ID_WEBHOOK_QUEUE:	v = c.queued; break;
			default:			break;
			}
			snprintf(idx, sizeof(idx), "%zu", i);
			labels[0] = '\0';
			prom_label_add(labels, sizeof(labels), "webhook", idx);
			/* Host and port only: a path may carry a token. */
			if (fam[f] == CAT_ID_WEBHOOK_INFO)
				prom_label_add(labels, sizeof(labels), "target", w->t[i].url.authority);
			prom_series_u64(o, m->prom, labels, v);
		}
	}
	return prom_out_error(o);
}
