/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The WebSocket feed end to end: zernel-collector --simulate, then
 * zernel-exporter on free ports, then real clients (python3-websockets
 * scripts in tests/py, run with Debian's /usr/bin/python3, whose exit status
 * carries their assertions; raw sockets from C for clients that never read).
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define PYTHON "/usr/bin/python3"

static struct tu_stack rig;

static void rig_start(const char *processes, const char *publish_ms, unsigned int ws_ms)
{
	const char *args[] = { "--processes", processes, "--publish-interval", publish_ms, NULL };

	tu_stack_init(&rig);
	rig.ws_interval_ms = ws_ms;
	ck_assert_int_eq(tu_stack_start_collector(&rig, args), 0);
	if (tu_stack_start_exporter(&rig) < 0 ||
	    tu_wait_http(rig.metrics_port, "/healthz", 200, 15000) < 0) {
		tu_stack_dump_logs(&rig);
		ck_abort_msg("exporter never became healthy");
	}
}

static void rig_stop(void)
{
	int st = tu_stack_stop_exporter(&rig);

	tu_stack_stop(&rig);
	/* The exporter shuts down cleanly on SIGTERM, whatever the clients did. */
	ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "exporter did not exit cleanly on SIGTERM (status 0x%x)", st);
}

static long rss_kb(pid_t pid)
{
	char path[64], *text, *p;
	long kb = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	text = tu_read_file(path, NULL);
	if (text && (p = strstr(text, "VmRSS:")))
		kb = strtol(p + 6, NULL, 10);
	free(text);
	return kb;
}

static int run_py(const char *script, const char *args)
{
	return tu_system(PYTHON " %s/tests/py/%s %s", tu_src_dir(), script, args);
}

START_TEST(ws_feed_cadence_contract_and_metrics_agree)
{
	char args[128];

	rig_start("8", "500", 200);
	/* No subprotocol, as websocat sends; 8 snapshots at 200 ms. */
	snprintf(args, sizeof(args), "%u %u 200 8", rig.ws_port, rig.metrics_port);
	ck_assert_int_eq(run_py("ws_feed_check.py", args), 0);
	/* Asking for the feed's own subprotocol works too. */
	snprintf(args, sizeof(args), "%u %u 200 3 zernel-feed", rig.ws_port, rig.metrics_port);
	ck_assert_int_eq(run_py("ws_feed_check.py", args), 0);
	rig_stop();
}
END_TEST

START_TEST(ws_bad_frames_close_that_client_only)
{
	char args[64];

	rig_start("8", "500", 200);
	snprintf(args, sizeof(args), "%u 200 %u", rig.ws_port, rig.metrics_port);
	/* The script also checks zernel_exporter_ws_bad_input_total grew by its count. */
	ck_assert_int_eq(run_py("ws_bad_frames.py", args), 0);
	/* The exporter is still up and still serving. */
	ck_assert_int_eq(kill(rig.exporter, 0), 0);
	snprintf(args, sizeof(args), "%u %u 200 3", rig.ws_port, rig.metrics_port);
	ck_assert_int_eq(run_py("ws_feed_check.py", args), 0);
	rig_stop();
}
END_TEST

/* A WebSocket client that completes the handshake and then never reads. */
static int stalled_client(uint16_t port)
{
	static const char req[] =
		"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
		"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		"Sec-WebSocket-Version: 13\r\n\r\n";
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), small = 4096;
	char resp[512];
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	/* A small receive window: the exporter's side fills up sooner. */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	n = read(fd, resp, sizeof(resp) - 1);
	ck_assert_int_gt(n, 12);
	resp[n] = '\0';
	ck_assert_msg(strncmp(resp, "HTTP/1.1 101", 12) == 0, "handshake: %.40s", resp);
	return fd;
}

START_TEST(ws_stalled_clients_do_not_grow_memory)
{
	enum { CLIENTS = 4 };
	int fds[CLIENTS];
	long base, peak = 0;
	char args[64];
	double dropped, closed;

	/* 1,000 processes, ten snapshots a second. */
	rig_start("1000", "500", 100);
	snprintf(args, sizeof(args), "%u %u 100 5", rig.ws_port, rig.metrics_port);
	ck_assert_int_eq(run_py("ws_feed_check.py", args), 0);
	base = rss_kb(rig.exporter);
	ck_assert_int_gt(base, 0);

	for (int i = 0; i < CLIENTS; i++)
		fds[i] = stalled_client(rig.ws_port);
	/*
	 * A push carries the top processes only (tens of kB), so the kernel's
	 * socket buffers take a few seconds of them before the server sees a
	 * stalled client: watch for up to 30 s.
	 */
	for (int t = 0; t < 120; t++) {
		long kb;

		tu_sleep_ms(250);
		kb = rss_kb(rig.exporter);
		if (kb > peak)
			peak = kb;
		if (t >= 15 && tu_scrape_value(rig.metrics_port,
					       "zernel_exporter_ws_stalled_closed_total") >= CLIENTS)
			break;
	}
	dropped = tu_scrape_value(rig.metrics_port, "zernel_exporter_ws_frames_dropped_total");
	closed = tu_scrape_value(rig.metrics_port, "zernel_exporter_ws_stalled_closed_total");
	fprintf(stderr, "ws stalled clients: RSS %ld kB before, %ld kB peak; "
		"%.0f snapshots dropped, %.0f clients closed\n", base, peak, dropped, closed);
	/*
	 * Queuing every snapshot for 4 clients would grow without bound; a
	 * bounded server stays within a few snapshots of where it was.
	 */
	ck_assert_msg(peak - base < 24 * 1024, "RSS grew from %ld to %ld kB", base, peak);
	ck_assert_msg(dropped >= CLIENTS, "no snapshot was dropped for the stalled clients");
	ck_assert_msg(closed >= CLIENTS, "stalled clients were not closed (%.0f)", closed);
	for (int i = 0; i < CLIENTS; i++)
		close(fds[i]);
	/* Everyone else is still served. */
	snprintf(args, sizeof(args), "%u %u 100 3", rig.ws_port, rig.metrics_port);
	ck_assert_int_eq(run_py("ws_feed_check.py", args), 0);
	rig_stop();
}
END_TEST

START_TEST(ws_plain_http_on_feed_port_is_refused)
{
	char body[512];
	int st;

	rig_start("4", "500", 200);
	st = tu_http_request(rig.ws_port, "GET", "/", body, sizeof(body));
	ck_assert_int_eq(st, 400);
	ck_assert_ptr_nonnull(strstr(body, "WebSocket"));
	rig_stop();
}
END_TEST

Suite *ws_suite(void);
Suite *ws_suite(void)
{
	Suite *s = suite_create("ws");
	TCase *tc = tcase_create("feed");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, ws_feed_cadence_contract_and_metrics_agree);
	tcase_add_test(tc, ws_bad_frames_close_that_client_only);
	tcase_add_test(tc, ws_stalled_clients_do_not_grow_memory);
	tcase_add_test(tc, ws_plain_http_on_feed_port_is_refused);
	suite_add_tcase(s, tc);
	return s;
}
