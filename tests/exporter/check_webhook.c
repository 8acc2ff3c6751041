/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Webhook delivery against a real HTTP receiver on loopback (tu_hook: a
 * thread that records every request and answers with scripted statuses): Alertmanager's v4 payload field by field, retries with
 * growing back-off on 5xx, no retry on 4xx, and an enqueue that never
 * blocks on a receiver that does not answer.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"
#include "exporter/prom/prom_write.h"
#include "tests/exporter/prom_validate.h"
#include "exporter/alerts/webhook.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_hook.h"

static struct tu_hook rx;

static void receiver_start(const int *statuses, int n, int mute)
{
	tu_hook_start(&rx, statuses, n, mute);
}

static void receiver_stop(void)
{
	tu_hook_stop(&rx);
}

static int received(void)
{
	return tu_hook_count(&rx);
}

static int wait_received(int n, int timeout_ms)
{
	return tu_hook_wait(&rx, n, timeout_ms);
}

/*
 * Polls w's counts until done notices are finished (delivered, given up or
 * dropped), for up to 5 s; the counts are left in c.  The receiver counts a
 * request before it answers, so this is when no further try can come.
 */
static void wait_done(struct webhook *w, uint64_t done, struct webhook_counts *c)
{
	for (int waited = 0; waited <= 5000; waited += 10) {
		webhook_get_counts(w, 0, c);
		if (c->sent + c->failures + c->dropped >= done)
			return;
		tu_sleep_ms(10);
	}
	ck_abort_msg("webhook: %llu of %llu notices finished after 5 s",
		     (unsigned long long)(c->sent + c->failures + c->dropped),
		     (unsigned long long)done);
}

static struct webhook *make_webhook(const char *path, unsigned int tries, unsigned int backoff_ms,
				    unsigned int queue_len, unsigned int timeout_ms)
{
	struct url u;
	struct webhook_opts o;
	struct webhook *w = NULL;
	char url[128], err[256];

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", rx.port, path);
	ck_assert_msg(webhook_url_parse(url, &u, err, sizeof(err)) == 0, "%s", err);
	webhook_opts_default(&o);
	o.receiver = "ops-team";
	o.external_url = "http://node7:9091";
	o.max_tries = tries;
	o.backoff_ms = backoff_ms;
	o.max_backoff_ms = 10000;
	o.queue_len = queue_len;
	o.timeout_ms = timeout_ms;
	ck_assert_int_eq(webhook_new(&w, &u, 1, &o), 0);
	ck_assert_int_eq(webhook_start(w), 0);
	return w;
}

static void notice(struct alert_notice *n, int resolved, int i)
{
	memset(n, 0, sizeof(*n));
	n->resolved = resolved;
	n->n_labels = 3;
	snprintf(n->labels[0].name, sizeof(n->labels[0].name), "alertname");
	snprintf(n->labels[0].value, sizeof(n->labels[0].value), "GpuOomWarning");
	snprintf(n->labels[1].name, sizeof(n->labels[1].name), "gpu_id");
	snprintf(n->labels[1].value, sizeof(n->labels[1].value), "%d", i);
	snprintf(n->labels[2].name, sizeof(n->labels[2].name), "severity");
	snprintf(n->labels[2].value, sizeof(n->labels[2].value), "warning");
	snprintf(n->summary, sizeof(n->summary), "GPU %d memory 97%% used", i);
	snprintf(n->description, sizeof(n->description), "quote \" and slash /");
	n->starts_real_ns = 1700000000123000000ull;	/* 2023-11-14T22:13:20.123Z */
	n->ends_real_ns = resolved ? 1700000060456000000ull : 0;
	n->fingerprint = 0x0123456789abcdefull;
	n->value = 0.97;
}

static const char *str(struct json_object *o, const char *path)
{
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(k));
		else
			o = json_object_object_get(o, k);
	}
	ck_assert_msg(o != NULL, "payload has no %s", path);
	return json_object_get_string(o);
}

