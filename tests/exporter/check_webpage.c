/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The live web page: self-contained (nothing fetched from elsewhere), the
 * embedded copy identical to exporter/web/index.html, and, in headless
 * Chromium driven over the DevTools protocol (tests/py/webpage_cdp.py),
 * loading with no console error, showing the figures of the feed (GPU
 * totals as in /metrics) and updating as the feed moves, in light and dark
 * mode.  Screenshots stay in <build>/tests/artifacts/ for a person to see.
 * The page reads the feed contract: rendering every recorded snapshot of
 * the real exporter (tests/fixtures), it reads no key docs/feed.schema.json
 * lacks.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define PY "/usr/bin/python3"
#define CHROMIUM "/usr/bin/chromium"

static char *read_page(size_t *len)
{
	char path[1024];
	char *page;

	snprintf(path, sizeof(path), "%s/exporter/web/index.html", tu_src_dir());
	page = tu_read_file(path, len);
	ck_assert_msg(page != NULL, "cannot read %s", path);
	return page;
}

START_TEST(test_page_is_self_contained)
{
	static const char *const forbidden[] = {
		"http://", "https://", "//cdn", "@import", "<script src", "<link rel=\"stylesheet\"",
		"fonts.googleapis", "@font-face", "innerHTML", "eval(", "document.write",
	};
	char *page = read_page(NULL);

	for (size_t i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++)
		ck_assert_msg(strstr(page, forbidden[i]) == NULL, "the page contains \"%s\"", forbidden[i]);
	/* Every url( is a data: URL; the favicon too (no request, no 404 in the console). */
	for (const char *p = page; (p = strstr(p, "url(")); p++)
		ck_assert_msg(strncmp(p + 4, "data:", 5) == 0 || strncmp(p + 5, "data:", 5) == 0,
			      "external url(: %.40s", p);
	ck_assert_ptr_nonnull(strstr(page, "<link rel=\"icon\" href=\"data:,\">"));
	ck_assert_ptr_nonnull(strstr(page, "<meta name=\"zernel-ws-port\" content=\"@ZERNEL_WS_PORT@\">"));
	ck_assert_ptr_nonnull(strstr(page, "prefers-color-scheme: dark"));
	ck_assert_ptr_nonnull(strstr(page, "new WebSocket("));
	free(page);
}
END_TEST

/* The generated C array (web.mk) holds exactly the page's bytes. */
START_TEST(test_embedded_page_matches_the_source)
{
	char path[1024];
	size_t len, n = 0;
	char *page = read_page(&len), *gen;
	const char *p;
	unsigned long declared;

	tu_build_path(path, sizeof(path), "exporter/web_assets.c");
	gen = tu_read_file(path, NULL);
	ck_assert_msg(gen != NULL, "%s is not built (exporter/web/web.mk)", path);
	p = strstr(gen, "web_index_html[] = {");
	ck_assert_ptr_nonnull(p);
	p = strchr(p, '{') + 1;
	for (;;) {
		unsigned int byte;
		int used;

		while (*p == ' ' || *p == '\n' || *p == ',')
			p++;
		if (sscanf(p, "0x%2x%n", &byte, &used) != 1)
			break;
		if (n < len)
			ck_assert_msg((unsigned char)page[n] == byte, "byte %zu differs", n);
		n++;
		p += used;
	}
	ck_assert_uint_eq(n, len + 1);		/* the page plus its NUL */
	p = strstr(gen, "web_index_html_len = ");
	ck_assert_ptr_nonnull(p);
	declared = strtoul(p + strlen("web_index_html_len = "), NULL, 10);
	ck_assert_uint_eq(declared, len);
	free(gen);
	free(page);
}
END_TEST

static double jd(struct json_object *o, const char *key)
{
	struct json_object *v;

	ck_assert_msg(o && json_object_object_get_ex(o, key, &v), "no %s", key);
	return json_object_get_double(v);
}

static const char *js(struct json_object *o, const char *key)
{
	struct json_object *v;

	ck_assert_msg(o && json_object_object_get_ex(o, key, &v), "no %s", key);
	return json_object_get_string(v);
}

static struct json_object *jo(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	ck_assert_msg(o && json_object_object_get_ex(o, key, &v) && v, "no %s", key);
	return v;
}

static void assert_png(const char *path)
{
	size_t len = 0;
	char *png = tu_read_file(path, &len);

	ck_assert_msg(png != NULL, "no screenshot %s", path);
	ck_assert_msg(len > 20000, "screenshot %s is only %zu bytes", path, len);
	ck_assert_int_eq(memcmp(png, "\x89PNG\r\n\x1a\n", 8), 0);
	free(png);
}

