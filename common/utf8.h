/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one UTF-8 validator (RFC 3629: no overlong forms, no surrogates,
 * nothing past U+10FFFF), for every program: the exporter's WebSocket
 * reader checks clients' text with it a byte at a time across fragments,
 * the exporter's outputs sanitise process names with it, the client cuts
 * feed text to ASCII with it, and the tests' Prometheus checker uses it.
 * Pure functions, no allocation.
 */
#ifndef ZERNEL_UTF8_H
#define ZERNEL_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decoder state carried across the pieces of a stream. */
struct utf8_dec {
	uint8_t need;		/* continuation bytes still due */
	uint8_t lo, hi;		/* the range the next one must fall in */
};

void utf8_dec_init(struct utf8_dec *d);
/* Takes one byte: 0, or -EILSEQ when the stream is no longer UTF-8. */
int utf8_dec_step(struct utf8_dec *d, uint8_t c);
/* No sequence is left half-way. */
static inline int utf8_dec_complete(const struct utf8_dec *d)
{
	return d->need == 0;
}

/* Length of the valid sequence that starts s (at most n bytes), or 0. */
size_t utf8_seq_len(const char *s, size_t n);
/* The n bytes at s are valid UTF-8. */
int utf8_valid(const char *s, size_t n);

/*
 * Copies at most srclen bytes of src (stopping at NUL) into dst as valid
 * UTF-8 without control characters: invalid sequences become U+FFFD,
 * control characters other than '\n' become '?'.  Text a local user
 * controls (process names) goes through this before any output.  dst is
 * always NUL-terminated; returns its length.
 */
size_t utf8_sanitize(char *dst, size_t dstlen, const char *src, size_t srclen);

#endif /* ZERNEL_UTF8_H */
