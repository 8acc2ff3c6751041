/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The metrics an alert rule can test, and how each is read from a
 * validated segment snapshot: the catalog's entries that have an alert
 * name (catalog/catalog.c), a latency as four metrics stem_<q>_seconds,
 * <q> one of p50, p90, p99, max over the collector's summary window.  A
 * series whose window holds no sample does not exist (like NaN in
 * Prometheus, it matches no comparison), nor does a GPU's ratio or total
 * while its size is unknown.  Unprivileged, in the exporter's alerts
 * thread.  The set is fixed on purpose: a rule names one of these, never a
 * free-form query, so a configuration is checked entirely when it loads.
 * `zernel-exporter --check-config` and docs/metrics.md list them.
 */
#ifndef ZERNEL_ALERT_METRICS_H
#define ZERNEL_ALERT_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "shm/shm_reader.h"

#define ALERT_METRIC_NAME_MAX	64u
#define ALERT_SERIES_LABELS	2u	/* most labels a series carries */
#define ALERT_LABEL_VALUE_MAX	64u

/* One series of a metric at one evaluation. */
struct alert_series {
	unsigned int n_labels;
	const char *label_name[ALERT_SERIES_LABELS];	/* static strings */
	char label_value[ALERT_SERIES_LABELS][ALERT_LABEL_VALUE_MAX];
	double value;
};

/* What a metric's collector callback gets for each series. */
typedef int (*alert_series_fn)(void *arg, const struct alert_series *s);

/* Number of metrics; ids are 0..count-1. */
unsigned int alert_metric_count(void);
/* Name of metric id; NULL when out of range. */
const char *alert_metric_name(unsigned int id);
/* Finds a metric by name; returns 0 with *id, or -ENOENT. */
int alert_metric_lookup(const char *name, unsigned int *id);
/* Label names of metric id; *n receives the count. */
const char *const *alert_metric_labels(unsigned int id, unsigned int *n);
/* Range a threshold must lie in for this metric (a ratio is 0..1). */
void alert_metric_range(unsigned int id, double *min, double *max);
/* A short description: what the value means, with its unit. */
const char *alert_metric_help(unsigned int id);

/*
 * Calls fn once per series of metric id in snap (NULL: the collector is not
 * fresh, so only collector_up and collector_publish_age_seconds have
 * series).  age_ns is the time since the last publish seen (0: unknown).
 * Stops early and returns fn's value when fn returns non-zero.
 */
int alert_metric_collect(unsigned int id, const struct shm_snapshot *snap,
			 uint64_t age_ns, alert_series_fn fn, void *arg);

/* Whether metric has a label of that name; its label names, comma separated. */
int alert_metric_has_label(unsigned int metric, const char *name);
void alert_metric_label_list(unsigned int metric, char *buf, size_t len);

/* Writes the names of every metric, compactly, for error messages. */
void alert_metric_list(char *buf, size_t len);

#endif /* ZERNEL_ALERT_METRICS_H */