START_TEST(test_page_in_chromium_shows_and_updates_the_feed)
{
	struct tu_stack st;
	char url[256], cmd[4096], shot[1100], dark[1100], dir[1024], *out, *metrics, *body;
	struct json_object *res, *first, *later, *gpus, *problems, *nccl;
	int status, totals = 0;
	size_t body_len = 1u << 20;

	if (access(CHROMIUM, X_OK) != 0) {
		tu_skip_missing("test_page_in_chromium_shows_and_updates_the_feed: %s is not "
			"installed (Debian package chromium)\n", CHROMIUM);
		return;
	}
	if (tu_system(PY " -c 'import websockets' 2>/dev/null") != 0) {
		tu_skip_missing("test_page_in_chromium_shows_and_updates_the_feed: no python3-websockets\n");
		return;
	}
	if (!tu_have_binary("zernel-collector") || !tu_have_binary("zernel-exporter")) {
		tu_skip_missing("test_page_in_chromium_shows_and_updates_the_feed: binaries not built\n");
		return;
	}
	ck_assert_int_eq(tu_stack_start(&st, NULL, 200, 250), 0);
	ck_assert_int_eq(tu_wait_metric(st.metrics_port, "zernel_gpu_memory_used_bytes", 4, 15000), 0);

	/* The exporter serves the page at "/", with its WebSocket port filled in. */
	body = malloc(body_len);
	ck_assert_ptr_nonnull(body);
	ck_assert_int_eq(tu_http_request(st.metrics_port, "GET", "/", body, body_len), 200);
	ck_assert_msg(strstr(body, "name=\"zernel-ws-port\""), "\"/\" is not the live page");
	ck_assert_msg(strstr(body, "@ZERNEL_WS_PORT@") == NULL,
		      "the exporter serves the page without its WebSocket port");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", st.metrics_port);
	free(body);

	snprintf(dir, sizeof(dir), "%s/tests/artifacts", tu_build_dir());
	mkdir(dir, 0755);
	snprintf(shot, sizeof(shot), "%s/webpage.png", dir);
	snprintf(dark, sizeof(dark), "%s/webpage-dark.png", dir);
	unlink(shot);
	unlink(dark);
	snprintf(cmd, sizeof(cmd), PY " %s/tests/py/webpage_cdp.py --url '%s' --screenshot '%s' "
		 "--dark-screenshot '%s' --timeout 60 --updates 3 2>&1", tu_src_dir(), url, shot, dark);
	out = tu_capture(cmd, &status);
	metrics = tu_scrape(st.metrics_port);
	ck_assert_ptr_nonnull(metrics);
	res = json_tokener_parse(out);
	ck_assert_msg(res != NULL, "driver said: %s", out);
	ck_assert_msg(json_object_get_boolean(jo(res, "ok")), "page check failed: %s", out);
	ck_assert_int_eq(status, 0);

	/* No console error, no exception, no failed request. */
	problems = jo(res, "problems");
	ck_assert_msg(json_object_array_length(problems) == 0, "console: %s",
		      json_object_to_json_string(problems));

	first = jo(res, "first");
	later = jo(res, "later");
	ck_assert_str_eq(js(later, "conn"), "live");
	ck_assert_str_eq(js(later, "collector"), "collector up");
	ck_assert_double_gt(jd(later, "snapshots"), jd(first, "snapshots") + 2);
	ck_assert_double_gt(jd(later, "history"), 2);
	ck_assert_double_eq(jd(later, "procs"), 8);
	/* GPU cards: one per device of /metrics, totals as /metrics says. */
	gpus = jo(later, "gpus");
	for (const char *p = metrics; (p = strstr(p, "\nzernel_gpu_memory_total_bytes{")); p++)
		totals++;
	ck_assert_int_eq((int)json_object_array_length(gpus), totals);
	ck_assert_int_eq(totals, 4);
	for (size_t i = 0; i < json_object_array_length(gpus); i++) {
		struct json_object *g = json_object_array_get_idx(gpus, i);
		char labels[64];
		double total = -1;

		snprintf(labels, sizeof(labels), "gpu_id=\"%.0f\"", jd(g, "id"));
		ck_assert_int_eq(tu_metric(metrics, "zernel_gpu_memory_total_bytes", labels, &total), 0);
		ck_assert_double_eq(jd(g, "total"), total);
		ck_assert_double_gt(jd(g, "used"), 0);
		ck_assert_ptr_nonnull(strstr(js(g, "text"), "/ 80.0 GiB"));
	}
	nccl = jo(later, "nccl");
	ck_assert_int_ge((int)json_object_array_length(nccl), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(nccl, 0)), "all_reduce");
	ck_assert_ptr_nonnull(strstr(js(later, "cuda"), "p99 "));
	/* The explain pane: /api/stalls's verdict and a stall site of each trainer. */
	ck_assert_msg(strstr(js(later, "explain"), " rank 0: GPU-bound (") != NULL, "explain pane: %s",
		      js(later, "explain"));
	ck_assert_ptr_nonnull(strstr(js(later, "explain"), "/workspace/train.py:151 in train"));
	ck_assert_ptr_null(strstr(js(later, "cuda"), "p99 -"));
	/* Dark mode is a real switch of colours, not only a media query that matches. */
	ck_assert(json_object_get_boolean(jo(jo(res, "dark"), "dark")));
	ck_assert_str_ne(js(jo(res, "dark"), "bg"), js(later, "bg"));
	assert_png(shot);
	assert_png(dark);

	json_object_put(res);
	free(out);
	free(metrics);
	tu_stack_stop(&st);
}
END_TEST

