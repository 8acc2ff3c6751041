/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The running exporter and collector under damage: a live segment whose
 * header fields and table descriptors have bits flipped (reported invalid
 * at once, healed by the next publish, nothing restarted) and a writer
 * stuck mid-publish (answered "busy" at once, at the normal request rate).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "shm/shm_layout.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"
#include "tests/support/tu_net.h"
#include "exporter/http/http.h"
#include "exporter/http/http_parked.h"
#include "exporter/feed/ws.h"

#define BODY_MAX	(16u << 20)

static struct tu_stack rig;

static void rig_teardown(void)
{
	tu_stack_stop(&rig);
}

/* zernel_collector_up and the status the exporter gives now, from one scrape. */
static double scrape_up(char *status, size_t len)
{
	char *body = tu_scrape(rig.metrics_port);
	static const char *const names[] = { "ok", "stale", "busy", "missing", "invalid" };
	double up = NAN, v;

	ck_assert_ptr_nonnull(body);
	if (tu_metric(body, "zernel_collector_up", NULL, &v) == 0)
		up = v;
	status[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char want[32];

		snprintf(want, sizeof(want), "status=\"%s\"", names[i]);
		if (tu_metric(body, "zernel_collector_status", want, &v) == 0 && v == 1)
			snprintf(status, len, "%s", names[i]);
	}
	free(body);
	return up;
}

/* Waits for a publish to end: seq moves on and is even. */
static void wait_publish(const volatile struct shm_header_fields *h)
{
	uint64_t s0 = h->seq;

	for (int i = 0; i < 600; i++) {
		uint64_t s = h->seq;

		if (s != s0 && !(s & 1))
			return;
		tu_sleep_ms(5);
	}
	ck_abort_msg("the collector stopped publishing");
}

struct flip {
	const char *what;
	size_t off;		/* in the header */
	unsigned int width;	/* bytes */
	unsigned int bit;
};

