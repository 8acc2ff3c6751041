/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Strict Prometheus text checker (see prom_validate.h).  Used by the tests
 * on the exporter's real output; it takes any text, so it bounds every
 * length it reads and reports the first problem with its line number.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "tests/exporter/prom_validate.h"
#include "tests/exporter/strmap.h"

#define PV_MAX_LABELS	32
#define PV_MAX_NAME	256
#define PV_MAX_VALUE	4096

enum pv_type { PV_UNTYPED, PV_COUNTER, PV_GAUGE, PV_SUMMARY, PV_HISTOGRAM };

/* ---- validator state --------------------------------------------------- */

struct pv_family {
	char name[PV_MAX_NAME];
	enum pv_type type;
	int has_help, has_type, has_samples, closed;
};

/* One histogram or summary child: a family and a label set without le/quantile. */
struct pv_group {
	size_t family;
	unsigned int line;		/* first sample */
	int nbuckets, has_inf, has_sum, has_count, nquantiles;
	double last_le, last_cum, inf, count;
};

struct pv {
	struct pv_family *fam;
	size_t nfam, capfam;
	struct pv_group *grp;
	size_t ngrp, capgrp;
	struct strmap fam_by_name, series, groups;
	size_t current;			/* family of the last sample, SIZE_MAX none */
	unsigned int line;
	char *err;
	size_t errlen;
};

struct pv_label {
	char name[PV_MAX_NAME];
	char value[PV_MAX_VALUE];
};

