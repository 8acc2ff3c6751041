/* SPDX-License-Identifier: BSD-2-Clause */
/* Flag-value parsers: strict numbers. */
#include <check.h>
#include <errno.h>

#include "common/util.h"

START_TEST(parse_u64_accepts_plain_numbers_in_range)
{
	uint64_t v = 0;

	ck_assert_int_eq(parse_u64("1000", 100, 60000, &v), 0);
	ck_assert_uint_eq(v, 1000);
}
END_TEST

START_TEST(parse_u64_rejects_junk_signs_and_range)
{
	uint64_t v = 7;

	ck_assert_int_eq(parse_u64("", 0, 10, &v), -EINVAL);
	ck_assert_int_eq(parse_u64("-1", 0, 10, &v), -EINVAL);
	ck_assert_int_eq(parse_u64(" 1", 0, 10, &v), -EINVAL);
	ck_assert_int_eq(parse_u64("1x", 0, 10, &v), -EINVAL);
	ck_assert_int_eq(parse_u64("11", 0, 10, &v), -ERANGE);
	ck_assert_int_eq(parse_u64("99999999999999999999999", 0, UINT64_MAX, &v), -ERANGE);
	ck_assert_uint_eq(v, 7);
}
END_TEST

Suite *util_suite(void);
Suite *util_suite(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, parse_u64_accepts_plain_numbers_in_range);
	tcase_add_test(tc, parse_u64_rejects_junk_signs_and_range);
	suite_add_tcase(s, tc);
	return s;
}
