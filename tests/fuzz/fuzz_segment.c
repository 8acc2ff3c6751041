/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: a segment image as the exporter would copy it.  The
 * validator judges it; when it passes, everything the exporter renders
 * from it must be valid: /metrics text through the project's Prometheus
 * validator, the feed parsed back as JSON, the alerts (built-in rules,
 * evaluated twice so that "for" clauses fire) in both.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/sbuf.h"
#include "exporter/alerts/alert_engine.h"
#include "exporter/alerts/alert_rules.h"
#include "exporter/feed/feed_json.h"
#include "exporter/prom/prom.h"
#include "exporter/prom/prom_proto.h"
#include "exporter/stats.h"
#include "shm/shm_reader.h"
#include "tests/exporter/prom_validate.h"

static void must_validate(const struct sbuf *b, const char *what)
{
	char err[256];

	if (sbuf_error(b) == 0 && prom_validate(b->data, b->len, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: invalid Prometheus text: %s\n", what, err);
		abort();
	}
}

static void must_parse(const struct sbuf *b, const char *what)
{
	struct json_object *o;

	if (sbuf_error(b))
		return;
	o = json_tokener_parse(b->data);
	if (!o) {
		fprintf(stderr, "%s: feed does not parse back\n", what);
		abort();
	}
	json_object_put(o);
}

/* What renders as text renders as protobuf too. */
static void must_encode(const struct sbuf *text, const struct shm_snapshot *snap,
			const struct cat_status *st, const struct exporter_stats *stats)
{
	struct prom_out o;
	struct sbuf pb;
	int err;

	if (sbuf_error(text))
		return;
	sbuf_init(&pb, 64u << 20, 0);
	err = prom_out_proto(&o, &pb);
	if (!err) {
		prom_render_data(&o, snap);
		prom_render_self(&o, st, stats);
		err = prom_out_proto_end(&o);
	}
	if (err) {
		fprintf(stderr, "protobuf exposition failed where the text did not: %d\n", err);
		abort();
	}
	sbuf_free(&pb);
}

/* What shm_reader does to a validated copy before anyone reads it. */
static void bound_strings(struct shm_header_fields *h, char *base)
{
	struct shm_proc *p = (struct shm_proc *)(base + h->table[SHM_TABLE_PROCS].offset);

	h->scenario[sizeof(h->scenario) - 1] = '\0';
	for (uint32_t i = 0; i < h->table[SHM_TABLE_PROCS].count; i++)
		p[i].comm[SHM_COMM_LEN - 1] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct cat_status fresh = {
		.status = SHM_READ_OK, .reason = "", .seen = 1, .generation = 1,
		.age_ns = 1000000, .last_update_real_ns = 1700000000000000000ull,
	};
	struct alert_ruleset rules;
	struct alert_engine *e;
	struct shm_snapshot snap;
	struct exporter_stats stats;
	struct prom_out prom;
	struct sbuf out;
	char why[256];
	void *buf;

	if (size < SHM_HEADER_SIZE || size > (4u << 20))
		return 0;
	buf = aligned_alloc(64, (size + 63) / 64 * 64);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (shm_validate(buf, size, why, sizeof(why)) != 0) {
		free(buf);
		return 0;
	}
	bound_strings(buf, buf);
	memset(&snap, 0, sizeof(snap));
	snap.buf = buf;
	snap.size = size;
	snap.hdr = buf;
	memset(&stats, 0, sizeof(stats));

	sbuf_init(&out, 64u << 20, 0);
	prom = prom_out_text(&out);
	prom_render_data(&prom, &snap);
	prom_render_self(&prom, &fresh, &stats);
	must_validate(&out, "data");
	must_encode(&out, &snap, &fresh, &stats);
	sbuf_reset(&out);
	feed_render(&out, &snap, &fresh, &stats, NULL);
	must_parse(&out, "feed");

	if (alert_rules_default(&rules) == 0 && (e = alert_engine_new(&rules, NULL, NULL))) {
		struct json_object *feed;

		alert_engine_eval(e, &snap, 1000000, 1000000000ull, 1700000000000000000ull);
		alert_engine_eval(e, &snap, 1000000, 1000000000000ull, 1700000001000000000ull);
		sbuf_reset(&out);
		alert_engine_render_prom(e, &prom);
		must_validate(&out, "alerts");
		feed = alert_engine_feed_json(e);
		if (feed) {
			const char *text = json_object_to_json_string(feed);
			struct json_object *back = json_tokener_parse(text);

			if (!back)
				abort();
			json_object_put(back);
			json_object_put(feed);
		}
		alert_engine_free(e);
	}
	sbuf_free(&out);
	free(buf);
	return 0;
}
