/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NCCL's commHash: pinned values from a second implementation written
 * straight from NCCL 2.28's src/include/bitops.h (eatHash, digestHash) and
 * src/init.cc (what each init feeds it), so a change to either side of the
 * arithmetic shows.  Unprivileged.
 */
#include <check.h>
#include <string.h>

#include "collector/agg/nccl_hash.h"

START_TEST(unique_id_hash_is_nccls_get_hash_of_128_bytes)
{
	uint8_t id[NCCL_HASH_ID_BYTES];

	memset(id, 0x5a, sizeof(id));
	ck_assert_uint_eq(nccl_hash_unique_id(id), 0x3e97385d3fdaa372ull);
	for (size_t i = 0; i < sizeof(id); i++)
		id[i] = (uint8_t)i;
	ck_assert_uint_eq(nccl_hash_unique_id(id), 0x6afe1cc17717e1f4ull);
	/* A short last chunk is read as it is, zero-extended. */
	ck_assert_uint_eq(nccl_hash_bytes("abc", 3), 0x751c1b124ef01f18ull);
}
END_TEST

START_TEST(split_and_shrink_children_follow_nccls_rule)
{
	uint64_t parent = 0x3e97385d3fdaa372ull;

	ck_assert_uint_eq(nccl_hash_child(parent, 1, 0), 0x88c761fe0d4e4df4ull);
	ck_assert_uint_eq(nccl_hash_child(parent, 2, -1), 0x3146b37bc25b2513ull);
	/* Shrink: split count 0, colour 0. */
	ck_assert_uint_eq(nccl_hash_child(parent, 0, 0), 0x257f4b7c3eac2c4eull);
	/* Each split of one parent names a new communicator. */
	ck_assert_uint_ne(nccl_hash_child(parent, 1, 0), nccl_hash_child(parent, 2, 0));
}
END_TEST

Suite *nccl_hash_suite(void);
Suite *nccl_hash_suite(void)
{
	Suite *s = suite_create("nccl_hash");
	TCase *tc = tcase_create("pure");

	tcase_add_test(tc, unique_id_hash_is_nccls_get_hash_of_128_bytes);
	tcase_add_test(tc, split_and_shrink_children_follow_nccls_rule);
	suite_add_tcase(s, tc);
	return s;
}