/* Every feed key the page reads, on every recorded snapshot, is in the schema. */
START_TEST(test_page_reads_only_keys_of_the_feed_contract)
{
	static const char *const fixtures[] = { "steady", "oom", "straggler", "dataloader-stall",
						"down" };
	static const char *const must_read[] = {
		"gpu_utilization[].current_bytes", "gpus[].total_bytes", "processes[].comm",
		"processes[].cuda_launch_p99_us", "nccl[].wait_p99_ms", "cuda_latency_p50_us",
		"nccl_allreduce_p99_ms", "dataloader_wait_p50_ms", "collector_up", "age_ms",
		"telemetry.mode", "alerts[].alertname", "alerts[].state", "alerts[].summary",
	};
	char cmd[4096], *out;
	struct json_object *res, *reads, *missing;
	size_t o;
	int status;

	if (access(CHROMIUM, X_OK) != 0 || tu_system(PY " -c 'import websockets' 2>/dev/null")) {
		tu_skip_missing("test_page_reads_only_keys_of_the_feed_contract: no %s or "
				"python3-websockets\n", CHROMIUM);
		return;
	}
	o = (size_t)snprintf(cmd, sizeof(cmd), PY " %s/tests/py/webpage_cdp.py --url "
			     "'file://%s/exporter/web/index.html' --keys %s/docs/feed.schema.json "
			     "--timeout 60", tu_src_dir(), tu_src_dir(), tu_src_dir());
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, " --fixture %s/tests/fixtures/feed-%s.json",
				      tu_src_dir(), fixtures[i]);
	snprintf(cmd + o, sizeof(cmd) - o, " 2>&1");
	out = tu_capture(cmd, &status);
	res = json_tokener_parse(out);
	ck_assert_msg(res != NULL, "driver said: %s", out);
	missing = jo(res, "missing");
	ck_assert_msg(json_object_array_length(missing) == 0, "the page reads keys the feed "
		      "does not have: %s", json_object_to_json_string(missing));
	ck_assert_msg(json_object_get_boolean(jo(res, "ok")), "key check failed: %s", out);
	ck_assert_int_eq(status, 0);
	reads = jo(res, "reads");
	for (size_t i = 0; i < sizeof(must_read) / sizeof(must_read[0]); i++) {
		size_t k;

		for (k = 0; k < json_object_array_length(reads); k++)
			if (!strcmp(json_object_get_string(json_object_array_get_idx(reads, k)),
				    must_read[i]))
				break;
		ck_assert_msg(k < json_object_array_length(reads), "the page never read %s (it read: %s)",
			      must_read[i], json_object_to_json_string(reads));
	}
	json_object_put(res);
	free(out);
}
END_TEST

Suite *webpage_suite(void);

Suite *webpage_suite(void)
{
	Suite *s = suite_create("webpage");
	TCase *unit = tcase_create("page");
	TCase *browser = tcase_create("chromium");

	tcase_add_test(unit, test_page_is_self_contained);
	tcase_add_test(unit, test_embedded_page_matches_the_source);
	tcase_set_timeout(unit, 10);
	suite_add_tcase(s, unit);

	tcase_add_test(browser, test_page_in_chromium_shows_and_updates_the_feed);
	tcase_add_test(browser, test_page_reads_only_keys_of_the_feed_contract);
	tcase_set_timeout(browser, 120);
	suite_add_tcase(s, browser);
	return s;
}
