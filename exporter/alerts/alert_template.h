/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Alert text templates: substitution only.  {{ $value }} is the value
 * that fired (a plain number, %.6g, in the metric's unit: seconds, bytes,
 * a 0..1 ratio) and {{ $labels.NAME }} a label, where NAME is a label of
 * the rule's metric, one of the rule's own labels, alertname or severity.
 * Anything else, Prometheus's humanize pipes included, is refused when the
 * rules are loaded.
 */
#ifndef ZERNEL_ALERT_TEMPLATE_H
#define ZERNEL_ALERT_TEMPLATE_H

#include <stddef.h>

#include "exporter/alerts/alert_metrics.h"
#include "exporter/alerts/alert_rules.h"

/*
 * Expands a summary/description template for one series.  Templates were
 * checked at load, so this cannot fail; the output is truncated to len.
 */
void alert_template_expand(const char *tmpl, const struct alert_rule *r,
			   const struct alert_series *s, char *out, size_t len);

/* Returns 0, or -EINVAL with the reason in why. */
int alert_template_check(const char *tmpl, const struct alert_rule *r, char *why, size_t len);

/* [A-Za-z_][A-Za-z0-9_]*: a Prometheus label name (and an alert name). */
int alert_label_name_ok(const char *s);

#endif /* ZERNEL_ALERT_TEMPLATE_H */