START_TEST(webhook_sends_alertmanager_v4_firing_then_resolved)
{
	struct webhook *w;
	struct alert_notice n;
	struct json_object *j;
	struct webhook_counts c;

	receiver_start(NULL, 0, 0);
	w = make_webhook("/hook?token=abc", 3, 100, 16, 2000);
	notice(&n, 0, 0);
	ck_assert_int_eq(webhook_enqueue(w, &n), 0);
	ck_assert_int_eq(wait_received(1, 5000), 0);
	notice(&n, 1, 0);
	ck_assert_int_eq(webhook_enqueue(w, &n), 0);
	ck_assert_int_eq(wait_received(2, 5000), 0);
	wait_done(w, 2, &c);
	ck_assert_int_eq(received(), 2);

	ck_assert_ptr_nonnull(strstr(rx.req[0].head, "POST /hook?token=abc HTTP/1.1\r\n"));
	ck_assert_ptr_nonnull(strcasestr(rx.req[0].head, "\r\nContent-Type: application/json\r\n"));
	ck_assert_ptr_nonnull(strcasestr(rx.req[0].head, "\r\nHost: 127.0.0.1:"));
	j = json_tokener_parse(rx.req[0].body);
	ck_assert_msg(j != NULL, "not JSON: %s", rx.req[0].body);
	ck_assert_str_eq(str(j, "version"), "4");
	ck_assert_str_eq(str(j, "status"), "firing");
	ck_assert_str_eq(str(j, "receiver"), "ops-team");
	ck_assert_str_eq(str(j, "groupKey"), "{}:{alertname=\"GpuOomWarning\"}");
	ck_assert_str_eq(str(j, "truncatedAlerts"), "0");
	ck_assert_str_eq(str(j, "groupLabels.alertname"), "GpuOomWarning");
	ck_assert_str_eq(str(j, "commonLabels.gpu_id"), "0");
	ck_assert_str_eq(str(j, "commonAnnotations.summary"), "GPU 0 memory 97% used");
	ck_assert_str_eq(str(j, "externalURL"), "http://node7:9091");
	ck_assert_int_eq((int)json_object_array_length(json_object_object_get(j, "alerts")), 1);
	ck_assert_str_eq(str(j, "alerts.0.status"), "firing");
	ck_assert_str_eq(str(j, "alerts.0.labels.alertname"), "GpuOomWarning");
	ck_assert_str_eq(str(j, "alerts.0.labels.severity"), "warning");
	ck_assert_str_eq(str(j, "alerts.0.labels.gpu_id"), "0");
	ck_assert_str_eq(str(j, "alerts.0.annotations.summary"), "GPU 0 memory 97% used");
	ck_assert_str_eq(str(j, "alerts.0.annotations.description"), "quote \" and slash /");
	ck_assert_str_eq(str(j, "alerts.0.startsAt"), "2023-11-14T22:13:20.123Z");
	ck_assert_str_eq(str(j, "alerts.0.endsAt"), "0001-01-01T00:00:00Z");
	ck_assert_str_eq(str(j, "alerts.0.generatorURL"), "http://node7:9091/metrics");
	ck_assert_str_eq(str(j, "alerts.0.fingerprint"), "0123456789abcdef");
	json_object_put(j);

	j = json_tokener_parse(rx.req[1].body);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(str(j, "status"), "resolved");
	ck_assert_str_eq(str(j, "alerts.0.status"), "resolved");
	ck_assert_str_eq(str(j, "alerts.0.endsAt"), "2023-11-14T22:14:20.456Z");
	ck_assert_str_eq(str(j, "alerts.0.fingerprint"), "0123456789abcdef");
	json_object_put(j);

	webhook_get_counts(w, 0, &c);
	ck_assert_uint_eq(c.sent, 2);
	ck_assert_uint_eq(c.failures + c.retries + c.dropped + c.queued, 0);
	ck_assert_int_eq(c.last_status, 200);
	webhook_free(w);
	receiver_stop();
}
END_TEST