START_TEST(live_header_bit_flips_are_invalid_at_once_then_heal)
{
	struct flip flips[8 + 3 * SHM_TABLE_COUNT];
	size_t n = 0;
	volatile struct shm_header_fields *h;
	pid_t collector, exporter;
	char status[16];
	void *map;
	int fd;

	flips[n++] = (struct flip){ "magic", offsetof(struct shm_header_fields, magic), 8, 0 };
	flips[n++] = (struct flip){ "magic", offsetof(struct shm_header_fields, magic), 8, 63 };
	flips[n++] = (struct flip){ "layout_version",
				    offsetof(struct shm_header_fields, layout_version), 4, 0 };
	flips[n++] = (struct flip){ "header_size",
				    offsetof(struct shm_header_fields, header_size), 4, 31 };
	flips[n++] = (struct flip){ "total_size",
				    offsetof(struct shm_header_fields, total_size), 8, 6 };
	flips[n++] = (struct flip){ "mode", offsetof(struct shm_header_fields, mode), 4, 4 };
	for (int t = 0; t < SHM_TABLE_COUNT; t++) {
		size_t base = offsetof(struct shm_header_fields, table) +
			      (size_t)t * sizeof(struct shm_table);

		flips[n++] = (struct flip){ "table offset",
					    base + offsetof(struct shm_table, offset), 8, 63 };
		flips[n++] = (struct flip){ "table entry_size",
					    base + offsetof(struct shm_table, entry_size), 4, 0 };
		flips[n++] = (struct flip){ "table capacity",
					    base + offsetof(struct shm_table, capacity), 4, 31 };
	}

	ck_assert_int_eq(tu_stack_start(&rig, "steady", 1000, 0), 0);
	collector = rig.collector;
	exporter = rig.exporter;
	fd = shm_open(rig.shm, O_RDWR, 0);
	ck_assert_int_ge(fd, 0);
	map = mmap(NULL, SHM_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	h = map;

	for (size_t i = 0; i < n; i++) {
		volatile uint8_t *byte = (volatile uint8_t *)map + flips[i].off + flips[i].bit / 8;
		double up = 0;
		int healed_ms;

		wait_publish(h);
		*byte ^= (uint8_t)(1u << (flips[i].bit % 8));
		up = scrape_up(status, sizeof(status));
		ck_assert_msg(up == 0 && strcmp(status, "invalid") == 0,
			      "%s bit %u flipped: up %g, status %s", flips[i].what, flips[i].bit,
			      up, status);
		for (healed_ms = 0; healed_ms < 4000; healed_ms += 50) {
			tu_sleep_ms(50);
			if (scrape_up(status, sizeof(status)) == 1)
				break;
		}
		ck_assert_msg(healed_ms < 4000, "%s bit %u: not healed after 4 s (status %s)",
			      flips[i].what, flips[i].bit, status);
		fprintf(stderr, "flip %-16s bit %2u: invalid at once, up again after %d ms\n",
			flips[i].what, flips[i].bit, healed_ms + 50);
	}
	/* Nothing was restarted. */
	ck_assert_int_eq(rig.collector, collector);
	ck_assert_int_eq(rig.exporter, exporter);
	ck_assert_int_eq(waitpid(collector, NULL, WNOHANG), 0);
	ck_assert_int_eq(waitpid(exporter, NULL, WNOHANG), 0);
	munmap(map, SHM_HEADER_SIZE);
	close(fd);
}
END_TEST

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The median time of n scrapes of /metrics, each answered 200 with the
 * collector status want_status: a median, which a preemption of the test
 * or the exporter on a busy machine does not move.
 */
static double median_scrape_ms(unsigned int n, const char *want_status)
{
	char *body = malloc(BODY_MAX);
	uint64_t *ns = calloc(n, sizeof(*ns));
	double median;

	ck_assert_ptr_nonnull(body);
	ck_assert_ptr_nonnull(ns);
	for (unsigned int i = 0; i < n; i++) {
		uint64_t t0 = now_mono_ns();
		double v;
		char want[32];

		ck_assert_int_eq(tu_http_request(rig.metrics_port, "GET", "/metrics", body,
						 BODY_MAX), 200);
		ns[i] = now_mono_ns() - t0;
		snprintf(want, sizeof(want), "status=\"%s\"", want_status);
		ck_assert_msg(tu_metric(body, "zernel_collector_status", want, &v) == 0 && v == 1,
			      "scrape %u: status is not %s", i, want_status);
	}
	qsort(ns, n, sizeof(*ns), by_value);
	median = (double)ns[n / 2] / 1e6;
	free(ns);
	free(body);
	return median;
}

/*
 * A writer that died mid-publish leaves seq odd.  Each request must answer
 * "busy" at once: no retry sleeps on the request thread.  A retry sleep
 * costs a request tens of ms; the reader's bounded spin on the stuck value
 * about a ms at most: so the median busy scrape is within 2 ms of the
 * median normal one.
 */
START_TEST(stuck_seqlock_costs_requests_nothing)
{
	struct shm_writer_opts o;
	struct shm_writer w;
	double normal, busy;
	const unsigned int n = 300;
	char health[512];

	tu_stack_init(&rig);
	tu_shm_opts(&o, rig.shm, (struct shm_capacity){ 64, 64, 8, 16 });
	o.publish_interval_ms = 10000;	/* stays fresh for the whole test */
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	shm_writer_begin(&w);
	w.base->h.heartbeat_mono_ns = now_mono_ns();
	w.base->h.heartbeat_real_ns = now_real_ns();
	shm_writer_end(&w);
	ck_assert_int_eq(tu_stack_start_exporter(&rig), 0);

	normal = median_scrape_ms(n, "ok");
	shm_writer_begin(&w);		/* and never end */
	busy = median_scrape_ms(n, "busy");
	ck_assert_int_eq(tu_http_request(rig.metrics_port, "GET", "/healthz", health,
					 sizeof(health)), 503);
	ck_assert_msg(strstr(health, "busy"), "/healthz does not say busy: %s", health);
	fprintf(stderr, "stuck seqlock: %u scrapes each, median %.3f ms normal, %.3f ms busy\n",
		n, normal, busy);
	ck_assert_msg(busy < normal + 2.0, "busy scrapes %.3f ms, normal %.3f ms", busy, normal);
	shm_writer_close(&w, 1);
}
END_TEST

/* ---- a fair share of connections --------------------------------------- */

static void ws_handshake(const char *extra, const char *version, char *line, size_t len)
{
	char req[512];
	int fd = tu_connect_from(1, rig.ws_port, 0, 0);

	ck_assert_int_ge(fd, 0);
	snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
		 "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		 "Sec-WebSocket-Version: %s\r\n%s\r\n", version, extra);
	tu_exchange_line(fd, req, line, len);
	close(fd);
}

START_TEST(internal_protocols_old_versions_and_http2_are_refused)
{
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	char line[512];
	int fd;

	ck_assert_int_eq(tu_stack_start(&rig, "steady", 200, 0), 0);
	ws_handshake("", "13", line, sizeof(line));
	ck_assert_msg(strncmp(line, "HTTP/1.1 101", 12) == 0, "plain handshake: %s", line);
	ws_handshake("Sec-WebSocket-Protocol: " WS_PROTOCOL_NAME "\r\n", "13", line, sizeof(line));
	ck_assert_msg(strncmp(line, "HTTP/1.1 101", 12) == 0, "feed handshake: %s", line);
	ws_handshake("Sec-WebSocket-Protocol: zernel-listener\r\n", "13", line, sizeof(line));
	ck_assert_msg(strncmp(line, "HTTP/1.1 101", 12) != 0, "listener accepted: %s", line);
	ws_handshake("Sec-WebSocket-Protocol: zernel-client-input\r\n", "13", line, sizeof(line));
	ck_assert_msg(strncmp(line, "HTTP/1.1 101", 12) != 0, "client-input accepted: %s", line);
	ws_handshake("", "8", line, sizeof(line));
	ck_assert_msg(strncmp(line, "HTTP/1.1 101", 12) != 0, "version 8 accepted: %s", line);

	/* HTTP/2 with prior knowledge: no SETTINGS frame, an HTTP/1.1 error. */
	fd = tu_connect_from(1, rig.metrics_port, 0, 0);
	ck_assert_int_ge(fd, 0);
	tu_exchange_line(fd, preface, line, sizeof(line));
	ck_assert_msg(line[0] == '\0' || strncmp(line, "HTTP/1.1 4", 10) == 0,
		      "HTTP/2 preface answered: %.16s", line);
	close(fd);
	/* An h2c upgrade is served as plain HTTP/1.1. */
	fd = tu_connect_from(1, rig.metrics_port, 0, 0);
	ck_assert_int_ge(fd, 0);
	tu_exchange_line(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
		 "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n", line,
		 sizeof(line));
	ck_assert_msg(strncmp(line, "HTTP/1.1 200", 12) == 0, "h2c upgrade: %s", line);
	close(fd);
	/* The exporter still serves. */
	ck_assert_int_eq(tu_wait_http(rig.metrics_port, "/healthz", 200, 2000), 0);
}
END_TEST

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

static int open_fds(pid_t pid)
{
	char cmd[96];
	char *out;
	int st, n;

	snprintf(cmd, sizeof(cmd), "ls /proc/%d/fd | wc -l", (int)pid);
	out = tu_capture(cmd, &st);
	n = out ? atoi(out) : -1;
	free(out);
	return n;
}

/* Connections one attacker keeps open, sending a header byte now and then. */
struct slow_flood {
	int *fd;
	unsigned int n;
	unsigned int first, hosts;	/* spread over 127.x.y.z from first to first+hosts-1 */
	uint16_t port;
	uint64_t reopened;
};

static void flood_open(struct slow_flood *f, unsigned int n, unsigned int first,
		       unsigned int hosts, uint16_t port)
{
	memset(f, 0, sizeof(*f));
	f->fd = calloc(n, sizeof(int));
	ck_assert_ptr_nonnull(f->fd);
	f->n = n;
	f->first = first;
	f->hosts = hosts;
	f->port = port;
	for (unsigned int i = 0; i < n; i++)
		f->fd[i] = tu_connect_from(first + i % hosts, port, 1, 0);
}

/* One byte of a never-ending request on each; a closed one is opened again. */
static void flood_tick(struct slow_flood *f, unsigned int step)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaa";

	for (unsigned int i = 0; i < f->n; i++) {
		char sink[256];
		char c = req[step % (sizeof(req) - 1)];

		if (f->fd[i] >= 0 && (read(f->fd[i], sink, sizeof(sink)) == 0 ||
				      (send(f->fd[i], &c, 1, MSG_NOSIGNAL) < 0 &&
				       errno != EAGAIN && errno != ENOTCONN))) {
			close(f->fd[i]);
			f->fd[i] = -1;
		}
		if (f->fd[i] < 0) {
			f->fd[i] = tu_connect_from(f->first + i % f->hosts, f->port, 1, 0);
			f->reopened++;
		}
	}
}

