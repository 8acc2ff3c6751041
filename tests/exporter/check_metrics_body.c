/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /metrics forms cached per publish (exporter/http/metrics_body.h): the cached
 * text is the uncached render, a gzip member made of the cached head and
 * a per-request tail inflates to their concatenation, and the Accept and
 * Accept-Encoding lists are read as Prometheus and browsers write them.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/sbuf.h"
#include "common/util.h"
#include "exporter/http/gzip_body.h"
#include "exporter/http/http_accept.h"
#include "exporter/http/metrics_ahead.h"
#include "exporter/http/metrics_body.h"
#include "exporter/http/scrape_forecast.h"
#include "exporter/prom/prom.h"
#include "exporter/prom/prom_proto.h"
#include "exporter/stats.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

static char shm_name[64];
static struct shm_writer writer;
static struct shm_reader reader;
static struct shm_snapshot snap;

/* n processes with samples spread over a few buckets of every family. */
static void publish(unsigned int n, uint64_t scale)
{
	struct shm_header_fields *h = &writer.base->h;
	struct shm_proc *p;
	char reason[256];

	shm_writer_begin(&writer);
	p = shm_writer_table(&writer, SHM_TABLE_PROCS);
	for (unsigned int i = 0; i < n; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		p[i].pid = 100 + i;
		p[i].ppid = 1;
		p[i].watch_reason = SHM_WATCH_CUDA;
		snprintf(p[i].comm, SHM_COMM_LEN, "trainer-%u", i % 1000u);
		for (int f = 0; f < SHM_FAMILY_COUNT; f++) {
			struct shm_latency *l = &p[i].lat[f];

			l->bucket[2] = (i + 1) * scale;
			l->bucket[9] = 3 * scale;
			l->count = l->bucket[2] + l->bucket[9];
			l->sum_ns = 12345 * l->count;
			l->window_count = l->count;
			l->window_p50_ns = 400;
			l->window_p90_ns = 150000;
			l->window_p99_ns = 180000;
			l->window_max_ns = 190000;
		}
	}
	h->table[SHM_TABLE_PROCS].count = n;
	h->heartbeat_mono_ns = now_mono_ns();
	h->heartbeat_real_ns = 1700000000123456789ull;
	shm_writer_end(&writer);
	ck_assert_msg(shm_reader_snapshot(&reader, &snap, reason, sizeof(reason)) == SHM_READ_OK,
		      "crafted segment rejected: %s", reason);
}

static void setup(void)
{
	struct shm_writer_opts o;

	tu_unique_shm_name(shm_name, sizeof(shm_name));
	tu_shm_opts(&o, shm_name, (struct shm_capacity){ 64, 8, 4, 4 });
	ck_assert_int_eq(shm_writer_create(&writer, &o), 0);
	shm_reader_init(&reader, shm_name);
	publish(16, 1);
}

static void teardown(void)
{
	shm_snapshot_free(&snap);
	shm_reader_close(&reader);
	shm_writer_close(&writer, 1);
}

/* Inflates a whole gzip stream of len bytes; the caller frees. */
static char *gunzip(const unsigned char *in, size_t len, size_t *out_len)
{
	size_t cap = 64u << 20;
	char *out = malloc(cap);
	z_stream z;

	ck_assert_ptr_nonnull(out);
	memset(&z, 0, sizeof(z));
	ck_assert_int_eq(inflateInit2(&z, 16 + 15), Z_OK);
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)cap;
	/* Z_STREAM_END only after the trailer's CRC and size were checked. */
	ck_assert_int_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
	ck_assert_uint_eq(z.avail_in, 0);
	*out_len = cap - z.avail_out;
	inflateEnd(&z);
	return out;
}

