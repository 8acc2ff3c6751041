/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A growable text buffer with a hard size limit: the exporter's rendered
 * responses, the client's frames and received WebSocket messages.  Input
 * from the segment or the network must never grow memory without bound:
 * past the limit every append fails and the buffer stays truncated, which
 * the caller sees through sbuf_error().
 */
#ifndef ZERNEL_SBUF_H
#define ZERNEL_SBUF_H

#include <stddef.h>
#include <stdint.h>

struct sbuf {
	char *data;		/* NUL-terminated while len < cap */
	size_t len;
	size_t cap;
	size_t limit;		/* never grows past this many bytes */
	size_t headroom;	/* bytes kept free before data (lws needs LWS_PRE) */
	int error;		/* first -errno seen; appends are no-ops after */
};

/* headroom bytes are reserved in front of data for the caller's use. */
void sbuf_init(struct sbuf *b, size_t limit, size_t headroom);
void sbuf_reset(struct sbuf *b);	/* len = 0, error = 0; keeps memory */
void sbuf_free(struct sbuf *b);		/* back to empty, reusable */
int sbuf_error(const struct sbuf *b);

int sbuf_append(struct sbuf *b, const char *s, size_t n);
int sbuf_puts(struct sbuf *b, const char *s);
int sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sbuf_u64(struct sbuf *b, uint64_t v);
/* v nanoseconds as exact decimal seconds: "12.000034500" -> "12.0000345". */
int sbuf_seconds(struct sbuf *b, uint64_t ns);

/* The start of the headroom (data - headroom). */
char *sbuf_base(const struct sbuf *b);

#endif /* ZERNEL_SBUF_H */