static void flood_close(struct slow_flood *f)
{
	for (unsigned int i = 0; i < f->n; i++)
		if (f->fd[i] >= 0)
			close(f->fd[i]);
	free(f->fd);
}

/*
 * One GET /metrics from 127.0.0.1; 1 when it got the collector's data.  A
 * failed one is said with its status (negative: an errno, -EPROTO for no
 * answer) and how long it took.
 */
static int scrape_ok(void)
{
	char *body = malloc(BODY_MAX);
	uint64_t t0 = now_mono_ns();
	int status, ok;

	ck_assert_ptr_nonnull(body);
	status = tu_http_request(rig.metrics_port, "GET", "/metrics", body, BODY_MAX);
	ok = status == 200 && strstr(body, "\nzernel_collector_up 1\n") != NULL;
	if (!ok)
		fprintf(stderr, "a scrape failed: status %d after %.1f ms\n", status,
			(double)(now_mono_ns() - t0) / 1e6);
	free(body);
	return ok;
}

/* What a scraper saw while floods ran, and what the exporter held. */
struct flood_watch {
	unsigned int ok, total;		/* scrapes */
	double slowest_ms;
	double slowest_tick_ms;		/* both floods' renewal and bytes, once */
	long rss_max;			/* kB */
	int fds_max;
};

/*
 * Runs floods a and b for seconds by the clock: a tick (flood_tick) each
 * 100 ms at most, and a scrape once a second.  Opening thousands of
 * connections again can take longer than a tick on a busy machine; the
 * test lasts as long and the scrapes come once a second all the same.
 */
static void flood_run(struct slow_flood *a, struct slow_flood *b, unsigned int seconds,
		      struct flood_watch *w)
{
	uint64_t t0 = now_mono_ns(), next = t0 + NSEC_PER_SEC;

