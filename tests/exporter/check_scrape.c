/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /metrics as scrapers ask for it, against the real collector --simulate
 * and exporter: the segment part cached per publish (the same bytes at
 * every scrape until the next publish, a new publish seen at once), the
 * per-request counters exact, gzip when Accept-Encoding allows it, HEAD,
 * and the protobuf exposition when Accept prefers it.
 */
#include <arpa/inet.h>
#include <check.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <zlib.h>

#include "catalog/catalog.h"
#include "proto/io/prometheus/client/metrics.pb-c.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define RESP_MAX	(32u << 20)

static struct tu_stack rig;

struct resp {
	char *raw;		/* status line, headers, body; NUL-terminated */
	size_t len;
	int status;
	const char *body;	/* inside raw */
	size_t body_len;
};

/* A request with extra header lines (each ending in \r\n) on a new connection. */
static void request(const char *method, const char *headers, struct resp *r)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(rig.metrics_port) };
	struct timeval tv = { .tv_sec = 10 };
	char req[2048];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int n = snprintf(req, sizeof(req), "%s /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n%s"
			 "Connection: close\r\n\r\n", method, headers);
	const char *sep;

	memset(r, 0, sizeof(*r));
	r->raw = malloc(RESP_MAX);
	ck_assert_ptr_nonnull(r->raw);
	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
	for (;;) {
		ssize_t got = read(fd, r->raw + r->len, RESP_MAX - r->len - 1);

		if (got <= 0)
			break;
		r->len += (size_t)got;
	}
	close(fd);
	r->raw[r->len] = '\0';
	ck_assert_int_eq(sscanf(r->raw, "HTTP/1.%*d %d", &r->status), 1);
	sep = strstr(r->raw, "\r\n\r\n");
	ck_assert_ptr_nonnull(sep);
	r->body = sep + 4;
	r->body_len = r->len - (size_t)(r->body - r->raw);
}

/* Value of header name (lower case, with ": "), or NULL; points into raw. */
static const char *header(const struct resp *r, const char *name)
{
	const char *h = strcasestr(r->raw, name);

	return h && h < r->body ? h + strlen(name) : NULL;
}

/* The body as text, inflated when it came gzipped; the caller frees. */
static char *text_of(const struct resp *r)
{
	size_t cap = RESP_MAX;
	char *out = malloc(cap);
	z_stream z;

	ck_assert_ptr_nonnull(out);
	if (!header(r, "content-encoding: gzip")) {
		memcpy(out, r->body, r->body_len);
		out[r->body_len] = '\0';
		return out;
	}
	memset(&z, 0, sizeof(z));
	ck_assert_int_eq(inflateInit2(&z, 16 + 15), Z_OK);
	z.next_in = (Bytef *)(uintptr_t)r->body;
	z.avail_in = (uInt)r->body_len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)(cap - 1);
	ck_assert_int_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
	ck_assert_uint_eq(z.avail_in, 0);	/* one member, nothing after it */
	out[cap - 1 - z.avail_out] = '\0';
	inflateEnd(&z);
	return out;
}

static void resp_free(struct resp *r)
{
	free(r->raw);
	memset(r, 0, sizeof(*r));
}

/*
 * Length of the segment part: the text before the first family rendered
 * per request (the catalog's status and exporter rows).
 */
static size_t data_part_len(const char *text)
{
	size_t end = strlen(text);

	for (size_t i = 0; i < cat_metrics_count; i++) {
		const struct cat_metric *m = &cat_metrics[i];
		char want[160];
		const char *p;

		if (!m->prom || cat_rows_segment(m->rows))
			continue;
		snprintf(want, sizeof(want), "# HELP %s ", m->prom);
		p = strstr(text, want);
		if (p && (size_t)(p - text) < end)
			end = (size_t)(p - text);
	}
	return end;
}

static double value(const char *text, const char *name)
{
	double v = NAN;

	ck_assert_msg(tu_metric(text, name, NULL, &v) == 0, "no %s", name);
	return v;
}

