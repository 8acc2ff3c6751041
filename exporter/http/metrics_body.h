/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The segment part of /metrics for one collector publish, in every form a
 * scraper may ask for: text, protobuf (prom_proto.h), and each of those
 * gzipped.  The text is rendered when the first scrape after a publish
 * arrives, the other forms when first asked for (protobuf from the
 * publish's snapshot, as the text); every later scrape until the next
 * publish is served from memory.
 * The per-scrape part (the collector's status, the exporter's own
 * counters, alerts) is never in here: it changes with each request and is
 * rendered then (http.c), so counters like zernel_exporter_scrapes_total
 * stay exact.  Memory: one body per publish (and any older one a response
 * still sends), each form bounded by the text's limit; the protobuf is
 * smaller than its text and each gzip far smaller.  Reference counted,
 * because a response still being sent keeps the body it points into.
 * Made by one thread (metrics_ahead.h), then read by the HTTP thread,
 * which alone fills a form still missing.
 */
#ifndef ZERNEL_METRICS_BODY_H
#define ZERNEL_METRICS_BODY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "exporter/http/gzip_body.h"
#include "shm/shm_reader.h"

enum metrics_format {
	METRICS_TEXT,		/* Prometheus text 0.0.4 */
	METRICS_PROTO,		/* delimited io.prometheus.client.MetricFamily */
	METRICS_FORMATS
};

struct metrics_form {
	char *data;		/* NULL until first asked for */
	size_t len;
	struct gzip_part gz;	/* gz.data NULL until first asked for */
};

struct metrics_body {
	atomic_uint refs;	/* the render thread's view, the cache, responses */
	size_t limit;		/* of every form */
	uint64_t generation;	/* of the publish it was rendered from */
	uint64_t heartbeat_mono_ns;
	struct metrics_form form[METRICS_FORMATS];
};

/*
 * snap's data families in format f, bounded by limit bytes (the other
 * forms when asked for, from the same publish).  NULL with errno set when
 * it cannot be rendered.  refs starts at 1.
 */
struct metrics_body *metrics_body_new(const struct shm_snapshot *snap, size_t limit,
				      enum metrics_format f);

/* Whether b was rendered from the publish snap holds. */
int metrics_body_current(const struct metrics_body *b, const struct shm_snapshot *snap);

/*
 * The form f of b, rendering it now if needed (plain, from snap, or its
 * gzip head: raw deflate ending on a full flush, see gzip_body.h).
 * Returns 0 or -errno: -ESTALE when the format is still to render and
 * snap (may be NULL) is not b's publish; on error b keeps what it had.
 */
int metrics_body_form(struct metrics_body *b, const struct shm_snapshot *snap,
		      enum metrics_format f, int gzip);

/* The forms: each format, plain and gzipped; form f's position among them. */
#define METRICS_FORMS			(METRICS_FORMATS * 2)
#define METRICS_FORM_INDEX(f, gzip)	((unsigned int)(f) * 2 + !!(gzip))
/* Bit of form f, gzipped or not, in a set of forms. */
#define METRICS_FORM_BIT(f, gzip)	(1u << METRICS_FORM_INDEX(f, gzip))

/* The forms of the set; one that fails is left to be asked for. */
void metrics_body_render(struct metrics_body *b, const struct shm_snapshot *snap,
			 unsigned int forms);

void metrics_body_ref(struct metrics_body *b);
void metrics_body_unref(struct metrics_body *b);

#endif /* ZERNEL_METRICS_BODY_H */
