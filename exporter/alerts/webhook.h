/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Alert notifications to webhooks, in Alertmanager's webhook format
 * (version "4"), so that anything that takes Alertmanager's webhooks takes
 * Zernel's.  One payload per transition: status firing or resolved, one
 * alert, groupLabels {alertname}.
 *
 * Delivery never blocks the caller: webhook_enqueue() copies the payload
 * into each target's bounded queue (full: the oldest waiting payload is
 * dropped and counted) and returns.  Each target has its own thread, so a
 * slow or failing receiver delays no other.  The thread POSTs over plain
 * TCP (HTTP/1.1, Connection: close), with a timeout per try; a network
 * error or a 5xx is retried with exponential back-off (backoff_ms, doubled
 * each time, at most max_backoff_ms) up to max_tries tries; a 4xx is not
 * retried.  Only http:// URLs: TLS belongs to a relay or a sidecar.
 *
 * In the exporter the queues and threads live in a process of their own,
 * the webhook sender (webhook_sender.c), the only one whose sandbox may
 * connect; the serving process renders each payload and hands it over.
 *
 * System calls the delivery path makes (the sender's sandbox allows these):
 * socket(AF_INET/AF_INET6, SOCK_STREAM), connect, poll, getsockopt
 * (SO_ERROR), sendto, recvfrom, close; futex and clock_gettime for the
 * queue and back-off; and, for a host name that is not an IP literal,
 * getaddrinfo's (openat O_RDONLY of /etc/hosts, /etc/resolv.conf,
 * /etc/nsswitch.conf, /etc/gai.conf; UDP sockets, connect, sendmmsg,
 * recvfrom, poll).
 */
#ifndef ZERNEL_WEBHOOK_H
#define ZERNEL_WEBHOOK_H

#include <stddef.h>
#include <stdint.h>

#include "exporter/alerts/alert_engine.h"
#include "common/sbuf.h"
#include "common/url.h"

#define WEBHOOK_MAX_TARGETS	8u
#define WEBHOOK_MAX_PAYLOAD	(64u << 10)

/*
 * Parses an --webhook URL (common/url.h) and checks it is http://; the
 * port defaults to 80.  Returns 0, or -EINVAL with a message in err
 * (https, missing host, bad port, credentials, spaces, ...).
 */
int webhook_url_parse(const char *url, struct url *u, char *err, size_t errlen);

struct webhook_opts {
	const char *receiver;		/* "receiver" in the payload */
	const char *external_url;	/* "externalURL"; generatorURL adds /metrics */
	unsigned int queue_len;		/* per target */
	unsigned int max_tries;		/* first try included */
	unsigned int backoff_ms;	/* before the second try */
	unsigned int max_backoff_ms;
	unsigned int timeout_ms;	/* per try: connect, send and answer */
};

#define WEBHOOK_DEFAULT_QUEUE		256u
#define WEBHOOK_DEFAULT_TRIES		6u
#define WEBHOOK_DEFAULT_BACKOFF_MS	500u
#define WEBHOOK_DEFAULT_MAX_BACKOFF_MS	30000u
#define WEBHOOK_DEFAULT_TIMEOUT_MS	5000u

void webhook_opts_default(struct webhook_opts *o);

struct webhook_counts {
	uint64_t sent;		/* delivered (2xx) */
	uint64_t failures;	/* given up after the last try, or a 4xx */
	uint64_t retries;	/* tries after the first */
	uint64_t dropped;	/* pushed out of a full queue */
	uint64_t queued;	/* waiting now */
	int last_status;	/* HTTP status of the last try; -errno for network errors */
};

struct webhook;

/* Copies urls and opts.  Returns 0 or -errno. */
int webhook_new(struct webhook **out, const struct url *urls, size_t n,
		const struct webhook_opts *opts);
/* Starts one thread per target. */
int webhook_start(struct webhook *w);
/*
 * Queues n for every target and returns at once: 0, or -ENOSPC when a
 * queue was full (its oldest payload was dropped to make room).  Safe from
 * any thread, including under the alert engine's mutex.
 */
int webhook_enqueue(struct webhook *w, const struct alert_notice *n);
/* A rendered payload into every target's queue, here (the sender's side). */
int webhook_queue_payload(struct webhook *w, const char *data, size_t len);
/*
 * From now on webhook_enqueue() hands payloads to the webhook sender's
 * process over fd (webhook_sender.c), and webhook_start() starts no
 * thread; webhook_free() closes fd.
 */
void webhook_use_sender(struct webhook *w, int fd);
/* Wakes the threads and joins them; a try in flight ends within its timeout. */
void webhook_stop(struct webhook *w);
void webhook_free(struct webhook *w);

size_t webhook_count(const struct webhook *w);
void webhook_get_counts(struct webhook *w, size_t target, struct webhook_counts *c);

/* zernel_webhook_* families.  Returns prom_out_error(out). */
int webhook_render_prom(struct webhook *w, struct prom_out *out);

/* The Alertmanager v4 JSON for one notice.  Returns sbuf_error(out). */
int webhook_payload(const struct alert_notice *n, const char *receiver,
		    const char *external_url, struct sbuf *out);

#endif /* ZERNEL_WEBHOOK_H */
