/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The collector's one hash table (collector/agg/keyindex.h): keys of two words
 * found, refused when full, removed; slots that stay put and are reused
 * newest first; long chains; and memory touched only as slots are used.
 * Unprivileged.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "collector/agg/keyindex.h"

START_TEST(keys_of_two_words_are_found_and_removed)
{
	struct keyindex ix;
	int32_t a, b, c;

	ck_assert_int_eq(keyindex_init(&ix, 8, 0), 0);
	a = keyindex_insert(&ix, 0x7000, 10);
	b = keyindex_insert(&ix, 0x7000, 11);	/* same first word */
	c = keyindex_insert(&ix, 11, 0x7000);	/* words swapped */
	ck_assert(a >= 0 && b >= 0 && c >= 0 && a != b && b != c && a != c);
	ck_assert_int_eq(keyindex_find(&ix, 0x7000, 10), a);
	ck_assert_int_eq(keyindex_find(&ix, 0x7000, 11), b);
	ck_assert_int_eq(keyindex_find(&ix, 11, 0x7000), c);
	ck_assert_int_eq(keyindex_find(&ix, 0x7000, 12), -1);
	ck_assert_uint_eq(ix.used, 3);
	keyindex_remove(&ix, b);
	ck_assert_int_eq(keyindex_find(&ix, 0x7000, 11), -1);
	ck_assert_int_eq(keyindex_find(&ix, 0x7000, 10), a);
	ck_assert(!keyindex_live(&ix, (uint32_t)b));
	/* Removing what is not there changes nothing. */
	keyindex_remove(&ix, b);
	keyindex_remove(&ix, -1);
	ck_assert_uint_eq(ix.used, 2);
	keyindex_destroy(&ix);
}
END_TEST

START_TEST(slots_stay_put_and_freed_ones_come_back_newest_first)
{
	struct keyindex ix;

	ck_assert_int_eq(keyindex_init(&ix, 4, 0), 0);
	for (uint64_t k = 0; k < 4; k++)
		ck_assert_int_eq(keyindex_insert(&ix, k, 0), (int32_t)k);
	ck_assert_int_eq(keyindex_insert(&ix, 99, 0), -1);
	keyindex_remove(&ix, 1);
	keyindex_remove(&ix, 3);
	ck_assert_int_eq(keyindex_find(&ix, 2, 0), 2);
	ck_assert_int_eq(keyindex_insert(&ix, 10, 0), 3);
	ck_assert_int_eq(keyindex_insert(&ix, 11, 0), 1);
	ck_assert_int_eq(keyindex_insert(&ix, 12, 0), -1);
	ck_assert_uint_eq(keyindex_top(&ix), 4);
	keyindex_destroy(&ix);
}
END_TEST

START_TEST(one_bucket_holds_every_key_in_a_chain)
{
	struct keyindex ix;

	ck_assert_int_eq(keyindex_init(&ix, 100, 1), 0);
	for (uint64_t k = 0; k < 100; k++)
		ck_assert_int_ge(keyindex_insert(&ix, k << 21, k), 0);
	for (uint64_t k = 0; k < 100; k += 3)
		keyindex_remove(&ix, keyindex_find(&ix, k << 21, k));
	for (uint64_t k = 0; k < 100; k++)
		ck_assert_int_eq(keyindex_find(&ix, k << 21, k) >= 0, k % 3 != 0);
	ck_assert_uint_eq(ix.used, 66);
	keyindex_destroy(&ix);
	ck_assert_int_eq(keyindex_init(&ix, 100, 3), -EINVAL);
	keyindex_destroy(&ix);
}
END_TEST

static long resident_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* What an idle collector has: a million-slot index holding a few keys. */
START_TEST(a_big_index_touches_memory_only_as_used)
{
	struct keyindex ix;
	long before, after;

	before = resident_kib();
	ck_assert_int_eq(keyindex_init(&ix, 1u << 20, 65536), 0);
	for (uint64_t k = 0; k < 10; k++)
		ck_assert_int_ge(keyindex_insert(&ix, k * 4096, k), 0);
	after = resident_kib();
	/* About 21 MiB allocated; a few pages of it touched. */
	ck_assert_msg(after - before < 512, "resident memory grew by %ld KiB", after - before);
	ck_assert_int_eq(keyindex_find(&ix, 9 * 4096, 9), 9);
	keyindex_destroy(&ix);
}
END_TEST

Suite *keyindex_suite(void);
Suite *keyindex_suite(void)
{
	Suite *s = suite_create("keyindex");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, keys_of_two_words_are_found_and_removed);
	tcase_add_test(tc, slots_stay_put_and_freed_ones_come_back_newest_first);
	tcase_add_test(tc, one_bucket_holds_every_key_in_a_chain);
	tcase_add_test(tc, a_big_index_touches_memory_only_as_used);
	suite_add_tcase(s, tc);
	return s;
}