START_TEST(webhook_retries_5xx_with_growing_backoff)
{
	static const int always_500[] = { 500 };
	struct webhook *w;
	struct alert_notice n;
	struct webhook_counts c;
	uint64_t gap[3];

	receiver_start(always_500, 1, 0);
	w = make_webhook("/", 4, 100, 16, 2000);
	notice(&n, 0, 1);
	ck_assert_int_eq(webhook_enqueue(w, &n), 0);
	/* 4 tries, 100 + 200 + 400 ms of back-off between them. */
	ck_assert_int_eq(wait_received(4, 5000), 0);
	wait_done(w, 1, &c);
	ck_assert_int_eq(received(), 4);
	for (int i = 0; i < 3; i++)
		gap[i] = (rx.req[i + 1].at_ns - rx.req[i].at_ns) / NSEC_PER_MSEC;
	ck_assert_msg(gap[0] >= 95 && gap[1] >= 195 && gap[2] >= 395,
		      "back-off gaps %llu %llu %llu ms", (unsigned long long)gap[0],
		      (unsigned long long)gap[1], (unsigned long long)gap[2]);
	ck_assert_msg(gap[1] > gap[0] && gap[2] > gap[1] && gap[2] < 2000, "gaps do not grow");
	ck_assert_str_eq(rx.req[3].body, rx.req[0].body);
	webhook_get_counts(w, 0, &c);
	ck_assert_uint_eq(c.sent, 0);
	ck_assert_uint_eq(c.retries, 3);
	ck_assert_uint_eq(c.failures, 1);
	ck_assert_int_eq(c.last_status, 500);
	webhook_free(w);
	receiver_stop();
}
END_TEST

START_TEST(webhook_5xx_then_success_counts_one_sent)
{
	static const int script[] = { 503, 502, 200 };
	static const int refuse[] = { 400 };
	struct webhook *w;
	struct alert_notice n;
	struct webhook_counts c;

	receiver_start(script, 3, 0);
	w = make_webhook("/", 5, 50, 16, 2000);
	notice(&n, 0, 2);
	webhook_enqueue(w, &n);
	ck_assert_int_eq(wait_received(3, 5000), 0);
	wait_done(w, 1, &c);
	ck_assert_int_eq(received(), 3);
	ck_assert_uint_eq(c.sent, 1);
	ck_assert_uint_eq(c.retries, 2);
	ck_assert_uint_eq(c.failures, 0);
	webhook_free(w);
	receiver_stop();

	/* 4xx: the receiver refuses the payload; no second try. */
	receiver_start(refuse, 1, 0);
	w = make_webhook("/", 5, 50, 16, 2000);
	webhook_enqueue(w, &n);
	ck_assert_int_eq(wait_received(1, 5000), 0);
	wait_done(w, 1, &c);
	ck_assert_int_eq(received(), 1);
	ck_assert_uint_eq(c.failures, 1);
	ck_assert_uint_eq(c.retries, 0);
	webhook_free(w);
	receiver_stop();
}
END_TEST

START_TEST(webhook_enqueue_never_blocks_on_a_silent_receiver)
{
	struct webhook *w;
	struct alert_notice n;
	struct webhook_counts c;
	uint64_t t0, took, stop_took;
	struct sbuf b;
	char err[256];

	/* Accepts, reads, never answers: every try runs into its timeout. */
	receiver_start(NULL, 0, 1);
	w = make_webhook("/", 3, 100, 8, 500);
	notice(&n, 0, 3);
	t0 = now_mono_ns();
	for (int i = 0; i < 1000; i++)
		webhook_enqueue(w, &n);
	took = now_mono_ns() - t0;
	ck_assert_msg(took < 500 * NSEC_PER_MSEC, "1000 enqueues took %llu ms",
		      (unsigned long long)(took / NSEC_PER_MSEC));
	ck_assert_int_eq(wait_received(1, 3000), 0);
	webhook_get_counts(w, 0, &c);
	ck_assert_uint_le(c.queued, 8);
	/* At most 8 waiting and 1 in flight: the rest were dropped, and counted. */
	ck_assert_uint_ge(c.dropped, 1000 - 9);
	ck_assert_uint_eq(c.sent, 0);

	sbuf_init(&b, 1u << 20, 0);
	ck_assert_int_eq(webhook_render_prom(w, &(struct prom_out){ .b = &b }), 0);
	ck_assert_msg(prom_validate(b.data, b.len, err, sizeof(err)) == 0, "%s\n%s", err, b.data);
	ck_assert_ptr_nonnull(strstr(b.data, "zernel_webhook_dropped_total{webhook=\"0\"} "));
	ck_assert_ptr_null(strstr(b.data, "token"));
	sbuf_free(&b);

	/* Stopping waits for the try in flight, bounded by its timeout. */
	t0 = now_mono_ns();
	webhook_free(w);
	stop_took = now_mono_ns() - t0;
	ck_assert_msg(stop_took < 1500 * NSEC_PER_MSEC, "stop took %llu ms",
		      (unsigned long long)(stop_took / NSEC_PER_MSEC));
	receiver_stop();
}
END_TEST

