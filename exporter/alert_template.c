/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Summary and description templates of alert rules (see alert_template.h):
 * checked once when a rules file is loaded, expanded at every transition.
 * Unprivileged; the output is always bounded by the caller's buffer.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "exporter/alert_template.h"

int alert_label_name_ok(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (s++; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
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

enum tmpl_kind { T_VALUE, T_LABEL };
enum tmpl_fmt { F_PLAIN, F_HUMANIZE, F_PERCENT, F_DURATION };

/* Parses the inside of one {{ ... }}; returns 0 or -EINVAL. */
static int tmpl_action(const char *s, size_t n, enum tmpl_kind *kind, enum tmpl_fmt *fmt,
		       char *label, size_t label_len)
{
	char buf[128], *p, *e, *pipe;

	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	p = buf;
	pipe = strchr(p, '|');
	if (pipe)
		*pipe++ = '\0';
	while (isspace((unsigned char)*p))
		p++;
	for (e = p + strlen(p); e > p && isspace((unsigned char)e[-1]); e--)
		;
	*e = '\0';
	*fmt = F_PLAIN;
	if (strcmp(p, "$value") == 0) {
		*kind = T_VALUE;
	} else if (strncmp(p, "$labels.", 8) == 0 && alert_label_name_ok(p + 8) &&
		   strlen(p + 8) < label_len && !pipe) {
		*kind = T_LABEL;
		snprintf(label, label_len, "%s", p + 8);
		return 0;
	} else {
		return -EINVAL;
	}
	if (!pipe)
		return 0;
	while (isspace((unsigned char)*pipe))
		pipe++;
	for (e = pipe + strlen(pipe); e > pipe && isspace((unsigned char)e[-1]); e--)
		;
	*e = '\0';
	if (strcmp(pipe, "humanize") == 0)
		*fmt = F_HUMANIZE;
	else if (strcmp(pipe, "humanizePercentage") == 0)
		*fmt = F_PERCENT;
	else if (strcmp(pipe, "humanizeDuration") == 0)
		*fmt = F_DURATION;
	else
		return -EINVAL;
	return 0;
}

static int rule_has_label(const struct alert_rule *r, const char *name)
{
	if (strcmp(name, "alertname") == 0 || strcmp(name, "severity") == 0)
		return 1;
	for (unsigned int i = 0; i < r->n_labels; i++)
		if (strcmp(r->labels[i].name, name) == 0)
			return 1;
	return alert_metric_has_label(r->metric, name);
}

int alert_template_check(const char *t, const struct alert_rule *r, char *why, size_t len)
{
	enum tmpl_kind kind;
	enum tmpl_fmt fmt;
	char label[ALERT_NAME_MAX], list[128];

	for (const char *open = strstr(t, "{{"); open; open = strstr(open, "{{")) {
		const char *close = strstr(open + 2, "}}");

		if (!close) {
			snprintf(why, len, "\"{{\" without \"}}\"");
			return -EINVAL;
		}
		if (tmpl_action(open + 2, (size_t)(close - open - 2), &kind, &fmt, label,
				sizeof(label)) < 0) {
			snprintf(why, len, "unknown template \"%.*s\" (use {{ $value }}, "
				 "{{ $value | humanize|humanizePercentage|humanizeDuration }} "
				 "or {{ $labels.NAME }})", (int)(close + 2 - open), open);
			return -EINVAL;
		}
		if (kind == T_LABEL && !rule_has_label(r, label)) {
			alert_metric_label_list(r->metric, list, sizeof(list));
			snprintf(why, len, "{{ $labels.%s }}: the alert has no label \"%s\" "
				 "(metric labels: %s)", label, label, list);
			return -EINVAL;
		}
		open = close + 2;
	}
	return 0;
}

static void humanize(char *out, size_t len, double v, enum tmpl_fmt fmt)
{
	static const char *const si[] = { "", "k", "M", "G", "T", "P" };
	unsigned int i = 0;

	switch (fmt) {
	case F_PERCENT:
		snprintf(out, len, "%.4g%%", v * 100.0);
		return;
	case F_DURATION:
		if (fabs(v) >= 1.0 || v == 0.0)
			snprintf(out, len, "%.4gs", v);
		else if (fabs(v) >= 1e-3)
			snprintf(out, len, "%.4gms", v * 1e3);
		else
			snprintf(out, len, "%.4gus", v * 1e6);
		return;
	case F_HUMANIZE:
		while (fabs(v) >= 1000.0 && i + 1 < sizeof(si) / sizeof(si[0])) {
			v /= 1000.0;
			i++;
		}
		snprintf(out, len, "%.4g%s", v, si[i]);
		return;
	case F_PLAIN:
		break;
	}
	snprintf(out, len, "%.6g", v);
}

static const char *series_label(const struct alert_rule *r, const struct alert_series *s,
				const char *name)
{
	if (strcmp(name, "alertname") == 0)
		return r->name;
	if (strcmp(name, "severity") == 0)
		return r->severity;
	for (unsigned int i = 0; i < s->n_labels; i++)
		if (strcmp(s->label_name[i], name) == 0)
			return s->label_value[i];
	for (unsigned int i = 0; i < r->n_labels; i++)
		if (strcmp(r->labels[i].name, name) == 0)
			return r->labels[i].value;
	return "";
}

void alert_template_expand(const char *t, const struct alert_rule *r,
			   const struct alert_series *s, char *out, size_t len)
{
	size_t o = 0;

	if (!len)
		return;
	out[0] = '\0';
	while (*t && o + 1 < len) {
		const char *open = strstr(t, "{{"), *close;
		enum tmpl_kind kind;
		enum tmpl_fmt fmt;
		char label[ALERT_NAME_MAX], val[48];
		const char *ins;
		size_t n;

		if (!open)
			open = t + strlen(t);
		n = (size_t)(open - t);
		if (n > len - 1 - o)
			n = len - 1 - o;
		memcpy(out + o, t, n);
		o += n;
		out[o] = '\0';
		if (!*open)
			break;
		close = strstr(open + 2, "}}");
		if (!close || tmpl_action(open + 2, (size_t)(close - open - 2), &kind, &fmt,
					  label, sizeof(label)) < 0)
			break;	/* checked at load: not reached */
		if (kind == T_VALUE) {
			humanize(val, sizeof(val), s->value, fmt);
			ins = val;
		} else {
			ins = series_label(r, s, label);
		}
		o += (size_t)snprintf(out + o, len - o, "%s", ins);
		if (o >= len)
			o = len - 1;
		t = close + 2;
	}
}