/* The member the server sends: header, head (may be NULL), tail, trailer. */
static unsigned char *member(const struct gzip_part *head, const char *tail, size_t *len)
{
	struct gzip_part t;
	unsigned char *m;
	size_t o = 0;

	ck_assert_int_eq(gzip_part_make(&t, tail, strlen(tail), 1), 0);
	m = malloc(GZIP_BODY_HEADER_LEN + (head ? head->len : 0) + t.len + GZIP_BODY_TRAILER_LEN);
	ck_assert_ptr_nonnull(m);
	memcpy(m, gzip_body_header(), GZIP_BODY_HEADER_LEN);
	o = GZIP_BODY_HEADER_LEN;
	if (head) {
		memcpy(m + o, head->data, head->len);
		o += head->len;
	}
	memcpy(m + o, t.data, t.len);
	o += t.len;
	gzip_body_trailer(m + o, head, &t);
	o += GZIP_BODY_TRAILER_LEN;
	gzip_part_free(&t);
	*len = o;
	return m;
}

START_TEST(metrics_body_text_is_the_uncached_render)
{
	struct metrics_body *b = metrics_body_new(&snap, 64u << 20, METRICS_TEXT);
	struct sbuf direct;

	ck_assert_ptr_nonnull(b);
	sbuf_init(&direct, 64u << 20, 0);
	ck_assert_int_eq(prom_render_data(&(struct prom_out){ .b = &direct }, &snap), 0);
	ck_assert_uint_gt(direct.len, 1000);
	ck_assert_uint_eq(b->form[METRICS_TEXT].len, direct.len);
	ck_assert(memcmp(b->form[METRICS_TEXT].data, direct.data, direct.len) == 0);
	ck_assert(metrics_body_current(b, &snap));

	/* A new publish is a new body; the old one no longer matches it. */
	tu_sleep_ms(2);
	publish(17, 2);
	ck_assert(!metrics_body_current(b, &snap));
	metrics_body_unref(b);
	b = metrics_body_new(&snap, 64u << 20, METRICS_TEXT);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(strstr(b->form[METRICS_TEXT].data, "pid=\"116\""));
	metrics_body_unref(b);
	sbuf_free(&direct);
}
END_TEST

START_TEST(metrics_body_gzip_head_and_tail_inflate_to_their_text)
{
	static const char tail[] = "# HELP zernel_x x.\n# TYPE zernel_x counter\nzernel_x 7\n";
	struct metrics_body *b = metrics_body_new(&snap, 64u << 20, METRICS_TEXT);
	const struct metrics_form *t;
	unsigned char *m;
	size_t len, out_len;
	char *out;

	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(metrics_body_form(b, &snap, METRICS_TEXT, 1), 0);
	t = &b->form[METRICS_TEXT];
	ck_assert_ptr_nonnull(t->gz.data);
	ck_assert_uint_lt(t->gz.len, t->len / 4);	/* it does compress */

	m = member(&t->gz, tail, &len);
	out = gunzip(m, len, &out_len);
	ck_assert_uint_eq(out_len, t->len + strlen(tail));
	ck_assert(memcmp(out, t->data, t->len) == 0);
	ck_assert(memcmp(out + t->len, tail, strlen(tail)) == 0);
	free(out);
	free(m);

	/* Without a fresh segment only the tail is sent. */
	m = member(NULL, tail, &len);
	out = gunzip(m, len, &out_len);
	ck_assert_uint_eq(out_len, strlen(tail));
	ck_assert(memcmp(out, tail, out_len) == 0);
	free(out);
	free(m);
	metrics_body_unref(b);
}
END_TEST

/* snap's data families as protobuf, rendered directly. */
static void proto_of(struct sbuf *out)
{
	struct prom_out o;

	sbuf_init(out, 64u << 20, 0);
	ck_assert_int_eq(prom_out_proto(&o, out), 0);
	ck_assert_int_eq(prom_render_data(&o, &snap), 0);
	ck_assert_int_eq(prom_out_proto_end(&o), 0);
	ck_assert_uint_gt(out->len, 1000);
}

/*
 * A body's protobuf form is rendered from its own publish: while that is
 * the snapshot at hand, when first asked for; once another publish came,
 * not at all (-ESTALE), as its snapshot is gone.  A body can start with
 * the protobuf form alone.
 */
