/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Alerting end to end: zernel-collector --simulate --scenario oom with
 * zernel-exporter --alerts FILE --webhook (a good receiver and one that
 * answers 500).  GpuOomWarning must fire within its `for` plus two publish
 * intervals of the crossing that /metrics shows, appear in /metrics and on
 * the WebSocket feed, reach the good receiver once as firing and once as
 * resolved (Alertmanager v4), be retried against the failing receiver while
 * /metrics keeps answering, and survive a SIGHUP with a bad file.
 *
 * The scenario holds GPU 0 above 95% from about 8 s to about 69 s after the
 * collector starts, so the test takes about 75 s.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_hook.h"
#include "tests/support/tu_exporter.h"

#define METRICS_MAX	(8u << 20)
#define FOR_S		10u
#define INTERVAL_MS	1000u

static const char rules_good[] =
	"{\"rules\": [\n"
	" {\"name\": \"GpuOomWarning\", \"metric\": \"gpu_memory_used_ratio\",\n"
	"  \"comparison\": \">\", \"threshold\": 0.95, \"for\": \"10s\", \"severity\": \"warning\",\n"
	"  \"summary\": \"GPU {{ $labels.gpu_id }} memory used: {{ $value }} of the total\"},\n"
	" {\"name\": \"CollectorDown\", \"metric\": \"collector_up\", \"comparison\": \"==\",\n"
	"  \"threshold\": 0, \"for\": \"30s\", \"severity\": \"critical\"}]}\n";

/* Checks the feed with a real WebSocket client (python3-websockets). */
static const char ws_client[] =
	"import asyncio, json, sys\n"
	"import websockets\n"
	"async def main(port):\n"
	"    async with websockets.connect('ws://127.0.0.1:%d' % port, open_timeout=5) as ws:\n"
	"        for _ in range(10):\n"
	"            msg = json.loads(await asyncio.wait_for(ws.recv(), 5))\n"
	"            for a in msg.get('alerts', []):\n"
	"                if (a.get('alertname') == 'GpuOomWarning' and a.get('state') == 'firing'\n"
	"                        and a.get('labels', {}).get('gpu_id') == '0'\n"
	"                        and a.get('severity') == 'warning' and a.get('value', 0) > 0.95\n"
	"                        and a.get('startsAt', '').endswith('Z')):\n"
	"                    return 0\n"
	"    print('FAIL: no firing GpuOomWarning on GPU 0 in 10 frames', file=sys.stderr)\n"
	"    return 1\n"
	"sys.exit(asyncio.run(main(int(sys.argv[1]))))\n";

struct run {
	struct tu_stack st;
	char dir[64], rules[128];
	char *body;
};

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static int scrape(struct run *r)
{
	return tu_http_request(r->st.metrics_port, "GET", "/metrics", r->body, METRICS_MAX);
}

/* Value of the first sample whose line starts with prefix; -1 when absent. */
static double sample(const char *text, const char *prefix)
{
	char want[512];
	const char *p;

	snprintf(want, sizeof(want), "\n%s", prefix);
	p = strstr(text, want);
	if (!p)
		return -1;
	p = strchr(p + 1, ' ');
	return p ? strtod(p + 1, NULL) : -1;
}

/* GPU 0 used / total as /metrics shows it, summing the processes; -1 when unknown. */
static double gpu0_ratio(const char *text)
{
	double used = 0, total = sample(text, "zernel_gpu_memory_total_bytes{gpu_id=\"0\"} ");

	for (const char *p = strstr(text, "\nzernel_gpu_memory_used_bytes{"); p;
	     p = strstr(p + 1, "\nzernel_gpu_memory_used_bytes{")) {
		const char *close = strchr(p, '}');

		if (close && strstr(p, "gpu_id=\"0\"") && strstr(p, "gpu_id=\"0\"") < close)
			used += strtod(close + 2, NULL);
	}
	return total > 0 ? used / total : -1;
}

static int firing_gpu0(const char *text)
{
	return strstr(text, "\nzernel_alert_firing{alertname=\"GpuOomWarning\","
			    "severity=\"warning\",gpu_id=\"0\"} 1\n") != NULL;
}

