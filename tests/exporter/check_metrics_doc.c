/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The metrics reference: docs/metrics.md is what the catalog renders
 * (catalog/cat_doc.c), and every family the live exporter serves is in it
 * with the type /metrics gives it.
 *
 * `make docs` (ZERNEL_RECORD=1) writes the file again instead of comparing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "common/sbuf.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

START_TEST(metrics_doc_is_the_catalogs)
{
	struct sbuf b;

	sbuf_init(&b, 1u << 20, 0);
	ck_assert_int_eq(cat_doc_write(&b), 0);
	tu_generated_file("docs/metrics.md", b.data, b.len, "docs");
	sbuf_free(&b);
}
END_TEST

/* Each "# TYPE name type" of a scrape has its row, "| `name` | type |", in the reference. */
static void every_type_line_has_its_row(const char *scrape, const char *doc)
{
	char want[200], name[128], type[32];
	unsigned int families = 0;

	for (const char *l = scrape; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (sscanf(l, "# TYPE %127s %31s", name, type) != 2)
			continue;
		snprintf(want, sizeof(want), "| `%s` | %s |", name, type);
		ck_assert_msg(strstr(doc, want), "docs/metrics.md has no row %s", want);
		families++;
	}
	ck_assert_uint_gt(families, 50);
}

START_TEST(metrics_doc_lists_every_family_served)
{
	/* A webhook nobody answers: its families are served too. */
	static const char *const args[] = { "--webhook", "http://127.0.0.1:9/", NULL };
	char path[1024], *doc, *scrape;
	struct tu_stack st;

	if (!tu_have_binary("zernel-collector") || !tu_have_binary("zernel-exporter")) {
		tu_skip_missing("metrics_doc_lists_every_family_served: binaries not built\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/docs/metrics.md", tu_src_dir());
	doc = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(doc);
	tu_stack_init(&st);
	st.exporter_args = args;
	ck_assert_int_eq(tu_stack_start_collector(&st, (const char *const[]){
		"--scenario", "straggler", "--publish-interval", "250", NULL }), 0);
	ck_assert_int_eq(tu_stack_start_exporter(&st), 0);
	ck_assert_int_eq(tu_stack_wait_up(&st, 10000), 0);
	/* The straggler's communicators and waits, once a few publishes are in. */
	ck_assert_int_eq(tu_wait_metric(st.metrics_port, "zernel_nccl_comm_wait_seconds_count", 1,
					10000), 0);
	scrape = tu_scrape(st.metrics_port);
	ck_assert_ptr_nonnull(scrape);
	every_type_line_has_its_row(scrape, doc);
	free(scrape);
	free(doc);
	tu_stack_stop(&st);
}
END_TEST

Suite *metrics_doc_suite(void);
Suite *metrics_doc_suite(void)
{
	Suite *s = suite_create("metrics_doc");
	TCase *files = tcase_create("files");
	TCase *live = tcase_create("live");

	tcase_add_test(files, metrics_doc_is_the_catalogs);
	tcase_set_timeout(files, 30);
	suite_add_tcase(s, files);
	tcase_add_test(live, metrics_doc_lists_every_family_served);
	tcase_set_timeout(live, 60);
	suite_add_tcase(s, live);
	return s;
}
