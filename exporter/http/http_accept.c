/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Accept and Accept-Encoding lists (see http_accept.h).
 */
#include <string.h>
#include <strings.h>

#include "exporter/http/http_accept.h"

/* [*s, end) without the optional whitespace around it. */
static void trim(const char **s, const char **end)
{
	while (*s < *end && (**s == ' ' || **s == '\t'))
		(*s)++;
	while (*end > *s && ((*end)[-1] == ' ' || (*end)[-1] == '\t'))
		(*end)--;
}

static int same(const char *s, const char *end, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(end - s) == n && strncasecmp(s, word, n) == 0;
}

/* "q=0.5" -> 500; -1 when the value is not a qvalue (0, 0.xyz, 1, 1.000). */
static int qvalue(const char *s, const char *end)
{
	int q = 0, scale = 100;

	if (s == end || (*s != '0' && *s != '1'))
		return -1;
	q = (*s - '0') * 1000;
	s++;
	if (s < end && *s == '.') {
		for (s++; s < end && scale > 0; s++, scale /= 10) {
			if (*s < '0' || *s > '9')
				return -1;
			q += (*s - '0') * scale;
		}
	}
	return s == end && q <= 1000 ? q : -1;
}

/*
 * One element [s, end): its q when its token is name and it carries every
 * param, -1 otherwise.  Parameters are compared as written, case aside,
 * with the spaces around ';' and '=' ignored.
 */
static int element_q(const char *s, const char *end, const char *name,
		     const char *const *params)
{
	const char *semi = memchr(s, ';', (size_t)(end - s));
	const char *tok_end = semi ? semi : end;
	unsigned int found = 0, wanted = 0;
	int q = 1000;

	trim(&s, &tok_end);
	if (!same(s, tok_end, name))
		return -1;
	for (const char *const *p = params; p && *p; p++)
		wanted++;
	while (semi) {
		const char *ps = semi + 1, *pe, *eq;

		semi = memchr(ps, ';', (size_t)(end - ps));
		pe = semi ? semi : end;
		eq = memchr(ps, '=', (size_t)(pe - ps));
		if (!eq)
			continue;
		{
			const char *ke = eq, *vs = eq + 1;

			trim(&ps, &ke);
			trim(&vs, &pe);
			if (same(ps, ke, "q")) {
				q = qvalue(vs, pe);
				if (q < 0)
					return -1;
				continue;
			}
			for (unsigned int i = 0; i < wanted; i++) {
				const char *want = params[i], *weq = strchr(want, '=');

				if (weq && (size_t)(ke - ps) == (size_t)(weq - want) &&
				    strncasecmp(ps, want, (size_t)(weq - want)) == 0 &&
				    same(vs, pe, weq + 1))
					found |= 1u << i;
			}
		}
	}
	return wanted && found != (1u << wanted) - 1 ? -1 : q;
}

int http_accept_q(const char *value, size_t len, const char *name,
		  const char *const *params)
{
	const char *s = value, *end = value ? value + len : NULL;
	int best = -1;

	if (!value)
		return -1;
	while (s < end) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		const char *e = comma ? comma : end;
		int q = element_q(s, e, name, params);

		if (q > best)
			best = q;
		s = comma ? comma + 1 : end;
	}
	return best;
}

static int max3(int a, int b, int c)
{
	int m = a > b ? a : b;

	return m > c ? m : c;
}

int http_accept_gzip(const char *value, size_t len)
{
	int q = http_accept_q(value, len, "gzip", NULL);
	int x = http_accept_q(value, len, "x-gzip", NULL);

	if (x > q)
		q = x;
	if (q < 0)
		q = http_accept_q(value, len, "*", NULL);
	return q > 0;
}

int http_accept_protobuf(const char *value, size_t len)
{
	static const char *const params[] = {
		"proto=io.prometheus.client.MetricFamily", "encoding=delimited", NULL
	};
	int qp = http_accept_q(value, len, "application/vnd.google.protobuf", params);
	int qt = max3(http_accept_q(value, len, "text/plain", NULL),
		      http_accept_q(value, len, "text/*", NULL),
		      http_accept_q(value, len, "*/*", NULL));

	return qp > 0 && qp > qt;
}