	memset(w, 0, sizeof(*w));
	for (unsigned int t = 0; now_mono_ns() < t0 + seconds * NSEC_PER_SEC; t++) {
		uint64_t tick = now_mono_ns();
		long rss;

		flood_tick(a, t);
		flood_tick(b, t);
		if ((double)(now_mono_ns() - tick) / 1e6 > w->slowest_tick_ms)
			w->slowest_tick_ms = (double)(now_mono_ns() - tick) / 1e6;
		if (now_mono_ns() >= next) {
			uint64_t s0 = now_mono_ns();
			double ms;

			w->total++;
			w->ok += scrape_ok();
			ms = (double)(now_mono_ns() - s0) / 1e6;
			w->slowest_ms = ms > w->slowest_ms ? ms : w->slowest_ms;
			next += NSEC_PER_SEC;
			if (w->total % 3 == 0) {
				int fds = open_fds(rig.exporter);

				w->fds_max = fds > w->fds_max ? fds : w->fds_max;
			}
		}
		rss = rss_kb(rig.exporter);
		w->rss_max = rss > w->rss_max ? rss : w->rss_max;
		if (now_mono_ns() - tick < 100 * NSEC_PER_MSEC)
			tu_sleep_ms((unsigned int)((100 * NSEC_PER_MSEC - (now_mono_ns() - tick)) /
						   NSEC_PER_MSEC));
	}
}

/*
 * One client holds 2,000 slow connections on each port (renewing those
 * the exporter closes) while a scraper asks for /metrics once a second
 * from another address: every scrape succeeds and RSS stays bounded.
 */
START_TEST(slow_connections_leave_scrapes_their_share)
{
	enum { SLOW = 2000, SECONDS = 20 };
	struct slow_flood http, ws;
	struct flood_watch w;
	long rss0;

	tu_raise_nofile();
	ck_assert_int_eq(tu_stack_start(&rig, "steady", 500, 0), 0);
	rss0 = rss_kb(rig.exporter);
	flood_open(&http, SLOW, 2, 1, rig.metrics_port);
	flood_open(&ws, SLOW, 2, 1, rig.ws_port);
	flood_run(&http, &ws, SECONDS, &w);
	fprintf(stderr, "slow flood: %u/%u scrapes ok (slowest %.1f ms), %d exporter fds, "
		"RSS %ld kB before, %ld kB peak; connections renewed: http %llu, ws %llu\n",
		w.ok, w.total, w.slowest_ms, open_fds(rig.exporter), rss0, w.rss_max,
		(unsigned long long)http.reopened, (unsigned long long)ws.reopened);
	flood_close(&http);
	flood_close(&ws);
	ck_assert_uint_ge(w.total, 5);
	ck_assert_uint_ge(w.ok * 100, w.total * 99);
	ck_assert_int_lt(w.rss_max, rss0 + 64 * 1024);
	ck_assert_int_eq(waitpid(rig.exporter, NULL, WNOHANG), 0);
}
END_TEST

/*
 * Slow clients from 5,000 addresses, one connection each, and 100 more
 * from the scraper's own address, every one opened again as soon as it is
 * closed, while a scraper asks for /metrics once a second: the slots are
 * always full, yet a scrape, whose request is complete as it connects,
 * takes the slot of a connection still waiting for its request.  Without
 * that, 300 addresses holding one slow connection each fill every slot.
 */
START_TEST(slow_clients_from_many_addresses_leave_scrapes_a_slot)
{
	enum { ADDRS = 5000, SAME_ADDR = 100, SECONDS = 30 };
	struct slow_flood many, same;
	struct flood_watch w;
	long rss0;
	double evicted, v;
	char *body;

	tu_raise_nofile();
	ck_assert_int_eq(tu_stack_start(&rig, "steady", 500, 0), 0);
	rss0 = rss_kb(rig.exporter);
	/* 127.4.0.0 up: 5,000 addresses of their own; 127.0.0.1: the scraper's. */
	flood_open(&many, ADDRS, 0x040000u, ADDRS, rig.metrics_port);
	flood_open(&same, SAME_ADDR, 1, 1, rig.metrics_port);
	flood_run(&many, &same, SECONDS, &w);
	/* The flood's last connections may still hold every slot: a few tries. */
	body = NULL;
	for (int i = 0; i < 10 && !(body = tu_scrape(rig.metrics_port)); i++)
		tu_sleep_ms(200);
	evicted = body && tu_metric(body, "zernel_exporter_http_evicted_total", NULL, &v) == 0 ?
		  v : -1;
	free(body);
	fprintf(stderr, "slow clients from %d addresses and %d from the scraper's: %u/%u scrapes "
		"ok (slowest %.1f ms, slowest tick %.1f ms); %.0f connections evicted; exporter "
		"peaked at %d descriptors, RSS %ld kB before, %ld kB peak; connections renewed %llu "
		"and %llu\n", ADDRS, SAME_ADDR, w.ok, w.total, w.slowest_ms, w.slowest_tick_ms, evicted, w.fds_max, rss0, w.rss_max,
		(unsigned long long)many.reopened, (unsigned long long)same.reopened);
	flood_close(&many);
	flood_close(&same);
	ck_assert_uint_ge(w.total, 5);
	ck_assert_uint_ge(w.ok * 100, w.total * 99);
	ck_assert(evicted > 0);
	/* The slots, the connections waiting for their first bytes, and the rest of the process. */
	ck_assert_int_lt(w.fds_max, HTTP_MAX_CONNECTIONS + HTTP_MAX_PARKED + 256);
	ck_assert_int_lt(w.rss_max, rss0 + 64 * 1024);
	ck_assert_int_eq(waitpid(rig.exporter, NULL, WNOHANG), 0);
}
END_TEST