START_TEST(scrape_segment_part_is_cached_per_publish_and_counters_are_per_request)
{
	struct resp a, b, c, h;
	char *ta = NULL, *tb = NULL, *tc = NULL;
	size_t la;
	int tries;

	/* A publish every 3 s: three scrapes fit between two, most of the time. */
	ck_assert_int_eq(tu_stack_start(&rig, "steady", 3000, 0), 0);
	for (tries = 0; tries < 10; tries++) {
		free(ta);
		free(tb);
		free(tc);
		request("GET", "", &a);
		request("GET", "Accept-Encoding: gzip\r\n", &b);
		request("GET", "", &c);
		ta = text_of(&a);
		tb = text_of(&b);
		tc = text_of(&c);
		if (value(ta, "zernel_collector_last_publish_timestamp_seconds") ==
		    value(tc, "zernel_collector_last_publish_timestamp_seconds"))
			break;
		resp_free(&a);
		resp_free(&b);
		resp_free(&c);
	}
	ck_assert_int_lt(tries, 10);
	ck_assert_int_eq(a.status, 200);
	ck_assert_int_eq(b.status, 200);
	ck_assert_ptr_null(header(&a, "content-encoding:"));
	ck_assert_ptr_nonnull(header(&b, "content-encoding: gzip"));
	ck_assert_ptr_nonnull(header(&b, "vary: Accept, Accept-Encoding"));
	ck_assert_uint_lt(b.body_len, a.body_len / 4);

	/* One publish: the same segment part, byte for byte, gzipped or not. */
	la = data_part_len(ta);
	ck_assert_uint_gt(la, 10000);
	ck_assert_uint_eq(data_part_len(tb), la);
	ck_assert_uint_eq(data_part_len(tc), la);
	ck_assert(memcmp(ta, tb, la) == 0);
	ck_assert(memcmp(ta, tc, la) == 0);
	/* The counters of each request are its own. */
	ck_assert(value(tb, "zernel_exporter_scrapes_total") ==
		  value(ta, "zernel_exporter_scrapes_total") + 1);
	ck_assert(value(tc, "zernel_exporter_scrapes_total") ==
		  value(ta, "zernel_exporter_scrapes_total") + 2);

	/* HEAD with gzip: the headers of that GET, and no body. */
	request("HEAD", "Accept-Encoding: gzip\r\n", &h);
	ck_assert_int_eq(h.status, 200);
	ck_assert_ptr_nonnull(header(&h, "content-encoding: gzip"));
	ck_assert_uint_eq(h.body_len, 0);
	ck_assert(labs(strtol(header(&h, "content-length: "), NULL, 10) - (long)b.body_len) < 64);
	resp_free(&h);

	/* The next publish is served at once: a new timestamp, the new segment part. */
	for (tries = 0; tries < 80; tries++) {
		struct resp d;
		char *td;

		tu_sleep_ms(100);
		request("GET", "Accept-Encoding: gzip\r\n", &d);
		td = text_of(&d);
		resp_free(&d);
		if (value(td, "zernel_collector_last_publish_timestamp_seconds") !=
		    value(ta, "zernel_collector_last_publish_timestamp_seconds")) {
			ck_assert(value(td, "zernel_collector_publishes_total") >
				  value(ta, "zernel_collector_publishes_total"));
			free(td);
			break;
		}
		free(td);
	}
	ck_assert_int_lt(tries, 80);
	free(ta);
	free(tb);
	free(tc);
	resp_free(&a);
	resp_free(&b);
	resp_free(&c);
	tu_stack_stop(&rig);
}
END_TEST