START_TEST(webhook_unreachable_counts_failures)
{
	struct url u;
	struct webhook_opts o;
	struct webhook *w = NULL;
	struct alert_notice n;
	struct webhook_counts c;
	char url[64], err[256];

	/* A port nobody listens on: connection refused at once, retried, then given up. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", tu_free_port());
	ck_assert_int_eq(webhook_url_parse(url, &u, err, sizeof(err)), 0);
	webhook_opts_default(&o);
	o.max_tries = 3;
	o.backoff_ms = 20;
	ck_assert_int_eq(webhook_new(&w, &u, 1, &o), 0);
	ck_assert_int_eq(webhook_start(w), 0);
	notice(&n, 0, 4);
	webhook_enqueue(w, &n);
	for (int i = 0; i < 300; i++) {
		webhook_get_counts(w, 0, &c);
		if (c.failures)
			break;
		tu_sleep_ms(10);
	}
	ck_assert_uint_eq(c.failures, 1);
	ck_assert_uint_eq(c.retries, 2);
	ck_assert_int_eq(c.last_status, -ECONNREFUSED);
	webhook_free(w);
}
END_TEST

START_TEST(webhook_url_parsing)
{
	struct url u;
	char err[512];
	static const struct { const char *url, *why; } bad[] = {
		{ "https://hooks.example/x", "https is not supported" },
		{ "ftp://x/", "expected http://" },
		{ "http://", "missing host" },
		{ "http://:80/", "missing host" },
		{ "http://h:0/", "port must be in 1..65535" },
		{ "http://h:65536/", "port must be in 1..65535" },
		{ "http://h:x/", "port must be in 1..65535" },
		{ "http://user:pw@h/", "credentials" },
		{ "http://h/a b", "space" },
		{ "http://h/a\r\nX: y", "control" },
		{ "http://h/#frag", "fragment" },
		{ "http://[::1/", "unclosed" },
		{ "http://h$/", "bad character" },
	};

	ck_assert_int_eq(webhook_url_parse("http://alerts.local:8080/api/v1/hook?k=v", &u, err,
					   sizeof(err)), 0);
	ck_assert_str_eq(u.host, "alerts.local");
	ck_assert_uint_eq(u.port, 8080);
	ck_assert_str_eq(u.path, "/api/v1/hook?k=v");
	ck_assert_str_eq(u.authority, "alerts.local:8080");
	ck_assert_int_eq(webhook_url_parse("HTTP://10.0.0.1", &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u.port, 80);
	ck_assert_str_eq(u.path, "/");
	ck_assert_int_eq(webhook_url_parse("http://[fe80::1]:9/", &u, err, sizeof(err)), 0);
	ck_assert_str_eq(u.host, "fe80::1");
	ck_assert_str_eq(u.authority, "[fe80::1]:9");
	ck_assert_int_eq(webhook_url_parse("http://h?q=1", &u, err, sizeof(err)), 0);
	ck_assert_str_eq(u.path, "/?q=1");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(webhook_url_parse(bad[i].url, &u, err, sizeof(err)) == -EINVAL,
			      "accepted %s", bad[i].url);
		ck_assert_msg(strstr(err, bad[i].why), "%s: message \"%s\" lacks \"%s\"",
			      bad[i].url, err, bad[i].why);
	}
}
END_TEST

Suite *webhook_suite(void);

Suite *webhook_suite(void)
{
	Suite *s = suite_create("webhook");
	TCase *tc = tcase_create("delivery");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, webhook_sends_alertmanager_v4_firing_then_resolved);
	tcase_add_test(tc, webhook_retries_5xx_with_growing_backoff);
	tcase_add_test(tc, webhook_5xx_then_success_counts_one_sent);
	tcase_add_test(tc, webhook_enqueue_never_blocks_on_a_silent_receiver);
	tcase_add_test(tc, webhook_unreachable_counts_failures);
	tcase_add_test(tc, webhook_url_parsing);
	suite_add_tcase(s, tc);
	return s;
}
