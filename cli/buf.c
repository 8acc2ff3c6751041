/* SPDX-License-Identifier: BSD-2-Clause */
/* Bounded growable buffer of the zernel client (see buf.h).  No privilege. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/buf.h"

void cli_buf_init(struct cli_buf *b, size_t limit)
{
	memset(b, 0, sizeof(*b));
	b->limit = limit;
}

void cli_buf_reset(struct cli_buf *b)
{
	b->len = 0;
	b->error = 0;
	if (b->data)
		b->data[0] = '\0';
}

void cli_buf_free(struct cli_buf *b)
{
	free(b->data);
	cli_buf_init(b, b->limit);
}

static int cli_buf_reserve(struct cli_buf *b, size_t n)
{
	size_t want, cap;
	char *p;

	if (b->error)
		return b->error;
	if (n > b->limit || b->len > b->limit - n) {
		b->error = -E2BIG;
		return b->error;
	}
	want = b->len + n + 1;	/* + NUL */
	if (want <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < want)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->error = -ENOMEM;
		return b->error;
	}
	b->data = p;
	b->cap = cap;
	return 0;
}

int cli_buf_append(struct cli_buf *b, const void *p, size_t n)
{
	int err = cli_buf_reserve(b, n);

	if (err)
		return err;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int cli_buf_puts(struct cli_buf *b, const char *s)
{
	return cli_buf_append(b, s, strlen(s));
}

int cli_buf_printf(struct cli_buf *b, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	int n, err;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < sizeof(small))
		return cli_buf_append(b, small, (size_t)n);
	err = cli_buf_reserve(b, (size_t)n);
	if (err)
		return err;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}