START_TEST(scrape_without_fresh_segment_gzips_the_status_alone)
{
	struct resp r;
	char *t;

	tu_stack_init(&rig);
	ck_assert_int_eq(tu_stack_start_exporter(&rig), 0);
	request("GET", "Accept-Encoding: deflate, gzip;q=0.8\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(header(&r, "content-encoding: gzip"));
	t = text_of(&r);
	ck_assert(value(t, "zernel_collector_up") == 0);
	ck_assert_ptr_null(strstr(t, "zernel_gpu_memory_used_bytes{"));
	free(t);
	resp_free(&r);
	/* gzip refused: plain. */
	request("GET", "Accept-Encoding: gzip;q=0\r\n", &r);
	ck_assert_ptr_null(header(&r, "content-encoding:"));
	resp_free(&r);
	tu_stack_stop(&rig);
}
END_TEST

/* Prometheus with native histograms on. */
#define ACCEPT_PROTOBUF "Accept: application/vnd.google.protobuf;" \
	"proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7," \
	"text/plain;version=0.0.4;q=0.3,*/*;q=0.1\r\n"

/*
 * Walks a delimited protobuf body: every message must unpack; returns the
 * offset of the first per-request family (as data_part_len) and counts
 * the families in *n.
 */
static size_t proto_data_part_len(const char *body, size_t len, size_t *n)
{
	const uint8_t *p = (const uint8_t *)body, *end = p + len;
	size_t data_end = len;

	*n = 0;
	while (p < end) {
		const uint8_t *start = p;
		Io__Prometheus__Client__MetricFamily *f;
		uint64_t l = 0;
		int shift = 0;

		do {
			ck_assert(p < end && shift < 64);
			l |= (uint64_t)(*p & 0x7f) << shift;
			shift += 7;
		} while (*p++ & 0x80);
		ck_assert_uint_le(l, (uint64_t)(end - p));
		f = io__prometheus__client__metric_family__unpack(NULL, l, p);
		ck_assert_ptr_nonnull(f);
		for (size_t i = 0; i < cat_metrics_count && data_end == len; i++)
			if (cat_metrics[i].prom && !cat_rows_segment(cat_metrics[i].rows) &&
			    strcmp(cat_metrics[i].prom, f->name) == 0)
				data_end = (size_t)(start - (const uint8_t *)body);
		io__prometheus__client__metric_family__free_unpacked(f, NULL);
		p += l;
		(*n)++;
	}
	return data_end;
}

START_TEST(scrape_protobuf_when_accept_prefers_it)
{
	struct resp a, b;
	char *tb = NULL;
	size_t la = 0, lb, na, nb;
	int tries;

	ck_assert_int_eq(tu_stack_start(&rig, "steady", 3000, 0), 0);
	for (tries = 0; tries < 10; tries++) {
		request("GET", ACCEPT_PROTOBUF, &a);
		request("GET", ACCEPT_PROTOBUF "Accept-Encoding: gzip\r\n", &b);
		ck_assert_int_eq(a.status, 200);
		ck_assert_ptr_nonnull(header(&a, "content-type: application/vnd.google.protobuf; "
					     "proto=io.prometheus.client.MetricFamily; encoding=delimited"));
		ck_assert_ptr_nonnull(header(&b, "content-encoding: gzip"));
		tb = text_of(&b);	/* inflated: bytes, not text */
		la = proto_data_part_len(a.body, a.body_len, &na);
		/* The inflated size: the gzip trailer's ISIZE. */
		lb = (size_t)((const uint8_t *)b.body)[b.body_len - 4] |
		     (size_t)((const uint8_t *)b.body)[b.body_len - 3] << 8 |
		     (size_t)((const uint8_t *)b.body)[b.body_len - 2] << 16 |
		     (size_t)((const uint8_t *)b.body)[b.body_len - 1] << 24;
		if (la == proto_data_part_len(tb, lb, &nb) && memcmp(a.body, tb, la) == 0)
			break;
		/* A publish between the two: again. */
		free(tb);
		tb = NULL;
		resp_free(&a);
		resp_free(&b);
	}
	ck_assert_int_lt(tries, 10);
	ck_assert_uint_gt(la, 10000);
	ck_assert_uint_eq(na, nb);
	ck_assert_uint_gt(na, 40);
	free(tb);
	resp_free(&a);
	resp_free(&b);

	/* Without protobuf in Accept, or preferring text: text. */
	request("GET", "Accept: text/plain;version=0.0.4;q=0.9,application/vnd.google.protobuf;"
		"proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5\r\n", &a);
	ck_assert_ptr_nonnull(header(&a, "content-type: text/plain; version=0.0.4"));
	resp_free(&a);
	tu_stack_stop(&rig);
}
END_TEST

static void teardown(void)
{
	tu_stack_stop(&rig);
}

Suite *scrape_suite(void);
Suite *scrape_suite(void)
{
	Suite *s = suite_create("scrape");
	TCase *tc = tcase_create("forms");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, scrape_segment_part_is_cached_per_publish_and_counters_are_per_request);
	tcase_add_test(tc, scrape_without_fresh_segment_gzips_the_status_alone);
	tcase_add_test(tc, scrape_protobuf_when_accept_prefers_it);
	suite_add_tcase(s, tc);
	return s;
}
