/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connections waiting for their request, longest first, the longest
 * waiting of one address, and none whose request has come.
 */
#include <check.h>
#include <string.h>

#include "exporter/http/http_waiting.h"

static const struct http_waiter *arrived_one;

static int none_arrived(const struct http_waiter *w)
{
	(void)w;
	return 0;
}

static int one_arrived(const struct http_waiter *w)
{
	return w == arrived_one;
}

static void key(struct http_waiter *w, uint8_t addr)
{
	memset(w->ticket.key, 0, sizeof(w->ticket.key));
	w->ticket.key[15] = addr;
}

START_TEST(longest_waiting_first_and_by_address)
{
	struct http_waiting l = { 0 };
	struct http_waiter w[4] = { 0 };

	for (int i = 0; i < 4; i++)
		key(&w[i], (uint8_t)(i % 2));	/* addresses 0, 1, 0, 1 */
	ck_assert_ptr_null(http_waiting_oldest(&l, NULL, none_arrived));
	for (int i = 0; i < 4; i++)
		http_waiting_add(&l, &w[i]);
	http_waiting_add(&l, &w[0]);	/* waits already: keeps its place */
	ck_assert_ptr_eq(http_waiting_oldest(&l, NULL, none_arrived), &w[0]);
	ck_assert_ptr_eq(http_waiting_oldest(&l, &w[3].ticket, none_arrived), &w[1]);
	/* w[1]'s request came: address 1's longest waiting is w[3] now. */
	http_waiting_remove(&l, &w[1]);
	http_waiting_remove(&l, &w[1]);
	ck_assert_ptr_eq(http_waiting_oldest(&l, &w[3].ticket, none_arrived), &w[3]);
	/* Its response is done: it waits again, behind the others. */
	http_waiting_add(&l, &w[1]);
	http_waiting_remove(&l, &w[0]);
	ck_assert_ptr_eq(http_waiting_oldest(&l, NULL, none_arrived), &w[2]);
	http_waiting_remove(&l, &w[3]);
	ck_assert_ptr_eq(http_waiting_oldest(&l, &w[1].ticket, none_arrived), &w[1]);
	http_waiting_remove(&l, &w[2]);
	http_waiting_remove(&l, &w[1]);
	ck_assert_ptr_null(l.head);
	ck_assert_ptr_null(l.tail);
	ck_assert_ptr_null(http_waiting_oldest(&l, &w[0].ticket, none_arrived));
}
END_TEST

/* A connection whose request has come is passed over, whatever its age. */
START_TEST(one_whose_request_came_keeps_its_place)
{
	struct http_waiting l = { 0 };
	struct http_waiter w[3] = { 0 };

	for (int i = 0; i < 3; i++) {
		key(&w[i], (uint8_t)(i == 2));	/* addresses 0, 0, 1 */
		http_waiting_add(&l, &w[i]);
	}
	arrived_one = &w[0];
	ck_assert_ptr_eq(http_waiting_oldest(&l, NULL, one_arrived), &w[1]);
	ck_assert_ptr_eq(http_waiting_oldest(&l, &w[0].ticket, one_arrived), &w[1]);
	ck_assert_ptr_eq(http_waiting_oldest(&l, &w[2].ticket, one_arrived), &w[2]);
	http_waiting_remove(&l, &w[1]);
	ck_assert_ptr_null(http_waiting_oldest(&l, &w[0].ticket, one_arrived));
	ck_assert_ptr_eq(http_waiting_oldest(&l, NULL, one_arrived), &w[2]);
}
END_TEST

Suite *http_waiting_suite(void);
Suite *http_waiting_suite(void)
{
	Suite *s = suite_create("http_waiting");
	TCase *tc = tcase_create("list");

	tcase_add_test(tc, longest_waiting_first_and_by_address);
	tcase_add_test(tc, one_whose_request_came_keeps_its_place);
	suite_add_tcase(s, tc);
	return s;
}
