/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Alert rule configuration (see alert_rules.h).  Runs unprivileged, at
 * start and on SIGHUP, on a file an operator wrote: every problem is one
 * message that names the file, the rule and the field, and the caller
 * keeps whatever rules it had.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/utf8.h"
#include "exporter/alerts/alert_rules.h"
#include "exporter/alerts/alert_template.h"

#define NS_PER_S 1000000000ull

const char *alert_cmp_text(enum alert_cmp c)
{
	static const char *const t[] = { ">", ">=", "<", "<=", "==", "!=" };

	return (unsigned int)c < sizeof(t) / sizeof(t[0]) ? t[c] : "?";
}

static int cmp_parse(const char *s, enum alert_cmp *out)
{
	for (int c = ALERT_GT; c <= ALERT_NE; c++) {
		if (strcmp(s, alert_cmp_text((enum alert_cmp)c)) == 0) {
			*out = (enum alert_cmp)c;
			return 0;
		}
	}
	return -EINVAL;
}

int alert_cmp_holds(enum alert_cmp c, double v, double t)
{
	if (isnan(v))
		return 0;
	switch (c) {
	case ALERT_GT: return v > t;
	case ALERT_GE: return v >= t;
	case ALERT_LT: return v < t;
	case ALERT_LE: return v <= t;
	case ALERT_EQ: return v == t;
	case ALERT_NE: return v != t;
	}
	return 0;
}

int alert_duration_parse(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "ms", 1000000ull }, { "s", NS_PER_S }, { "m", 60 * NS_PER_S },
		{ "h", 3600 * NS_PER_S }, { "d", 86400 * NS_PER_S },
	};
	uint64_t total = 0;

	if (!*s)
		return -EINVAL;
	if (strcmp(s, "0") == 0) {
		*ns = 0;
		return 0;
	}
	while (*s) {
		uint64_t v = 0, mult = 0;
		size_t ulen = 0;

		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		for (; isdigit((unsigned char)*s); s++) {
			if (v > (ALERT_FOR_MAX_NS / 10))
				return -ERANGE;
			v = v * 10 + (uint64_t)(*s - '0');
		}
		/* Longest unit first: "ms" before "m". */
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t l = strlen(units[i].unit);

			if (strncmp(s, units[i].unit, l) == 0 && l > ulen &&
			    !isalpha((unsigned char)s[l])) {
				mult = units[i].ns;
				ulen = l;
			}
		}
		if (!mult)
			return -EINVAL;
		s += ulen;
		if (v > ALERT_FOR_MAX_NS / mult || total + v * mult > ALERT_FOR_MAX_NS)
			return -ERANGE;
		total += v * mult;
	}
	*ns = total;
	return 0;
}

/* ---- error messages ---------------------------------------------------- */

struct ctx {
	const char *origin;
	char *err;
	size_t errlen;
	size_t index;		/* 1-based rule number, 0 outside the rules */
	const char *name;	/* the rule's name once known */
};

static int fail(struct ctx *c, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct ctx *c, const char *field, const char *fmt, ...)
{
	char what[1536];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (c->index && field)
		snprintf(c->err, c->errlen, "%s: rule %zu (%s): field \"%s\": %s", c->origin,
			 c->index, c->name ? c->name : "unnamed", field, what);
	else if (c->index)
		snprintf(c->err, c->errlen, "%s: rule %zu (%s): %s", c->origin, c->index,
			 c->name ? c->name : "unnamed", what);
	else if (field)
		snprintf(c->err, c->errlen, "%s: field \"%s\": %s", c->origin, field, what);
	else
		snprintf(c->err, c->errlen, "%s: %s", c->origin, what);
	return -EINVAL;
}

static const char *type_name(struct json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_null:	return "null";
	case json_type_boolean:	return "a boolean";
	case json_type_double:
	case json_type_int:	return "a number";
	case json_type_object:	return "an object";
	case json_type_array:	return "an array";
	case json_type_string:	return "a string";
	}
	return "something else";
}

/* ---- fields ------------------------------------------------------------ */