/* pid's state as /proc tells it: R, S, D, T (stopped), Z; '?' when gone. */
static char proc_state(pid_t pid)
{
	char path[64], *text, *p, st = '?';

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	text = tu_read_file(path, NULL);
	if (text && (p = strrchr(text, ')')) && p[1] == ' ' && p[2])
		st = p[2];
	free(text);
	return st;
}

/*
 * Where the slow connections stand when the exporter has not taken them
 * all: how many it held at most, in the kernel (half-open, or in the
 * accept queue), and what the exporter says of its connections, which
 * takes a slot of their own if one is free.
 */
static void explain_unheld(int held_max, double connect_s)
{
	char *body = tu_scrape(rig.metrics_port);
	double open = -1, rejected = -1, evicted = -1;
	int answered = body != NULL;

	if (body) {
		tu_metric(body, "zernel_exporter_http_connections", NULL, &open);
		tu_metric(body, "zernel_exporter_http_rejected_total", NULL, &rejected);
		tu_metric(body, "zernel_exporter_http_evicted_total", NULL, &evicted);
	}
	free(body);
	ck_abort_msg("at most %d of %d slow connections held at once in 3 rounds (the last "
		     "connected in "
		     "%.2f s; %d half-open and %d waiting to be accepted in the kernel; exporter in "
		     "state %c: %s, %.0f connections open, %.0f refused, %.0f evicted)", held_max,
		     HTTP_MAX_CONNECTIONS, connect_s, tu_tcp_half_open(rig.metrics_port),
		     tu_tcp_accept_queue(rig.metrics_port),
		     proc_state(rig.exporter),
		     answered ? "answered a scrape" : "no answer to a scrape", open, rejected,
		     evicted);
}

/*
 * Every slot of /metrics held by a slow client (one byte sent), one per
 * address from 127.x.y.z = first on (the next 256 addresses a round);
 * returns the exporter's descriptors then.  The slow connections are
 * counted in the kernel's table, not as the exporter's descriptors: a
 * scrape's connection the exporter has not yet seen closed would be one
 * too many in a count taken before.  They must all be held before the
 * first of them times out (HTTP_REQ_TIMEOUT_MS), so they are made at once
 * (tu_connect_slow_many); a round that a busy machine made longer than
 * that (the kernel still clearing a flood's connections) is closed and
 * made again.
 */
static int fill_slots(int fd[HTTP_MAX_CONNECTIONS], unsigned int first)
{
	enum { ROUNDS = 3 };
	int held = 0, held_max = 0;
	double connect_s = 0;

	for (unsigned int round = 0; round < ROUNDS; round++, first += HTTP_MAX_CONNECTIONS) {
		uint64_t t0 = now_mono_ns();

		ck_assert_int_eq(tu_connect_slow_many(fd, HTTP_MAX_CONNECTIONS, first,
						      rig.metrics_port), 0);
		connect_s = (double)(now_mono_ns() - t0) / 1e9;
		while ((held = tu_tcp_accepted_from(rig.metrics_port, first,
						    HTTP_MAX_CONNECTIONS)) < HTTP_MAX_CONNECTIONS &&
		       now_mono_ns() - t0 < HTTP_REQ_TIMEOUT_MS * NSEC_PER_MSEC) {
			held_max = held > held_max ? held : held_max;
			tu_sleep_ms(10);
		}
		fprintf(stderr, "round %u: %d slow clients connected in %.2f s, %d held %.2f s "
			"after the first\n", round, HTTP_MAX_CONNECTIONS, connect_s, held,
			(double)(now_mono_ns() - t0) / 1e9);
		if (held == HTTP_MAX_CONNECTIONS)
			return open_fds(rig.exporter);
		held_max = held > held_max ? held : held_max;
		if (round == ROUNDS - 1)
			explain_unheld(held_max, connect_s);
		for (int i = 0; i < HTTP_MAX_CONNECTIONS; i++)
			close(fd[i]);
		/* Their slots free once the exporter has seen them close. */
		for (int waited = 0; waited < 5000 && tu_tcp_accepted_from(rig.metrics_port, first,
			HTTP_MAX_CONNECTIONS) > 0; waited += 10)
			tu_sleep_ms(10);
	}
	return -1;
}

