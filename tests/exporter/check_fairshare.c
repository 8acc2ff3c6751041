/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connection fair share on its own: the global limit, the per-address
 * limit, the reserve for addresses holding at most one, IPv6 counted per
 * /64 and v4-mapped addresses as their IPv4 host, and slots given back.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "exporter/fairshare.h"

static struct sockaddr_in v4(const char *a)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };

	ck_assert_int_eq(inet_pton(AF_INET, a, &sa.sin_addr), 1);
	return sa;
}

static struct sockaddr_in6 v6(const char *a)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6 };

	ck_assert_int_eq(inet_pton(AF_INET6, a, &sa.sin6_addr), 1);
	return sa;
}

static enum fairshare_verdict take4(struct fairshare *f, const char *a, struct fairshare_ticket *t)
{
	struct sockaddr_in sa = v4(a);

	return fairshare_take(f, (struct sockaddr *)&sa, sizeof(sa), t);
}

static enum fairshare_verdict take6(struct fairshare *f, const char *a, struct fairshare_ticket *t)
{
	struct sockaddr_in6 sa = v6(a);

	return fairshare_take(f, (struct sockaddr *)&sa, sizeof(sa), t);
}

START_TEST(limits_reserve_and_give_back)
{
	struct fairshare f;
	struct fairshare_ticket t[16], x;

	ck_assert_int_eq(fairshare_init(&f, 10, 4, 3), 0);
	/* One address: its share of 4, then refused. */
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(take4(&f, "10.0.0.1", &t[i]), FAIRSHARE_OK);
	ck_assert_int_eq(take4(&f, "10.0.0.1", &x), FAIRSHARE_PER_ADDR);
	ck_assert_uint_eq(fairshare_held(&f, &t[0]), 4);
	/* Another takes slots 5..7; the last 3 are the reserve. */
	for (int i = 4; i < 7; i++)
		ck_assert_int_eq(take4(&f, "10.0.0.2", &t[i]), FAIRSHARE_OK);
	ck_assert_int_eq(take4(&f, "10.0.0.2", &x), FAIRSHARE_RESERVED);
	/* Light clients get the reserve: one holding none, then one holding one. */
	ck_assert_int_eq(take4(&f, "10.0.0.3", &t[7]), FAIRSHARE_OK);
	ck_assert_int_eq(take4(&f, "10.0.0.3", &x), FAIRSHARE_RESERVED);
	ck_assert_int_eq(take4(&f, "10.0.0.4", &t[8]), FAIRSHARE_OK);
	ck_assert_int_eq(take4(&f, "10.0.0.5", &t[9]), FAIRSHARE_OK);
	ck_assert_int_eq(take4(&f, "10.0.0.6", &x), FAIRSHARE_FULL);
	/* Slots come back. */
	fairshare_give(&f, &t[0]);
	ck_assert_uint_eq(f.total, 9);
	ck_assert_int_eq(take4(&f, "10.0.0.6", &t[10]), FAIRSHARE_OK);
	for (int i = 1; i <= 10; i++)
		fairshare_give(&f, &t[i]);
	ck_assert_uint_eq(f.total, 0);
	ck_assert_uint_eq(fairshare_held(&f, &t[1]), 0);
	fairshare_free(&f);
	ck_assert_int_eq(fairshare_init(&f, 4, 5, 1), -EINVAL);
	ck_assert_int_eq(fairshare_init(&f, 4, 2, 4), -EINVAL);
}
END_TEST

START_TEST(ipv6_counts_per_64_and_mapped_as_ipv4)
{
	struct fairshare f;
	struct fairshare_ticket t[4], x;

	ck_assert_int_eq(fairshare_init(&f, 100, 2, 0), 0);
	ck_assert_int_eq(take6(&f, "2001:db8:1:2::1", &t[0]), FAIRSHARE_OK);
	ck_assert_int_eq(take6(&f, "2001:db8:1:2:ffff::9", &t[1]), FAIRSHARE_OK);
	ck_assert_int_eq(take6(&f, "2001:db8:1:2:abcd::7", &x), FAIRSHARE_PER_ADDR);
	ck_assert_int_eq(take6(&f, "2001:db8:1:3::1", &t[2]), FAIRSHARE_OK);
	ck_assert_int_eq(take6(&f, "::ffff:192.0.2.1", &t[3]), FAIRSHARE_OK);
	ck_assert_uint_eq(fairshare_held(&f, &t[3]), 1);
	ck_assert_int_eq(take4(&f, "192.0.2.1", &x), FAIRSHARE_OK);
	ck_assert_uint_eq(fairshare_held(&f, &t[3]), 2);
	ck_assert_int_eq(take4(&f, "192.0.2.1", &x), FAIRSHARE_PER_ADDR);
	fairshare_free(&f);
}
END_TEST

Suite *fairshare_suite(void);
Suite *fairshare_suite(void)
{
	Suite *s = suite_create("fairshare");
	TCase *tc = tcase_create("verdicts");

	tcase_add_test(tc, limits_reserve_and_give_back);
	tcase_add_test(tc, ipv6_counts_per_64_and_mapped_as_ipv4);
	suite_add_tcase(s, tc);
	return s;
}
