/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one Check runner.  Every tests/check_<module>.c exposes
 * <module>_suite(); the Makefile lists them in suites.h.  Arguments, when
 * given, name the suites to run (e.g. `zernel-tests hist shm_reader`).
 * Segments that failed tests left behind are removed before and after.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

#define ZERNEL_SUITE(name) Suite *name##_suite(void);
#include "tests/suites.h"
#undef ZERNEL_SUITE

struct suite_entry {
	const char *name;
	Suite *(*make)(void);
};

static const struct suite_entry suites[] = {
#define ZERNEL_SUITE(name) { #name, name##_suite },
#include "tests/suites.h"
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
	int failed, selected = 0;

	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
		if (!wanted(suites[i].name, argc, argv))
			continue;
		if (!runner)
			runner = srunner_create(suites[i].make());
		else
			srunner_add_suite(runner, suites[i].make());
		selected++;
	}
	if (!runner) {
		fprintf(stderr, "zernel-tests: no suite matches the arguments\n");
		return 2;
	}
	tu_sweep_segments();
	srunner_run_all(runner, CK_NORMAL);
	tu_sweep_segments();
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
