/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One publish's /metrics segment part (see metrics_body.h).  Unprivileged,
 * on the request path: every form is bounded by the text's limit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"
#include "exporter/http/metrics_body.h"
#include "exporter/prom/prom.h"
#include "exporter/prom/prom_proto.h"

struct metrics_body *metrics_body_new(const struct shm_snapshot *snap, size_t limit)
{
	struct metrics_body *b = calloc(1, sizeof(*b));
	struct sbuf out;
	int err;

	if (!b)
		return NULL;
	sbuf_init(&out, limit, 0);
	err = prom_render_data(&out, snap, &b->natives);
	if (!err && !out.data)
		err = sbuf_puts(&out, "");	/* an empty part is still a part */
	if (err) {
		sbuf_free(&out);
		prom_natives_free(&b->natives);
		free(b);
		errno = -err;
		return NULL;
	}
	atomic_init(&b->refs, 1);
	b->limit = limit;
	b->generation = snap->hdr->generation;
	b->heartbeat_mono_ns = snap->hdr->heartbeat_mono_ns;
	b->form[METRICS_TEXT].data = out.data;	/* the body takes the buffer over */
	b->form[METRICS_TEXT].len = out.len;
	return b;
}

int metrics_body_current(const struct metrics_body *b, const struct shm_snapshot *snap)
{
	return b && b->generation == snap->hdr->generation &&
	       b->heartbeat_mono_ns == snap->hdr->heartbeat_mono_ns;
}

int metrics_body_form(struct metrics_body *b, enum metrics_format f, int gzip)
{
	struct metrics_form *m = &b->form[f];

	if (!m->data && f == METRICS_PROTO) {
		const struct metrics_form *t = &b->form[METRICS_TEXT];
		struct sbuf out;
		int err;

		/*
		 * The text's limit bounds it too.  Protobuf is smaller but for
		 * native buckets (at most HIST_BUCKETS a histogram, a few bytes
		 * each): far below the limit.
		 */
		sbuf_init(&out, b->limit, 0);
		err = prom_proto_from_text(&out, t->data, t->len, &b->natives);
		if (!err && !out.data)
			err = sbuf_puts(&out, "");
		if (err) {
			sbuf_free(&out);
			return err;
		}
		m->data = out.data;
		m->len = out.len;
	}
	if (!m->data)
		return -EINVAL;
	if (gzip && !m->gz.data)
		return gzip_part_make(&m->gz, m->data, m->len, 0);
	return 0;
}

void metrics_body_render(struct metrics_body *b, unsigned int forms)
{
	for (unsigned int f = 0; f < METRICS_FORMATS; f++)
		for (int gzip = 0; gzip < 2; gzip++)
			if (forms & METRICS_FORM_BIT(f, gzip))
				metrics_body_form(b, f, gzip);
}

void metrics_body_ref(struct metrics_body *b)
{
	atomic_fetch_add(&b->refs, 1);
}

void metrics_body_unref(struct metrics_body *b)
{
	if (!b || atomic_fetch_sub(&b->refs, 1) != 1)
		return;
	for (unsigned int i = 0; i < METRICS_FORMATS; i++) {
		free(b->form[i].data);
		gzip_part_free(&b->form[i].gz);
	}
	prom_natives_free(&b->natives);
	free(b);
}