/*
 * Every slot held by connections that sent one byte, one per address; the
 * exporter stopped while a scraper connects with its request and a slow
 * client from the scraper's address connects after it, so one wakeup
 * accepts both before it reads either.  The scraper takes the longest
 * waiting slot; the slow newcomer may not take the scraper's, whose
 * request is there unread, and is refused instead.
 */
START_TEST(a_request_that_came_with_its_connection_keeps_its_slot)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	static int fd[HTTP_MAX_CONNECTIONS];
	double evicted0 = 0, rejected0 = 0, evicted = -1, rejected = -1;
	char line[256], *body;
	int scraper, slow, status;
	uint64_t t0;

	ck_assert_int_eq(tu_stack_start(&rig, "steady", 500, 0), 0);
	body = tu_scrape(rig.metrics_port);
	ck_assert_ptr_nonnull(body);
	tu_metric(body, "zernel_exporter_http_evicted_total", NULL, &evicted0);
	tu_metric(body, "zernel_exporter_http_rejected_total", NULL, &rejected0);
	free(body);
	fill_slots(fd, 0x050000u);
	/* kill() returns before the stop: the exporter is stopped once waitpid says so. */
	ck_assert_int_eq(kill(rig.exporter, SIGSTOP), 0);
	ck_assert_int_eq(waitpid(rig.exporter, &status, WUNTRACED), rig.exporter);
	ck_assert(WIFSTOPPED(status));
	scraper = tu_connect_from(1, rig.metrics_port, 0, 0);
	ck_assert_int_ge(scraper, 0);
	ck_assert_int_eq(write(scraper, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	slow = tu_connect_slow(1, rig.metrics_port);
	ck_assert_int_ge(slow, 0);
	/* Both wait in the accept queue (a busy machine may hand the kernel their bytes later). */
	t0 = now_mono_ns();
	while (tu_tcp_accept_queue(rig.metrics_port) < 2) {
		ck_assert_msg(now_mono_ns() - t0 < 10 * NSEC_PER_SEC, "the accept queue holds %d, "
			      "not the scraper and the slow client",
			      tu_tcp_accept_queue(rig.metrics_port));
		tu_sleep_ms(1);
	}
	ck_assert_int_eq(kill(rig.exporter, SIGCONT), 0);
	tu_exchange_line(scraper, "", line, sizeof(line));
	body = tu_scrape(rig.metrics_port);
	if (body) {
		tu_metric(body, "zernel_exporter_http_evicted_total", NULL, &evicted);
		tu_metric(body, "zernel_exporter_http_rejected_total", NULL, &rejected);
	}
	free(body);
	fprintf(stderr, "slots full, a request and a slow newcomer from its address at once: "
		"\"%s\"; %.0f evicted, %.0f refused\n", line, evicted - evicted0,
		rejected - rejected0);
	close(scraper);
	close(slow);
	for (int i = 0; i < HTTP_MAX_CONNECTIONS; i++)
		close(fd[i]);
	ck_assert_msg(strncmp(line, "HTTP/1.1 200", 12) == 0, "the scraper got \"%s\"", line);
	/* The slots were full: the scraper took one of the slow ones'. */
	ck_assert_double_ge(evicted - evicted0, 1);
	ck_assert_double_ge(rejected - rejected0, 1);
}
END_TEST

/*
 * 300 connections to each port, one per address, that send nothing: the
 * kernel holds them half-open (TCP_DEFER_ACCEPT), so they take neither a
 * slot nor a descriptor of the exporter's, and a scraper is answered.  The
 * kernel hands a silent connection over about 3 s after it connected, so
 * the counts must be read within 2 s of the first: a round that a busy
 * machine made longer (reading /proc/net/tcp after a flood of TIME_WAIT
 * sockets is slow) is closed and made again, from new addresses.
 */
START_TEST(connections_that_send_nothing_take_no_slot)
{
	enum { SILENT = 300, ROUNDS = 3 };
	static int fd[2][SILENT];
	int base, held = -1, half_open[2] = { -1, -1 };
	double secs = -1;

	ck_assert_int_eq(tu_stack_start(&rig, "steady", 500, 0), 0);
	for (unsigned int round = 0; round < ROUNDS; round++) {
		uint64_t t0;

		base = open_fds(rig.exporter);
		t0 = now_mono_ns();
		for (unsigned int i = 0; i < SILENT; i++) {
			unsigned int host = 0x060000u + round * 0x1000u + i;

			fd[0][i] = tu_connect_from(host, rig.metrics_port, 0, 0);
			fd[1][i] = tu_connect_from(host + 0x10000u, rig.ws_port, 0, 0);
			ck_assert_int_ge(fd[0][i], 0);
			ck_assert_int_ge(fd[1][i], 0);
		}
		held = open_fds(rig.exporter) - base;
		half_open[0] = tu_tcp_half_open(rig.metrics_port);
		half_open[1] = tu_tcp_half_open(rig.ws_port);
		secs = (double)(now_mono_ns() - t0) / 1e9;
		ck_assert_int_eq(tu_wait_http(rig.metrics_port, "/healthz", 200, 3000), 0);
		fprintf(stderr, "%d silent connections to each port: %d and %d half-open in the "
			"kernel, %d more exporter descriptors, read %.2f s after the first\n",
			SILENT, half_open[0], half_open[1], held, secs);
		for (unsigned int i = 0; i < SILENT; i++) {
			close(fd[0][i]);
			close(fd[1][i]);
		}
		if (secs < 2.0)
			break;
		/* The closed ones reach the exporter with their FIN and are gone again. */
		tu_sleep_ms(4000);
	}
	ck_assert_msg(secs < 2.0, "%d rounds each took over 2 s to read", ROUNDS);
	ck_assert_int_ge(half_open[0], SILENT / 2);
	ck_assert_int_ge(half_open[1], SILENT / 2);
	ck_assert_int_le(held, 2 * SILENT - half_open[0] - half_open[1] + 8);
}
END_TEST

/* Which of n connections the exporter closed (readable: its FIN); the count. */
static int closed_by_exporter(const int *fd, int n, int *first)
{
	int closed = 0;

	*first = -1;
	for (int i = 0; i < n; i++) {
		struct pollfd p = { .fd = fd[i], .events = POLLIN };

		if (poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP))) {
			if (*first < 0)
				*first = i;
			closed++;
		}
	}
	return closed;
}

