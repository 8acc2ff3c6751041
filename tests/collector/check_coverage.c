/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The coverage self-check (collector/probes/coverage.c): its table holds every
 * driver symbol the probe families attach to, with the request NVIDIA's runtime
 * makes for it where it makes one; against the fake driver it finds every
 * answer to be the exported symbol, and finds exactly the ones the fake is
 * made to answer with an internal address; a library without
 * cuGetProcAddress gets a defined answer; and the real collector exports
 * the count and names them in its log.  The check itself forks a child
 * that drops to nobody when run as root.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/probes/coverage.h"
#include "collector/probes/probe_family.h"
#include "collector/probes/probe_loader.h"
#include "tests/collector/tu_attach.h"
#include "tests/collector/tu_probes.h"
#include "tests/support/testutil.h"

#define REQUESTS	"tests/fakes/fake_driver/cudart13_requests.txt"

static int entry_of(const char *sym)
{
	for (size_t i = 0; i < coverage_count; i++)
		if (strcmp(coverage_table[i].symbol, sym) == 0)
			return (int)i;
	return -1;
}

START_TEST(every_probed_driver_symbol_is_checked_with_the_runtimes_request)
{
	char path[512], *text, *line, *save = NULL;
	size_t matched = 0;

	for (size_t i = 0; i < tu_attach_count(); i++) {
		const struct probe_attach *r = &tu_attach_rows()[i];

		if (r->how == PROBE_UPROBE && (r->libs & PROBE_LIB_CUDA))
			ck_assert_msg(entry_of(r->symbol) >= 0, "%s is probed but not checked",
				      r->symbol);
	}
	/* The same request as the runtime's yields the same symbol. */
	snprintf(path, sizeof(path), "%s/%s", tu_src_dir(), REQUESTS);
	text = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[64], sym[64];
		unsigned int version, flags;
		int result;

		if (line[0] == '#' ||
		    sscanf(line, "%63s %u %u %63s %d", name, &version, &flags, sym, &result) != 5)
			continue;
		for (size_t i = 0; i < coverage_count; i++) {
			const struct coverage_entry *e = &coverage_table[i];

			if (strcmp(e->name, name) != 0 || e->version != (int)version ||
			    e->ptds != (flags == 2))
				continue;
			ck_assert_msg(strcmp(e->symbol, sym) == 0, "%s %u %u answers %s, not %s",
				      name, version, flags, sym, e->symbol);
			matched++;
		}
	}
	free(text);
	ck_assert_uint_ge(matched, 25);
}
END_TEST

static const char *fake_driver(char *buf, size_t len)
{
	tu_build_path(buf, len, "tests/fakes/driver/libcuda.so.1");
	if (access(buf, R_OK) != 0) {
		tu_skip_missing("the fake driver %s is not built\n", buf);
		return NULL;
	}
	return buf;
}

START_TEST(answers_are_the_exported_symbols_unless_made_otherwise)
{
	struct coverage_result r;
	char lib[512];

	if (!fake_driver(lib, sizeof(lib)))
		return;
	unsetenv("FAKE_CUDA_GPA_PRIVATE");
	ck_assert_int_eq(coverage_check(lib, &r), 0);
	ck_assert_uint_eq(r.checked, coverage_count);
	ck_assert_uint_eq(r.differ, 0);
	ck_assert_uint_eq(r.verdict[entry_of("cuCtxSynchronize_v2")], COVERAGE_SAME);
	ck_assert_uint_eq(r.verdict[entry_of("cuLaunchKernel_ptsz")], COVERAGE_SAME);

	setenv("FAKE_CUDA_GPA_PRIVATE", "cuMemAlloc_v2,cuLaunchKernel_ptsz", 1);
	ck_assert_int_eq(coverage_check(lib, &r), 0);
	unsetenv("FAKE_CUDA_GPA_PRIVATE");
	ck_assert_uint_eq(r.differ, 2);
	ck_assert_uint_eq(r.verdict[entry_of("cuMemAlloc_v2")], COVERAGE_DIFFERS);
	ck_assert_uint_eq(r.verdict[entry_of("cuLaunchKernel_ptsz")], COVERAGE_DIFFERS);
	ck_assert_uint_eq(r.verdict[entry_of("cuLaunchKernel")], COVERAGE_SAME);
}
END_TEST

START_TEST(a_driver_without_cugetprocaddress_or_none_at_all_is_said_so)
{
	struct coverage_result r;
	char lib[512];

	/* Our plain fake libcuda has no cuGetProcAddress. */
	tp_fake(lib, sizeof(lib), "libcuda.so.1");
	if (access(lib, R_OK) != 0) {
		tu_skip_missing("%s is not built\n", lib);
		return;
	}
	ck_assert_int_eq(coverage_check(lib, &r), -ENOSYS);
	ck_assert_uint_eq(r.checked, 0);
	ck_assert_int_eq(coverage_check("/nonexistent/libcuda.so.1", &r), -ENOEXEC);
}
END_TEST

START_TEST(the_collector_exports_and_logs_a_bypassed_entry_point)
{
	char lib[512], *log;
	const char *extra[] = { "--lib", lib, NULL };
	struct tp_collector c;
	int ok = 0;

	if (tu_skip_unless_root("the_collector_exports_and_logs_a_bypassed_entry_point") ||
	    !fake_driver(lib, sizeof(lib)))
		return;
	setenv("FAKE_CUDA_GPA_PRIVATE", "cuMemFree_v2", 1);
	ck_assert_msg(tp_collector_start(&c, extra, 0) == 0, "collector did not start, see %s",
		      c.log);
	unsetenv("FAKE_CUDA_GPA_PRIVATE");
	for (int i = 0; i < 300 && !ok; i++) {
		tu_sleep_ms(100);
		ok = tp_snapshot(&c) == 0 && c.snap.hdr->stats.entry_points_checked > 0;
	}
	ck_assert_msg(ok, "no coverage figures (see %s)", c.log);
	ck_assert_uint_eq(c.snap.hdr->stats.entry_points_bypassed, 1);
	ck_assert_uint_ge(c.snap.hdr->stats.entry_points_checked, coverage_count);
	log = tu_read_file(c.log, NULL);
	ck_assert_msg(log && strstr(log, "cuGetProcAddress(\"cuMemFree\", 3020) answers another "
				    "address than the exported cuMemFree_v2"), "%s", log ? log : "");
	free(log);
	tp_collector_stop(&c);
}
END_TEST

Suite *coverage_suite(void);
Suite *coverage_suite(void)
{
	Suite *s = suite_create("coverage");
	TCase *tc = tcase_create("check");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, every_probed_driver_symbol_is_checked_with_the_runtimes_request);
	tcase_add_test(tc, answers_are_the_exported_symbols_unless_made_otherwise);
	tcase_add_test(tc, a_driver_without_cugetprocaddress_or_none_at_all_is_said_so);
	tcase_add_test(tc, the_collector_exports_and_logs_a_bypassed_entry_point);
	suite_add_tcase(s, tc);
	return s;
}
