/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The feed's RFC 6455 frame reader on its own: each rule a server must
 * enforce gives its close code, a stream gives the same verdicts however
 * it is split into reads, and random bytes never make it misbehave (this
 * suite also runs under ASan and UBSan).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/feed/ws_rx.h"

#define MAX_MESSAGE	4096

struct wire {
	uint8_t b[80000];
	size_t len;
};

/* Appends a client frame: masked unless told otherwise. */
static void put_frame(struct wire *w, int fin, int rsv, int opcode, int masked,
		      const void *payload, size_t n)
{
	static const uint8_t key[4] = { 0x37, 0xfa, 0x21, 0x3d };
	const uint8_t *p = payload;

	w->b[w->len++] = (uint8_t)((fin ? 0x80 : 0) | rsv << 4 | opcode);
	if (n < 126) {
		w->b[w->len++] = (uint8_t)((masked ? 0x80 : 0) | n);
	} else if (n < 65536) {
		w->b[w->len++] = (uint8_t)((masked ? 0x80 : 0) | 126);
		w->b[w->len++] = (uint8_t)(n >> 8);
		w->b[w->len++] = (uint8_t)n;
	} else {
		w->b[w->len++] = (uint8_t)((masked ? 0x80 : 0) | 127);
		for (int i = 7; i >= 0; i--)
			w->b[w->len++] = (uint8_t)((uint64_t)n >> (8 * i));
	}
	if (masked) {
		memcpy(w->b + w->len, key, 4);
		w->len += 4;
	}
	for (size_t i = 0; i < n; i++)
		w->b[w->len++] = masked ? p[i] ^ key[i & 3] : p[i];
}

static void put(struct wire *w, int opcode, const char *text)
{
	put_frame(w, 1, 0, opcode, 1, text, strlen(text));
}

/* Feeds the whole wire in one call per verdict; returns the last verdict. */
static enum ws_rx_result feed_all(struct ws_rx *rx, const struct wire *w, size_t *pings)
{
	size_t off = 0, used;
	enum ws_rx_result r = WS_RX_MORE;

	*pings = 0;
	while (off < w->len) {
		r = ws_rx_feed(rx, w->b + off, w->len - off, &used);
		ck_assert_uint_le(used, w->len - off);
		off += used;
		if (r == WS_RX_PING)
			(*pings)++;
		else if (r != WS_RX_MORE)
			break;
	}
	return r;
}

static enum ws_rx_result verdict(const struct wire *w, uint16_t *code)
{
	struct ws_rx rx;
	size_t pings;
	enum ws_rx_result r;

	ws_rx_init(&rx, MAX_MESSAGE);
	r = feed_all(&rx, w, &pings);
	*code = rx.code;
	return r;
}

static void expect_fail(const struct wire *w, uint16_t want, const char *what)
{
	uint16_t code;
	enum ws_rx_result r = verdict(w, &code);

	ck_assert_msg(r == WS_RX_FAIL && code == want, "%s: got result %d code %u, want %u",
		      what, r, code, want);
}

/* One frame on its own must fail with code. */
static void expect_frame_fails(int fin, int rsv, int opcode, int masked, const void *payload,
			       size_t n, uint16_t code, const char *what)
{
	struct wire w = { .len = 0 };

	put_frame(&w, fin, rsv, opcode, masked, payload, n);
	expect_fail(&w, code, what);
}

START_TEST(unmasked_client_frame_is_a_protocol_error)
{
	expect_frame_fails(1, 0, 0x1, 0, "hello", 5, WS_CLOSE_PROTOCOL, "unmasked text");
	expect_frame_fails(1, 0, 0x9, 0, "", 0, WS_CLOSE_PROTOCOL, "unmasked ping");
}
END_TEST

