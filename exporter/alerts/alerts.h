/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exporter's alerting: the rules (a file or the built-in defaults),
 * the engine, the webhooks, and the thread that feeds the engine.
 *
 * Threads: the alerts thread ("zernel-alerts") has its own segment reader
 * (source.h) and evaluates the engine once per new publish (at most 20
 * times a second), and once a second while the collector is not fresh so
 * that CollectorDown can fire.  The HTTP and WebSocket threads call
 * alerts_render_prom() / alerts_feed_json(), which render under the
 * engine's mutex; the main thread calls alerts_reload() on SIGHUP.  Each
 * webhook target has a thread of its own (webhook.h).
 *
 * Start-up order in the exporter: alerts_new() before the sandbox (it
 * reads the rules file and checks the URLs), alerts_start() after it.
 */
#ifndef ZERNEL_ALERTS_H
#define ZERNEL_ALERTS_H

#include <stddef.h>
#include <stdio.h>

#include "exporter/alerts/alert_engine.h"
#include "common/sbuf.h"
#include "exporter/alerts/webhook.h"
#include "exporter/sandbox/sandbox.h"

struct json_object;

/* What the command line says about alerting (alerts_cli.c). */
struct alerts_options {
	const char *rules_path;		/* --alerts FILE; NULL: built-in defaults */
	const char *webhooks[WEBHOOK_MAX_TARGETS];	/* --webhook URL, repeatable */
	size_t n_webhooks;
	const char *check_path;		/* --check-config FILE: validate and exit */
};

struct alerts;

/*
 * Loads the rules and prepares the webhooks; starts nothing.
 * external_url (e.g. "http://host:9091") goes into the notifications.
 * Returns 0, or -errno with the reason logged (a bad rules file: its
 * file, rule and field).
 */
int alerts_new(struct alerts **out, const struct alerts_options *o, const char *shm_name,
	       const char *external_url);

/*
 * Forks the webhook sender (webhook_sender.h), which enters sandbox (NULL:
 * none) with connections allowed; the webhooks are then sent from there.
 * Before the serving process's own sandbox, while it has one thread.
 */
int alerts_fork_sender(struct alerts *a, const struct sandbox_opts *sandbox);

/* Starts the alerts thread, and the webhook threads where no sender was forked. */
int alerts_start(struct alerts *a);

/*
 * SIGHUP: reloads the rules file.  A bad file is logged and the rules in
 * force stay.  Returns 0 or -errno; without --alerts, logs and returns 0.
 */
int alerts_reload(struct alerts *a);

/* Stops the threads, then frees. */
void alerts_free(struct alerts *a);

/*
 * Appends the zernel_alert_* and zernel_webhook_* families (see
 * alert_engine.h, webhook.h).  a may be NULL: nothing is added.
 */
int alerts_render_prom(struct alerts *a, struct prom_out *out);

/* The feed's "alerts" array (caller owns it); an empty one when a is NULL. */
struct json_object *alerts_feed_json(struct alerts *a);

/* For tests. */
struct alert_engine *alerts_engine(struct alerts *a);
struct webhook *alerts_webhook(struct alerts *a);

/* ---- command line (alerts_cli.c) --------------------------------------- */

/* Option values for getopt_long; ALERTS_LONGOPTS(base) gives their entries. */
enum { ALERTS_OPT_ALERTS = 0, ALERTS_OPT_WEBHOOK, ALERTS_OPT_CHECK, ALERTS_OPT_COUNT };
#define ALERTS_LONGOPTS(base)							\
	{ "alerts", required_argument, NULL, (base) + ALERTS_OPT_ALERTS },	\
	{ "webhook", required_argument, NULL, (base) + ALERTS_OPT_WEBHOOK },	\
	{ "check-config", required_argument, NULL, (base) + ALERTS_OPT_CHECK }

/* Lines for --help. */
extern const char alerts_usage[];

/*
 * Takes one of the three flags (which: ALERTS_OPT_*).  Returns 0, or
 * -EINVAL after printing one line to err (bad URL, https, too many
 * webhooks, empty path).
 */
int alerts_options_set(struct alerts_options *o, int which, const char *arg, FILE *err);

/*
 * --check-config: validates the file and says so on out, or prints the
 * error (file, rule, field) on err.  Returns the exit status: 0 or 2.
 */
int alerts_check_config(const char *path, FILE *out, FILE *err);

#endif /* ZERNEL_ALERTS_H */
