/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The metrics reference, docs/metrics.md, written from the catalog: one
 * row per Prometheus family and one per alert metric, in table order, with
 * the type, unit and labels each output gives it.  tests/exporter/
 * check_metrics_doc.c checks that the committed file is this function's
 * output.  Pure; no privilege.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "common/sbuf.h"

/* Text in a table cell: a '|' would end the cell, a '<' open an HTML tag. */
static void cell(struct sbuf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i]; i++) {
		if (s[i] == '|' || s[i] == '<' || s[i] == '\\')
			sbuf_append(b, "\\", 1);
		sbuf_append(b, &s[i], 1);
	}
}

static void sep(struct sbuf *b, int *first)
{
	if (!*first)
		sbuf_puts(b, ", ");
	*first = 0;
}

/* The unit a family's values are in, as /metrics and the alerts give them. */
static const char *unit_of(const struct cat_metric *m)
{
	if (m->kind == CAT_LATENCY)
		return "seconds";
	if (m->kind == CAT_INFO)
		return "always 1";
	switch (m->unit) {
	case CAT_UNIT_BYTES:	return "bytes";
	case CAT_UNIT_NS:
	case CAT_UNIT_MS:	return "seconds";
	case CAT_UNIT_RATIO:	return "0..1";
	case CAT_UNIT_BOOL:	return "0 or 1";
	default:		return "-";
	}
}

static void names(struct sbuf *b, const struct cat_label *l, unsigned int n, int *first)
{
	for (unsigned int i = 0; i < n; i++) {
		if (!l[i].name)
			continue;	/* feed only */
		sep(b, first);
		sbuf_puts(b, l[i].name);
	}
}

/*
 * The fixed label of a family's n entries, with each entry's value:
 * state (oncpu, runq, ...).  Every prom_labels holds one key="value".
 */
static void fixed(struct sbuf *b, const struct cat_metric *g, size_t n, int *first)
{
	if (!g->prom_labels)
		return;
	sep(b, first);
	sbuf_append(b, g->prom_labels, strcspn(g->prom_labels, "="));
	sbuf_puts(b, " (");
	for (size_t k = 0; k < n; k++) {
		const char *v = g[k].prom_labels ? strchr(g[k].prom_labels, '"') : NULL;

		if (!v)
			continue;
		v++;
		sbuf_puts(b, k ? ", " : "");
		sbuf_append(b, v, strcspn(v, "\""));
	}
	sbuf_puts(b, ")");
}

/* The label names of a family's series; "workload" for the per-workload histograms. */
static void labels(struct sbuf *b, const struct cat_metric *g, size_t n, int workload,
		   const char *extra)
{
	const struct cat_rows_def *rd = &cat_rows_defs[g->rows];
	int first = 1;

	if (workload) {
		sep(b, &first);
		sbuf_puts(b, "workload");
	} else {
		names(b, rd->labels, rd->n_labels, &first);
	}
	fixed(b, g, n, &first);
	names(b, g->labels, g->n_labels, &first);
	if (g->doc_labels) {
		sep(b, &first);
		sbuf_puts(b, g->doc_labels);
	}
	if (extra) {
		sep(b, &first);
		sbuf_puts(b, extra);
	}
	if (first)
		sbuf_puts(b, "-");
}

/* One family's row; a summary's help is the histogram's, as its HELP line says it. */
static void family_row(struct sbuf *b, const char *name, const char *type,
		       const struct cat_metric *g, size_t n, int workload, const char *extra)
{
	const char *help = g->help ? g->help : "";
	size_t len = strlen(help);

	sbuf_printf(b, "| `%s` | %s | %s | ", name, type, unit_of(g));
	labels(b, g, n, workload, extra);
	sbuf_puts(b, " | ");
	if (strcmp(type, "summary") == 0) {
		cell(b, help, len ? len - 1 : 0);
		sbuf_puts(b, "; quantiles over the summary window.");
	} else {
		cell(b, help, len);
	}
	sbuf_puts(b, " |\n");
}