START_TEST(metrics_body_protobuf_is_rendered_from_its_own_publish)
{
	struct metrics_body *b = metrics_body_new(&snap, 64u << 20, METRICS_TEXT), *pb;
	struct sbuf direct;

	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_null(b->form[METRICS_PROTO].data);
	ck_assert_int_eq(metrics_body_form(b, &snap, METRICS_PROTO, 0), 0);
	proto_of(&direct);
	ck_assert_uint_eq(b->form[METRICS_PROTO].len, direct.len);
	ck_assert(memcmp(b->form[METRICS_PROTO].data, direct.data, direct.len) == 0);
	metrics_body_unref(b);
	sbuf_free(&direct);

	b = metrics_body_new(&snap, 64u << 20, METRICS_TEXT);
	ck_assert_ptr_nonnull(b);
	tu_sleep_ms(2);
	publish(19, 3);
	ck_assert_int_eq(metrics_body_form(b, &snap, METRICS_PROTO, 0), -ESTALE);
	ck_assert_int_eq(metrics_body_form(b, NULL, METRICS_PROTO, 1), -ESTALE);
	ck_assert_ptr_null(b->form[METRICS_PROTO].data);
	/* What it has it still serves. */
	ck_assert_int_eq(metrics_body_form(b, &snap, METRICS_TEXT, 1), 0);
	ck_assert_ptr_nonnull(b->form[METRICS_TEXT].gz.data);

	pb = metrics_body_new(&snap, 64u << 20, METRICS_PROTO);
	ck_assert_ptr_nonnull(pb);
	ck_assert_ptr_null(pb->form[METRICS_TEXT].data);
	proto_of(&direct);
	ck_assert_uint_eq(pb->form[METRICS_PROTO].len, direct.len);
	ck_assert(memcmp(pb->form[METRICS_PROTO].data, direct.data, direct.len) == 0);
	metrics_body_unref(pb);
	metrics_body_unref(b);
	sbuf_free(&direct);
}
END_TEST

/*
 * The body a view hands out is the render of the publish its status
 * names; with latest, that is the last publish.
 */
static void assert_view_is_publish(struct metrics_ahead *a, int latest)
{
	struct metrics_view v;
	struct sbuf direct;

	/* Not latest: any publish of this collector will do (heartbeat 0). */
	ck_assert_int_eq(metrics_ahead_view(a, snap.hdr->generation,
					    latest ? snap.hdr->heartbeat_mono_ns : 0, 0, &v), 0);
	ck_assert_int_eq(v.status, SHM_READ_OK);
	ck_assert_ptr_nonnull(v.body);
	ck_assert_uint_eq(v.body->heartbeat_mono_ns, v.heartbeat_mono_ns);
	if (!latest) {
		metrics_body_unref(v.body);
		return;
	}
	ck_assert(metrics_body_current(v.body, &snap));
	ck_assert_uint_eq(v.heartbeat_mono_ns, snap.hdr->heartbeat_mono_ns);
	sbuf_init(&direct, 64u << 20, 0);
	ck_assert_int_eq(prom_render_data(&(struct prom_out){ .b = &direct }, &snap), 0);
	ck_assert_uint_eq(v.body->form[METRICS_TEXT].len, direct.len);
	ck_assert(memcmp(v.body->form[METRICS_TEXT].data, direct.data, direct.len) == 0);
	sbuf_free(&direct);
	metrics_body_unref(v.body);
}

START_TEST(metrics_ahead_serves_the_current_publish)
{
	struct metrics_ahead a;

	ck_assert_int_eq(metrics_ahead_init(&a, shm_name, 64u << 20), 0);
	ck_assert_int_eq(metrics_ahead_start(&a), 0);
	/* No scrape yet: nothing rendered ahead; the first one asks and waits. */
	assert_view_is_publish(&a, 1);
	/*
	 * A new publish: at once, a body and a status of the same publish;
	 * a few polls later, this publish.
	 */
	for (int i = 0; i < 5; i++) {
		tu_sleep_ms(2);
		publish(10 + i, 3);
		assert_view_is_publish(&a, 0);
		tu_sleep_ms(10 * METRICS_AHEAD_POLL_MS);
		assert_view_is_publish(&a, 1);
	}
	metrics_ahead_free(&a);
}
END_TEST

#define SEC(x) ((uint64_t)(x) * NSEC_PER_SEC)

