/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A gzip member (RFC 1952) made of a cached head and a per-request tail,
 * compressed separately: /metrics compresses the large part once per
 * collector publish and only the small self-telemetry part per scrape.
 * The head ends on a full flush (byte aligned, no back-reference across
 * it), so the tail's raw deflate stream continues it as one valid member;
 * the trailer's CRC is combined (crc32_combine).  One member, not two
 * concatenated: some clients read only the first member of a stream.
 * Unprivileged, on the request path: zlib allocates through malloc only.
 */
#ifndef ZERNEL_GZIP_BODY_H
#define ZERNEL_GZIP_BODY_H

#include <stddef.h>
#include <stdint.h>

#define GZIP_BODY_HEADER_LEN	10
#define GZIP_BODY_TRAILER_LEN	8

/* Deflated bytes of one part, and what the trailer needs of its input. */
struct gzip_part {
	unsigned char *data;	/* malloc'd; raw deflate, no header */
	size_t len;
	uint32_t crc;		/* crc32 of the input */
	size_t in_len;		/* bytes of input */
};

/*
 * Compresses len bytes of in.  last == 0: a head, ending on a full flush
 * with no final block; last != 0: the tail, ending with the final block.
 * Returns 0 or -ENOMEM.
 */
int gzip_part_make(struct gzip_part *p, const void *in, size_t len, int last);
void gzip_part_free(struct gzip_part *p);

/* The fixed 10-byte member header (no name, no time: the body is not a file). */
const unsigned char *gzip_body_header(void);

/* The trailer of head (may be NULL) followed by tail: CRC32 and size mod 2^32. */
void gzip_body_trailer(unsigned char out[GZIP_BODY_TRAILER_LEN],
		       const struct gzip_part *head, const struct gzip_part *tail);

#endif /* ZERNEL_GZIP_BODY_H */
