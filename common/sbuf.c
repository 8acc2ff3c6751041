/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bounded growable text buffer (see sbuf.h).  Runs unprivileged, inside the
 * exporter's request and feed paths and the client: failures are returned,
 * never fatal.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"

void sbuf_init(struct sbuf *b, size_t limit, size_t headroom)
{
	memset(b, 0, sizeof(*b));
	b->limit = limit;
	b->headroom = headroom;
}

void sbuf_reset(struct sbuf *b)
{
	b->len = 0;
	b->error = 0;
	if (b->data)
		b->data[0] = '\0';
}

void sbuf_free(struct sbuf *b)
{
	if (b->data)
		free(b->data - b->headroom);
	/* Reusable from empty, as after sbuf_init (the client's receive buffer is). */
	b->data = NULL;
	b->len = b->cap = 0;
	b->error = 0;
}

int sbuf_error(const struct sbuf *b)
{
	return b->error;
}

char *sbuf_base(const struct sbuf *b)
{
	return b->data ? b->data - b->headroom : NULL;
}

/* Makes room for n more bytes plus the terminating NUL. */
static int sbuf_reserve(struct sbuf *b, size_t n)
{
	size_t need, cap;
	char *p;

	if (b->error)
		return b->error;
	if (n > b->limit || b->len + n > b->limit) {
		b->error = -E2BIG;
		return b->error;
	}
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < need)
		cap *= 2;
	if (cap > b->limit + 1)
		cap = b->limit + 1;
	p = realloc(b->data ? b->data - b->headroom : NULL, b->headroom + cap);
	if (!p) {
		b->error = -ENOMEM;
		return b->error;
	}
	b->data = p + b->headroom;
	b->cap = cap;
	return 0;
}

int sbuf_append(struct sbuf *b, const char *s, size_t n)
{
	int err = sbuf_reserve(b, n);

	if (err)
		return err;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int sbuf_puts(struct sbuf *b, const char *s)
{
	return sbuf_append(b, s, strlen(s));
}

int sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n, err;

	if (b->error)
		return b->error;
	va_start(ap, fmt);
	n = vsnprintf(b->data ? b->data + b->len : NULL,
		      b->data ? b->cap - b->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->error = -EINVAL;
		return b->error;
	}
	if (b->data && b->len + (size_t)n < b->cap) {
		if (b->len + (size_t)n > b->limit) {
			b->data[b->len] = '\0';
			b->error = -E2BIG;
			return b->error;
		}
		b->len += (size_t)n;
		return 0;
	}
	err = sbuf_reserve(b, (size_t)n);
	if (err) {
		if (b->data)
			b->data[b->len] = '\0';
		return err;
	}
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int sbuf_u64(struct sbuf *b, uint64_t v)
{
	char tmp[21];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return sbuf_append(b, tmp + i, sizeof(tmp) - i);
}

int sbuf_seconds(struct sbuf *b, uint64_t ns)
{
	char frac[10];
	uint64_t f = ns % 1000000000ull;
	int i, err;

	err = sbuf_u64(b, ns / 1000000000ull);
	if (err || f == 0)
		return err;
	frac[0] = '.';
	for (i = 9; i >= 1; i--) {
		frac[i] = (char)('0' + f % 10);
		f /= 10;
	}
	/* Trailing zeros carry no information; the value stays exact. */
	for (i = 9; frac[i] == '0'; i--)
		;
	return sbuf_append(b, frac, (size_t)i + 1);
}