START_TEST(metrics_ahead_keeps_a_form_while_its_scraper_is_expected_back)
{
	const unsigned int text = METRICS_FORM_BIT(METRICS_TEXT, 0);
	const unsigned int text_gz = METRICS_FORM_BIT(METRICS_TEXT, 1);
	const unsigned int pb_gz = METRICS_FORM_BIT(METRICS_PROTO, 1);
	struct metrics_ahead a;

	ck_assert_int_eq(metrics_ahead_init(&a, shm_name, 64u << 20), 0);
	ck_assert_uint_eq(metrics_ahead_forms(&a, SEC(1)), 0);
	/* Asked once (a curl): kept for METRICS_AHEAD_EAGER_MS. */
	metrics_ahead_want(&a, METRICS_TEXT, 0, SEC(100));
	ck_assert_uint_eq(metrics_ahead_forms(&a, SEC(102)), text);
	ck_assert_uint_eq(metrics_ahead_forms(&a, SEC(104)), 0);
	/* A Prometheus every 15 s: kept for twice that after each scrape. */
	metrics_ahead_want(&a, METRICS_PROTO, 1, SEC(200));
	metrics_ahead_want(&a, METRICS_PROTO, 1, SEC(215));
	ck_assert_uint_eq(metrics_ahead_forms(&a, SEC(244)), pb_gz);
	ck_assert_uint_eq(metrics_ahead_forms(&a, SEC(246)), 0);
	/* A burst (a benchmark) ends: its form goes after METRICS_AHEAD_EAGER_MS. */
	for (int i = 0; i < 1000; i++)
		metrics_ahead_want(&a, METRICS_TEXT, 1, SEC(300) + (uint64_t)i * NSEC_PER_MSEC);
	ck_assert_uint_eq(metrics_ahead_forms(&a, SEC(302)), text_gz);
	ck_assert_uint_eq(metrics_ahead_forms(&a, SEC(305)), 0);
	/* A scraper hours apart is not waited for longer than METRICS_AHEAD_FORM_KEEP_MS. */
	metrics_ahead_want(&a, METRICS_TEXT, 0, SEC(400));
	metrics_ahead_want(&a, METRICS_TEXT, 0, SEC(400 + 7200));
	ck_assert_uint_eq(metrics_ahead_forms(&a, SEC(7600) + METRICS_AHEAD_FORM_KEEP_MS *
						   NSEC_PER_MSEC), text);
	ck_assert_uint_eq(metrics_ahead_forms(&a, SEC(7601) + METRICS_AHEAD_FORM_KEEP_MS *
						   NSEC_PER_MSEC), 0);
	metrics_ahead_free(&a);
}
END_TEST

/* The newest publish's body, rendered ahead (the scrape before made the thread eager). */
static struct metrics_body *body_ahead(struct metrics_ahead *a, unsigned int procs)
{
	struct metrics_view v;

	publish(procs, 3);
	for (int i = 0; i < 200; i++) {
		/* As a frequent scraper would: the thread stays eager. */
		atomic_store(&a->last_scrape_ns, now_mono_ns());
		atomic_store(&a->scrape_gap_ns, METRICS_AHEAD_POLL_MS * NSEC_PER_MSEC);
		tu_sleep_ms(METRICS_AHEAD_POLL_MS);
		pthread_mutex_lock(&a->lock);
		v = a->view;
		if (v.body && v.heartbeat_mono_ns == snap.hdr->heartbeat_mono_ns)
			metrics_body_ref(v.body);
		else
			v.body = NULL;
		pthread_mutex_unlock(&a->lock);
		if (v.body)
			return v.body;
	}
	ck_abort_msg("the publish of %u processes was not rendered ahead", procs);
	return NULL;
}