/* The labels a workload's histogram may carry, from the narrowest kind of workload. */
static int workload_kinds(struct sbuf *b)
{
	struct shm_workload *w = calloc(1, sizeof(*w));
	char text[SHM_ID_POD_LEN];
	const char *name;

	if (!w)
		return -ENOMEM;
	for (uint32_t k = 0; k < SHM_WORKLOAD_KIND_COUNT; k++) {
		w->kind = k;
		if (cat_workload_label(w, 0, &name, text, sizeof(text)) < 0)
			continue;	/* the node: no label */
		sbuf_printf(b, "`%s`", name);
		for (unsigned int i = 1; cat_workload_label(w, i, &name, text, sizeof(text)) == 0; i++)
			sbuf_printf(b, " and `%s`", name);
		sbuf_puts(b, "; ");
	}
	sbuf_puts(b, "none (the node)");
	free(w);
	return 0;
}

static void families(struct sbuf *b)
{
	sbuf_puts(b, "| family | type | unit | labels | help |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < cat_metrics_count;) {
		const struct cat_metric *g = &cat_metrics[i];
		size_t n = cat_family_size(i);

		i += n;
		if (!g->prom)
			continue;	/* the feed's or the alerts' alone */
		if (g->kind != CAT_LATENCY) {
			family_row(b, g->prom, g->kind == CAT_COUNTER ? "counter" : "gauge", g, n,
				   0, NULL);
			continue;
		}
		family_row(b, g->prom, "summary", g, n, 0, "quantile");
		if (g->prom_hist)
			family_row(b, g->prom_hist, "histogram", g, n, g->rows == CAT_ROWS_PROCS,
				   "le");
	}
}

static void alert_metrics(struct sbuf *b)
{
	sbuf_puts(b, "| alert metric | unit | labels | help |\n|---|---|---|---|\n");
	for (size_t i = 0; i < cat_metrics_count; i++) {
		const struct cat_metric *m = &cat_metrics[i];
		const struct cat_rows_def *rd = &cat_rows_defs[m->rows];
		int first = 1;

		if (!m->alert)
			continue;
		sbuf_printf(b, "| `%s%s` | %s | ", m->alert,
			    m->kind == CAT_LATENCY ? "_Q_seconds" : "", unit_of(m));
		names(b, rd->alert_labels, rd->n_alert_labels, &first);
		if (first)
			sbuf_puts(b, "-");
		sbuf_puts(b, " | ");
		cell(b, m->help ? m->help : "", SIZE_MAX);
		sbuf_puts(b, " |\n");
	}
}

int cat_doc_write(struct sbuf *out)
{
	sbuf_puts(out,
		"# Metrics reference\n\n"
		"Generated from the metric catalog (`catalog/catalog.c`) by `make docs`; do not\n"
		"edit. A family is changed by changing its entry there.\n\n"
		"## Prometheus families\n\n"
		"Every family `zernel-exporter` serves on `/metrics`, in the order it serves\n"
		"them. A latency is two families: a summary (`quantile=\"0.5\"` and `\"0.99\"` over\n"
		"the sliding window, `zernel_quantile_window_seconds`, `NaN` when the window\n"
		"holds no sample; cumulative `_sum` and `_count`) and a classic histogram\n"
		"(`_bucket{le}`, `_sum`, `_count`) that sums across processes and nodes. A\n"
		"per-process latency has series once the process has a sample in it.\n\n"
		"\"workload\" in the labels is the narrowest workload a process is known by,\n"
		"the first of:\n");
	if (workload_kinds(out) < 0)
		return -ENOMEM;
	sbuf_puts(out,
		".\nWith `zernel-exporter --per-pid-histograms`, it is `pid`. Where the labels come\n"
		"from: [identity.md](identity.md); what the series cost:\n"
		"[design.md](design.md#cardinality).\n\n");
	families(out);
	sbuf_printf(out,
		"\n## Alert metrics\n\n"
		"What an alert rule's `metric` may name (see [alerts.md](alerts.md)), read\n"
		"through the same entries as `/metrics`. A latency gives one metric per `Q`:\n"
		"`%s`, `%s`, `%s` or `%s` over the summary window.\n\n",
		cat_quantile_name(CAT_Q_P50), cat_quantile_name(CAT_Q_P90),
		cat_quantile_name(CAT_Q_P99), cat_quantile_name(CAT_Q_MAX));
	alert_metrics(out);
	return sbuf_error(out);
}