/* Waits for the kernel to hand every deferred connection to the exporter. */
static void wait_handed_over(uint16_t port)
{
	uint64_t t0 = now_mono_ns();

	while (tu_tcp_half_open(port) != 0 || tu_tcp_accept_queue(port) != 0) {
		ck_assert_msg(now_mono_ns() - t0 < 20 * NSEC_PER_SEC, "the kernel still holds %d "
			      "half-open and %d to accept after 20 s", tu_tcp_half_open(port),
			      tu_tcp_accept_queue(port));
		tu_sleep_ms(20);
	}
	/* accept() empties the queue before the exporter seats or parks what it took. */
	tu_sleep_ms(200);
}

/*
 * Every slot held by a slow client; a connection reaches the exporter
 * with nothing to read (as a SYN cookie's does under a flood, and as a
 * silent one does once the kernel's deferred accept gives up on it): it
 * waits for its bytes without taking anyone's slot, then takes one with
 * its request and is answered.  Silent ones are closed after their wait,
 * and no more than HTTP_MAX_PARKED hold a descriptor.
 */
START_TEST(a_connection_accepted_before_its_bytes_takes_no_slot_until_they_come)
{
	enum { SILENT = HTTP_MAX_PARKED + 88 };
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	static int fd[HTTP_MAX_CONNECTIONS], silent[SILENT];
	int held, quiet, closed, first, fds_peak, eof = 0;
	double evicted0 = -1, evicted = -1;
	char line[256], *body;
	uint64_t t0;

	ck_assert_int_eq(tu_stack_start(&rig, "steady", 500, 0), 0);
	body = tu_scrape(rig.metrics_port);
	ck_assert_ptr_nonnull(body);
	tu_metric(body, "zernel_exporter_http_evicted_total", NULL, &evicted0);
	free(body);
	held = fill_slots(fd, 0x070000u);
	/*
	 * One urgent byte passes the deferred accept as a SYN cookie's bare
	 * ACK does, and adds nothing to the stream the exporter reads.
	 */
	quiet = tu_connect_from(0x071000u, rig.metrics_port, 0, 0);
	ck_assert_int_ge(quiet, 0);
	ck_assert_int_eq(send(quiet, "!", 1, MSG_OOB | MSG_NOSIGNAL), 1);
	wait_handed_over(rig.metrics_port);
	closed = closed_by_exporter(fd, HTTP_MAX_CONNECTIONS, &first);
	fprintf(stderr, "a connection accepted with nothing to read: %d slow clients closed for it\n",
		closed);
	ck_assert_int_eq(closed, 0);
	tu_exchange_line(quiet, req, line, sizeof(line));
	ck_assert_msg(strncmp(line, "HTTP/1.1 200", 12) == 0, "its request got \"%s\"", line);
	/* With its request it took the slot of the slow client waiting longest. */
	closed = closed_by_exporter(fd, HTTP_MAX_CONNECTIONS, &first);
	ck_assert_int_eq(closed, 1);
	ck_assert_int_eq(first, 0);
	close(quiet);

	for (int i = 0; i < SILENT; i++) {
		silent[i] = tu_connect_from(0x072000u + (unsigned int)i, rig.metrics_port, 0, 0);
		ck_assert_int_ge(silent[i], 0);
	}
	wait_handed_over(rig.metrics_port);
	fds_peak = open_fds(rig.exporter);
	t0 = now_mono_ns();
	for (int i = 0; i < SILENT; i++) {
		struct pollfd p = { .fd = silent[i], .events = POLLIN };
		int left = 15000 - (int)((now_mono_ns() - t0) / NSEC_PER_MSEC);
		char c;

		if (poll(&p, 1, left > 0 ? left : 0) == 1 && read(silent[i], &c, 1) <= 0)
			eof++;
	}
	for (int i = 0; i < SILENT; i++)
		close(silent[i]);
	for (int i = 0; i < HTTP_MAX_CONNECTIONS; i++)
		close(fd[i]);
	body = tu_scrape(rig.metrics_port);
	if (body)
		tu_metric(body, "zernel_exporter_http_evicted_total", NULL, &evicted);
	free(body);
	fprintf(stderr, "%d silent connections handed over: exporter at %d descriptors (%d before "
		"them), %d closed within 15 s; %.0f slot given to a newcomer in all\n", SILENT,
		fds_peak, held, eof, evicted - evicted0);
	ck_assert_int_le(fds_peak, held + (int)HTTP_MAX_PARKED + 8);
	ck_assert_int_eq(eof, SILENT);
	/* The only one: the slot the request took. */
	ck_assert_double_eq(evicted - evicted0, 1);
}
END_TEST

