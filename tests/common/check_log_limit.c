/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One line per window, and the line written says how many it stands for.
 */
#include <check.h>

#include "common/log_limit.h"

START_TEST(a_line_per_window_standing_for_those_held_back)
{
	struct log_limit l = { 0 };
	uint64_t t = 5 * LOG_LIMIT_WINDOW_NS;

	/* The first is written at once, whenever it comes (0 included). */
	ck_assert_uint_eq(log_limit_take(&l, 0), 1);
	ck_assert_uint_eq(log_limit_take(&l, 1), 0);
	l = (struct log_limit){ 0 };
	ck_assert_uint_eq(log_limit_take(&l, t), 1);
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_eq(log_limit_take(&l, t + LOG_LIMIT_WINDOW_NS - 1), 0);
	/* A window later: itself and the thousand held back. */
	ck_assert_uint_eq(log_limit_take(&l, t + LOG_LIMIT_WINDOW_NS), 1001);
	ck_assert_uint_eq(log_limit_take(&l, t + LOG_LIMIT_WINDOW_NS + 1), 0);
	/* A quiet stretch: the next stands for itself and the one held. */
	ck_assert_uint_eq(log_limit_take(&l, t + 100 * LOG_LIMIT_WINDOW_NS), 2);
}
END_TEST

Suite *log_limit_suite(void);
Suite *log_limit_suite(void)
{
	Suite *s = suite_create("log_limit");
	TCase *tc = tcase_create("window");

	tcase_add_test(tc, a_line_per_window_standing_for_those_held_back);
	suite_add_tcase(s, tc);
	return s;
}
