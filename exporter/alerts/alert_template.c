/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Summary and description templates of alert rules (see alert_template.h):
 * checked once when a rules file is loaded, expanded at every transition.
 * Unprivileged; the output is always bounded by the caller's buffer.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "exporter/alerts/alert_template.h"

int alert_label_name_ok(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (s++; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
}

/*
 * The inside of one {{ ... }}: "" for $value, the label name for
 * $labels.NAME; -EINVAL for anything else.
 */
static int tmpl_action(const char *s, size_t n, char *label, size_t label_len)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	label[0] = '\0';
	if (n == 6 && strncmp(s, "$value", 6) == 0)
		return 0;
	if (n > 8 && strncmp(s, "$labels.", 8) == 0 && n - 8 < label_len) {
		memcpy(label, s + 8, n - 8);
		label[n - 8] = '\0';
		if (alert_label_name_ok(label))
			return 0;
	}
	return -EINVAL;
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
	char label[ALERT_NAME_MAX], list[128];

	for (const char *open = strstr(t, "{{"); open; open = strstr(open, "{{")) {
		const char *close = strstr(open + 2, "}}");

		if (!close) {
			snprintf(why, len, "\"{{\" without \"}}\"");
			return -EINVAL;
		}
		if (tmpl_action(open + 2, (size_t)(close - open - 2), label, sizeof(label)) < 0) {
			snprintf(why, len, "unknown template \"%.*s\" (use {{ $value }} or "
				 "{{ $labels.NAME }}; there are no pipes)", (int)(close + 2 - open),
				 open);
			return -EINVAL;
		}
		if (label[0] && !rule_has_label(r, label)) {
			alert_metric_label_list(r->metric, list, sizeof(list));
			snprintf(why, len, "{{ $labels.%s }}: the alert has no label \"%s\" "
				 "(metric labels: %s)", label, label, list);
			return -EINVAL;
		}
		open = close + 2;
	}
	return 0;
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
		char label[ALERT_NAME_MAX], val[48];
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
		if (!close || tmpl_action(open + 2, (size_t)(close - open - 2), label,
					  sizeof(label)) < 0)
			break;	/* checked at load: not reached */
		snprintf(val, sizeof(val), "%.6g", s->value);
		o += (size_t)snprintf(out + o, len - o, "%s",
				      label[0] ? series_label(r, s, label) : val);
		if (o >= len)
			o = len - 1;
		t = close + 2;
	}
}