START_TEST(metrics_ahead_renders_only_the_forms_expected_back)
{
	struct metrics_ahead a;
	struct metrics_body *b;
	uint64_t now = now_mono_ns();

	ck_assert_int_eq(metrics_ahead_init(&a, shm_name, 64u << 20), 0);
	ck_assert_int_eq(metrics_ahead_start(&a), 0);
	/* Protobuf asked for once, long ago; text plain now. */
	metrics_ahead_want(&a, METRICS_PROTO, 0, now > SEC(10) ? now - SEC(10) : 1);
	metrics_ahead_want(&a, METRICS_TEXT, 0, now_mono_ns());
	assert_view_is_publish(&a, 1);
	b = body_ahead(&a, 20);
	ck_assert_ptr_nonnull(b->form[METRICS_TEXT].data);
	ck_assert_ptr_null(b->form[METRICS_TEXT].gz.data);
	ck_assert_ptr_null(b->form[METRICS_PROTO].data);
	metrics_body_unref(b);
	/* Protobuf gzipped asked for now: the next publish has it ready. */
	metrics_ahead_want(&a, METRICS_PROTO, 1, now_mono_ns());
	assert_view_is_publish(&a, 1);
	b = body_ahead(&a, 21);
	ck_assert_ptr_nonnull(b->form[METRICS_PROTO].data);
	ck_assert_ptr_nonnull(b->form[METRICS_PROTO].gz.data);
	metrics_body_unref(b);
	metrics_ahead_free(&a);
}
END_TEST

/* A scraper every 15 s, renders of 12 ms, polls of 20 ms, a publish a second. */
static struct scrape_forecast_input steady_scraper(void)
{
	return (struct scrape_forecast_input){
		.asked_ns = { SEC(1000), SEC(985), SEC(970), SEC(955) },
		.render_ns = 12 * NSEC_PER_MSEC, .poll_ns = 20 * NSEC_PER_MSEC,
		.publish_ns = SEC(1),
	};
}

static void assert_window(const struct scrape_forecast_input *in, uint64_t expected,
			  uint64_t lead)
{
	struct scrape_forecast_window w;

	ck_assert_int_eq(scrape_forecast_window(in, &w), 1);
	ck_assert_uint_eq(w.from_ns, expected - lead);
	ck_assert_uint_eq(w.until_ns, expected + lead);
}

static void assert_no_window(const struct scrape_forecast_input *in)
{
	struct scrape_forecast_window w;

	ck_assert_int_eq(scrape_forecast_window(in, &w), 0);
	ck_assert_uint_eq(w.from_ns, 0);
	ck_assert_uint_eq(w.until_ns, 0);
}

START_TEST(scrape_forecast_renders_a_lead_before_a_steady_scraper)
{
	struct scrape_forecast_input in = steady_scraper();

	/* Two renders, two polls: 64 ms either side of the request expected at 1015 s. */
	assert_window(&in, SEC(1015), 64 * NSEC_PER_MSEC);
	/* The scraper's jitter widens the lead: 0.1 s late once, the period 30.1 s. */
	in.asked_ns[0] = SEC(1000) + 100 * NSEC_PER_MSEC;
	assert_window(&in, SEC(985) + SEC(30) + 100 * NSEC_PER_MSEC, 164 * NSEC_PER_MSEC);
	/* A lead of exactly half a publish still leaves the body recent. */
	in = steady_scraper();
	in.publish_ns = 128 * NSEC_PER_MSEC;
	assert_window(&in, SEC(1015), 64 * NSEC_PER_MSEC);
	/*
	 * Two Prometheus replicas every 15 s, 4 s apart: each one's next
	 * scrape is expected, the other's after it.
	 */
	in = steady_scraper();
	in.asked_ns[0] = SEC(1004);
	in.asked_ns[1] = SEC(1000);
	in.asked_ns[2] = SEC(989);
	in.asked_ns[3] = SEC(985);
	assert_window(&in, SEC(1015), 64 * NSEC_PER_MSEC);
	in.asked_ns[3] = in.asked_ns[2];
	in.asked_ns[2] = in.asked_ns[1];
	in.asked_ns[1] = in.asked_ns[0];
	in.asked_ns[0] = SEC(1015);
	assert_window(&in, SEC(1019), 64 * NSEC_PER_MSEC);
}
END_TEST

