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
#include "exporter/prom/prom_write.h"

/* The data families of snap in format f, bounded by limit, into m. */
static int render(struct metrics_form *m, enum metrics_format f, const struct shm_snapshot *snap,
		  size_t limit)
{
	struct prom_out o;
	struct sbuf out;
	int err;

	sbuf_init(&out, limit, 0);
	if (f == METRICS_PROTO) {
		err = prom_out_proto(&o, &out);
		if (!err) {
			prom_render_data(&o, snap);
			err = prom_out_proto_end(&o);
		}
	} else {
		o = prom_out_text(&out);
		err = prom_render_data(&o, snap);
	}
	if (!err && !out.data)
		err = sbuf_puts(&out, "");	/* an empty part is still a part */
	if (err) {
		sbuf_free(&out);
		return err;
	}
	m->data = out.data;	/* the form takes the buffer over */
	m->len = out.len;
	return 0;
}

struct metrics_body *metrics_body_new(const struct shm_snapshot *snap, size_t limit,
				      enum metrics_format f)
{
	struct metrics_body *b = calloc(1, sizeof(*b));
	int err;

	if (!b)
		return NULL;
	err = render(&b->form[f], f, snap, limit);
	if (err) {
		free(b);
		errno = -err;
		return NULL;
	}
	atomic_init(&b->refs, 1);
	b->limit = limit;
	b->generation = snap->hdr->generation;
	b->heartbeat_mono_ns = snap->hdr->heartbeat_mono_ns;
	return b;
}

int metrics_body_current(const struct metrics_body *b, const struct shm_snapshot *snap)
{
	return b && b->generation == snap->hdr->generation &&
	       b->heartbeat_mono_ns == snap->hdr->heartbeat_mono_ns;
}

int metrics_body_form(struct metrics_body *b, const struct shm_snapshot *snap,
		      enum metrics_format f, int gzip)
{
	struct metrics_form *m = &b->form[f];

	if (!m->data) {
		int err;

		if (!snap || !metrics_body_current(b, snap))
			return -ESTALE;
		/* Protobuf is smaller than the text but for native buckets: the text's limit bounds it. */
		err = render(m, f, snap, b->limit);
		if (err)
			return err;
	}
	if (gzip && !m->gz.data)
		return gzip_part_make(&m->gz, m->data, m->len, 0);
	return 0;
}

void metrics_body_render(struct metrics_body *b, const struct shm_snapshot *snap,
			 unsigned int forms)
{
	for (unsigned int f = 0; f < METRICS_FORMATS; f++)
		for (int gzip = 0; gzip < 2; gzip++)
			if (forms & METRICS_FORM_BIT(f, gzip))
				metrics_body_form(b, snap, f, gzip);
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
	free(b);
}