static int get_string(struct ctx *c, struct json_object *v, const char *field,
		      char *out, size_t len, int allow_empty)
{
	const char *s;

	if (!json_object_is_type(v, json_type_string))
		return fail(c, field, "expected a string, got %s", type_name(v));
	s = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) != strlen(s))
		return fail(c, field, "contains a NUL byte");
	if (!utf8_valid(s, strlen(s)))
		return fail(c, field, "is not valid UTF-8");
	if (!allow_empty && !*s)
		return fail(c, field, "must not be empty");
	if (strlen(s) >= len)
		return fail(c, field, "longer than %zu bytes", len - 1);
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

static int get_labels(struct ctx *c, struct json_object *v, const char *field,
		      struct alert_rule *r, int scope)
{
	struct alert_label *out = scope ? r->scope : r->labels;
	unsigned int *n = scope ? &r->n_scope : &r->n_labels;
	unsigned int max = scope ? ALERT_MAX_SCOPE : ALERT_MAX_EXTRA_LABELS;
	char list[128];

	if (!json_object_is_type(v, json_type_object))
		return fail(c, field, "expected an object of label: value strings, got %s",
			    type_name(v));
	json_object_object_foreach(v, key, val) {
		if (*n >= max)
			return fail(c, field, "more than %u labels", max);
		if (!alert_label_name_ok(key) || strlen(key) >= ALERT_NAME_MAX)
			return fail(c, field, "\"%.64s\" is not a label name", key);
		/* Prometheus keeps names starting with "__" for itself. */
		if (strncmp(key, "__", 2) == 0)
			return fail(c, field, "\"%.64s\" is reserved: label names starting with "
				    "\"__\" are Prometheus's own", key);
		/* The text format gives these two to histograms and summaries: not on a gauge. */
		if (strcmp(key, "le") == 0 || strcmp(key, "quantile") == 0)
			return fail(c, field, "\"%s\" is reserved: the Prometheus text format keeps "
				    "it for histogram buckets and summary quantiles", key);
		if (scope && !alert_metric_has_label(r->metric, key)) {
			alert_metric_label_list(r->metric, list, sizeof(list));
			return fail(c, field, "metric %s has no label \"%s\" (its labels: %s)",
				    alert_metric_name(r->metric), key, list);
		}
		if (!scope && (strcmp(key, "alertname") == 0 || strcmp(key, "severity") == 0 ||
			       alert_metric_has_label(r->metric, key)))
			return fail(c, field, "label \"%s\" is set by the alert itself", key);
		if (!json_object_is_type(val, json_type_string))
			return fail(c, field, "value of \"%s\": expected a string, got %s", key,
				    type_name(val));
		/* Written raw into /metrics and the webhook's JSON: text, or refused. */
		if ((size_t)json_object_get_string_len(val) != strlen(json_object_get_string(val)))
			return fail(c, field, "value of \"%s\" contains a NUL byte", key);
		if (!utf8_valid(json_object_get_string(val), strlen(json_object_get_string(val))))
			return fail(c, field, "value of \"%s\" is not valid UTF-8", key);
		if (strlen(json_object_get_string(val)) >= ALERT_LABEL_VALUE_MAX)
			return fail(c, field, "value of \"%s\" longer than %u bytes", key,
				    ALERT_LABEL_VALUE_MAX - 1);
		snprintf(out[*n].name, sizeof(out[*n].name), "%s", key);
		snprintf(out[*n].value, sizeof(out[*n].value), "%s", json_object_get_string(val));
		(*n)++;
	}
	return 0;
}

static int get_for(struct ctx *c, struct json_object *v, uint64_t *ns)
{
	double d;

	if (json_object_is_type(v, json_type_string)) {
		int e = alert_duration_parse(json_object_get_string(v), ns);

		if (e == -ERANGE)
			return fail(c, "for", "\"%.64s\" is longer than a week",
				    json_object_get_string(v));
		if (e)
			return fail(c, "for", "\"%.64s\" is not a duration (e.g. \"10s\", "
				    "\"1m30s\", \"500ms\")", json_object_get_string(v));
		return 0;
	}
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return fail(c, "for", "expected a duration string or seconds, got %s",
			    type_name(v));
	d = json_object_get_double(v);
	if (!isfinite(d) || d < 0 || d * 1e9 > (double)ALERT_FOR_MAX_NS)
		return fail(c, "for", "%g seconds is not in 0..604800", d);
	*ns = (uint64_t)llround(d * 1e9);
	return 0;
}