START_TEST(framing_violations_close_with_1002)
{
	static const uint8_t top_bit[] = { 0x81, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4 };
	struct wire w = { .len = 0 };
	char big[126];

	memset(big, 'p', sizeof(big));
	expect_frame_fails(1, 0, 0x3, 1, "x", 1, WS_CLOSE_PROTOCOL, "reserved data opcode");
	expect_frame_fails(1, 0, 0xf, 1, "x", 1, WS_CLOSE_PROTOCOL, "reserved control opcode");
	for (int rsv = 1; rsv < 8; rsv++) {
		expect_frame_fails(1, rsv, 0x1, 1, "x", 1, WS_CLOSE_PROTOCOL, "reserved bits");
	}
	expect_frame_fails(0, 0, 0x9, 1, "x", 1, WS_CLOSE_PROTOCOL, "fragmented ping");
	expect_frame_fails(1, 0, 0x9, 1, big, sizeof(big), WS_CLOSE_PROTOCOL, "ping of 126 bytes");
	expect_frame_fails(1, 0, 0x0, 1, "x", 1, WS_CLOSE_PROTOCOL, "continuation outside a message");
	put_frame(&w, 0, 0, 0x1, 1, "a", 1);
	put(&w, 0x1, "b");
	expect_fail(&w, WS_CLOSE_PROTOCOL, "text inside a fragmented text");
	w.len = sizeof(top_bit);
	memcpy(w.b, top_bit, sizeof(top_bit));
	expect_fail(&w, WS_CLOSE_PROTOCOL, "64-bit length with its top bit set");
}
END_TEST