START_TEST(scrape_forecast_none_without_a_steady_interval_or_room)
{
	struct scrape_forecast_input in = steady_scraper();

	/* Fewer than four requests. */
	in.asked_ns[3] = 0;
	assert_no_window(&in);
	/* Not newest first (a torn read of the times): no forecast from them. */
	in = steady_scraper();
	in.asked_ns[1] = in.asked_ns[0];
	assert_no_window(&in);
	/*
	 * Periods more than 1/8 apart: a scraper by hand, or three at odd
	 * times.  A publish a minute, so that only the periods refuse; at
	 * 1/8 exactly, the jitter widens the lead.
	 */
	in = steady_scraper();
	in.publish_ns = SEC(60);
	in.asked_ns[3] = SEC(955) - SEC(30) / SCRAPE_FORECAST_STEADY;
	assert_window(&in, SEC(1015), 64 * NSEC_PER_MSEC + SEC(30) / SCRAPE_FORECAST_STEADY);
	in.asked_ns[3]--;
	assert_no_window(&in);
	in = steady_scraper();
	in.publish_ns = SEC(60);
	in.asked_ns[0] = SEC(990);
	in.asked_ns[1] = SEC(980);
	assert_no_window(&in);
	/* A render too long for the publish interval: the body would be stale when served. */
	in = steady_scraper();
	in.publish_ns = 126 * NSEC_PER_MSEC;
	assert_no_window(&in);
	in = steady_scraper();
	in.render_ns = 500 * NSEC_PER_MSEC;
	assert_no_window(&in);
	/* Requests closer than the lead: the render thread keeps up with them anyway. */
	in = steady_scraper();
	in.asked_ns[0] = SEC(1) + 120 * NSEC_PER_MSEC;
	in.asked_ns[1] = SEC(1) + 80 * NSEC_PER_MSEC;
	in.asked_ns[2] = SEC(1) + 40 * NSEC_PER_MSEC;
	in.asked_ns[3] = SEC(1);
	in.render_ns = 0;
	assert_no_window(&in);
	/* No publish seen yet. */
	in = steady_scraper();
	in.publish_ns = 0;
	assert_no_window(&in);
}
END_TEST

/* Four requests for form (f, gzip), the given milliseconds before now, oldest first. */
static uint64_t asked(struct metrics_ahead *a, enum metrics_format f, int gzip,
		      const unsigned int before_ms[SCRAPE_FORECAST_REQUESTS])
{
	uint64_t now = now_mono_ns();

	for (unsigned int k = 0; k < SCRAPE_FORECAST_REQUESTS; k++)
		metrics_ahead_want(a, f, gzip, now - (uint64_t)before_ms[k] * NSEC_PER_MSEC);
	return now;
}

/* The view's body, if it is of the last publish (snap), with when it was seen. */
static int rendered(struct metrics_ahead *a)
{
	int yes;

	pthread_mutex_lock(&a->lock);
	yes = a->view.body && a->view.heartbeat_mono_ns == snap.hdr->heartbeat_mono_ns;
	pthread_mutex_unlock(&a->lock);
	return yes;
}

/*
 * With no scrape for seconds the thread renders nothing, unless a
 * scraper's steady requests say one is near: then the publish is rendered
 * before it comes, and its request finds it without waiting.  Each
 * scraper below asks for a form of its own, so their histories stay apart;
 * a publish a minute leaves the periods alone to say whether they are
 * steady, and a jitter of 1.4 s in 12 makes the last window 3 s wide.
 */
