/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The 3.10 line table (Objects/lnotab_notes.txt of 3.10): byte pairs of
 * an unsigned address delta (bytes) and a signed line delta, -128 for
 * "no line"; a pair with no address delta only moves the line.
 *
 * The 3.11 location table (Objects/locations.md of CPython): entries of
 * one first byte 1cccclll (code c, length l+1 code units) and the bytes
 * its code needs: 15 no location, 14 long form (signed line delta, then
 * end line, column, end column varints), 13 no column (signed delta),
 * 10-12 one-line form (delta c-10, two column bytes), 0-9 short form
 * (same line, one column byte).  Varints: 6 bits a byte, bit 6 = more.
 */
#include "collector/python/pyline.h"

#define CODE_UNIT	2	/* bytes of one _Py_CODEUNIT */

struct cursor {
	const uint8_t *tab;
	size_t len;
	size_t pos;
	int bad;
};

static unsigned int next_byte(struct cursor *c)
{
	if (c->pos >= c->len) {
		c->bad = 1;
		return 0;
	}
	return c->tab[c->pos++];
}

static uint64_t varint(struct cursor *c)
{
	unsigned int b = next_byte(c);
	uint64_t v = b & 63;

	for (unsigned int shift = 6; (b & 64) && !c->bad; shift += 6) {
		if (shift > 60) {
			c->bad = 1;
			break;
		}
		b = next_byte(c);
		v |= (uint64_t)(b & 63) << shift;
	}
	return v;
}

/*
 * A line delta: no real one moves a line past INT32_MAX, so a larger one
 * (a process's own bytes) is a malformed table; one near 2^63 would
 * overflow the sum it is added to.
 */
static int64_t signed_varint(struct cursor *c)
{
	uint64_t u = varint(c);

	if ((u >> 1) > INT32_MAX) {
		c->bad = 1;
		return 0;
	}
	return (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
}

int pyline_311(const uint8_t *tab, size_t len, int firstlineno, uint64_t addr)
{
	struct cursor c = { tab, len, 0, 0 };
	int64_t line = firstlineno;
	uint64_t start = 0;

	while (c.pos < c.len) {
		unsigned int first = next_byte(&c);
		unsigned int code = (first >> 3) & 15;
		uint64_t end = start + ((first & 7) + 1) * CODE_UNIT;
		int has_line = 1;

		if (!(first & 0x80))
			return -1;	/* not the first byte of an entry */
		if (code == 15) {
			has_line = 0;
		} else if (code == 14) {
			line += signed_varint(&c);
			varint(&c);
			varint(&c);
			varint(&c);
		} else if (code == 13) {
			line += signed_varint(&c);
		} else if (code >= 10) {
			line += code - 10;
			next_byte(&c);
			next_byte(&c);
		} else {
			next_byte(&c);
		}
		if (c.bad || line < 0 || line > INT32_MAX)
			return -1;
		if (addr >= start && addr < end)
			return has_line ? (int)line : -1;
		start = end;
	}
	return -1;
}

int pyline_310(const uint8_t *tab, size_t len, int firstlineno, uint64_t addr)
{
	int64_t line = firstlineno;
	uint64_t start = 0;

	for (size_t pos = 0; pos + 2 <= len; pos += 2) {
		uint64_t end = start + tab[pos];
		int8_t delta = (int8_t)tab[pos + 1];

		if (delta != -128)
			line += delta;
		if (line < 0 || line > INT32_MAX)
			return -1;
		if (addr >= start && addr < end)
			return delta != -128 ? (int)line : -1;
		start = end;
	}
	return -1;
}