/*
 * 10,000 connections to the feed port from five addresses: the exporter's
 * descriptors stay bounded by its caps, /metrics keeps answering, and the
 * slots come back once they close.
 */
START_TEST(ten_thousand_connections_never_exhaust_descriptors)
{
	enum { CONNS = 10000, HOSTS = 5 };
	int *fd = calloc(CONNS, sizeof(int));
	int fds_max = 0;
	char line[256];

	ck_assert_ptr_nonnull(fd);
	tu_raise_nofile();
	ck_assert_int_eq(tu_stack_start(&rig, "steady", 500, 0), 0);
	for (int i = 0; i < CONNS; i++) {
		fd[i] = tu_connect_slow(10 + (unsigned int)i % HOSTS, rig.ws_port);
		if (i % 1000 == 999) {
			int n = open_fds(rig.exporter);

			fds_max = n > fds_max ? n : fds_max;
			ck_assert_int_eq(tu_wait_http(rig.metrics_port, "/healthz", 200, 3000), 0);
		}
	}
	tu_sleep_ms(500);
	fds_max = open_fds(rig.exporter) > fds_max ? open_fds(rig.exporter) : fds_max;
	ck_assert_int_eq(tu_wait_http(rig.metrics_port, "/healthz", 200, 3000), 0);
	fprintf(stderr, "10000 feed connections: exporter peaked at %d descriptors\n", fds_max);
	ck_assert_int_lt(fds_max, HOSTS * WS_MAX_PER_ADDR + HTTP_MAX_CONNECTIONS + 256);
	for (int i = 0; i < CONNS; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	free(fd);
	/* Every slot came back: a new client from a flooding address gets the feed. */
	tu_sleep_ms(1000);
	{
		int c = tu_connect_from(10, rig.ws_port, 0, 0);

		ck_assert_int_ge(c, 0);
		tu_exchange_line(c, "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
			 line, sizeof(line));
		ck_assert_msg(strncmp(line, "HTTP/1.1 101", 12) == 0, "after the flood: %s", line);
		close(c);
	}
}
END_TEST

Suite *resilience_suite(void);
Suite *resilience_suite(void)
{
	Suite *s = suite_create("resilience");
	TCase *seg = tcase_create("segment");
	TCase *share = tcase_create("fairshare");

	tcase_add_checked_fixture(seg, NULL, rig_teardown);
	tcase_set_timeout(seg, 120);
	tcase_add_test(seg, live_header_bit_flips_are_invalid_at_once_then_heal);
	tcase_add_test(seg, stuck_seqlock_costs_requests_nothing);
	suite_add_tcase(s, seg);

	tcase_add_checked_fixture(share, NULL, rig_teardown);
	tcase_set_timeout(share, 180);
	/* First: the floods leave /proc/net/tcp full of TIME_WAIT sockets for minutes. */
	tcase_add_test(share, connections_that_send_nothing_take_no_slot);
	tcase_add_test(share, a_connection_accepted_before_its_bytes_takes_no_slot_until_they_come);
	tcase_add_test(share, internal_protocols_old_versions_and_http2_are_refused);
	tcase_add_test(share, slow_connections_leave_scrapes_their_share);
	tcase_add_test(share, slow_clients_from_many_addresses_leave_scrapes_a_slot);
	tcase_add_test(share, a_request_that_came_with_its_connection_keeps_its_slot);
	tcase_add_test(share, ten_thousand_connections_never_exhaust_descriptors);
	suite_add_tcase(s, share);
	return s;
}