START_TEST(metrics_ahead_renders_before_a_steady_scraper_comes)
{
	struct metrics_ahead a;
	struct metrics_view v;
	uint64_t waited = atomic_load(&exporter_stats.v[CAT_STAT_SCRAPES_WAITED]);

	/* Requests are placed up to 28 s back on the monotonic clock. */
	ck_assert_uint_gt(now_mono_ns(), SEC(40));
	writer.fixed.publish_interval_ms = 60000;	/* what each publish writes */
	ck_assert_int_eq(metrics_ahead_init(&a, shm_name, 64u << 20), 0);
	ck_assert_int_eq(metrics_ahead_start(&a), 0);
	/* The first scrape finds nothing rendered, waits for the render, and is counted. */
	publish(19, 3);
	ck_assert_int_eq(metrics_ahead_view(&a, snap.hdr->generation, snap.hdr->heartbeat_mono_ns,
					    0, &v), 0);
	ck_assert(metrics_body_current(v.body, &snap));
	ck_assert_uint_eq(atomic_load(&exporter_stats.v[CAT_STAT_SCRAPES_WAITED]), waited + 1);
	metrics_body_unref(v.body);
	/*
	 * Periods of 12 s and 16 s: no interval, nothing rendered for them
	 * (were they one, the next request would be due now).
	 */
	asked(&a, METRICS_TEXT, 0, (const unsigned int[]){ 27500, 17000, 15500, 1000 });
	publish(20, 3);
	tu_sleep_ms(1000);
	ck_assert_msg(!rendered(&a), "rendered for a scraper with no steady interval");
	/* Requests 6 s apart: the next is 6 s away, not rendered for yet. */
	asked(&a, METRICS_PROTO, 0, (const unsigned int[]){ 18000, 12000, 6000, 0 });
	publish(21, 3);
	tu_sleep_ms(1000);
	ck_assert_msg(!rendered(&a), "rendered 6 s before the scraper is due");
	/* Periods of 13.4 s and 12 s: the next request is due in 2 s, rendered for. */
	publish(22, 3);
	asked(&a, METRICS_TEXT, 1, (const unsigned int[]){ 23400, 20000, 10000, 8000 });
	for (int i = 0; i < 500 && !rendered(&a); i++)
		tu_sleep_ms(METRICS_AHEAD_POLL_MS);
	ck_assert_msg(rendered(&a), "not rendered ahead of the steady scraper");
	/* Its request takes that body without waiting; its form was rendered too. */
	waited = atomic_load(&exporter_stats.v[CAT_STAT_SCRAPES_WAITED]);
	metrics_ahead_want(&a, METRICS_TEXT, 1, now_mono_ns());
	ck_assert_int_eq(metrics_ahead_view(&a, snap.hdr->generation, snap.hdr->heartbeat_mono_ns,
					    0, &v), 0);
	ck_assert(metrics_body_current(v.body, &snap));
	ck_assert_ptr_nonnull(v.body->form[METRICS_TEXT].gz.data);
	ck_assert_uint_eq(atomic_load(&exporter_stats.v[CAT_STAT_SCRAPES_WAITED]), waited);
	metrics_body_unref(v.body);
	metrics_ahead_free(&a);
}
END_TEST

/*
 * A publish that comes between the render ahead and the request is
 * rendered too (the window runs a lead past the expected time), so the
 * request still finds a body of the publish it sees; after the window,
 * publishes are not rendered for it.  A publish a minute and periods of
 * 14.1 s and 16 s (a jitter of 1.9 s) make the window almost 4 s wide.
 */
START_TEST(metrics_ahead_renders_a_publish_just_before_the_request)
{
	struct metrics_ahead a;
	uint64_t now = now_mono_ns();

	ck_assert_uint_gt(now, SEC(40));	/* requests placed 30 s back */
	writer.fixed.publish_interval_ms = 60000;	/* what each publish writes */
	publish(20, 3);
	ck_assert_int_eq(metrics_ahead_init(&a, shm_name, 64u << 20), 0);
	ck_assert_int_eq(metrics_ahead_start(&a), 0);
	/* Gaps of 6.1 s, 8 s and 8 s: the next request is due in a second. */
	now = asked(&a, METRICS_TEXT, 0, (const unsigned int[]){ 29100, 23000, 15000, 7000 });
	for (int i = 0; i < 500 && !rendered(&a); i++)
		tu_sleep_ms(METRICS_AHEAD_POLL_MS);
	ck_assert_msg(rendered(&a), "not rendered ahead of the steady scraper");
	publish(21, 3);
	for (int i = 0; i < 500 && !rendered(&a); i++)
		tu_sleep_ms(METRICS_AHEAD_POLL_MS);
	ck_assert_msg(rendered(&a), "a publish inside the window was not rendered");
	/* The window ends 1 s + 1.94 s on (and two renders), and the renders for it. */
	while (now_mono_ns() < now + SEC(6))
		tu_sleep_ms(METRICS_AHEAD_POLL_MS);
	publish(22, 3);
	tu_sleep_ms(1000);
	ck_assert_msg(!rendered(&a), "rendered for a request whose window had passed");
	metrics_ahead_free(&a);
}
END_TEST