static int pv_fail(struct pv *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int pv_fail(struct pv *v, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(v->err, v->errlen, "line %u: ", v->line);

	if (n >= 0 && (size_t)n < v->errlen) {
		va_start(ap, fmt);
		vsnprintf(v->err + n, v->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int pv_family_get(struct pv *v, const char *name, size_t *idx)
{
	if (strmap_get(&v->fam_by_name, name, idx))
		return 0;
	if (v->nfam == v->capfam) {
		size_t cap = v->capfam ? v->capfam * 2 : 64;
		struct pv_family *f = realloc(v->fam, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		v->fam = f;
		v->capfam = cap;
	}
	memset(&v->fam[v->nfam], 0, sizeof(v->fam[0]));
	snprintf(v->fam[v->nfam].name, PV_MAX_NAME, "%s", name);
	*idx = v->nfam++;
	return strmap_put(&v->fam_by_name, name, *idx);
}

/* ---- lexing ------------------------------------------------------------ */

static int is_name_start(int c, int colon_ok)
{
	return isalpha(c) || c == '_' || (colon_ok && c == ':');
}

static int is_name_char(int c, int colon_ok)
{
	return isalnum(c) || c == '_' || (colon_ok && c == ':');
}

/* Reads a metric (colon_ok) or label name at *p into out. */
static int pv_name(const char **p, const char *end, char *out, int colon_ok)
{
	size_t n = 0;

	if (*p >= end || !is_name_start((unsigned char)**p, colon_ok))
		return -1;
	while (*p < end && is_name_char((unsigned char)**p, colon_ok)) {
		if (n + 1 >= PV_MAX_NAME)
			return -1;
		out[n++] = *(*p)++;
	}
	out[n] = '\0';
	return 0;
}


/* A sample value: a Go ParseFloat-style number, NaN, +Inf or -Inf. */
static int pv_value(const char *s, size_t n, double *out)
{
	char tmp[64];
	char *end;

	if (n == 0 || n >= sizeof(tmp))
		return -1;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	if (!strcmp(tmp, "NaN")) {
		*out = NAN;
		return 0;
	}
	if (!strcmp(tmp, "+Inf") || !strcmp(tmp, "Inf")) {
		*out = INFINITY;
		return 0;
	}
	if (!strcmp(tmp, "-Inf")) {
		*out = -INFINITY;
		return 0;
	}
	/* strtod also takes hex, "inf" and "nan(...)": refuse those spellings. */
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789+-.eE", tmp[i]))
			return -1;
	*out = strtod(tmp, &end);
	return *end == '\0' ? 0 : -1;
}

/* Parses {a="x",b="y"} at *p. */
static int pv_labels(struct pv *v, const char **p, const char *end,
		     struct pv_label *lab, int *nlab)
{
	*nlab = 0;
	if (*p >= end || **p != '{')
		return 0;
	(*p)++;
	while (*p < end && **p != '}') {
		struct pv_label *l;
		size_t n = 0;

		if (*nlab == PV_MAX_LABELS)
			return pv_fail(v, "more than %d labels", PV_MAX_LABELS);
		l = &lab[(*nlab)++];
		if (pv_name(p, end, l->name, 0) < 0)
			return pv_fail(v, "bad label name");
		if (!strncmp(l->name, "__", 2))
			return pv_fail(v, "label name %s is reserved", l->name);
		for (int i = 0; i < *nlab - 1; i++)
			if (!strcmp(lab[i].name, l->name))
				return pv_fail(v, "label %s given twice", l->name);
		if (*p + 1 >= end || (*p)[0] != '=' || (*p)[1] != '"')
			return pv_fail(v, "label %s: expected =\"", l->name);
		*p += 2;
		for (;;) {
			char c;

			if (*p >= end)
				return pv_fail(v, "label %s: unterminated value", l->name);
			c = *(*p)++;
			if (c == '"')
				break;
			if (c == '\\') {
				if (*p >= end)
					return pv_fail(v, "label %s: unterminated escape", l->name);
				c = *(*p)++;
				if (c == 'n')
					c = '\n';
				else if (c != '\\' && c != '"')
					return pv_fail(v, "label %s: invalid escape \\%c", l->name, c);
			}
			if (n + 1 >= PV_MAX_VALUE)
				return pv_fail(v, "label %s: value too long", l->name);
			l->value[n++] = c;
		}
		l->value[n] = '\0';
		if (!utf8_valid(l->value, strlen(l->value)))
			return pv_fail(v, "label %s: value is not valid UTF-8", l->name);
		if (*p < end && **p == ',')
			(*p)++;
		else if (*p < end && **p != '}')
			return pv_fail(v, "label %s: expected , or }", l->name);
	}
	if (*p >= end)
		return pv_fail(v, "unterminated label set");
	(*p)++;
	return 0;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pv_label *)a)->name, ((const struct pv_label *)b)->name);
}

/* "name\x01a=x\x02b=y", labels sorted, skipping the one named skip. */
static int pv_key(char *out, size_t len, const char *name, struct pv_label *lab,
		  int nlab, const char *skip)
{
	size_t o = (size_t)snprintf(out, len, "%s\x01", name);

	qsort(lab, (size_t)nlab, sizeof(*lab), label_cmp);
	for (int i = 0; i < nlab && o < len; i++) {
		if (skip && !strcmp(lab[i].name, skip))
			continue;
		o += (size_t)snprintf(out + o, len - o, "%s=%s\x02", lab[i].name, lab[i].value);
	}
	return o < len ? 0 : -1;
}

/* ---- lines ------------------------------------------------------------- */

static int pv_meta(struct pv *v, const char *p, const char *end)
{
	char name[PV_MAX_NAME];
	struct pv_family *f;
	int is_help;
	size_t idx;

	/* "# HELP name text" / "# TYPE name type"; anything else is a comment. */
	if (end - p >= 7 && !strncmp(p, "# HELP ", 7))
		is_help = 1;
	else if (end - p >= 7 && !strncmp(p, "# TYPE ", 7))
		is_help = 0;
	else
		return 0;
	p += 7;
	if (pv_name(&p, end, name, 1) < 0)
		return pv_fail(v, "bad metric name in %s", is_help ? "HELP" : "TYPE");
	if (pv_family_get(v, name, &idx) < 0)
		return -ENOMEM;
	f = &v->fam[idx];
	if (f->has_samples)
		return pv_fail(v, "%s for %s after its samples", is_help ? "HELP" : "TYPE", name);
	if (is_help) {
		if (f->has_help)
			return pv_fail(v, "second HELP for %s", name);
		f->has_help = 1;
		for (const char *c = p; c < end; c++) {
			if (*c != '\\')
				continue;
			if (c + 1 >= end || (c[1] != '\\' && c[1] != 'n'))
				return pv_fail(v, "HELP for %s: invalid escape", name);
			c++;
		}
		return 0;
	}
	if (f->has_type)
		return pv_fail(v, "second TYPE for %s", name);
	f->has_type = 1;
	if (p >= end || *p != ' ')
		return pv_fail(v, "TYPE for %s: missing type", name);
	p++;
#define IS(s) ((size_t)(end - p) == strlen(s) && !strncmp(p, s, strlen(s)))
	if (IS("counter"))
		f->type = PV_COUNTER;
	else if (IS("gauge"))
		f->type = PV_GAUGE;
	else if (IS("summary"))
		f->type = PV_SUMMARY;
	else if (IS("histogram"))
		f->type = PV_HISTOGRAM;
	else if (IS("untyped"))
		f->type = PV_UNTYPED;
	else
		return pv_fail(v, "TYPE for %s: unknown type", name);
#undef IS
	if (f->type == PV_COUNTER && (strlen(name) < 6 || strcmp(name + strlen(name) - 6, "_total")))
		return pv_fail(v, "counter %s does not end in _total", name);
	return 0;
}

static int ends_with(const char *s, const char *suffix, size_t *base_len)
{
	size_t n = strlen(s), m = strlen(suffix);

	if (n <= m || strcmp(s + n - m, suffix))
		return 0;
	*base_len = n - m;
	return 1;
}

/* The family a sample name belongs to, and which part of it (suffix). */
static int pv_resolve(struct pv *v, const char *name, size_t *fidx, const char **suffix)
{
	static const char *const suffixes[] = { "_bucket", "_sum", "_count" };
	char base[PV_MAX_NAME];
	size_t blen;

	if (strmap_get(&v->fam_by_name, name, fidx) && v->fam[*fidx].has_type) {
		*suffix = "";
		return 0;
	}
	for (size_t i = 0; i < 3; i++) {
		if (!ends_with(name, suffixes[i], &blen))
			continue;
		memcpy(base, name, blen);
		base[blen] = '\0';
		if (!strmap_get(&v->fam_by_name, base, fidx))
			continue;
		if (v->fam[*fidx].type == PV_HISTOGRAM ||
		    (v->fam[*fidx].type == PV_SUMMARY && i > 0)) {
			*suffix = suffixes[i];
			return 0;
		}
	}
	return pv_fail(v, "sample %s has no TYPE line", name);
}

static int pv_group_get(struct pv *v, const char *key, size_t family, size_t *gidx)
{
	if (strmap_get(&v->groups, key, gidx))
		return 0;
	if (v->ngrp == v->capgrp) {
		size_t cap = v->capgrp ? v->capgrp * 2 : 256;
		struct pv_group *g = realloc(v->grp, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		v->grp = g;
		v->capgrp = cap;
	}
	memset(&v->grp[v->ngrp], 0, sizeof(v->grp[0]));
	v->grp[v->ngrp].family = family;
	v->grp[v->ngrp].line = v->line;
	v->grp[v->ngrp].last_le = -INFINITY;
	*gidx = v->ngrp++;
	return strmap_put(&v->groups, key, *gidx);
}

static const char *label_value(const struct pv_label *lab, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(lab[i].name, name))
			return lab[i].value;
	return NULL;
}

static int pv_sample(struct pv *v, const char *p, const char *end, struct pv_label *lab)
{
	char name[PV_MAX_NAME], key[PV_MAX_NAME + PV_MAX_LABELS * 64 + 4096];
	const char *suffix = "", *le, *q, *vstart;
	struct pv_family *f;
	struct pv_group *g;
	size_t fidx = 0, gidx = 0, dummy;
	double val;
	int nlab, err;

	if (pv_name(&p, end, name, 1) < 0)
		return pv_fail(v, "bad metric name");
	err = pv_labels(v, &p, end, lab, &nlab);
	if (err)
		return err;
	if (p >= end || *p != ' ')
		return pv_fail(v, "%s: expected a space before the value", name);
	while (p < end && *p == ' ')
		p++;
	vstart = p;
	while (p < end && *p != ' ')
		p++;
	if (pv_value(vstart, (size_t)(p - vstart), &val) < 0)
		return pv_fail(v, "%s: bad value", name);
	if (p < end) {
		/* An optional integer timestamp (ms). */
		p++;
		if (p >= end)
			return pv_fail(v, "%s: trailing space", name);
		for (const char *t = (*p == '-') ? p + 1 : p; t < end; t++)
			if (!isdigit((unsigned char)*t))
				return pv_fail(v, "%s: bad timestamp", name);
	}

	err = pv_resolve(v, name, &fidx, &suffix);
	if (err)
		return err;
	f = &v->fam[fidx];
	if (!f->has_help)
		return pv_fail(v, "family %s has no HELP line", f->name);
	if (v->current != fidx) {
		if (f->closed)
			return pv_fail(v, "samples of %s are not contiguous", f->name);
		if (v->current != SIZE_MAX)
			v->fam[v->current].closed = 1;
		v->current = fidx;
	}
	f->has_samples = 1;

	if (pv_key(key, sizeof(key), name, lab, nlab, NULL) < 0)
		return pv_fail(v, "%s: label set too long", name);
	if (strmap_get(&v->series, key, &dummy))
		return pv_fail(v, "duplicate series %s", name);
	if (strmap_put(&v->series, key, 0) < 0)
		return -ENOMEM;

	le = label_value(lab, nlab, "le");
	q = label_value(lab, nlab, "quantile");
	if (le && !(f->type == PV_HISTOGRAM && !strcmp(suffix, "_bucket")))
		return pv_fail(v, "%s: le label outside a histogram bucket", name);
	if (q && !(f->type == PV_SUMMARY && !*suffix))
		return pv_fail(v, "%s: quantile label outside a summary", name);
	if (f->type == PV_COUNTER && !(val >= 0))
		return pv_fail(v, "counter %s is negative or NaN", name);
	if (f->type != PV_HISTOGRAM && f->type != PV_SUMMARY)
		return 0;

	if (pv_key(key, sizeof(key), f->name, lab, nlab, f->type == PV_HISTOGRAM ? "le" : "quantile") < 0)
		return pv_fail(v, "%s: label set too long", name);
	err = pv_group_get(v, key, fidx, &gidx);
	if (err)
		return err;
	g = &v->grp[gidx];
	if (!strcmp(suffix, "_sum")) {
		g->has_sum = 1;
	} else if (!strcmp(suffix, "_count")) {
		if (!(val >= 0) || val != floor(val))
			return pv_fail(v, "%s: count is not a non-negative integer", name);
		g->has_count = 1;
		g->count = val;
	} else if (!strcmp(suffix, "_bucket")) {
		double lev;

		if (!le || pv_value(le, strlen(le), &lev) < 0 || isnan(lev))
			return pv_fail(v, "%s: bucket without a valid le", name);
		if (g->has_inf)
			return pv_fail(v, "%s: bucket after le=\"+Inf\"", name);
		if (lev <= g->last_le)
			return pv_fail(v, "%s: le %s not increasing", name, le);
		if (!(val >= 0) || val < g->last_cum)
			return pv_fail(v, "%s: bucket le=\"%s\" is not cumulative", name, le);
		g->last_le = lev;
		g->last_cum = val;
		g->nbuckets++;
		if (isinf(lev)) {
			g->has_inf = 1;
			g->inf = val;
		}
	} else if (f->type == PV_SUMMARY) {
		double qv;

		if (!q || pv_value(q, strlen(q), &qv) < 0 || !(qv >= 0 && qv <= 1))
			return pv_fail(v, "%s: quantile label missing or outside [0, 1]", name);
		g->nquantiles++;
	} else {
		return pv_fail(v, "%s: histogram sample without _bucket, _sum or _count", name);
	}
	return 0;
}

static int pv_finish(struct pv *v)
{
	for (size_t i = 0; i < v->ngrp; i++) {
		const struct pv_group *g = &v->grp[i];
		const char *name = v->fam[g->family].name;

		v->line = g->line;
		if (!g->has_sum || !g->has_count)
			return pv_fail(v, "%s: a child lacks _sum or _count", name);
		if (v->fam[g->family].type != PV_HISTOGRAM)
			continue;
		if (!g->has_inf)
			return pv_fail(v, "%s: a child has no le=\"+Inf\" bucket", name);
		if (g->inf != g->count)
			return pv_fail(v, "%s: +Inf bucket %.17g differs from _count %.17g",
				       name, g->inf, g->count);
	}
	for (size_t i = 0; i < v->nfam; i++) {
		if (v->fam[i].has_help != v->fam[i].has_type) {
			v->line = 0;
			return pv_fail(v, "family %s has HELP or TYPE but not both", v->fam[i].name);
		}
	}
	return 0;
}

int prom_validate(const char *text, size_t len, char *err, size_t errlen)
{
	struct pv v = { .current = SIZE_MAX, .err = err, .errlen = errlen };
	struct pv_label *lab = calloc(PV_MAX_LABELS, sizeof(*lab));
	const char *p = text, *end = text + len;
	int ret = 0;

	if (errlen)
		err[0] = '\0';
	if (!lab)
		return -ENOMEM;
	if (len && text[len - 1] != '\n') {
		v.line = 0;
		ret = pv_fail(&v, "text does not end with a newline");
		goto cleanup;
	}
	while (p < end && !ret) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		v.line++;
		if (memchr(p, '\0', (size_t)(nl - p)))
			ret = pv_fail(&v, "NUL byte");
		else if (nl == p)
			;	/* blank lines are allowed */
		else if (*p == '#')
			ret = pv_meta(&v, p, nl);
		else
			ret = pv_sample(&v, p, nl, lab);
		p = nl + 1;
	}
	if (!ret)
		ret = pv_finish(&v);
cleanup:
	strmap_free(&v.fam_by_name);
	strmap_free(&v.series);
	strmap_free(&v.groups);
	free(v.fam);
	free(v.grp);
	free(lab);
	return ret;
}
