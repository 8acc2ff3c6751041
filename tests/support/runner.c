/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Check runner of one test folder: tests/<folder>/check_<name>.c each
 * expose <name>_suite(), and the Makefile lists them in that folder's
 * suites.h.  This file is built once per folder, so each runner links only
 * the program its suites test (zernel-tests-collector, -exporter, ...).
 *
 * Arguments, when given, name the suites to run; names that belong to
 * another runner are ignored, and a runner left with nothing to run exits
 * RUNNER_NOTHING so that `make check-unit SUITES=...` can ask every runner.
 * Segments that failed tests left behind are removed before and after.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testutil.h"

#define RUNNER_NOTHING	77	/* none of the named suites is here */

#define ZERNEL_SUITE(name) Suite *name##_suite(void);
#include "suites.h"
#undef ZERNEL_SUITE

struct suite_entry {
	const char *name;
	Suite *(*make)(void);
};

static const struct suite_entry suites[] = {
#define ZERNEL_SUITE(name) { #name, name##_suite },
#include "suites.h"
#undef ZERNEL_SUITE
};

static int wanted(const char *name, int argc, char **argv)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	SRunner *runner = NULL;
	int failed;

	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
			printf("%s\n", suites[i].name);
		return EXIT_SUCCESS;
	}
	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
		if (!wanted(suites[i].name, argc, argv))
			continue;
		if (!runner)
			runner = srunner_create(suites[i].make());
		else
			srunner_add_suite(runner, suites[i].make());
	}
	if (!runner)
		return RUNNER_NOTHING;
	tu_sweep_segments();
	srunner_run_all(runner, CK_NORMAL);
	tu_sweep_segments();
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