START_TEST(http_accept_reads_lists_and_q_values)
{
	/* What Prometheus sends with native histograms on, and without. */
	static const char prom_pb[] =
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
		"encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,"
		"text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
	static const char prom_text[] =
		"application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
		"version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
#define ACC(s) s, strlen(s)

	ck_assert(http_accept_protobuf(ACC(prom_pb)));
	ck_assert(!http_accept_protobuf(ACC(prom_text)));
	ck_assert(!http_accept_protobuf(NULL, 0));
	ck_assert(!http_accept_protobuf(ACC("*/*")));
	ck_assert(http_accept_protobuf(ACC("application/vnd.google.protobuf; "
					   "proto=io.prometheus.client.MetricFamily; "
					   "encoding=delimited")));
	/* Another message, or the text encoding of it, is not ours. */
	ck_assert(!http_accept_protobuf(ACC("application/vnd.google.protobuf;"
					    "proto=io.prometheus.client.MetricFamily;encoding=text")));
	ck_assert(!http_accept_protobuf(ACC("application/vnd.google.protobuf;encoding=delimited")));
	/* A tie, or q=0, is text. */
	ck_assert(!http_accept_protobuf(ACC("application/vnd.google.protobuf;"
					    "proto=io.prometheus.client.MetricFamily;"
					    "encoding=delimited;q=0.5,text/plain;q=0.5")));
	ck_assert(!http_accept_protobuf(ACC("application/vnd.google.protobuf;"
					    "proto=io.prometheus.client.MetricFamily;"
					    "encoding=delimited;q=0")));
	ck_assert_int_eq(http_accept_q(ACC("a/b;q=0.25, c/d"), "a/b", NULL), 250);
	ck_assert_int_eq(http_accept_q(ACC("a/b;q=2"), "a/b", NULL), -1);
	ck_assert_int_eq(http_accept_q(ACC("a/b;q=0.1234"), "a/b", NULL), -1);

	ck_assert(http_accept_gzip(ACC("gzip")));
	ck_assert(http_accept_gzip(ACC("deflate, gzip;q=1.0, *;q=0.5")));
	ck_assert(http_accept_gzip(ACC("br, *")));
	ck_assert(http_accept_gzip(ACC("X-GZIP")));
	ck_assert(!http_accept_gzip(ACC("identity")));
	ck_assert(!http_accept_gzip(ACC("gzip;q=0, *")));
	ck_assert(!http_accept_gzip(ACC("*;q=0")));
	ck_assert(!http_accept_gzip(NULL, 0));
#undef ACC
}
END_TEST

Suite *metrics_body_suite(void);
Suite *metrics_body_suite(void)
{
	Suite *s = suite_create("metrics_body");
	TCase *tc = tcase_create("forms");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, metrics_body_text_is_the_uncached_render);
	tcase_add_test(tc, metrics_body_gzip_head_and_tail_inflate_to_their_text);
	tcase_add_test(tc, metrics_body_protobuf_is_rendered_from_its_own_publish);
	tcase_add_test(tc, metrics_ahead_serves_the_current_publish);
	tcase_add_test(tc, metrics_ahead_keeps_a_form_while_its_scraper_is_expected_back);
	tcase_add_test(tc, metrics_ahead_renders_only_the_forms_expected_back);
	tcase_add_test(tc, scrape_forecast_renders_a_lead_before_a_steady_scraper);
	tcase_add_test(tc, scrape_forecast_none_without_a_steady_interval_or_room);
	tcase_add_test(tc, metrics_ahead_renders_before_a_steady_scraper_comes);
	tcase_add_test(tc, metrics_ahead_renders_a_publish_just_before_the_request);
	tcase_add_test(tc, http_accept_reads_lists_and_q_values);
	suite_add_tcase(s, tc);
	return s;
}
