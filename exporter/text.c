/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sanitising and escaping of segment text for the exporter's outputs (see
 * text.h).  Pure functions, no privilege.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "exporter/text.h"

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_valid_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are invalid. */
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

size_t text_sanitize(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	static const char replacement[] = "\xef\xbf\xbd";	/* U+FFFD */
	const unsigned char *s = (const unsigned char *)src;
	size_t n = strnlen(src, srclen), i = 0, o = 0;

	if (dstlen == 0)
		return 0;
	while (i < n) {
		size_t len = utf8_valid_len(s + i, n - i);
		const char *piece = (const char *)s + i;
		size_t plen = len;

		if (len == 0) {
			piece = replacement;
			plen = 3;
			len = 1;
		} else if (len == 1 && ((s[i] < 0x20 && s[i] != '\n') || s[i] == 0x7f)) {
			piece = "?";
		}
		if (o + plen >= dstlen)
			break;
		memcpy(dst + o, piece, plen);
		o += plen;
		i += len;
	}
	dst[o] = '\0';
	return o;
}

int text_prom_escape(struct sbuf *b, const char *s)
{
	const char *run = s;
	int err = 0;

	for (; *s && !err; s++) {
		const char *esc = NULL;

		if (*s == '\\')
			esc = "\\\\";
		else if (*s == '"')
			esc = "\\\"";
		else if (*s == '\n')
			esc = "\\n";
		if (!esc)
			continue;
		err = sbuf_append(b, run, (size_t)(s - run));
		if (!err)
			err = sbuf_append(b, esc, 2);
		run = s + 1;
	}
	if (!err)
		err = sbuf_append(b, run, (size_t)(s - run));
	return err;
}

void text_watch_reasons(char *buf, size_t len, uint32_t bits)
{
	static const char *const names[] = {
		"cuda", "nccl", "descendant", "pid", "comm", "simulated",
	};
	size_t o = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]) && o < len; i++)
		if (bits & (1u << i))
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "," : "", names[i]);
}
