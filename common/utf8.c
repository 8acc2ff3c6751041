/* SPDX-License-Identifier: BSD-2-Clause */
/* The UTF-8 validator and sanitiser (see utf8.h).  Pure functions. */
#include <errno.h>
#include <string.h>

#include "common/utf8.h"

void utf8_dec_init(struct utf8_dec *d)
{
	d->need = 0;
	d->lo = 0x80;
	d->hi = 0xbf;
}

int utf8_dec_step(struct utf8_dec *d, uint8_t c)
{
	if (d->need) {
		if (c < d->lo || c > d->hi)
			return -EILSEQ;
		d->need--;
		d->lo = 0x80;
		d->hi = 0xbf;
		return 0;
	}
	if (c < 0x80)
		return 0;
	if (c < 0xc2 || c > 0xf4)
		return -EILSEQ;
	if (c < 0xe0) {
		d->need = 1;
	} else if (c < 0xf0) {
		d->need = 2;
		if (c == 0xe0)
			d->lo = 0xa0;	/* overlong */
		else if (c == 0xed)
			d->hi = 0x9f;	/* surrogates */
	} else {
		d->need = 3;
		if (c == 0xf0)
			d->lo = 0x90;	/* overlong */
		else if (c == 0xf4)
			d->hi = 0x8f;	/* past U+10FFFF */
	}
	return 0;
}

size_t utf8_seq_len(const char *s, size_t n)
{
	struct utf8_dec d;
	size_t i = 0;

	utf8_dec_init(&d);
	do {
		if (i >= n || utf8_dec_step(&d, (uint8_t)s[i++]) < 0)
			return 0;
	} while (!utf8_dec_complete(&d));
	return i;
}

int utf8_valid(const char *s, size_t n)
{
	struct utf8_dec d;

	utf8_dec_init(&d);
	for (size_t i = 0; i < n; i++)
		if (utf8_dec_step(&d, (uint8_t)s[i]) < 0)
			return 0;
	return utf8_dec_complete(&d);
}

size_t utf8_sanitize(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	static const char replacement[] = "\xef\xbf\xbd";	/* U+FFFD */
	const unsigned char *s = (const unsigned char *)src;
	size_t n = strnlen(src, srclen), i = 0, o = 0;

	if (dstlen == 0)
		return 0;
	while (i < n) {
		size_t len = utf8_seq_len((const char *)s + i, n - i);
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
