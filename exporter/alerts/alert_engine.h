/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The alert engine: evaluates the rules (alert_rules.h) on every fresh
 * snapshot and keeps one state machine per (rule, label set), as
 * Prometheus does:
 *
 *   condition true          -> pending (activeAt = now)
 *   pending for >= `for`     -> firing   (transition: logged, counted, notified)
 *   condition false / gone   -> firing ones are resolved (logged, counted,
 *                               notified); pending ones are dropped
 *
 * When the collector is not fresh (missing, stale, invalid), the data
 * metrics have no series, so their alerts resolve, and collector_up is 0.
 *
 * Threads: alert_engine_eval() is called by one thread only, the
 * exporter's alerts thread (alerts.c); the HTTP and WebSocket threads
 * render through alert_engine_render_prom() / alert_engine_feed_json(),
 * and the main thread reloads on SIGHUP.  Every entry point takes the
 * engine's mutex for its whole duration: state changes only under it, and
 * readers render into their own buffers under it, so nothing returned
 * points into the engine.  The notify callback runs under the mutex and
 * must not block (webhook_enqueue only appends to a bounded queue).
 */
#ifndef ZERNEL_ALERT_ENGINE_H
#define ZERNEL_ALERT_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "exporter/alerts/alert_rules.h"
#include "common/sbuf.h"
#include "shm/shm_reader.h"

struct prom_out;

#define ALERT_MAX_INSTANCES	4096u	/* per rule; more are counted, not tracked */
#define ALERT_NOTICE_LABELS	(2u + ALERT_SERIES_LABELS + ALERT_MAX_EXTRA_LABELS)

enum alert_state { ALERT_INACTIVE = 0, ALERT_PENDING, ALERT_FIRING };

/* One firing or resolved transition, as a webhook sends it. */
struct alert_notice {
	int resolved;			/* 0: firing, 1: resolved */
	unsigned int n_labels;		/* alertname, severity, series, rule labels */
	struct alert_label labels[ALERT_NOTICE_LABELS];
	char summary[ALERT_TEXT_MAX];
	char description[ALERT_TEXT_MAX];
	uint64_t starts_real_ns;	/* when it started firing */
	uint64_t ends_real_ns;		/* resolved: when; firing: 0 */
	uint64_t fingerprint;		/* hash of the label set */
	double value;			/* at the transition */
};

typedef void (*alert_notify_fn)(void *arg, const struct alert_notice *n);

struct alert_engine;

/*
 * Creates an engine with rules (the engine takes them over; rules is
 * zeroed).  notify may be NULL.  Returns NULL with errno set.
 */
struct alert_engine *alert_engine_new(struct alert_ruleset *rules,
				      alert_notify_fn notify, void *notify_arg);
void alert_engine_free(struct alert_engine *e);

/*
 * Evaluates every rule.  snap: a fresh, validated snapshot, or NULL when
 * the collector is not fresh.  age_ns: time since the last publish seen (0
 * when never).  now_mono_ns times `for`; now_real_ns stamps startsAt and
 * endsAt, restated from now_mono_ns when the wall clock stepped back past
 * them.
 */
void alert_engine_eval(struct alert_engine *e, const struct shm_snapshot *snap,
		       uint64_t age_ns, uint64_t now_mono_ns, uint64_t now_real_ns);

/*
 * Replaces the rules with those of path.  On failure (-errno) the old
 * rules stay, the failure is logged with the file, rule and field, and
 * counted.  Instances of a rule that is kept (same name, severity, metric
 * and scope) keep their state; firing alerts of dropped rules are resolved.
 */
int alert_engine_reload(struct alert_engine *e, const char *path, uint64_t now_mono_ns,
			uint64_t now_real_ns);

/* Same, with rules already parsed (taken over on success and failure alike). */
int alert_engine_replace(struct alert_engine *e, struct alert_ruleset *rules,
			 uint64_t now_mono_ns, uint64_t now_real_ns);

/*
 * Appends, as Prometheus text: zernel_alert_firing{alertname,severity,...} 1
 * per firing alert, zernel_alert_pending likewise, zernel_alert_transitions_total
 * {alertname,to}, zernel_alert_rules, zernel_alert_config_reloads_total{result},
 * zernel_alert_config_last_reload_successful.  Returns prom_out_error(out).
 */
int alert_engine_render_prom(struct alert_engine *e, struct prom_out *out);

/*
 * The feed's "alerts" value: a json-c array (caller owns it) of
 * {alertname, severity, state, summary, labels, startsAt, activeAt, value}
 * for every pending and firing alert.  NULL on allocation failure.
 */
struct json_object *alert_engine_feed_json(struct alert_engine *e);

/* Counts for tests and logs. */
size_t alert_engine_rule_count(struct alert_engine *e);
size_t alert_engine_firing_count(struct alert_engine *e);
uint64_t alert_engine_transitions(struct alert_engine *e, const char *alertname, int resolved);
/* State of the instance of rule name whose label set is labels ("gpu_id=\"0\"", "" for none). */
enum alert_state alert_engine_state(struct alert_engine *e, const char *alertname,
				    const char *labels);

/* RFC 3339 UTC with milliseconds, as Alertmanager writes; "0001-01-01T00:00:00Z" for 0. */
void alert_time_rfc3339(uint64_t real_ns, char *buf, size_t len);

#endif /* ZERNEL_ALERT_ENGINE_H */