/* ---- one rule ---------------------------------------------------------- */

static int check_template(struct ctx *c, const char *field, const char *t,
			  const struct alert_rule *r)
{
	char why[384];

	if (alert_template_check(t, r, why, sizeof(why)) < 0)
		return fail(c, field, "%s", why);
	return 0;
}

static const char *const rule_fields[] = {
	"name", "metric", "comparison", "threshold", "scope", "for", "severity",
	"summary", "description", "labels", "comment",
};

static int parse_rule(struct ctx *c, struct json_object *o, struct alert_rule *r)
{
	struct json_object *v;
	char metric[ALERT_METRIC_NAME_MAX + 1], cmp[8], list[1024];
	double min, max;

	memset(r, 0, sizeof(*r));
	if (!json_object_is_type(o, json_type_object))
		return fail(c, NULL, "expected an object, got %s", type_name(o));
	if (!json_object_object_get_ex(o, "name", &v))
		return fail(c, "name", "missing");
	if (get_string(c, v, "name", r->name, sizeof(r->name), 0))
		return -EINVAL;
	if (!alert_label_name_ok(r->name))
		return fail(c, "name", "\"%s\" is not a valid alert name ([A-Za-z_][A-Za-z0-9_]*)",
			    r->name);
	c->name = r->name;

	json_object_object_foreach(o, key, val) {
		size_t i;

		(void)val;
		for (i = 0; i < sizeof(rule_fields) / sizeof(rule_fields[0]); i++)
			if (strcmp(key, rule_fields[i]) == 0)
				break;
		if (i == sizeof(rule_fields) / sizeof(rule_fields[0])) {
			size_t at = 0;

			for (i = 0; i < sizeof(rule_fields) / sizeof(rule_fields[0]); i++)
				at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s",
						       i ? ", " : "", rule_fields[i]);
			return fail(c, key, "unknown field (known: %s)", list);
		}
	}

	if (!json_object_object_get_ex(o, "metric", &v))
		return fail(c, "metric", "missing");
	if (!json_object_is_type(v, json_type_string))
		return fail(c, "metric", "expected a string, got %s", type_name(v));
	snprintf(metric, sizeof(metric), "%s", json_object_get_string(v));
	if (alert_metric_lookup(json_object_get_string(v), &r->metric) < 0) {
		alert_metric_list(list, sizeof(list));
		return fail(c, "metric", "unknown metric \"%.64s\" (known: %s)", metric, list);
	}

	if (!json_object_object_get_ex(o, "comparison", &v))
		return fail(c, "comparison", "missing");
	if (get_string(c, v, "comparison", cmp, sizeof(cmp), 0) || cmp_parse(cmp, &r->cmp) < 0)
		return fail(c, "comparison", "expected one of >, >=, <, <=, ==, !=");

	if (!json_object_object_get_ex(o, "threshold", &v))
		return fail(c, "threshold", "missing");
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return fail(c, "threshold", "expected a number, got %s", type_name(v));
	r->threshold = json_object_get_double(v);
	alert_metric_range(r->metric, &min, &max);
	if (!isfinite(r->threshold) || r->threshold < min || r->threshold > max) {
		if (isfinite(max))
			return fail(c, "threshold", "%g is outside %g..%g for %s (%s)",
				    r->threshold, min, max, metric, alert_metric_help(r->metric));
		return fail(c, "threshold", "%g is not a finite number >= %g for %s (%s)",
			    r->threshold, min, metric, alert_metric_help(r->metric));
	}

	if (json_object_object_get_ex(o, "scope", &v) && get_labels(c, v, "scope", r, 1))
		return -EINVAL;
	if (json_object_object_get_ex(o, "for", &v) && get_for(c, v, &r->for_ns))
		return -EINVAL;

	snprintf(r->severity, sizeof(r->severity), "warning");
	if (json_object_object_get_ex(o, "severity", &v)) {
		if (get_string(c, v, "severity", r->severity, sizeof(r->severity), 0))
			return -EINVAL;
		if (!alert_label_name_ok(r->severity))
			return fail(c, "severity", "\"%s\" is not a plain word (e.g. critical, "
				    "warning, info)", r->severity);
	}
	if (json_object_object_get_ex(o, "labels", &v) && get_labels(c, v, "labels", r, 0))
		return -EINVAL;

	if (json_object_object_get_ex(o, "summary", &v)) {
		if (get_string(c, v, "summary", r->summary, sizeof(r->summary), 0) ||
		    check_template(c, "summary", r->summary, r))
			return -EINVAL;
	} else {
		snprintf(r->summary, sizeof(r->summary), "%s: %s %s %g (value {{ $value }})",
			 r->name, metric, alert_cmp_text(r->cmp), r->threshold);
	}
	if (json_object_object_get_ex(o, "comment", &v) &&
	    !json_object_is_type(v, json_type_string))
		return fail(c, "comment", "expected a string, got %s", type_name(v));
	if (json_object_object_get_ex(o, "description", &v) &&
	    (get_string(c, v, "description", r->description, sizeof(r->description), 1) ||
	     check_template(c, "description", r->description, r)))
		return -EINVAL;
	return 0;
}