START_TEST(close_frames_are_checked_and_echoed)
{
	static const uint16_t good[] = { 1000, 1001, 1003, 1007, 1011, 1014, 3000, 4999 };
	static const uint16_t bad[] = { 0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000 };
	struct wire w = { .len = 0 };
	uint16_t code;
	uint8_t p[8];

	put(&w, 0x8, "");
	ck_assert_int_eq(verdict(&w, &code), WS_RX_CLOSE);
	ck_assert_uint_eq(code, WS_CLOSE_NORMAL);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		w.len = 0;
		p[0] = (uint8_t)(good[i] >> 8);
		p[1] = (uint8_t)good[i];
		memcpy(p + 2, "bye", 3);
		put_frame(&w, 1, 0, 0x8, 1, p, 5);
		ck_assert_int_eq(verdict(&w, &code), WS_RX_CLOSE);
		ck_assert_uint_eq(code, good[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		w.len = 0;
		p[0] = (uint8_t)(bad[i] >> 8);
		p[1] = (uint8_t)bad[i];
		expect_frame_fails(1, 0, 0x8, 1, p, 2, WS_CLOSE_PROTOCOL, "reserved close code");
	}
	expect_frame_fails(1, 0, 0x8, 1, "\x03", 1, WS_CLOSE_PROTOCOL, "one-byte close");
	expect_frame_fails(1, 0, 0x8, 1, "\x03\xe8\xff", 3, WS_CLOSE_INVALID_DATA,
			   "close reason not UTF-8");
}
END_TEST

START_TEST(text_must_be_utf8_across_fragments)
{
	static const char *const invalid[] = {
		"\xff", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"\xf5\x80\x80\x80", "\x80", "caf\xc3",
	};
	struct wire w = { .len = 0 };
	uint16_t code;

	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
		expect_frame_fails(1, 0, 0x1, 1, invalid[i], strlen(invalid[i]),
				   WS_CLOSE_INVALID_DATA, invalid[i]);
	/* Valid: U+00E9, U+20AC and U+1F600 split between fragments. */
	put_frame(&w, 0, 0, 0x1, 1, "caf\xc3", 4);
	put_frame(&w, 0, 0, 0x0, 1, "\xa9 \xe2\x82", 4);
	put_frame(&w, 0, 0, 0x0, 1, "\xac \xf0\x9f", 4);
	put_frame(&w, 1, 0, 0x0, 1, "\x98\x80", 2);
	ck_assert_int_eq(verdict(&w, &code), WS_RX_MORE);
}
END_TEST

START_TEST(size_limit_covers_the_whole_message)
{
	static char payload[70000];
	struct wire w = { .len = 0 };
	uint16_t code;

	memset(payload, 'a', sizeof(payload));
	put_frame(&w, 1, 0, 0x1, 1, payload, MAX_MESSAGE);
	ck_assert_int_eq(verdict(&w, &code), WS_RX_MORE);
	expect_frame_fails(1, 0, 0x1, 1, payload, MAX_MESSAGE + 1, WS_CLOSE_TOO_LARGE,
			   "one byte over");
	expect_frame_fails(1, 0, 0x1, 1, payload, sizeof(payload), WS_CLOSE_TOO_LARGE,
			   "64-bit length");
	w.len = 0;
	put_frame(&w, 0, 0, 0x1, 1, payload, 3000);
	put_frame(&w, 1, 0, 0x0, 1, payload, 3000);
	expect_fail(&w, WS_CLOSE_TOO_LARGE, "in two fragments");
	/* The limit is per message: two messages at the limit are fine. */
	w.len = 0;
	put_frame(&w, 1, 0, 0x1, 1, payload, MAX_MESSAGE);
	put_frame(&w, 1, 0, 0x1, 1, payload, MAX_MESSAGE);
	ck_assert_int_eq(verdict(&w, &code), WS_RX_MORE);
	expect_frame_fails(1, 0, 0x2, 1, payload, 3, WS_CLOSE_UNACCEPTABLE, "binary");
}
END_TEST

/* A conversation that ends in a close, with pings between fragments. */
static void conversation(struct wire *w)
{
	w->len = 0;
	put(w, 0x1, "{\"hello\": 1}");
	put_frame(w, 0, 0, 0x1, 1, "frag", 4);
	put(w, 0x9, "ping one");
	put_frame(w, 1, 0, 0x0, 1, "ment \xe2\x82\xac", 8);
	put(w, 0xa, "unsolicited pong");
	put(w, 0x1, "");
	put(w, 0x9, "ping two");
	put_frame(w, 1, 0, 0x8, 1, "\x0b\xb8", 2);	/* 3000 */
}

START_TEST(any_split_into_reads_gives_the_same_verdicts)
{
	struct wire w;

	conversation(&w);
	for (size_t step = 1; step <= w.len; step++) {
		struct ws_rx rx;
		size_t off = 0, pings = 0;
		enum ws_rx_result r = WS_RX_MORE;
		char last_ping[WS_RX_CONTROL_MAX + 1] = "";

		ws_rx_init(&rx, MAX_MESSAGE);
		while (off < w.len && r != WS_RX_CLOSE) {
			size_t n = w.len - off < step ? w.len - off : step, used;

			r = ws_rx_feed(&rx, w.b + off, n, &used);
			ck_assert_int_ne(r, WS_RX_FAIL);
			off += used;
			if (r == WS_RX_PING) {
				pings++;
				memcpy(last_ping, rx.control, rx.control_len);
				last_ping[rx.control_len] = '\0';
			}
		}
		ck_assert_int_eq(r, WS_RX_CLOSE);
		ck_assert_uint_eq(rx.code, 3000);
		ck_assert_uint_eq(off, w.len);
		ck_assert_uint_eq(pings, 2);
		ck_assert_str_eq(last_ping, "ping two");
	}
}
END_TEST

START_TEST(random_bytes_never_misbehave)
{
	uint64_t state = 0x2545f4914f6cdd1dull;
	static uint8_t buf[4096];

	for (int round = 0; round < 2000; round++) {
		struct ws_rx rx;
		size_t off = 0, len = 1 + round % sizeof(buf);
		enum ws_rx_result r = WS_RX_MORE;

		for (size_t i = 0; i < len; i++) {
			state ^= state << 13;
			state ^= state >> 7;
			state ^= state << 17;
			buf[i] = (uint8_t)state;
			/* Often a plausible header, to get past the first checks. */
			if (round & 1 && i % 9 == 0)
				buf[i] = 0x81;
			if (round & 1 && i % 9 == 1)
				buf[i] = (uint8_t)(0x80 | (state >> 8 & 0x7f));
		}
		ws_rx_init(&rx, MAX_MESSAGE);
		while (off < len && (r == WS_RX_MORE || r == WS_RX_PING)) {
			size_t used;

			r = ws_rx_feed(&rx, buf + off, len - off, &used);
			ck_assert_uint_le(used, len - off);
			ck_assert(used > 0 || r != WS_RX_MORE);
			off += used;
		}
		if (r == WS_RX_FAIL || r == WS_RX_CLOSE)
			ck_assert_uint_ge(rx.code, 1000);
		if (r == WS_RX_FAIL)
			ck_assert_ptr_nonnull(rx.why);
	}
}
END_TEST

Suite *ws_rx_suite(void);
Suite *ws_rx_suite(void)
{
	Suite *s = suite_create("ws_rx");
	TCase *tc = tcase_create("frames");

	tcase_add_test(tc, unmasked_client_frame_is_a_protocol_error);
	tcase_add_test(tc, framing_violations_close_with_1002);
	tcase_add_test(tc, close_frames_are_checked_and_echoed);
	tcase_add_test(tc, text_must_be_utf8_across_fragments);
	tcase_add_test(tc, size_limit_covers_the_whole_message);
	tcase_add_test(tc, any_split_into_reads_gives_the_same_verdicts);
	tcase_add_test(tc, random_bytes_never_misbehave);
	suite_add_tcase(s, tc);
	return s;
}
