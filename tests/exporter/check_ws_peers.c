/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The feed port against peers of a cluster network: upgrades it does not
 * take get the HTTP answer RFC 6455 names, a head too large a 431 and one
 * that never ends a close in time; clients that never read hold a
 * small share of the node's TCP memory, and the stall counters say what
 * became of them; a flood of handshakes that libwebsockets complains about
 * writes a few log lines, not one per handshake.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/log_limit.h"
#include "common/util.h"
#include "exporter/feed/ws.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"
#include "tests/support/tu_net.h"

static struct tu_stack rig;

static void rig_teardown(void)
{
	tu_stack_stop(&rig);
}

#define KEY	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"

/* An upgrade with the given headers (each ending in CRLF); the answer's head. */
static void upgrade(const char *headers, char *answer, size_t len)
{
	struct timeval tv = { .tv_sec = 5 };
	char req[1024];
	int fd = tu_connect_from(1, rig.ws_port, 0, 0);
	size_t used = 0;
	int n;

	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		     "Upgrade: websocket\r\nConnection: Upgrade\r\n%s\r\n", headers);
	ck_assert_int_eq(write(fd, req, (size_t)n), n);
	answer[0] = '\0';
	while (used + 1 < len && !strstr(answer, "\r\n\r\n")) {
		ssize_t r = read(fd, answer + used, len - used - 1);

		if (r <= 0)
			break;
		used += (size_t)r;
		answer[used] = '\0';
	}
	close(fd);
}

/* The status of an answer's head; -1 when there is none. */
static int status_of(const char *answer)
{
	int status;

	return sscanf(answer, "HTTP/1.%*d %d", &status) == 1 ? status : -1;
}

START_TEST(upgrades_the_feed_does_not_take_get_their_http_answer)
{
	char a[2048];

	ck_assert_int_eq(tu_stack_start(&rig, "steady", 200, 0), 0);
	upgrade(KEY "Sec-WebSocket-Version: 13\r\n", a, sizeof(a));
	ck_assert_msg(status_of(a) == 101, "version 13: %s", a);
	/* RFC 6455 4.4: 426 and the version the server speaks. */
	upgrade(KEY "Sec-WebSocket-Version: 8\r\n", a, sizeof(a));
	ck_assert_msg(status_of(a) == 426, "version 8: %s", a);
	ck_assert_msg(strcasestr(a, "\nsec-websocket-version: 13\r\n") != NULL, "version 8: %s", a);
	upgrade(KEY "Sec-WebSocket-Version: 99\r\n", a, sizeof(a));
	ck_assert_msg(status_of(a) == 426, "version 99: %s", a);
	upgrade(KEY "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Version: 8\r\n", a, sizeof(a));
	ck_assert_msg(status_of(a) == 426, "two versions: %s", a);
	/* RFC 6455 4.2.1: exactly one key. */
	upgrade(KEY KEY "Sec-WebSocket-Version: 13\r\n", a, sizeof(a));
	ck_assert_msg(status_of(a) == 400, "two keys: %s", a);
	upgrade(KEY "Sec-WebSocket-Key: AQIDBAUGBwgJCgsMDQ4PEC==\r\nSec-WebSocket-Version: 13\r\n",
		a, sizeof(a));
	ck_assert_msg(status_of(a) == 400, "two different keys: %s", a);
	upgrade("Sec-WebSocket-Version: 13\r\n", a, sizeof(a));
	ck_assert_msg(status_of(a) == 400, "no key: %s", a);
	/* And it still upgrades. */
	upgrade(KEY "Sec-WebSocket-Version: 13\r\n", a, sizeof(a));
	ck_assert_msg(status_of(a) == 101, "version 13 after: %s", a);
	tu_stack_stop(&rig);
}
END_TEST

/*
 * libwebsockets moves a connection to the vhost whose name starts with its
 * Host header: a Host naming the exporter's internal vhost must leave the
 * connection where it was, its slot given back at its close.  More such
 * connections than one address may hold, then that address still gets
 * the feed.
 */
START_TEST(a_host_naming_the_internal_vhost_changes_nothing)
{
	char line[256];
	int fd;

	ck_assert_int_eq(tu_stack_start(&rig, "steady", 200, 0), 0);
	for (int i = 0; i < WS_MAX_PER_ADDR + 8; i++) {
		fd = tu_connect_from(4, rig.ws_port, 0, 0);
		ck_assert_int_ge(fd, 0);
		tu_exchange_line(fd, "GET / HTTP/1.1\r\nHost: zernel-internal\r\nUpgrade: websocket\r\n"
				 "Connection: Upgrade\r\n" KEY "Sec-WebSocket-Version: 13\r\n\r\n",
				 line, sizeof(line));
		ck_assert_msg(strncmp(line, "HTTP/1.1 101", 12) == 0, "connection %d: \"%s\"", i,
			      line);
		close(fd);
	}
	/* The closes reach the exporter before a new client does. */
	tu_sleep_ms(500);
	fd = tu_connect_from(4, rig.ws_port, 0, 0);
	ck_assert_int_ge(fd, 0);
	tu_exchange_line(fd, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
			 "Connection: Upgrade\r\n" KEY "Sec-WebSocket-Version: 13\r\n\r\n",
			 line, sizeof(line));
	close(fd);
	ck_assert_msg(strncmp(line, "HTTP/1.1 101", 12) == 0, "after them: \"%s\"", line);
}
END_TEST