/* ---- the file ---------------------------------------------------------- */

static void line_col(const char *text, size_t off, size_t *line, size_t *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && text[i]; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

int alert_rules_parse(const char *text, size_t len, const char *origin,
		      struct alert_ruleset *out, char *err, size_t errlen)
{
	struct ctx c = { .origin = origin, .err = err, .errlen = errlen };
	struct json_tokener *tok = NULL;
	struct json_object *root = NULL, *rules;
	struct alert_ruleset rs = { 0 };
	size_t n, line, col;
	int ret = -EINVAL;

	if (len > ALERT_FILE_MAX) {
		fail(&c, NULL, "larger than %u bytes", ALERT_FILE_MAX);
		goto cleanup;
	}
	if (memchr(text, '\0', len)) {
		fail(&c, NULL, "not valid JSON: contains a NUL byte");
		goto cleanup;
	}
	tok = json_tokener_new();
	if (!tok) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", origin);
		goto cleanup;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, text, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) < len) {
		size_t end = json_tokener_get_parse_end(tok);
		enum json_tokener_error je = json_tokener_get_error(tok);

		/* Trailing blanks after the document are fine. */
		while (root && je == json_tokener_success && end < len &&
		       isspace((unsigned char)text[end]))
			end++;
		if (!(root && je == json_tokener_success && end == len)) {
			line_col(text, end, &line, &col);
			fail(&c, NULL, "not valid JSON at line %zu, column %zu: %s", line, col,
			     !root && je == json_tokener_continue ? "unexpected end of file" :
			     je == json_tokener_success ? "text after the end of the document" :
			     json_tokener_error_desc(je));
			goto cleanup;
		}
	}
	if (!json_object_is_type(root, json_type_object)) {
		fail(&c, NULL, "expected an object with a \"rules\" array, got %s", type_name(root));
		goto cleanup;
	}
	json_object_object_foreach(root, key, val) {
		if (strcmp(key, "comment") == 0 && json_object_is_type(val, json_type_string))
			continue;
		if (strcmp(key, "rules") != 0) {
			fail(&c, key, "unknown field (the file holds \"rules\" and an optional "
			     "\"comment\" string)");
			goto cleanup;
		}
	}
	if (!json_object_object_get_ex(root, "rules", &rules)) {
		fail(&c, "rules", "missing");
		goto cleanup;
	}
	if (!json_object_is_type(rules, json_type_array)) {
		fail(&c, "rules", "expected an array, got %s", type_name(rules));
		goto cleanup;
	}
	n = json_object_array_length(rules);
	if (n > ALERT_MAX_RULES) {
		fail(&c, "rules", "%zu rules, at most %u", n, ALERT_MAX_RULES);
		goto cleanup;
	}
	rs.rules = calloc(n ? n : 1, sizeof(*rs.rules));
	if (!rs.rules) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", origin);
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		c.index = i + 1;
		c.name = NULL;
		if (parse_rule(&c, json_object_array_get_idx(rules, i), &rs.rules[i]))
			goto cleanup;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(rs.rules[j].name, rs.rules[i].name) == 0 &&
			    strcmp(rs.rules[j].severity, rs.rules[i].severity) == 0) {
				fail(&c, "name", "rule %zu has the same name and severity", j + 1);
				goto cleanup;
			}
		}
		rs.n++;
	}
	snprintf(rs.origin, sizeof(rs.origin), "%s", origin);
	*out = rs;
	rs.rules = NULL;
	ret = 0;
