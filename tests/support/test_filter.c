/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ZERNEL_TEST=NAME[,NAME...] runs only the tests so named, in whatever
 * suites the runner is told to run: the way to run one test twenty times
 * under load.  Every runner links with --wrap=_tcase_add_test, so each
 * test added by Check's macros passes through here first.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

void __real__tcase_add_test(TCase *tc, const TTest *ttest, int sig, int allowed_exit_value,
			    int start, int end);
void __wrap__tcase_add_test(TCase *tc, const TTest *ttest, int sig, int allowed_exit_value,
			    int start, int end);

/* name is one of the comma-separated names in list. */
static int listed(const char *list, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");

		if (n == len && strncmp(p, name, n) == 0)
			return 1;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

void __wrap__tcase_add_test(TCase *tc, const TTest *ttest, int sig, int allowed_exit_value,
			    int start, int end)
{
	const char *only = getenv("ZERNEL_TEST");

	if (only && *only && !listed(only, ttest->name))
		return;
	__real__tcase_add_test(tc, ttest, sig, allowed_exit_value, start, end);
}
