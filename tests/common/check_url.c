/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one address parser: URLs (the webhooks' and the client's, whose
 * scheme rules are tested with them) and listen addresses.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "common/url.h"

START_TEST(url_parts_of_every_form)
{
	struct url u;

	ck_assert_int_eq(url_parse("http://alerts.local:8080/api/v1/hook?k=v", &u, NULL), 0);
	ck_assert_str_eq(u.scheme, "http");
	ck_assert_str_eq(u.host, "alerts.local");
	ck_assert_uint_eq(u.port, 8080);
	ck_assert_str_eq(u.path, "/api/v1/hook?k=v");
	ck_assert_str_eq(u.authority, "alerts.local:8080");
	ck_assert_str_eq(u.text, "http://alerts.local:8080/api/v1/hook?k=v");
	ck_assert_int_eq(url_parse("WS://[::1]:1/feed?x=1", &u, NULL), 0);
	ck_assert_str_eq(u.scheme, "ws");
	ck_assert_str_eq(u.host, "::1");
	ck_assert_str_eq(u.authority, "[::1]:1");
	ck_assert_str_eq(u.path, "/feed?x=1");
	ck_assert_int_eq(url_parse("wss://node-3.example", &u, NULL), 0);
	ck_assert_uint_eq(u.port, 0);		/* the caller's default */
	ck_assert_str_eq(u.path, "/");
	ck_assert_int_eq(url_parse("http://h?q=1", &u, NULL), 0);
	ck_assert_str_eq(u.path, "/?q=1");
}
END_TEST

START_TEST(url_refuses_with_the_rule_broken)
{
	static const struct { const char *url, *why; } bad[] = {
		{ "", "empty" },
		{ "localhost:9092", "SCHEME://" },
		{ "1ws://h", "SCHEME://" },
		{ "http://", "missing host" },
		{ "http://:80/", "missing host" },
		{ "http://h:0/", "port must be in 1..65535" },
		{ "http://h:65536/", "port must be in 1..65535" },
		{ "http://h:99999999999/", "port must be in 1..65535" },
		{ "http://h:x/", "port must be in 1..65535" },
		{ "http://h:/", "port must be in 1..65535" },
		{ "http://user:pw@h/", "credentials" },
		{ "http://h/a b", "space" },
		{ "http://h/a\r\nX: y", "control" },
		{ "ws://h/\x1b[2J", "control" },
		{ "http://h/#frag", "fragment" },
		{ "http://[::1/", "unclosed" },
		{ "http://[zz]:1/", "IPv6" },
		{ "http://h$/", "bad character" },
	};
	struct url u;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *why = NULL;

		ck_assert_msg(url_parse(bad[i].url, &u, &why) == -EINVAL, "accepted %s", bad[i].url);
		ck_assert_msg(why && strstr(why, bad[i].why), "%s: \"%s\" lacks \"%s\"", bad[i].url,
			      why ? why : "(null)", bad[i].why);
	}
	ck_assert_int_eq(url_parse(NULL, &u, NULL), -EINVAL);
}
END_TEST

START_TEST(url_listen_forms)
{
	char host[64];
	uint16_t port = 0;

	ck_assert_int_eq(url_listen_parse("127.0.0.1:9091", host, sizeof(host), &port, NULL), 0);
	ck_assert_str_eq(host, "127.0.0.1");
	ck_assert_uint_eq(port, 9091);
	ck_assert_int_eq(url_listen_parse(":9092", host, sizeof(host), &port, NULL), 0);
	ck_assert_str_eq(host, "0.0.0.0");
	ck_assert_int_eq(url_listen_parse("[::1]:80", host, sizeof(host), &port, NULL), 0);
	ck_assert_str_eq(host, "::1");
	ck_assert_int_eq(url_listen_parse("9091", host, sizeof(host), &port, NULL), -EINVAL);
	ck_assert_int_eq(url_listen_parse("host:0", host, sizeof(host), &port, NULL), -EINVAL);
	ck_assert_int_eq(url_listen_parse("host:70000", host, sizeof(host), &port, NULL), -EINVAL);
	ck_assert_int_eq(url_listen_parse("::1:80", host, sizeof(host), &port, NULL), -EINVAL);
	ck_assert_int_eq(url_listen_parse("[]:80", host, sizeof(host), &port, NULL), -EINVAL);
}
END_TEST

Suite *url_suite(void);
Suite *url_suite(void)
{
	Suite *s = suite_create("url");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, url_parts_of_every_form);
	tcase_add_test(tc, url_refuses_with_the_rule_broken);
	tcase_add_test(tc, url_listen_forms);
	suite_add_tcase(s, tc);
	return s;
}