/* A request head longer than the feed reads gets 431, and the connection closes. */
START_TEST(a_head_past_its_room_gets_431)
{
	static char req[WS_HEAD_MAX + 512];
	struct timeval tv = { .tv_sec = 5 };
	char answer[512] = "";
	int fd, n;
	ssize_t got;

	ck_assert_int_eq(tu_stack_start(&rig, "steady", 200, 0), 0);
	n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
		     "Connection: Upgrade\r\n" KEY "Sec-WebSocket-Version: 13\r\nX-Pad: ");
	memset(req + n, 'a', WS_HEAD_MAX);
	n += WS_HEAD_MAX;
	n += snprintf(req + n, sizeof(req) - (size_t)n, "\r\n\r\n");
	fd = tu_connect_from(2, rig.ws_port, 0, 0);
	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ck_assert_int_eq(write(fd, req, (size_t)n), n);
	got = read(fd, answer, sizeof(answer) - 1);
	answer[got > 0 ? got : 0] = '\0';
	ck_assert_msg(status_of(answer) == 431, "a %d-byte head: \"%.60s\"", n, answer);
	while ((got = read(fd, answer, sizeof(answer))) > 0)
		;
	ck_assert_msg(got == 0, "the connection stayed open");
	close(fd);
	ck_assert_int_eq(tu_stack_wait_up(&rig, 5000), 0);
}
END_TEST

/* A head that never ends is closed WS_HANDSHAKE_TIMEOUT_S after the accept. */
START_TEST(a_handshake_left_unfinished_is_closed_in_time)
{
	static const char part[] = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n";
	struct timeval tv = { .tv_sec = 20 };
	uint64_t t0;
	double secs;
	char buf[256];
	ssize_t got;
	int fd;

	ck_assert_int_eq(tu_stack_start(&rig, "steady", 200, 0), 0);
	fd = tu_connect_from(3, rig.ws_port, 0, 0);
	ck_assert_int_ge(fd, 0);
	t0 = now_mono_ns();
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ck_assert_int_eq(write(fd, part, sizeof(part) - 1), (ssize_t)sizeof(part) - 1);
	got = read(fd, buf, sizeof(buf));
	secs = (double)(now_mono_ns() - t0) / 1e9;
	close(fd);
	fprintf(stderr, "a handshake left unfinished: closed after %.2f s (read %zd)\n", secs, got);
	ck_assert_msg(got == 0, "read %zd: not closed within 20 s", got);
	/* Not before its time; and within a few seconds of it on a busy machine. */
	ck_assert_double_ge(secs, WS_HANDSHAKE_TIMEOUT_S - 0.1);
	ck_assert_double_le(secs, WS_HANDSHAKE_TIMEOUT_S + 5);
}
END_TEST

/*
 * Clients that read their handshake answer and nothing after it, each with
 * a 4 KB receive buffer, from an address of its own, for a minute.  The
 * node's TCP memory (both ends: this is loopback) may grow by the small
 * buffers of each end, not by what the kernel would queue for them unasked
 * (up to tcp_wmem's 4 MiB each, about 2.7 MB a client by the time they
 * stall), and every client ends closed as stalled.  The server's end of a
 * closed client keeps its unsent queue (16 KiB, doubled by the kernel)
 * until the client goes: 40-55 KB a client here, all told.
 */
#define SLOW_CLIENTS		1000
#define SLOW_HOLD_MS		60000
#define SLOW_MAX_PER_CLIENT	(80 * 1024)	/* 8 MB per hundred */

