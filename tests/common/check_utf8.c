/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one UTF-8 validator: what it accepts and refuses (RFC 3629's edge
 * cases), byte by byte across pieces as the WebSocket reader feeds it, and
 * the sanitiser every output runs process names through.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "common/utf8.h"

START_TEST(utf8_accepts_every_valid_length_and_edge)
{
	static const char *const good[] = {
		"", "plain ASCII", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf",
		"\xee\x80\x80", "\xef\xbf\xbd", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf",
		"caf\xc3\xa9 \xe4\xb8\xad",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(utf8_valid(good[i], strlen(good[i])), "refused good[%zu]", i);
	ck_assert_uint_eq(utf8_seq_len("\xf0\x90\x80\x80z", 5), 4);
	ck_assert_uint_eq(utf8_seq_len("a", 1), 1);
}
END_TEST

START_TEST(utf8_refuses_overlongs_surrogates_and_truncation)
{
	static const char *const bad[] = {
		"\x80", "\xbf", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xe0\x9f\xbf",
		"\xed\xa0\x80", "\xed\xbf\xbf", "\xf0\x80\x80\xaf", "\xf4\x90\x80\x80",
		"\xf5\x80\x80\x80", "\xff", "\xfe", "\xc3", "\xe2\x82", "a\xc3(",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!utf8_valid(bad[i], strlen(bad[i])), "accepted bad[%zu]", i);
	ck_assert_uint_eq(utf8_seq_len("\xe2\x82", 2), 0);
	ck_assert_uint_eq(utf8_seq_len("\xe2\x82\xac", 2), 0);	/* bounded by n */
}
END_TEST

START_TEST(utf8_decoder_carries_a_sequence_across_pieces)
{
	struct utf8_dec d;

	utf8_dec_init(&d);
	ck_assert_int_eq(utf8_dec_step(&d, 0xe2), 0);
	ck_assert(!utf8_dec_complete(&d));
	ck_assert_int_eq(utf8_dec_step(&d, 0x82), 0);
	ck_assert_int_eq(utf8_dec_step(&d, 0xac), 0);
	ck_assert(utf8_dec_complete(&d));
	ck_assert_int_eq(utf8_dec_step(&d, 0xed), 0);
	ck_assert_int_eq(utf8_dec_step(&d, 0xa0), -EILSEQ);
}
END_TEST

START_TEST(utf8_sanitize_makes_valid_utf8_without_controls)
{
	char out[64];

	utf8_sanitize(out, sizeof(out), "ok\xc3\xa9", 16);
	ck_assert_str_eq(out, "ok\xc3\xa9");
	/* Overlong, truncated and surrogate forms are replaced; \r and DEL too. */
	utf8_sanitize(out, sizeof(out), "\xc0\xaf|\xe2\x82|\xed\xa0\x80|\r\x7f", 32);
	ck_assert_str_eq(out, "\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"
			 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|??");
	/* Bounded by srclen even without a NUL, and by dstlen. */
	utf8_sanitize(out, 4, "abcdef", 6);
	ck_assert_str_eq(out, "abc");
	utf8_sanitize(out, sizeof(out), "abcdef", 2);
	ck_assert_str_eq(out, "ab");
	ck_assert(utf8_valid(out, strlen(out)));
}
END_TEST

Suite *utf8_suite(void);
Suite *utf8_suite(void)
{
	Suite *s = suite_create("utf8");
	TCase *tc = tcase_create("utf8");

	tcase_add_test(tc, utf8_accepts_every_valid_length_and_edge);
	tcase_add_test(tc, utf8_refuses_overlongs_surrogates_and_truncation);
	tcase_add_test(tc, utf8_decoder_carries_a_sequence_across_pieces);
	tcase_add_test(tc, utf8_sanitize_makes_valid_utf8_without_controls);
	suite_add_tcase(s, tc);
	return s;
}
