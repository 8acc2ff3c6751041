/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gzip members from separately compressed parts (see gzip_body.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "exporter/http/gzip_body.h"

/*
 * Level 1: the head is compressed on the request thread once per publish,
 * and the scrapes that arrive meanwhile wait; exposition text is so
 * repetitive that the fastest level already shrinks it about tenfold.
 */
#define GZIP_LEVEL	1

int gzip_part_make(struct gzip_part *p, const void *in, size_t len, int last)
{
	z_stream z;
	size_t cap;
	int rc;

	memset(p, 0, sizeof(*p));
	memset(&z, 0, sizeof(z));
	/* -15: raw deflate; the header and trailer are written around the parts. */
	if (deflateInit2(&z, GZIP_LEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	/* deflateBound covers a finished stream; a flush adds at most 5 bytes and a few more. */
	cap = deflateBound(&z, (uLong)len) + 16;
	p->data = malloc(cap);
	if (!p->data) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)(uintptr_t)in;
	z.next_out = p->data;
	/* uInt is 32 bits: feed a large input in pieces. */
	do {
		size_t left = len - (size_t)(z.next_in - (const Bytef *)in);
		size_t piece = left > (1u << 30) ? (1u << 30) : left;
		int flush = piece < left ? Z_NO_FLUSH : last ? Z_FINISH : Z_FULL_FLUSH;

		z.avail_in = (uInt)piece;
		z.avail_out = (uInt)(cap - (size_t)(z.next_out - p->data));
		rc = deflate(&z, flush);
		if (flush != Z_NO_FLUSH)
			break;
	} while (rc == Z_OK);
	if ((last && rc != Z_STREAM_END) || (!last && rc != Z_OK) || z.avail_in) {
		deflateEnd(&z);
		gzip_part_free(p);
		return -ENOMEM;
	}
	p->len = (size_t)(z.next_out - p->data);
	p->crc = (uint32_t)crc32_z(0, in, len);
	p->in_len = len;
	deflateEnd(&z);
	return 0;
}

void gzip_part_free(struct gzip_part *p)
{
	free(p->data);
	memset(p, 0, sizeof(*p));
}

const unsigned char *gzip_body_header(void)
{
	/* Magic, deflate, no flags, no mtime, no extra flags, OS unknown (255). */
	static const unsigned char h[GZIP_BODY_HEADER_LEN] = {
		0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255
	};
	return h;
}

static void put_le32(unsigned char *o, uint32_t v)
{
	o[0] = (unsigned char)v;
	o[1] = (unsigned char)(v >> 8);
	o[2] = (unsigned char)(v >> 16);
	o[3] = (unsigned char)(v >> 24);
}

void gzip_body_trailer(unsigned char out[GZIP_BODY_TRAILER_LEN],
		       const struct gzip_part *head, const struct gzip_part *tail)
{
	uint32_t crc = tail->crc;
	size_t total = tail->in_len;

	if (head) {
		crc = (uint32_t)crc32_combine(head->crc, tail->crc, (z_off_t)tail->in_len);
		total += head->in_len;
	}
	put_le32(out, crc);
	put_le32(out + 4, (uint32_t)total);	/* ISIZE is the size mod 2^32 */
}
