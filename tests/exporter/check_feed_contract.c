/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The feed contract: docs/feed.schema.json is what the catalog generates;
 * the live exporter's feed validates against it in every simulated
 * scenario and with the collector down (python3-jsonschema); the recorded
 * snapshots in tests/fixtures/, which the client and page tests read,
 * validate too and have the keys the live exporter sends now.
 *
 * The design page's example of a catalog entry (docs/design.md) is one, as
 * written.
 *
 * `make feed-contract` (ZERNEL_RECORD=1) writes the schema and records the
 * fixtures again instead of comparing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "common/sbuf.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define PY	"/usr/bin/python3"

static const char *const scenarios[] = { "steady", "oom", "straggler", "dataloader-stall" };

static int have_jsonschema(const char *test)
{
	if (tu_system(PY " -c 'import jsonschema, websockets' 2>/dev/null") == 0)
		return 1;
	tu_skip_missing("%s: %s lacks jsonschema or websockets (python3-jsonschema, "
			"python3-websockets)\n", test, PY);
	return 0;
}

START_TEST(schema_file_is_the_catalogs)
{
	struct sbuf b;

	sbuf_init(&b, 1u << 20, 0);
	ck_assert_int_eq(cat_schema_write(&b), 0);
	tu_generated_file("docs/feed.schema.json", b.data, b.len, "feed-contract");
	sbuf_free(&b);
}
END_TEST

START_TEST(fixtures_validate_against_the_schema)
{
	/* Recording: the live test validates each snapshot it records. */
	if (tu_recording() || !have_jsonschema("fixtures_validate_against_the_schema"))
		return;
	ck_assert_int_eq(tu_system(PY " %s/tests/py/feed_contract.py validate "
				   "%s/docs/feed.schema.json %s/tests/fixtures/feed-*.json >&2",
				   tu_src_dir(), tu_src_dir(), tu_src_dir()), 0);
}
END_TEST

/* One live snapshot of the stack on ws_port, checked (or recorded) as scenario. */
static void capture(uint16_t ws_port, const char *scenario)
{
	ck_assert_msg(tu_system(PY " %s/tests/py/feed_contract.py capture "
				"%s/docs/feed.schema.json %u %s %s/tests/fixtures/feed-%s.json %s >&2",
				tu_src_dir(), tu_src_dir(), ws_port, scenario, tu_src_dir(),
				scenario, tu_recording() ? "--record" : "") == 0,
		      "the live %s feed breaks the contract", scenario);
}

START_TEST(live_feed_keeps_the_contract_in_every_scenario)
{
	struct tu_stack st;

	if (!have_jsonschema("live_feed_keeps_the_contract_in_every_scenario"))
		return;
	if (!tu_have_binary("zernel-collector") || !tu_have_binary("zernel-exporter")) {
		tu_skip_missing("live_feed_keeps_the_contract_in_every_scenario: binaries not built\n");
		return;
	}
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		ck_assert_int_eq(tu_stack_start(&st, scenarios[i], 500, 250), 0);
		capture(st.ws_port, scenarios[i]);
		tu_stack_stop(&st);
	}
	/* The collector down: an exporter on a segment nobody writes. */
	tu_stack_init(&st);
	st.ws_interval_ms = 250;
	ck_assert_int_eq(tu_stack_start_exporter(&st), 0);
	capture(st.ws_port, "down");
	tu_stack_stop(&st);
}
END_TEST

/* Whitespace runs as one blank, for comparing code as written in two places. */
static void squeeze(char *s)
{
	char *o = s;

	for (char *p = s; *p; p++) {
		if (*p == ' ' || *p == '\t' || *p == '\n') {
			if (o > s && o[-1] != ' ')
				*o++ = ' ';
			continue;
		}
		*o++ = *p;
	}
	*o = '\0';
}

/* docs/design.md shows a catalog entry: it must be one, as written in catalog.c. */
START_TEST(design_doc_example_is_a_real_entry)
{
	char path[1024], *doc, *table, *block, *end;

	snprintf(path, sizeof(path), "%s/docs/design.md", tu_src_dir());
	doc = tu_read_file(path, NULL);
	snprintf(path, sizeof(path), "%s/catalog/catalog.c", tu_src_dir());
	table = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(doc);
	ck_assert_ptr_nonnull(table);
	block = strstr(doc, "### One catalog of metrics");
	ck_assert_ptr_nonnull(block);
	block = strstr(block, "```c\n");
	ck_assert_ptr_nonnull(block);
	block += 5;
	end = strstr(block, "```");
	ck_assert_ptr_nonnull(end);
	*end = '\0';
	squeeze(block);
	squeeze(table);
	ck_assert_msg(strstr(table, block), "the design page's catalog entry is not in catalog.c: %s", block);
	free(doc);
	free(table);
}
END_TEST

Suite *feed_contract_suite(void);
Suite *feed_contract_suite(void)
{
	Suite *s = suite_create("feed_contract");
	TCase *files = tcase_create("files");
	TCase *live = tcase_create("live");

	tcase_add_test(files, schema_file_is_the_catalogs);
	tcase_add_test(files, fixtures_validate_against_the_schema);
	tcase_add_test(files, design_doc_example_is_a_real_entry);
	tcase_set_timeout(files, 30);
	suite_add_tcase(s, files);
	tcase_add_test(live, live_feed_keeps_the_contract_in_every_scenario);
	tcase_set_timeout(live, 240);
	suite_add_tcase(s, live);
	return s;
}
