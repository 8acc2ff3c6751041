/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Request smuggling on the metrics port (RFC 9112 sections 6.1 and 6.3):
 * a request whose body framing is ambiguous, or that frames a body at
 * all, is refused with 400 and its connection closed, so the bytes after
 * it are never served as a request of their own.  Each case carries a
 * second request behind the first, as a proxy in front would not see it;
 * two plain pipelined requests show that a second one would be answered.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

static struct tu_stack rig;

static void rig_teardown(void)
{
	tu_stack_stop(&rig);
}

/* The request a proxy would not see, behind each case's first. */
#define SMUGGLED	"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

struct exchange {
	int first_status;	/* of the first response; -1: none */
	int responses;		/* status lines that came back */
	int closed;		/* the server closed the connection (not a timeout) */
	char text[8192];
};

/*
 * Sends req on a new connection, then reads until the server closes it
 * or 5 s pass without a byte (a server that keeps it open: not closed).
 */
static void exchange(const char *req, struct exchange *x)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(rig.metrics_port) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t used = 0, len = strlen(req);
	const char *p;

	memset(x, 0, sizeof(*x));
	x->first_status = -1;
	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
	for (;;) {
		ssize_t r = read(fd, x->text + used, sizeof(x->text) - used - 1);

		if (r == 0)
			x->closed = 1;
		if (r <= 0)
			break;
		used += (size_t)r;
		if (used == sizeof(x->text) - 1)
			break;
	}
	x->text[used] = '\0';
	close(fd);
	if (sscanf(x->text, "HTTP/1.%*d %d", &x->first_status) != 1)
		x->first_status = -1;
	for (p = x->text; (p = strstr(p, "HTTP/1.1 ")) != NULL; p++)
		x->responses++;
}

static void expect_refused(const char *what, const char *req)
{
	struct exchange x;

	exchange(req, &x);
	ck_assert_msg(x.first_status == 400 && x.responses == 1 && x.closed,
		      "%s: status %d, %d responses, %s; got:\n%.600s", what, x.first_status,
		      x.responses, x.closed ? "closed" : "left open", x.text);
	ck_assert_msg(strstr(x.text, "\r\nConnection: close\r\n") != NULL,
		      "%s: the refusal does not say the connection closes:\n%.600s", what, x.text);
}

START_TEST(framed_requests_are_refused_and_what_follows_is_never_served)
{
	static const struct {
		const char *what, *req;
	} cases[] = {
		{ "Content-Length then Transfer-Encoding",
		  "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
		  "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" SMUGGLED },
		{ "Transfer-Encoding then Content-Length",
		  "GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
		  "Content-Length: 4\r\n\r\n0\r\n\r\n" SMUGGLED },
		{ "a tab before chunked",
		  "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
		  "Transfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n" SMUGGLED },
		{ "upper-case CHUNKED",
		  "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
		  "Transfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n" SMUGGLED },
		{ "two different Content-Lengths",
		  "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
		  "Content-Length: 5\r\n\r\n" SMUGGLED },
		{ "a GET with a body",
		  "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" SMUGGLED },
		{ "a GET with a chunked body",
		  "GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		  "5\r\nhello\r\n0\r\n\r\n" SMUGGLED },
		{ "a GET with Content-Length 0",
		  "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" SMUGGLED },
		{ "a POST with both",
		  "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
		  "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" SMUGGLED },
	};
	struct exchange x;

	ck_assert_int_eq(tu_stack_start(&rig, "steady", 200, 0), 0);
	/* The control: a second request on the connection is answered. */
	exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" SMUGGLED, &x);
	ck_assert_msg(x.first_status == 200 && x.responses == 2 && x.closed,
		      "two pipelined requests: status %d, %d responses, %s:\n%.600s", x.first_status,
		      x.responses, x.closed ? "closed" : "left open", x.text);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_refused(cases[i].what, cases[i].req);
	/* An unknown coding is h2o's own 400, closed as well. */
	expect_refused("Transfer-Encoding: gzip",
		       "GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n" SMUGGLED);
	/* Still serving. */
	exchange(SMUGGLED, &x);
	ck_assert_int_eq(x.first_status, 200);
	tu_stack_stop(&rig);
}
END_TEST

Suite *http_framing_suite(void);
Suite *http_framing_suite(void)
{
	Suite *s = suite_create("http_framing");
	TCase *tc = tcase_create("smuggling");

	tcase_add_checked_fixture(tc, NULL, rig_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, framed_requests_are_refused_and_what_follows_is_never_served);
	suite_add_tcase(s, tc);
	return s;
}
