/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: an alert rules file (JSON, with templates).  A file
 * the parser accepts must run: rules evaluated with the collector down
 * (so that rules on collector_up fire and their templates expand), and
 * the alerts rendered as valid Prometheus text and as JSON that parses.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "common/sbuf.h"
#include "common/utf8.h"
#include "exporter/alerts/alert_engine.h"
#include "exporter/alerts/alert_rules.h"
#include "exporter/prom/prom_write.h"
#include "tests/exporter/prom_validate.h"

static void on_notice(void *arg, const struct alert_notice *n)
{
	(void)arg;
	/* What a webhook receiver is sent: text, never raw bytes. */
	if (!utf8_valid(n->summary, strlen(n->summary)) ||
	    !utf8_valid(n->description, strlen(n->description)))
		abort();
	for (unsigned int i = 0; i < n->n_labels; i++)
		if (!utf8_valid(n->labels[i].value, strlen(n->labels[i].value)))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct alert_ruleset rs;
	struct alert_engine *e;
	struct json_object *feed;
	struct sbuf out;
	char err[1024];

	memset(&rs, 0, sizeof(rs));
	if (alert_rules_parse((const char *)data, size, "fuzz.json", &rs, err, sizeof(err)) != 0)
		return 0;
	e = alert_engine_new(&rs, on_notice, NULL);
	if (!e) {
		alert_ruleset_free(&rs);
		return 0;
	}
	alert_engine_eval(e, NULL, 5000000000ull, 1000000000ull, 1700000000000000000ull);
	alert_engine_eval(e, NULL, 9000000000000ull, 900000000000000ull, 1700000900000000000ull);
	sbuf_init(&out, 16u << 20, 0);
	if (alert_engine_render_prom(e, &(struct prom_out){ .b = &out }) == 0 &&
	    prom_validate(out.data, out.len, err, sizeof(err)) != 0) {
		fprintf(stderr, "alerts: invalid Prometheus text: %s\n", err);
		abort();
	}
	feed = alert_engine_feed_json(e);
	if (feed) {
		struct json_object *back = json_tokener_parse(json_object_to_json_string(feed));

		if (!back)
			abort();
		json_object_put(back);
		json_object_put(feed);
	}
	sbuf_free(&out);
	alert_engine_free(e);
	return 0;
}