cleanup:
	free(rs.rules);
	json_object_put(root);
	if (tok)
		json_tokener_free(tok);
	return ret;
}

int alert_rules_load(const char *path, struct alert_ruleset *out, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = S_ISREG(st.st_mode) ? -errno : -EINVAL;
		snprintf(err, errlen, "%s: not a regular file", path);
		goto cleanup;
	}
	if (st.st_size > (off_t)ALERT_FILE_MAX) {
		ret = -EFBIG;
		snprintf(err, errlen, "%s: larger than %u bytes", path, ALERT_FILE_MAX);
		goto cleanup;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", path);
		goto cleanup;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			snprintf(err, errlen, "%s: read: %s", path, strerror(errno));
			goto cleanup;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	ret = alert_rules_parse(buf, got, path, out, err, errlen);
cleanup:
	free(buf);
	close(fd);
	return ret;
}

void alert_ruleset_free(struct alert_ruleset *rs)
{
	if (!rs)
		return;
	free(rs->rules);
	rs->rules = NULL;
	rs->n = 0;
}

/* ---- defaults ---------------------------------------------------------- */

static void set_default(struct alert_rule *r, const char *name, const char *metric,
			enum alert_cmp cmp, double threshold, uint64_t for_ns,
			const char *severity, const char *summary, const char *description)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	alert_metric_lookup(metric, &r->metric);
	r->cmp = cmp;
	r->threshold = threshold;
	r->for_ns = for_ns;
	snprintf(r->severity, sizeof(r->severity), "%s", severity);
	snprintf(r->summary, sizeof(r->summary), "%s", summary);
	snprintf(r->description, sizeof(r->description), "%s", description);
}

int alert_rules_default(struct alert_ruleset *out)
{
	struct alert_rule *r = calloc(4, sizeof(*r));

	if (!r)
		return -ENOMEM;
	set_default(&r[0], "GpuOomWarning", "gpu_memory_used_ratio", ALERT_GT,
		    ALERT_DEFAULT_OOM_RATIO, ALERT_DEFAULT_OOM_FOR_NS, "warning",
		    "GPU {{ $labels.gpu_id }} memory used: {{ $value }} of the total",
		    "More than 95% of GPU {{ $labels.gpu_id }}'s memory is in use (the driver's "
		    "figure where NVML gives it, else the watched processes' sum); the next "
		    "allocation may fail with out-of-memory.");
	/* The wait, not the call: queueing is fast even when the network or a rank is slow. */
	set_default(&r[1], "NcclAllReduceSlow", "nccl_wait_p99_seconds", ALERT_GT,
		    ALERT_DEFAULT_NCCL_P99_S, ALERT_DEFAULT_SLOW_FOR_NS, "warning",
		    "NCCL all_reduce wait p99 {{ $value }} s",
		    "The 99th percentile of the ncclAllReduce wait is above 500 ms.");
	snprintf(r[1].scope[0].name, sizeof(r[1].scope[0].name), "op");
	snprintf(r[1].scope[0].value, sizeof(r[1].scope[0].value), "all_reduce");
	r[1].n_scope = 1;
	set_default(&r[2], "DataLoaderWaitHigh", "dataloader_wait_p99_seconds", ALERT_GT,
		    ALERT_DEFAULT_DATALOADER_P99_S, ALERT_DEFAULT_SLOW_FOR_NS, "warning",
		    "DataLoader wait p99 {{ $value }} s",
		    "Training processes wait more than 1 s for input data at the 99th percentile.");
	set_default(&r[3], "CollectorDown", "collector_up", ALERT_EQ, 0.0,
		    ALERT_DEFAULT_DOWN_FOR_NS, "critical",
		    "zernel-collector is not publishing",
		    "The collector's shared-memory segment is missing, invalid or stale; "
		    "no GPU figure is current.");
	memset(out, 0, sizeof(*out));
	out->rules = r;
	out->n = 4;
	snprintf(out->origin, sizeof(out->origin), "built-in defaults");
	return 0;
}