static struct json_object *notification(struct tu_hook *h, int i)
{
	struct tu_hook_request req;
	struct json_object *j;

	tu_hook_get(h, i, &req);
	ck_assert_ptr_nonnull(strstr(req.head, "POST /hook HTTP/1.1\r\n"));
	j = json_tokener_parse(req.body);
	ck_assert_msg(j != NULL, "notification %d is not JSON: %s", i, req.body);
	return j;
}

static const char *jstr(struct json_object *o, const char *a, const char *b, const char *c)
{
	struct json_object *v = o;

	if (a && v)
		v = json_object_object_get(v, a);
	if (v && json_object_is_type(v, json_type_array))
		v = json_object_array_get_idx(v, 0);
	if (b && v)
		v = json_object_object_get(v, b);
	if (c && v)
		v = json_object_object_get(v, c);
	ck_assert_msg(v != NULL, "notification lacks %s.%s.%s", a, b ? b : "", c ? c : "");
	return json_object_get_string(v);
}

START_TEST(oom_alert_end_to_end)
{
	static const int always_500[] = { 500 };
	struct run r;
	struct tu_hook good, bad;
	char g[64], b[64], py[160];
	uint64_t t0, t_cross = 0, t_fire = 0, t;
	struct json_object *j;
	char fp[32];

	memset(&r, 0, sizeof(r));
	r.body = malloc(METRICS_MAX);
	ck_assert_ptr_nonnull(r.body);
	tu_stack_init(&r.st);
	snprintf(r.dir, sizeof(r.dir), "/tmp/zernel-e2e-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(r.dir));
	/* The exporter may drop to nobody: it must still read the file on SIGHUP. */
	tu_system("chmod 755 '%s'", r.dir);
	snprintf(r.rules, sizeof(r.rules), "%s/alerts.json", r.dir);
	snprintf(py, sizeof(py), "%s/ws_alerts.py", r.dir);
	write_text(r.rules, rules_good);
	write_text(py, ws_client);
	tu_system("chmod 644 '%s' '%s'", r.rules, py);
	tu_hook_start(&good, NULL, 0, 0);
	tu_hook_start(&bad, always_500, 1, 0);
	snprintf(g, sizeof(g), "http://127.0.0.1:%u/hook", good.port);
	snprintf(b, sizeof(b), "http://127.0.0.1:%u/hook", bad.port);
	{
		const char *cargs[] = { "--scenario", "oom", "--publish-interval", "1000", NULL };
		const char *eargs[] = { "--alerts", r.rules, "--webhook", g, "--webhook", b, NULL };

		t0 = now_mono_ns();
		ck_assert_int_eq(tu_stack_start_collector(&r.st, cargs), 0);
		r.st.exporter_args = eargs;
		ck_assert_int_eq(tu_stack_start_exporter(&r.st), 0);
		r.st.exporter_args = NULL;
	}

	/* 1. The crossing, then the firing, as /metrics shows them (every 200 ms). */
	while (now_mono_ns() - t0 < 40 * NSEC_PER_SEC && !t_fire) {
		if (scrape(&r) == 200) {
			t = now_mono_ns();
			if (!t_cross && gpu0_ratio(r.body) > 0.95)
				t_cross = t;
			if (firing_gpu0(r.body))
				t_fire = t;
		}
		tu_sleep_ms(200);
	}
	ck_assert_msg(t_cross, "GPU 0 never crossed 95%% in /metrics; see %s", r.st.col_log);
	ck_assert_msg(t_fire, "GpuOomWarning never fired in /metrics; see %s", r.st.exp_log);
	fprintf(stderr, "e2e: GPU 0 above 95%% at %.1f s, alert firing %.2f s later\n",
		(double)(t_cross - t0) / 1e9, (double)(t_fire - t_cross) / 1e9);
	ck_assert_msg(t_fire - t_cross <= (FOR_S * 1000 + 2 * INTERVAL_MS + 300) * NSEC_PER_MSEC,
		      "fired %.2f s after the crossing, later than for + two intervals",
		      (double)(t_fire - t_cross) / 1e9);
	ck_assert_msg(t_fire - t_cross >= (FOR_S * 1000 - INTERVAL_MS) * NSEC_PER_MSEC,
		      "fired %.2f s after the crossing, before `for` was over",
		      (double)(t_fire - t_cross) / 1e9);
	ck_assert_double_eq(sample(r.body, "zernel_alert_transitions_total{alertname="
				   "\"GpuOomWarning\",to=\"firing\"} "), 1);

	/* 2. On the WebSocket feed. */
	ck_assert_msg(tu_system("/usr/bin/python3 '%s' %u >&2", py, r.st.ws_port) == 0,
		      "the feed does not carry the firing alert");

	/* 3. One firing notification; the failing receiver is retried, /metrics still answers. */
	ck_assert_int_eq(tu_hook_wait(&good, 1, 5000), 0);
	j = notification(&good, 0);
	ck_assert_str_eq(jstr(j, "version", NULL, NULL), "4");
	ck_assert_str_eq(jstr(j, "status", NULL, NULL), "firing");
	ck_assert_str_eq(jstr(j, "alerts", "status", NULL), "firing");
	ck_assert_str_eq(jstr(j, "alerts", "labels", "alertname"), "GpuOomWarning");
	ck_assert_str_eq(jstr(j, "alerts", "labels", "gpu_id"), "0");
	ck_assert_str_eq(jstr(j, "alerts", "labels", "severity"), "warning");
	ck_assert_ptr_nonnull(strstr(jstr(j, "alerts", "annotations", "summary"), "GPU 0 memory used: 0.9"));
	ck_assert_str_eq(jstr(j, "alerts", "endsAt", NULL), "0001-01-01T00:00:00Z");
	ck_assert_str_eq(jstr(j, "groupLabels", "alertname", NULL), "GpuOomWarning");
	snprintf(fp, sizeof(fp), "%s", jstr(j, "alerts", "fingerprint", NULL));
	ck_assert_uint_eq(strlen(fp), 16);
	json_object_put(j);

	ck_assert_int_eq(tu_hook_wait(&bad, 3, 8000), 0);
	for (int i = 0; i < 5; i++) {
		uint64_t s0 = now_mono_ns();

		ck_assert_int_eq(scrape(&r), 200);
		ck_assert_msg(now_mono_ns() - s0 < 1000 * NSEC_PER_MSEC, "a scrape took over 1 s");
		tu_sleep_ms(100);
	}
	ck_assert_double_ge(sample(r.body, "zernel_webhook_retries_total{webhook=\"1\"} "), 2);
	ck_assert_double_eq(sample(r.body, "zernel_webhook_sent_total{webhook=\"0\"} "), 1);
	{
		struct tu_hook_request a, c;

		tu_hook_get(&bad, 0, &a);
		tu_hook_get(&bad, 2, &c);
		ck_assert_str_eq(a.body, c.body);
		ck_assert_msg(c.at_ns - a.at_ns >= 1400 * NSEC_PER_MSEC,
			      "retries not backed off: %.2f s for 3 tries", (double)(c.at_ns - a.at_ns) / 1e9);
	}

	/* 4. SIGHUP with a bad file: an error naming it, the old rules stay in force. */
	write_text(r.rules, "{\"rules\": [{\"name\": \"X\", \"metric\": \"gpu_memory_used_ratio\", "
		   "\"comparison\": \">\", \"threshold\": 95}]}");
	ck_assert_int_eq(kill(r.st.exporter, SIGHUP), 0);
	for (int i = 0; i < 50; i++) {
		if (scrape(&r) == 200 && sample(r.body, "zernel_alert_config_reloads_total"
						"{result=\"failure\"} ") == 1)
			break;
		tu_sleep_ms(100);
	}
	ck_assert_double_eq(sample(r.body, "zernel_alert_config_reloads_total{result=\"failure\"} "), 1);
	ck_assert_double_eq(sample(r.body, "zernel_alert_config_last_reload_successful "), 0);
	ck_assert_double_eq(sample(r.body, "zernel_alert_rules "), 2);
	ck_assert(firing_gpu0(r.body));
	ck_assert_msg(tu_system("grep -q 'reload failed, keeping the 2 rules.*alerts.json: rule 1 "
				"(X): field \"threshold\"' '%s'", r.st.exp_log) == 0,
		      "no reload error naming file, rule and field in %s", r.st.exp_log);

	/* 5. The scenario releases GPU 0 about 69 s in: one resolved notification. */
	ck_assert_msg(tu_hook_wait(&good, 2, (int)(90 - (now_mono_ns() - t0) / NSEC_PER_SEC) * 1000) == 0,
		      "no resolved notification by 90 s");
	j = notification(&good, 1);
	ck_assert_str_eq(jstr(j, "status", NULL, NULL), "resolved");
	ck_assert_str_eq(jstr(j, "alerts", "status", NULL), "resolved");
	ck_assert_str_eq(jstr(j, "alerts", "fingerprint", NULL), fp);
	ck_assert_str_ne(jstr(j, "alerts", "endsAt", NULL), "0001-01-01T00:00:00Z");
	json_object_put(j);
	ck_assert_int_eq(scrape(&r), 200);
	ck_assert(!firing_gpu0(r.body));
	ck_assert_double_eq(sample(r.body, "zernel_alert_transitions_total{alertname="
				   "\"GpuOomWarning\",to=\"resolved\"} "), 1);
	tu_sleep_ms(500);
	ck_assert_int_eq(tu_hook_count(&good), 2);

	/* How the exporter exits is its own suite's business. */
	tu_stack_stop(&r.st);
	tu_hook_stop(&good);
	tu_hook_stop(&bad);
	tu_system("rm -rf '%s'", r.dir);
	free(r.body);
}
END_TEST

/* --check-config and a bad --alerts at start: messages and exit codes. */
START_TEST(exporter_config_errors_exit_2)
{
	char dir[64], path[128], cmd[1024];
	int st;

	snprintf(dir, sizeof(dir), "/tmp/zernel-e2e-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.json", dir);
	write_text(path, rules_good);
	snprintf(cmd, sizeof(cmd), "'%s/zernel-exporter' --check-config '%s' >'%s/out' 2>&1",
		 tu_build_dir(), path, dir);
	ck_assert_int_eq(tu_system("%s", cmd), 0);
	ck_assert_int_eq(tu_system("grep -q '2 rules OK' '%s/out'", dir), 0);

	write_text(path, "{\"rules\": [{\"name\": \"A\", \"metric\": \"gpu_memory_used_ratio\", "
		   "\"comparison\": \"~\", \"threshold\": 0.5}]}");
	ck_assert_int_eq(tu_system("%s", cmd), 2);
	ck_assert_int_eq(tu_system("grep -q 'a.json: rule 1 (A): field \"comparison\"' '%s/out'",
				   dir), 0);

	/* Not JSON, at start: exit 2 before binding anything. */
	write_text(path, "rules: []\n");
	st = tu_system("'%s/zernel-exporter' --shm /zernel-e2e-none --metrics-listen 127.0.0.1:%u "
		       "--ws-listen 127.0.0.1:%u --alerts '%s' >'%s/out' 2>&1", tu_build_dir(),
		       tu_free_port(), tu_free_port(), path, dir);
	ck_assert_int_eq(st, 2);
	ck_assert_int_eq(tu_system("grep -q 'a.json: not valid JSON at line 1' '%s/out'", dir), 0);
	st = tu_system("'%s/zernel-exporter' --webhook https://example.invalid/ >'%s/out' 2>&1",
		       tu_build_dir(), dir);
	ck_assert_int_eq(st, 2);
	ck_assert_int_eq(tu_system("grep -q 'https is not supported' '%s/out'", dir), 0);
	tu_system("rm -rf '%s'", dir);
}
END_TEST

Suite *alerts_e2e_suite(void);

Suite *alerts_e2e_suite(void)
{
	Suite *s = suite_create("alerts_e2e");
	TCase *tc = tcase_create("oom");

	/* About 75 s: the scenario's own timeline. */
	tcase_set_timeout(tc, 150);
	tcase_add_test(tc, exporter_config_errors_exit_2);
	tcase_add_test(tc, oom_alert_end_to_end);
	suite_add_tcase(s, tc);
	return s;
}