START_TEST(feed_clients_that_never_read_hold_little_kernel_memory)
{
	static int fd[SLOW_CLIENTS];
	long long base, peak = 0;
	double dropped, closed;
	int up = 0;

	tu_raise_nofile();
	ck_assert_int_eq(tu_stack_start(&rig, "steady", 100, 100), 0);
	base = tu_tcp_mem_bytes();
	ck_assert_int_ge(base, 0);
	for (int i = 0; i < SLOW_CLIENTS; i++) {
		char line[256];

		fd[i] = tu_connect_from(0x020000u + (unsigned int)i, rig.ws_port, 0, 4096);
		ck_assert_int_ge(fd[i], 0);
		tu_exchange_line(fd[i], "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
				 "Connection: Upgrade\r\n" KEY "Sec-WebSocket-Version: 13\r\n\r\n",
				 line, sizeof(line));
		up += strncmp(line, "HTTP/1.1 101", 12) == 0;
	}
	ck_assert_int_eq(up, SLOW_CLIENTS);
	for (int waited = 0; waited < SLOW_HOLD_MS; waited += 200) {
		long long now = tu_tcp_mem_bytes();

		if (now - base > peak)
			peak = now - base;
		tu_sleep_ms(200);
	}
	dropped = tu_scrape_value(rig.metrics_port, "zernel_exporter_ws_frames_dropped_total");
	closed = tu_scrape_value(rig.metrics_port, "zernel_exporter_ws_stalled_closed_total");
	fprintf(stderr, "%d clients that never read: TCP memory peaked %.1f MB above the %.1f MB "
		"before (%.1f KB a client); %.0f frames dropped, %.0f clients closed as stalled\n",
		SLOW_CLIENTS, peak / 1e6, base / 1e6, peak / 1024.0 / SLOW_CLIENTS, dropped, closed);
	ck_assert_msg(peak <= (long long)SLOW_CLIENTS * SLOW_MAX_PER_CLIENT,
		      "TCP memory grew %lld bytes for %d clients", peak, SLOW_CLIENTS);
	ck_assert_msg(dropped >= SLOW_CLIENTS, "%.0f frames dropped", dropped);
	ck_assert_msg(closed == SLOW_CLIENTS, "%.0f of %d clients closed as stalled", closed,
		      SLOW_CLIENTS);
	for (int i = 0; i < SLOW_CLIENTS; i++)
		close(fd[i]);
	tu_stack_stop(&rig);
}
END_TEST

/* Lines of the exporter's log that came from libwebsockets. */
static int lws_lines(void)
{
	size_t len;
	char *log = tu_read_file(rig.exp_log, &len);
	int n = 0;

	ck_assert_ptr_nonnull(log);
	for (const char *p = log; (p = strstr(p, ": lws: ")) != NULL; p++)
		n++;
	free(log);
	return n;
}

/*
 * Handshakes with 300 headers, past libwebsockets' header space: it logs
 * nine lines for each.  From many addresses, as fast as they are answered.
 */
#define FLOOD_HANDSHAKES	600

START_TEST(a_flood_libwebsockets_complains_about_writes_a_few_lines)
{
	static char req[16384];
	size_t n = 0;
	int before, after, windows;
	uint64_t t0;

	ck_assert_int_eq(tu_stack_start(&rig, "steady", 200, 0), 0);
	n += (size_t)snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: x\r\n"
			      "Upgrade: websocket\r\nConnection: Upgrade\r\n");
	for (int h = 0; h < 300; h++)
		n += (size_t)snprintf(req + n, sizeof(req) - n, "X-Header-%03d: padding\r\n", h);
	snprintf(req + n, sizeof(req) - n, KEY "Sec-WebSocket-Version: 13\r\n\r\n");
	before = lws_lines();
	t0 = now_mono_ns();
	for (int i = 0; i < FLOOD_HANDSHAKES; i++) {
		char line[256];
		int fd = tu_connect_from(0x030000u + (unsigned int)i % 200, rig.ws_port, 0, 0);

		ck_assert_int_ge(fd, 0);
		tu_exchange_line(fd, req, line, sizeof(line));
		close(fd);
	}
	/* The exporter writes its log as it goes: a moment for the last lines. */
	tu_sleep_ms(500);
	after = lws_lines();
	windows = (int)((now_mono_ns() - t0) / LOG_LIMIT_WINDOW_NS) + 2;
	fprintf(stderr, "%d handshakes past the header space in %.1f s: %d lines from "
		"libwebsockets\n", FLOOD_HANDSHAKES, (double)(now_mono_ns() - t0) / 1e9,
		after - before);
	/* One line per 10 s window, however many windows a busy machine makes it span. */
	ck_assert_int_ge(after - before, 1);
	ck_assert_int_le(after - before, windows);
	ck_assert_int_eq(tu_stack_wait_up(&rig, 5000), 0);
	tu_stack_stop(&rig);
}
END_TEST

Suite *ws_peers_suite(void);
Suite *ws_peers_suite(void)
{
	Suite *s = suite_create("ws_peers");
	TCase *tc = tcase_create("peers");

	tcase_add_checked_fixture(tc, NULL, rig_teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, upgrades_the_feed_does_not_take_get_their_http_answer);
	tcase_add_test(tc, a_head_past_its_room_gets_431);
	tcase_add_test(tc, a_host_naming_the_internal_vhost_changes_nothing);
	tcase_add_test(tc, a_handshake_left_unfinished_is_closed_in_time);
	tcase_add_test(tc, feed_clients_that_never_read_hold_little_kernel_memory);
	tcase_add_test(tc, a_flood_libwebsockets_complains_about_writes_a_few_lines);
	suite_add_tcase(s, tc);
	return s;
}
