/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The alertable metrics (see alert_metrics.h), resolved through the metric
 * catalog: every catalog entry with an alert name is one metric, a latency
 * four (one per quantile).  Values are read by the catalog too, so an
 * alert sees what /metrics and the feed show.  Unprivileged; reads only a
 * private, validated snapshot.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "exporter/alerts/alert_metrics.h"

struct metric {
	const struct cat_metric *m;
	enum cat_quantile q;
	char name[ALERT_METRIC_NAME_MAX];
};

/* Sized from the catalog at first use: every alert name it gives is here. */
static struct metric *metrics;
static unsigned int n_metrics;
static const char *label_names[CAT_ROWS_COUNT][ALERT_SERIES_LABELS];
static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;

/* Alert metrics a catalog family gives: one per quantile for a latency. */
static unsigned int names_of(const struct cat_metric *m)
{
	return !m->alert ? 0 : m->kind == CAT_LATENCY ? CAT_Q_COUNT : 1;
}

static void metrics_init(void)
{
	size_t total = 0;

	for (size_t i = 0; i < cat_metrics_count; i++)
		total += names_of(&cat_metrics[i]);
	metrics = calloc(total, sizeof(*metrics));
	if (!metrics) {
		log_warnx("alerts: no memory for %zu metric names; rules cannot be evaluated", total);
		return;
	}
	for (size_t i = 0; i < cat_metrics_count; i++) {
		const struct cat_metric *m = &cat_metrics[i];

		for (unsigned int q = 0; q < names_of(m); q++) {
			struct metric *am = &metrics[n_metrics++];

			am->m = m;
			am->q = (enum cat_quantile)q;
			if (m->kind == CAT_LATENCY)
				snprintf(am->name, sizeof(am->name), "%s_%s_seconds", m->alert,
					 cat_quantile_name(am->q));
			else
				snprintf(am->name, sizeof(am->name), "%s", m->alert);
		}
	}
	for (unsigned int r = 0; r < CAT_ROWS_COUNT; r++)
		for (unsigned int i = 0; i < cat_rows_defs[r].n_alert_labels &&
		     i < ALERT_SERIES_LABELS; i++)
			label_names[r][i] = cat_rows_defs[r].alert_labels[i].name;
}

static const struct metric *get(unsigned int id)
{
	pthread_once(&metrics_once, metrics_init);
	return id < n_metrics ? &metrics[id] : NULL;
}

unsigned int alert_metric_count(void)
{
	pthread_once(&metrics_once, metrics_init);
	return n_metrics;
}

const char *alert_metric_name(unsigned int id)
{
	const struct metric *m = get(id);

	return m ? m->name : NULL;
}

int alert_metric_lookup(const char *name, unsigned int *id)
{
	for (unsigned int i = 0; i < alert_metric_count(); i++) {
		if (strcmp(metrics[i].name, name) == 0) {
			*id = i;
			return 0;
		}
	}
	return -ENOENT;
}

const char *const *alert_metric_labels(unsigned int id, unsigned int *n)
{
	const struct metric *m = get(id);

	*n = 0;
	if (!m)
		return label_names[0];
	*n = cat_rows_defs[m->m->rows].n_alert_labels;
	if (*n > ALERT_SERIES_LABELS)
		*n = ALERT_SERIES_LABELS;
	return label_names[m->m->rows];
}

int alert_metric_has_label(unsigned int metric, const char *name)
{
	unsigned int n;
	const char *const *l = alert_metric_labels(metric, &n);

	for (unsigned int i = 0; i < n; i++)
		if (strcmp(l[i], name) == 0)
			return 1;
	return 0;
}

void alert_metric_label_list(unsigned int metric, char *buf, size_t len)
{
	unsigned int n;
	const char *const *l = alert_metric_labels(metric, &n);
	size_t o = 0;

	snprintf(buf, len, "none");
	for (unsigned int i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", l[i]);
}

void alert_metric_range(unsigned int id, double *min, double *max)
{
	const struct metric *m = get(id);

	*min = 0.0;
	*max = INFINITY;
	if (m && (m->m->unit == CAT_UNIT_RATIO || m->m->unit == CAT_UNIT_BOOL))
		*max = 1.0;
}

const char *alert_metric_help(unsigned int id)
{
	const struct metric *m = get(id);

	return m ? m->m->help : "";
}

void alert_metric_list(char *buf, size_t len)
{
	size_t o = 0;
	int first = 1;

	/* The catalogue in its compact form: a latency's four names as one stem. */
	buf[0] = '\0';
	for (unsigned int i = 0; i < alert_metric_count() && o < len; i++) {
		if (metrics[i].m->kind == CAT_LATENCY)
			continue;
		o += (size_t)snprintf(buf + o, len - o, "%s%s", first ? "" : ", ", metrics[i].name);
		first = 0;
	}
	if (o < len)
		o += (size_t)snprintf(buf + o, len - o, "%sSTEM_Q_seconds; Q: ", first ? "" : ", ");
	for (unsigned int q = 0; q < CAT_Q_COUNT && o < len; q++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", q ? "|" : "",
				      cat_quantile_name((enum cat_quantile)q));
	first = 1;
	for (unsigned int i = 0; i < alert_metric_count() && o < len; i++) {
		if (metrics[i].m->kind != CAT_LATENCY || metrics[i].q != CAT_Q_P50)
			continue;
		o += (size_t)snprintf(buf + o, len - o, "%s%s", first ? "; STEM: " : "|",
				      metrics[i].m->alert);
		first = 0;
	}
}

int alert_metric_collect(unsigned int id, const struct shm_snapshot *snap,
			 uint64_t age_ns, alert_series_fn fn, void *arg)
{
	const struct metric *am = get(id);
	/* What the alerts thread knows of the collector: fresh or not, its age. */
	struct cat_status st = {
		.status = snap ? SHM_READ_OK : SHM_READ_MISSING,
		.reason = "",
		.seen = age_ns != 0,
		.age_ns = age_ns,
	};
	struct cat_input in = { .snap = snap, .status = &st };
	const struct cat_rows_def *rd;
	struct cat_rowset rs;
	int known, r;

	if (!am)
		return -EINVAL;
	rd = &cat_rows_defs[am->m->rows];
	cat_rowset(am->m->rows, &in, &rs);
	for (uint32_t i = 0; i < rs.n; i++) {
		const void *row = cat_row(&rs, i);
		struct alert_series s = { .n_labels = 0 };
		unsigned int k;

		if (cat_alert_value(am->m, am->q, &in, row, &s.value) < 0)
			continue;
		for (k = 0; k < rd->n_alert_labels && k < ALERT_SERIES_LABELS; k++) {
			s.label_name[k] = rd->alert_labels[k].name;
			/* A value that fills the buffer may have been cut: no series. */
			if (cat_label_text(&rd->alert_labels[k], &in, row, s.label_value[k],
					   sizeof(s.label_value[k]), &known) < 0 ||
			    strnlen(s.label_value[k], sizeof(s.label_value[k])) >=
			    sizeof(s.label_value[k]) - 1)
				break;
		}
		if (k < rd->n_alert_labels)
			continue;
		s.n_labels = k;
		r = fn(arg, &s);
		if (r)
			return r;
	}
	return 0;
}
