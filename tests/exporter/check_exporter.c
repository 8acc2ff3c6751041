/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * zernel-exporter end to end: the real binaries (zernel-collector
 * --simulate, zernel-exporter) on free ports and unique segment names, read
 * by real clients: promtool, the project's validator, raw HTTP, and a real
 * Prometheus server scraping it.  Every process a test starts is stopped by
 * the test or, if it fails, dies with the test's process group.
 */
#include <arpa/inet.h>
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "exporter/http/http.h"
#include "exporter/prom/prom_native.h"
#include "exporter/prom/prom_proto.h"
#include "tests/exporter/prom_validate.h"
#include "common/util.h"
#include "shm/shm_layout.h"
#include "catalog/catalog.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_net.h"
#include "tests/support/tu_exporter.h"

#define PROMTOOL	"/usr/bin/promtool"
#define PROMETHEUS	"/usr/bin/prometheus"
#define BODY_MAX	(16u << 20)

static struct tu_stack rig;
static pid_t prometheus;
static uint16_t prom_port;
static char prom_dir[64];	/* its configuration, data and log */

static void start_collector(const char *scenario, const char *publish_ms)
{
	const char *args[] = { "--scenario", scenario, "--publish-interval", publish_ms, NULL };

	ck_assert_msg(tu_have_binary("zernel-collector"), "zernel-collector is not built");
	ck_assert_int_eq(tu_stack_start_collector(&rig, args), 0);
}

static void start_exporter(void)
{
	ck_assert_msg(tu_have_binary("zernel-exporter"), "zernel-exporter is not built");
	if (tu_stack_start_exporter(&rig) < 0) {
		tu_stack_dump_logs(&rig);
		ck_abort_msg("exporter never answered");
	}
}

static void wait_healthy(void)
{
	if (tu_wait_http(rig.metrics_port, "/healthz", 200, 15000) < 0) {
		tu_stack_dump_logs(&rig);
		ck_abort_msg("exporter never became healthy");
	}
}

/* After a passing test; a failed one's processes die with its process group. */
static void rig_teardown(void)
{
	if (prometheus > 0)
		tu_stop(prometheus, SIGKILL, 2000);
	prometheus = 0;
	if (prom_dir[0])
		tu_system("rm -rf '%s'", prom_dir);
	prom_dir[0] = '\0';
	tu_stack_stop(&rig);
}

static void stop_exporter_cleanly(void)
{
	int st = tu_stack_stop_exporter(&rig);

	ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "exporter did not exit cleanly on SIGTERM (status 0x%x)", st);
}

static char *get_metrics(void)
{
	char *body = malloc(BODY_MAX);

	ck_assert_ptr_nonnull(body);
	ck_assert_int_eq(tu_http_request(rig.metrics_port, "GET", "/metrics", body, BODY_MAX), 200);
	ck_assert_uint_lt(strlen(body), BODY_MAX - 1);
	return body;
}

static char *wait_series(const char *series, double want, int ms);

/*
 * /metrics of a fresh segment: a collector late to publish on a busy
 * machine makes a scrape say it is down, with none of its families.
 */
static char *get_fresh_metrics(void)
{
	char *body = wait_series("zernel_collector_up", 1, 10000);

	ck_assert_msg(body != NULL, "/metrics never said the collector was up within 10 s");
	return body;
}

/* Value of the series written exactly as `series` ("name" or "name{...}"), or NAN. */
static double series_value(const char *body, const char *series)
{
	char want[512];
	const char *p;

	snprintf(want, sizeof(want), "\n%s ", series);
	p = strstr(body, want);
	return p ? strtod(p + strlen(want), NULL) : NAN;
}

/* /metrics says the collector is down, with this status. */
static void assert_collector_down(const char *body, const char *status)
{
	char series[128];

	ck_assert(series_value(body, "zernel_collector_up") == 0);
	snprintf(series, sizeof(series), "zernel_collector_status{status=\"%s\"}", status);
	ck_assert_msg(series_value(body, series) == 1, "%s is not 1", series);
}

/* /healthz answers 503 and names the reason. */
static void assert_unhealthy(const char *reason)
{
	char health[512];

	ck_assert_int_eq(tu_http_request(rig.metrics_port, "GET", "/healthz", health,
					 sizeof(health)), 503);
	ck_assert_msg(strstr(health, reason), "/healthz does not say %s: %s", reason, health);
}

/* ---- label sets of the contract families (DESIGN.md, section 4) -------- */

/* Splits a sample line into its name and a ","-joined list of label names. */
static int parse_sample(const char *line, char *name, size_t nlen, char *labels, size_t llen)
{
	size_t n = 0, l = 0;
	const char *p = line;

	while (*p && (isalnum((unsigned char)*p) || *p == '_' || *p == ':') && n + 1 < nlen)
		name[n++] = *p++;
	name[n] = '\0';
	labels[0] = '\0';
	if (*p != '{')
		return 0;
	p++;
	while (*p && *p != '}') {
		if (l && l + 1 < llen)
			labels[l++] = ',';
		while (*p && *p != '=' && l + 1 < llen)
			labels[l++] = *p++;
		if (p[0] != '=' || p[1] != '"')
			return -1;
		for (p += 2; *p && *p != '"'; p++)
			if (*p == '\\' && p[1])
				p++;
		if (*p != '"')
			return -1;
		p++;
		if (*p == ',')
			p++;
	}
	labels[l] = '\0';
	return *p == '}' ? 0 : -1;
}

static const struct {
	const char *name;
	const char *labels;
} contract[] = {
	{ "zernel_gpu_memory_used_bytes", "pid,gpu_id" },
	{ "zernel_gpu_memory_peak_bytes", "pid,gpu_id" },
	{ "zernel_cuda_launch_latency_seconds", "pid,quantile" },
	{ "zernel_cuda_launch_latency_seconds_count", "pid" },
	{ "zernel_cuda_launch_latency_seconds_sum", "pid" },
	{ "zernel_nccl_collective_duration_seconds", "op,quantile" },
	{ "zernel_dataloader_wait_seconds", "pid,quantile" },
};

START_TEST(exporter_serves_every_contract_family_with_its_labels)
{
	static const char *const ops[] = { "all_reduce", "all_gather", "reduce_scatter",
					   "broadcast", "reduce", "send", "recv" };
	unsigned int seen[sizeof(contract) / sizeof(contract[0])] = { 0 };
	char *body, *line, *save = NULL, name[256], labels[512];

	tu_stack_init(&rig);
	start_collector("steady", "200");
	start_exporter();
	wait_healthy();
	tu_sleep_ms(500);	/* a few publishes: every family has samples */
	body = get_fresh_metrics();
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
		char want[128];

		snprintf(want, sizeof(want), "\nzernel_nccl_collective_duration_seconds{op=\"%s\",quantile=\"0.5\"} ", ops[o]);
		ck_assert_msg(strstr(body, want), "no p50 series for op %s", ops[o]);
		snprintf(want, sizeof(want), "\nzernel_nccl_collective_duration_seconds{op=\"%s\",quantile=\"0.99\"} ", ops[o]);
		ck_assert_msg(strstr(body, want), "no p99 series for op %s", ops[o]);
	}
	for (line = strtok_r(body, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		ck_assert_msg(parse_sample(line, name, sizeof(name), labels, sizeof(labels)) == 0,
			      "unparsable line: %s", line);
		for (size_t i = 0; i < sizeof(contract) / sizeof(contract[0]); i++) {
			if (strcmp(name, contract[i].name))
				continue;
			ck_assert_msg(!strcmp(labels, contract[i].labels), "%s has labels {%s}, want {%s}",
				      name, labels, contract[i].labels);
			if (strstr(line, "quantile="))
				ck_assert_msg(strstr(line, "quantile=\"0.5\"") ||
					      strstr(line, "quantile=\"0.99\""), "quantile: %s", line);
			seen[i]++;
		}
	}
	for (size_t i = 0; i < sizeof(contract) / sizeof(contract[0]); i++)
		ck_assert_msg(seen[i] > 0, "family %s missing", contract[i].name);
	free(body);
	stop_exporter_cleanly();
}
END_TEST

/* /metrics holds the catalog's families and nothing else, each typed as the catalog says. */
START_TEST(exporter_families_are_the_catalogs)
{
	char *body, want[256];
	int n = 0;

	tu_stack_init(&rig);
	start_collector("steady", "200");
	start_exporter();
	wait_healthy();
	body = get_fresh_metrics();
	for (size_t i = 0; i < cat_metrics_count; i++) {
		const struct cat_metric *m = &cat_metrics[i];

		if (!m->prom || (i && cat_metrics[i - 1].prom &&
				 strcmp(cat_metrics[i - 1].prom, m->prom) == 0))
			continue;
		snprintf(want, sizeof(want), "\n# TYPE %s %s\n", m->prom,
			 m->kind == CAT_LATENCY ? "summary" : m->kind == CAT_COUNTER ? "counter" : "gauge");
		ck_assert_msg(strstr(body, want), "/metrics lacks %s", want + 1);
		n++;
		if (m->kind == CAT_LATENCY && m->prom_hist) {
			snprintf(want, sizeof(want), "\n# TYPE %s histogram\n", m->prom_hist);
			ck_assert_msg(strstr(body, want), "/metrics lacks %s", want + 1);
			n++;
		}
	}
	/* Every family there is one of those. */
	for (const char *p = body; (p = strstr(p, "# TYPE ")); p++)
		n--;
	ck_assert_int_eq(n, 0);
	free(body);
	stop_exporter_cleanly();
}
END_TEST

START_TEST(exporter_output_passes_promtool_and_validator)
{
	static const char *const scenarios[] = { "steady", "oom", "straggler", "dataloader-stall" };

	for (size_t s = 0; s < sizeof(scenarios) / sizeof(scenarios[0]); s++) {
		char file[96], out[128], err[256], *body, *complaints;
		size_t clen = 0;
		FILE *f;
		int rc;

		tu_stack_init(&rig);
		start_collector(scenarios[s], "200");
		start_exporter();
		wait_healthy();
		tu_sleep_ms(600);
		body = get_metrics();
		ck_assert_msg(prom_validate(body, strlen(body), err, sizeof(err)) == 0,
			      "scenario %s: validator: %s", scenarios[s], err);
		snprintf(file, sizeof(file), "/tmp/zernel-metrics-%d.txt", (int)getpid());
		snprintf(out, sizeof(out), "/tmp/zernel-promtool-%d.txt", (int)getpid());
		f = fopen(file, "w");
		ck_assert_ptr_nonnull(f);
		fputs(body, f);
		fclose(f);
		ck_assert_msg(access(PROMTOOL, X_OK) == 0, PROMTOOL " is missing (make test-deps)");
		/*
		 * One lint rule is broken on purpose: the two GPU info families
		 * carry dcgm-exporter's label names (UUID, modelName) so that
		 * its series join ours.  Every other complaint fails.
		 */
		rc = tu_system(PROMTOOL " check metrics < %s > %s.all 2>&1; rc=$?; "
			       "grep -v -x -e \"zernel_gpu_info label names should be written in "
			       "'snake_case' not 'camelCase'\" -e \"zernel_gpu_memory_info label "
			       "names should be written in 'snake_case' not 'camelCase'\" "
			       "%s.all > %s; rm -f %s.all; "
			       "[ $rc = 0 ] || { [ $rc = 3 ] && [ ! -s %s ]; }",
			       file, out, out, out, out, out);
		complaints = tu_read_file(out, &clen);
		ck_assert_msg(rc == 0 && clen == 0, "scenario %s: promtool exit %d: %s",
			      scenarios[s], rc, complaints ? complaints : "");
		fprintf(stderr, "scenario %s: %zu bytes of metrics, promtool and validator clean\n",
			scenarios[s], strlen(body));
		free(complaints);
		free(body);
		unlink(file);
		unlink(out);
		stop_exporter_cleanly();
		tu_stack_stop(&rig);
	}
}
END_TEST

/* ---- HTTP behaviour ------------------------------------------------------ */

/* Sends req as is on a new connection; reads the whole answer into resp. */
static int raw_http(const char *req, size_t reqlen, char *resp, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(rig.metrics_port) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), status = -1;
	size_t used = 0, sent = 0;

	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	while (sent < reqlen) {
		ssize_t w = send(fd, req + sent, reqlen - sent, MSG_NOSIGNAL);

		if (w <= 0)
			break;	/* the server may answer and close before reading it all */
		sent += (size_t)w;
	}
	for (;;) {
		ssize_t r = read(fd, resp + used, len - used - 1);

		if (r <= 0)
			break;
		used += (size_t)r;
	}
	resp[used] = '\0';
	close(fd);
	if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	return status;
}

static int simple(const char *method, const char *path, char *resp, size_t len)
{
	char req[256];
	int n = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
			 "Connection: close\r\n\r\n", method, path);

	return raw_http(req, (size_t)n, resp, len);
}

/* A GET with one header of pad bytes into req (cap bytes); returns its length. */
static size_t padded_request(char *req, size_t cap, size_t pad)
{
	static const char head[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: ";
	static const char tail[] = "\r\nConnection: close\r\n\r\n";
	size_t n = sizeof(head) - 1;

	ck_assert_uint_lt(n + pad + sizeof(tail), cap);
	memcpy(req, head, n);
	memset(req + n, 'a', pad);
	memcpy(req + n + pad, tail, sizeof(tail));
	return n + pad + sizeof(tail) - 1;
}

START_TEST(exporter_http_paths_methods_and_limits)
{
	size_t big = 700000;
	char *resp = malloc(BODY_MAX), *req = malloc(big + 256);
	const char *body;
	long clen;
	int fds[HTTP_MAX_CONNECTIONS];

	ck_assert(resp && req);
	tu_stack_init(&rig);
	start_collector("steady", "200");
	start_exporter();
	wait_healthy();

	ck_assert_int_eq(simple("GET", "/", resp, BODY_MAX), 200);
	ck_assert_ptr_nonnull(strstr(resp, "href=\"/metrics\""));
	ck_assert_ptr_nonnull(strcasestr(resp, "content-type: text/html"));
	ck_assert_int_eq(simple("GET", "/healthz", resp, BODY_MAX), 200);
	ck_assert_ptr_nonnull(strstr(resp, "\r\n\r\nok\n"));
	ck_assert_int_eq(simple("GET", "/nope", resp, BODY_MAX), 404);
	ck_assert_int_eq(simple("GET", "/metricsx", resp, BODY_MAX), 404);
	ck_assert_int_eq(simple("GET", "/metrics?x=1", resp, BODY_MAX), 200);
	ck_assert_ptr_nonnull(strcasestr(resp, "content-type: text/plain; version=0.0.4; charset=utf-8"));

	/*
	 * HEAD: the headers of GET, Content-Length included, and no body;
	 * the length of the simulated job's body (77 kB and more), for which
	 * it asks again while the segment is stale: a machine busy enough
	 * can hold the collector past the staleness bound between two
	 * requests, and the body without the collector's data is 6 kB.
	 */
	for (int tries = 0; tries < 50; tries++) {
		ck_assert_int_eq(simple("HEAD", "/metrics", resp, BODY_MAX), 200);
		body = strstr(resp, "\r\n\r\n");
		ck_assert_ptr_nonnull(body);
		ck_assert_str_eq(body, "\r\n\r\n");
		ck_assert_ptr_nonnull(strcasestr(resp, "content-length: "));
		clen = strtol(strcasestr(resp, "content-length: ") + 16, NULL, 10);
		ck_assert_int_gt(clen, 0);
		if (clen > 10000)
			break;
		tu_sleep_ms(200);
	}
	ck_assert_int_gt(clen, 10000);

	ck_assert_int_eq(simple("POST", "/metrics", resp, BODY_MAX), 405);
	ck_assert_ptr_nonnull(strcasestr(resp, "allow: GET, HEAD"));
	ck_assert_int_eq(simple("DELETE", "/", resp, BODY_MAX), 405);

	/* Headers past HTTP_MAX_HEADER_BYTES: 431; past h2o's own limit: 400. */
	ck_assert_int_eq(raw_http(req, padded_request(req, big + 256, 16384), resp, BODY_MAX), 431);
	ck_assert_int_eq(raw_http(req, padded_request(req, big + 256, big), resp, BODY_MAX), 400);

	/*
	 * Connections: slow ones from one address (a byte each), past its
	 * share (HTTP_MAX_PER_ADDR), each take the slot of its longest waiting
	 * one, and so does a request from it; the others are closed.
	 */
	for (int i = 0; i < HTTP_MAX_CONNECTIONS; i++) {
		fds[i] = tu_connect_slow(1, rig.metrics_port);
		ck_assert_int_ge(fds[i], 0);
	}
	tu_sleep_ms(300);
	ck_assert_int_eq(simple("GET", "/metrics", resp, BODY_MAX), 200);
	ck_assert(series_value(resp, "zernel_exporter_http_evicted_total") >=
		  HTTP_MAX_CONNECTIONS - HTTP_MAX_PER_ADDR);
	ck_assert(series_value(resp, "zernel_exporter_http_rejected_total") == 0);
	{
		int closed = 0, open_after = 0;

		for (int i = 0; i < HTTP_MAX_CONNECTIONS; i++) {
			char c;
			ssize_t r = recv(fds[i], &c, 1, MSG_DONTWAIT);

			if (r == 0)
				closed += 1;
			else if (i >= HTTP_MAX_CONNECTIONS - HTTP_MAX_PER_ADDR + 1)
				open_after += 1;
		}
		/* The oldest went first; the newest kept their slots. */
		ck_assert_int_ge(closed, HTTP_MAX_CONNECTIONS - HTTP_MAX_PER_ADDR + 1);
		ck_assert_int_eq(open_after, HTTP_MAX_PER_ADDR - 1);
	}
	for (int i = 0; i < HTTP_MAX_CONNECTIONS; i++)
		close(fds[i]);
	free(resp);
	free(req);
	stop_exporter_cleanly();
}
END_TEST

/* ---- staleness and restarts ------------------------------------------- */

/* Polls /metrics until `series` has value want, up to ms; returns the body or NULL. */
static char *wait_series(const char *series, double want, int ms)
{
	for (int waited = 0; waited <= ms; waited += 50) {
		char *body = get_metrics();

		if (series_value(body, series) == want)
			return body;
		free(body);
		tu_sleep_ms(50);
	}
	return NULL;
}

START_TEST(exporter_follows_collector_down_and_back)
{
	char *body;
	double gen1, gen2;
	pid_t exporter;
	uint64_t t0;

	tu_stack_init(&rig);
	/* 1. No segment yet: served, up 0, missing, healthz 503. */
	start_exporter();
	exporter = rig.exporter;
	body = get_metrics();
	assert_collector_down(body, "missing");
	ck_assert_ptr_null(strstr(body, "zernel_gpu_memory_used_bytes{"));
	free(body);
	assert_unhealthy("missing");

	/* 2. The collector starts: fresh data. */
	start_collector("steady", "200");
	body = wait_series("zernel_collector_up", 1, 5000);
	ck_assert_msg(body != NULL, "collector_up never became 1");
	gen1 = series_value(body, "zernel_segment_generation");
	ck_assert(gen1 > 0);
	free(body);
	ck_assert_msg(tu_wait_metric(rig.metrics_port, "zernel_gpu_memory_used_bytes", 1, 3000) == 0, "no GPU memory series while fresh");

	/* 3. The collector dies without cleaning up: stale after 3 intervals. */
	tu_stack_stop_collector(&rig, SIGKILL);
	body = wait_series("zernel_collector_up", 0, 3000);
	ck_assert_msg(body != NULL, "collector_up never went to 0");
	assert_collector_down(body, "stale");
	ck_assert_msg(!strstr(body, "\nzernel_gpu_memory_used_bytes{"),
		      "stale values presented as fresh");
	ck_assert(series_value(body, "zernel_segment_generation") == gen1);
	ck_assert(series_value(body, "zernel_collector_last_publish_age_seconds") >= 0.6);
	free(body);
	assert_unhealthy("stale");

	/* 4. A new collector: fresh again within about one interval, new generation. */
	t0 = now_mono_ns();
	start_collector("steady", "200");
	body = wait_series("zernel_collector_up", 1, 5000);
	ck_assert_msg(body != NULL, "collector_up never came back to 1");
	t0 = (now_mono_ns() - t0) / NSEC_PER_MSEC;
	fprintf(stderr, "exporter fresh again %llu ms after the collector restarted\n",
		(unsigned long long)t0);
	ck_assert_msg(t0 < 2000, "took more than 2 s to serve the new collector");
	gen2 = series_value(body, "zernel_segment_generation");
	ck_assert_msg(gen2 != gen1, "generation did not change");
	free(body);
	ck_assert_msg(tu_wait_metric(rig.metrics_port, "zernel_gpu_memory_used_bytes", 1, 3000) == 0, "data did not resume");
	ck_assert_int_eq(tu_http_request(rig.metrics_port, "GET", "/healthz", NULL, 0), 200);
	/* Same exporter process throughout. */
	ck_assert_int_eq(rig.exporter, exporter);
	ck_assert_int_eq(kill(exporter, 0), 0);
	stop_exporter_cleanly();
}
END_TEST

START_TEST(exporter_survives_a_garbage_segment)
{
	char *body, junk[8192];
	int fd;

	tu_stack_init(&rig);
	/* Anyone able to create the name could put anything there. */
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 131 + 7);
	/* An even seqlock word, so that the copy succeeds and validation judges it. */
	memset(junk + offsetof(struct shm_header_fields, seq), 0, sizeof(uint64_t));
	fd = shm_open(rig.shm, O_RDWR | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	start_exporter();
	body = get_metrics();
	assert_collector_down(body, "invalid");
	ck_assert_ptr_nonnull(strstr(body, "# zernel collector not fresh"));
	free(body);
	assert_unhealthy("invalid");
	/* A real collector replaces it; the exporter follows. */
	start_collector("steady", "200");
	body = wait_series("zernel_collector_up", 1, 5000);
	ck_assert_msg(body != NULL, "collector_up never became 1 after the garbage");
	free(body);
	stop_exporter_cleanly();
}
END_TEST

/* ---- a real Prometheus server ------------------------------------------ */

static void url_encode(char *out, size_t len, const char *s)
{
	size_t o = 0;

	for (; *s && o + 4 < len; s++) {
		if (isalnum((unsigned char)*s) || strchr("-_.~", *s))
			out[o++] = *s;
		else
			o += (size_t)snprintf(out + o, len - o, "%%%02X", (unsigned char)*s);
	}
	out[o] = '\0';
}

/*
 * Runs an instant query at time t; returns the "result" array (owned by
 * *root, which the caller puts) or NULL.
 */
static struct json_object *prom_query(const char *q, double t, struct json_object **root)
{
	char path[2048], enc[1536], *body = malloc(1u << 20);
	struct json_object *data, *result, *status;
	int st;

	ck_assert_ptr_nonnull(body);
	url_encode(enc, sizeof(enc), q);
	snprintf(path, sizeof(path), "/api/v1/query?query=%s&time=%.3f", enc, t);
	st = tu_http_request(prom_port, "GET", path, body, 1u << 20);
	ck_assert_msg(st == 200, "query %s: HTTP %d: %.300s", q, st, body);
	*root = json_tokener_parse(body);
	free(body);
	ck_assert_msg(*root && json_object_object_get_ex(*root, "status", &status),
		      "query %s: no status in the answer", q);
	ck_assert_str_eq(json_object_get_string(status), "success");
	if (!json_object_object_get_ex(*root, "data", &data) ||
	    !json_object_object_get_ex(data, "result", &result))
		return NULL;
	return result;
}

/* The value of the single sample a query returns, NAN when there is none. */
static double prom_scalar(const char *q, double t)
{
	struct json_object *root, *res = prom_query(q, t, &root), *value;
	double v = NAN;

	if (res && json_object_array_length(res) == 1 &&
	    json_object_object_get_ex(json_object_array_get_idx(res, 0), "value", &value))
		v = strtod(json_object_get_string(json_object_array_get_idx(value, 1)), NULL);
	json_object_put(root);
	return v;
}

static double now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The tolerance: histogram_quantile interpolates inside the bucket that
 * holds the rank, so the summary's quantile (log-linear histogram, 1/64
 * relative error, over the last window) must lie in that same bucket,
 * widened by that error, or in a neighbouring bucket when the estimate sits
 * on a boundary (the window and the whole run can differ by a few samples
 * there).
 */
static void assert_consistent(const char *what, double hq, double sq)
{
	static const uint64_t bounds_ns[SHM_LAT_FINITE_BUCKETS] = SHM_LAT_BOUNDS_NS_INIT;
	double lo = 0, hi = INFINITY;
	unsigned int k;

	ck_assert_msg(isfinite(hq) && isfinite(sq), "%s: histogram %g, summary %g", what, hq, sq);
	for (k = 0; k < SHM_LAT_FINITE_BUCKETS && hq > bounds_ns[k] / 1e9; k++)
		;
	/* One bucket of slack either side of the estimate's own bucket. */
	lo = k >= 2 ? bounds_ns[k - 2] / 1e9 : 0;
	hi = k + 1 < SHM_LAT_FINITE_BUCKETS ? bounds_ns[k + 1] / 1e9 : INFINITY;
	fprintf(stderr, "%s: histogram_quantile %.9g s, summary %.9g s, bucket (%g, %g]\n", what,
		hq, sq, k ? bounds_ns[k - 1] / 1e9 : 0.0,
		k < SHM_LAT_FINITE_BUCKETS ? bounds_ns[k] / 1e9 : INFINITY);
	ck_assert_msg(sq >= lo * (1 - 1.0 / 64) && sq <= hi * (1 + 1.0 / 64),
		      "%s: summary %g outside (%g, %g] around histogram_quantile %g",
		      what, sq, lo, hi, hq);
}

/* The pod label of a process, as Prometheus stored its zernel_process_info. */
static void pod_of(const char *pid, double t, char *pod, size_t len)
{
	struct json_object *root, *res, *metric, *v;
	char q[128];

	snprintf(q, sizeof(q), "zernel_process_info{pid=\"%s\"}", pid);
	res = prom_query(q, t, &root);
	ck_assert_msg(res && json_object_array_length(res) == 1, "no zernel_process_info of %s", pid);
	json_object_object_get_ex(json_object_array_get_idx(res, 0), "metric", &metric);
	ck_assert(json_object_object_get_ex(metric, "pod", &v));
	snprintf(pod, len, "%s", json_object_get_string(v));
	json_object_put(root);
}

/*
 * Starts Prometheus on the rig's exporter, with rules (a path) when not
 * NULL, and with native histograms (so scraping protobuf) when native.
 */
/*
 * What the PodMonitor (deploy/kubernetes/prometheus-operator) makes of a
 * scrape: the target's own namespace, pod and container labels, and
 * honor_labels as the file sets it.  NULL for a plain static target.
 */
struct scrape_as {
	int honor_labels;
};

static void start_prometheus_as(const char *rules, int native, const struct scrape_as *as)
{
	char path[512], cfg[256], data[256], listen[64], log[256];
	FILE *f;

	ck_assert_msg(access(PROMETHEUS, X_OK) == 0, PROMETHEUS " is missing (make test-deps)");
	prom_port = tu_free_port();
	snprintf(cfg, sizeof(cfg), "%s/prometheus.yml", prom_dir);
	snprintf(data, sizeof(data), "--storage.tsdb.path=%s/data", prom_dir);
	snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%u", prom_port);
	f = fopen(cfg, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n");
	if (rules)
		fprintf(f, "rule_files:\n  - %s\n", rules);
	fprintf(f, "scrape_configs:\n  - job_name: zernel\n    scrape_timeout: 900ms\n"
		"    static_configs:\n      - targets: ['127.0.0.1:%u']\n", rig.metrics_port);
	if (as)
		fprintf(f, "        labels: {namespace: zernel, pod: zernel-x7k2p, container: exporter}\n"
			"    honor_labels: %s\n", as->honor_labels ? "true" : "false");
	fclose(f);
	snprintf(path, sizeof(path), "--config.file=%s", cfg);
	snprintf(log, sizeof(log), "%s/prometheus.log", prom_dir);
	{
		char *const argv[] = { PROMETHEUS, path, data, listen, "--log.level=warn",
				       native ? "--enable-feature=native-histograms" : NULL, NULL };

		prometheus = tu_spawn(argv, log);
	}
	ck_assert_int_gt(prometheus, 0);
	ck_assert_msg(tu_wait_http(prom_port, "/-/ready", 200, 30000) == 0,
		      "prometheus never became ready; see %s", log);
}

static void start_prometheus_with(const char *rules, int native)
{
	start_prometheus_as(rules, native, NULL);
}

static void start_prometheus(const char *rules)
{
	start_prometheus_with(rules, 0);
}

/*
 * histogram_quantile (0.5 and 0.99) of hist per pod against the pod's
 * trainer's launch summary, for the first 4 trainers; returns the pairs
 * checked.  The simulator's pods hold one trainer each (the only process
 * that launches kernels) and its DataLoader worker.
 */
static int pods_launch_quantiles(double t, const char *hist,
				 void (*check)(const char *what, double hq, double sq))
{
	struct json_object *root = NULL, *res;
	char q[512], qs[512];
	int checked = 0;

	res = prom_query("zernel_cuda_launch_latency_seconds_count", t, &root);
	ck_assert_msg(res && json_object_array_length(res) > 0, "no CUDA launch series");
	for (size_t i = 0; i < json_object_array_length(res) && i < 4; i++) {
		struct json_object *metric, *pid;
		char pod[256];
		const char *p;

		json_object_object_get_ex(json_object_array_get_idx(res, i), "metric", &metric);
		ck_assert(json_object_object_get_ex(metric, "pid", &pid));
		p = json_object_get_string(pid);
		pod_of(p, t, pod, sizeof(pod));
		for (int k = 0; k < 2; k++) {
			const char *qq = k ? "0.99" : "0.5";

			snprintf(q, sizeof(q), "histogram_quantile(%s, %s{pod=\"%s\"})", qq, hist, pod);
			snprintf(qs, sizeof(qs), "zernel_cuda_launch_latency_seconds{pid=\"%s\",quantile=\"%s\"}", p, qq);
			check(qs, prom_scalar(q, t), prom_scalar(qs, t));
			checked++;
		}
	}
	json_object_put(root);
	return checked;
}

/* The steady scenario served by the rig's exporter, and a folder for Prometheus. */
static void start_steady_rig(void)
{
	tu_stack_init(&rig);
	snprintf(prom_dir, sizeof(prom_dir), "/tmp/zernel-prom-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(prom_dir));
	start_collector("steady", "200");
	start_exporter();
	wait_healthy();
}

START_TEST(prometheus_scrapes_and_histograms_match_summaries)
{
	struct json_object *root, *res;
	double t, up;
	int n, checked = 0;

	ck_assert_msg(access(PROMETHEUS, X_OK) == 0, PROMETHEUS " is missing (make test-deps)");
	start_steady_rig();

	start_prometheus(NULL);

	/* A few seconds of scrapes. */
	for (n = 0; n < 150; n++) {
		up = prom_scalar("zernel_collector_up", now_real());
		if (up == 1)
			break;
		tu_sleep_ms(100);
	}
	ck_assert_msg(up == 1, "prometheus never saw zernel_collector_up 1");
	tu_sleep_ms(3000);
	ck_assert(prom_scalar("up{job=\"zernel\"}", now_real()) == 1);
	t = now_real() - 0.5;

	/* The contract's series are there, with their labels. */
	res = prom_query("zernel_gpu_memory_used_bytes", t, &root);
	ck_assert_msg(res && json_object_array_length(res) > 0, "no zernel_gpu_memory_used_bytes");
	json_object_put(root);
	ck_assert(prom_scalar("count(zernel_nccl_collective_duration_seconds{quantile=\"0.99\"})", t) ==
		  SHM_NCCL_OP_COUNT);

	/*
	 * histogram_quantile over each histogram family against its summary.
	 * Histograms of processes are summed per pod; the simulator's pods
	 * hold one trainer each (the only process that launches kernels) and
	 * its DataLoader worker, so a pod's launch histogram is its trainer's.
	 */
	checked += pods_launch_quantiles(t, "zernel_cuda_launch_duration_seconds_bucket",
					 assert_consistent);
	assert_consistent("nccl all_reduce p50",
			  prom_scalar("histogram_quantile(0.5, zernel_nccl_collective_seconds_bucket{op=\"all_reduce\"})", t),
			  prom_scalar("zernel_nccl_collective_duration_seconds{op=\"all_reduce\",quantile=\"0.5\"}", t));
	/* A pod's DataLoader histogram holds exactly its processes' samples. */
	{
		double pod_count = prom_scalar("sum(zernel_dataloader_wait_duration_seconds_count{pod=\"llama-ft-worker-0\"})", t);
		double procs = prom_scalar("sum(zernel_dataloader_wait_seconds_count * on (pid) "
					   "group_left (pod) zernel_process_info{pod=\"llama-ft-worker-0\"})", t);

		ck_assert_msg(pod_count > 0 && pod_count == procs,
			      "pod DataLoader count %g, its processes' %g", pod_count, procs);
	}
	/* Histograms aggregate across processes, as summaries cannot. */
	ck_assert(isfinite(prom_scalar("histogram_quantile(0.99, sum by (le) (rate(zernel_cuda_launch_duration_seconds_bucket[3s])))", t)));
	ck_assert_int_ge(checked, 2);

	tu_stop(prometheus, SIGTERM, 10000);
	prometheus = 0;
	stop_exporter_cleanly();
}
END_TEST

/*
 * A native quantile against its summary, both of the same samples (a
 * pod's are its trainer's launches; all are in the summary's window
 * this early).
 * The native answer is within PROM_NATIVE_REL_ERROR of the sample of the
 * quantile's rank (prom_native.h), the summary within 1/64 of the same
 * sample (collector/agg/hist.h), so the two are within both bounds together.
 */
static void assert_native_fine(const char *what, double hq, double sq)
{
	double most = (1 + PROM_NATIVE_REL_ERROR) / (1 - 1.0 / 64);

	ck_assert_msg(isfinite(hq) && isfinite(sq) && sq > 0, "%s: native %g, summary %g",
		      what, hq, sq);
	fprintf(stderr, "%s: native histogram_quantile %.9g s, summary %.9g s (%+.2f%%)\n",
		what, hq, sq, (hq / sq - 1) * 100);
	ck_assert_msg(hq / sq <= most && sq / hq <= most,
		      "%s: native quantile %.9g s and summary %.9g s differ by more than %.1f%%",
		      what, hq, sq, (most - 1) * 100);
}

/*
 * A real Prometheus with native histograms on scrapes the protobuf
 * exposition: every latency family is one native histogram a series (no
 * _bucket series stored), its count is the summary's, and its quantiles
 * agree with the summaries' within 4.3% (both made from log-linear
 * buckets: a workload's, NCCL's per op).
 */
START_TEST(prometheus_native_histograms_match_summaries)
{
	struct json_object *root, *res, *hist;
	char q[512], qs[512];
	double t, up = 0;
	int n, checked = 0;

	start_steady_rig();
	start_prometheus_with(NULL, 1);

	for (n = 0; n < 150 && up != 1; n++) {
		up = prom_scalar("zernel_collector_up", now_real());
		tu_sleep_ms(100);
	}
	ck_assert_msg(up == 1, "prometheus never saw zernel_collector_up 1");
	tu_sleep_ms(3000);
	t = now_real() - 0.5;
	ck_assert(prom_scalar("up{job=\"zernel\"}", t) == 1);
	/* The exporter answered it in protobuf. */
	ck_assert(prom_scalar("zernel_exporter_scrapes_total", t) > 0);

	/* A native histogram: the sample is a histogram, and no classic series exists. */
	res = prom_query("zernel_nccl_collective_seconds{op=\"all_reduce\"}", t, &root);
	ck_assert_msg(res && json_object_array_length(res) == 1, "no native all_reduce histogram");
	ck_assert_msg(json_object_object_get_ex(json_object_array_get_idx(res, 0), "histogram", &hist),
		      "all_reduce is not a native histogram: %s", json_object_to_json_string(res));
	json_object_put(root);
	res = prom_query("zernel_nccl_collective_seconds_bucket", t, &root);
	ck_assert(!res || json_object_array_length(res) == 0);
	json_object_put(root);
	/* Summaries, counters and gauges came through as before. */
	ck_assert(prom_scalar("count(zernel_nccl_collective_duration_seconds{quantile=\"0.99\"})", t) ==
		  SHM_NCCL_OP_COUNT);
	ck_assert(prom_scalar("count(zernel_gpu_memory_used_bytes)", t) > 0);

	/* One scrape holds both: the histogram's count is the summary's. */
	ck_assert(prom_scalar("histogram_count(zernel_nccl_collective_seconds{op=\"all_reduce\"})", t) ==
		  prom_scalar("zernel_nccl_collective_duration_seconds_count{op=\"all_reduce\"}", t));
	for (int k = 0; k < 2; k++) {
		const char *qq = k ? "0.99" : "0.5";

		snprintf(q, sizeof(q), "histogram_quantile(%s, zernel_nccl_collective_seconds{op=\"all_reduce\"})", qq);
		snprintf(qs, sizeof(qs), "zernel_nccl_collective_duration_seconds{op=\"all_reduce\",quantile=\"%s\"}", qq);
		assert_native_fine(qs, prom_scalar(q, t), prom_scalar(qs, t));
		checked++;
	}
	/* Per pod, a pod's launch histogram is its trainer's (see the text test). */
	checked += pods_launch_quantiles(t, "zernel_cuda_launch_duration_seconds",
					 assert_native_fine);
	/* Native histograms add across pods. */
	ck_assert(isfinite(prom_scalar("histogram_quantile(0.99, sum(rate(zernel_cuda_launch_duration_seconds[3s])))", t)));
	ck_assert_int_ge(checked, 4);

	tu_stop(prometheus, SIGTERM, 10000);
	prometheus = 0;
	stop_exporter_cleanly();
}
END_TEST

/* ---- the Grafana dashboard against it ---------------------------------- */

/* Replaces every needle in s (in place, bounded by len) with with. */
static void replace_all(char *s, size_t len, const char *needle, const char *with)
{
	char out[4096];
	size_t o = 0, nl = strlen(needle), wl = strlen(with);

	for (const char *p = s; *p && o + wl + 1 < sizeof(out);) {
		if (strncmp(p, needle, nl) == 0) {
			memcpy(out + o, with, wl);
			o += wl;
			p += nl;
		} else {
			out[o++] = *p++;
		}
	}
	out[o] = '\0';
	snprintf(s, len, "%s", out);
}

/*
 * 1 when Prometheus holds a series for every zernel_* selector (name and
 * label matchers) expr queries.
 */
static int every_selector_answers(const char *expr, double t)
{
	for (const char *p = strstr(expr, "zernel_"); p; p = strstr(p + 1, "zernel_")) {
		char q[1024];
		size_t n = 0;

		if (p > expr && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
			continue;
		while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == ':')
			n++;
		if (p[n] == '{' && strchr(p + n, '}'))
			n = (size_t)(strchr(p + n, '}') - p) + 1;
		snprintf(q, sizeof(q), "count(%.*s)", (int)n, p);
		if (!(prom_scalar(q, t) > 0))
			return 0;
	}
	return 1;
}

/*
 * Every query of docs/grafana-dashboard.json whose selectors each find
 * series of the simulated job returns data, from a Prometheus that scrapes as the PodMonitor
 * does: a join on labels a family does not carry would return nothing.
 * The workload's own pod labels survive the target's (honorLabels).
 */
START_TEST(prometheus_answers_every_dashboard_query_as_the_podmonitor_scrapes)
{
	struct json_object *dash, *panels, *root, *res;
	struct scrape_as as;
	char path[512], *pm;
	double t;
	int n, asked = 0;

	snprintf(path, sizeof(path), "%s/deploy/kubernetes/prometheus-operator/podmonitor.yaml",
		 tu_src_dir());
	pm = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(pm);
	as.honor_labels = strstr(pm, "honorLabels: true") != NULL;
	free(pm);
	snprintf(path, sizeof(path), "%s/docs/grafana-dashboard.json", tu_src_dir());
	dash = json_object_from_file(path);
	ck_assert_ptr_nonnull(dash);
	ck_assert(json_object_object_get_ex(dash, "panels", &panels));

	start_steady_rig();
	start_prometheus_as(NULL, 0, &as);
	for (n = 0; n < 150 && prom_scalar("zernel_collector_up", now_real()) != 1; n++)
		tu_sleep_ms(100);
	ck_assert_msg(n < 150, "prometheus never saw zernel_collector_up 1");
	tu_sleep_ms(5000);	/* rates over 10 s need a few scrapes */
	t = now_real() - 0.5;

	ck_assert_msg(prom_scalar("count(zernel_process_info{pod=~\"llama-ft-worker-.*\"})", t) > 0,
		      "the workload's pod labels did not survive the target's (honorLabels)");
	ck_assert(!(prom_scalar("count(zernel_process_info{pod=\"zernel-x7k2p\"})", t) > 0));

	for (size_t i = 0; i < json_object_array_length(panels); i++) {
		struct json_object *panel = json_object_array_get_idx(panels, i), *targets, *title;

		if (!json_object_object_get_ex(panel, "targets", &targets))
			continue;
		json_object_object_get_ex(panel, "title", &title);
		for (size_t k = 0; k < json_object_array_length(targets); k++) {
			struct json_object *expr;
			char q[4096];

			if (!json_object_object_get_ex(json_object_array_get_idx(targets, k), "expr",
						       &expr))
				continue;
			snprintf(q, sizeof(q), "%s", json_object_get_string(expr));
			replace_all(q, sizeof(q), "$__rate_interval", "10s");
			replace_all(q, sizeof(q), "\"$instance\"", "\".+\"");
			replace_all(q, sizeof(q), "\"$gpu\"", "\".+\"");
			replace_all(q, sizeof(q), "\"$pod\"", "\".+\"");
			replace_all(q, sizeof(q), "\"$rank\"", "\".+\"");
			ck_assert_msg(!strchr(q, '$'), "a variable left in %s", q);
			if (!every_selector_answers(q, t))
				continue;
			res = prom_query(q, t, &root);
			ck_assert_msg(res && json_object_array_length(res) > 0,
				      "panel \"%s\": no data for %s", json_object_get_string(title), q);
			json_object_put(root);
			asked++;
		}
	}
	fprintf(stderr, "dashboard: %d queries answered\n", asked);
	ck_assert_int_ge(asked, 20);
	json_object_put(dash);

	tu_stop(prometheus, SIGTERM, 10000);
	prometheus = 0;
	stop_exporter_cleanly();
}
END_TEST

/*
 * The simulator's straggler scenario, scraped by a real Prometheus running
 * docs/prometheus-rules.yml: the job's four ranks join on one comm (NCCL's
 * commHash of their shared uniqueId), and NcclStraggler names rank 1, the
 * scenario's slow rank, and no other.  A 3 s summary window lets the
 * waits after the onset (3 s) fill it.
 */
START_TEST(prometheus_rule_names_the_simulated_straggler)
{
	const char *args[] = { "--scenario", "straggler", "--publish-interval", "200",
			       "--window", "3", NULL };
	char rules[512];
	struct json_object *root, *res = NULL, *metric, *v;
	int n;

	tu_stack_init(&rig);
	snprintf(prom_dir, sizeof(prom_dir), "/tmp/zernel-prom-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(prom_dir));
	ck_assert_int_eq(tu_stack_start_collector(&rig, args), 0);
	start_exporter();
	wait_healthy();
	snprintf(rules, sizeof(rules), "%s/docs/prometheus-rules.yml", tu_src_dir());
	start_prometheus(rules);

	/* Four ranks of one communicator, on one world size. */
	for (n = 0; n < 150; n++) {
		if (prom_scalar("count(count by (comm) (zernel_nccl_comm_info{world_size=\"4\"}))",
				now_real()) == 1 &&
		    prom_scalar("count(zernel_nccl_comm_info{world_size=\"4\"})", now_real()) == 4)
			break;
		tu_sleep_ms(100);
	}
	ck_assert_msg(n < 150, "the four ranks never joined on one comm");

	/* Pending from the first evaluation that finds it (the rule holds for 1m before firing). */
	for (n = 0; n < 300; n++) {
		res = prom_query("ALERTS{alertname=\"NcclStraggler\"}", now_real(), &root);
		if (res && json_object_array_length(res) > 0)
			break;
		json_object_put(root);
		res = NULL;
		tu_sleep_ms(100);
	}
	ck_assert_msg(res, "NcclStraggler never became pending; see %s", prom_dir);
	ck_assert_int_eq(json_object_array_length(res), 1);
	json_object_object_get_ex(json_object_array_get_idx(res, 0), "metric", &metric);
	ck_assert(json_object_object_get_ex(metric, "rank", &v));
	ck_assert_str_eq(json_object_get_string(v), "1");
	json_object_put(root);
	/* The others wait about 60 ms, the straggler about 3 ms. */
	ck_assert(prom_scalar("min(zernel_nccl_comm_wait_seconds{quantile=\"0.5\"})", now_real()) < 0.02);
	ck_assert(prom_scalar("max(zernel_nccl_comm_wait_seconds{quantile=\"0.5\"})", now_real()) > 0.03);

	tu_stop(prometheus, SIGTERM, 10000);
	prometheus = 0;
	stop_exporter_cleanly();
}
END_TEST

/* Copies src to dst (a fake library under a name of its own). */
static void copy_file(const char *src, const char *dst)
{
	char buf[65536];
	FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
	size_t n;

	ck_assert_msg(in && out, "cannot copy %s to %s", src, dst);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
	fclose(in);
	ck_assert_int_eq(fclose(out), 0);
	ck_assert_int_eq(chmod(dst, 0755), 0);
}

/*
 * One "node": a BPF collector probing its own copy of the fake libnccl
 * (named so that no other collector's discovery takes it for libnccl) on
 * segment st->shm, its exporter, and one rank of a 2-rank communicator
 * whose ncclUniqueId (128 bytes of 0x5a) both nodes share.
 */
static pid_t start_node(struct tu_stack *st, int rank, pid_t *workload)
{
	char exe[1024], lib[512], lib_arg[600], rt[1100], zw[1024], comm[32], log[600];
	char fake[1024], cudart[1024], cuda[1024];
	pid_t col;

	snprintf(lib, sizeof(lib), "%s/libnccl_node%d.so.2", prom_dir, rank);
	copy_file(tu_build_path(fake, sizeof(fake), "tests/fakes/libnccl.so.2"), lib);
	tu_build_path(exe, sizeof(exe), "zernel-collector");
	tu_build_path(cudart, sizeof(cudart), "tests/fakes/libcudart.so");
	tu_build_path(cuda, sizeof(cuda), "tests/fakes/libcuda.so.1");
	{
		/* The runtime and driver too: probed before the rank synchronises. */
		char *const argv[] = { exe, "--shm", st->shm, "--publish-interval", "200",
				       "--no-node-libs", "--lib", lib, "--lib", cudart,
				       "--lib", cuda, NULL };

		col = tu_spawn(argv, st->col_log);
	}
	ck_assert_int_gt(col, 0);
	st->collector = col;
	if (tu_stack_start_exporter(st) < 0) {
		tu_stack_dump_logs(st);
		ck_abort_msg("node %d: exporter never answered", rank);
	}
	/* Up once its libraries, ours among them, are attached: attaching takes seconds. */
	ck_assert_msg(tu_stack_wait_up(st, 120000) == 0, "node %d: collector never up", rank);
	snprintf(lib_arg, sizeof(lib_arg), "lib:%s", lib);
	snprintf(rt, sizeof(rt), "lib:%s", tu_build_path(fake, sizeof(fake), "tests/fakes/libcudart.so"));
	tu_build_path(zw, sizeof(zw), "tests/workloads/zw_cuda");
	snprintf(comm, sizeof(comm), "commrank:2:%d", rank);
	snprintf(log, sizeof(log), "%s/node%d.log", prom_dir, rank);
	{
		char *const argv[] = { zw, rt, lib_arg, comm, "stream:1000000",
				       "nccl:allreduce:256:7:20", "sync:1000000", "sleep:120000",
				       NULL };

		*workload = tu_spawn(argv, log);
	}
	ck_assert_int_gt(*workload, 0);
	return col;
}

/*
 * Two processes standing for two nodes, each watched by its own collector
 * and exporter, share one ncclUniqueId: both report the same comm (NCCL's
 * commHash of it), with ranks 0 and 1, and a real Prometheus scraping both
 * exporters joins them in one PromQL query.  Needs root (BPF).
 */
START_TEST(prometheus_joins_the_ranks_of_one_communicator_across_nodes)
{
	struct tu_stack node1;
	char cfg[256], data[256], listen[64], path[512], log[256], want[32];
	struct json_object *root, *res, *metric, *v;
	pid_t w0 = 0, w1 = 0;
	FILE *f;
	int n;

	if (tu_skip_unless_root("prometheus_joins_the_ranks_of_one_communicator_across_nodes"))
		return;
	ck_assert_msg(access(PROMETHEUS, X_OK) == 0, PROMETHEUS " is missing (make test-deps)");
	snprintf(prom_dir, sizeof(prom_dir), "/tmp/zernel-prom-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(prom_dir));
	tu_stack_init(&rig);
	tu_stack_init(&node1);
	start_node(&rig, 0, &w0);
	start_node(&node1, 1, &w1);

	prom_port = tu_free_port();
	snprintf(cfg, sizeof(cfg), "%s/prometheus.yml", prom_dir);
	snprintf(data, sizeof(data), "--storage.tsdb.path=%s/data", prom_dir);
	snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%u", prom_port);
	f = fopen(cfg, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "global:\n  scrape_interval: 1s\n"
		"scrape_configs:\n  - job_name: zernel\n    scrape_timeout: 900ms\n"
		"    static_configs:\n      - targets: ['127.0.0.1:%u', '127.0.0.1:%u']\n",
		rig.metrics_port, node1.metrics_port);
	fclose(f);
	snprintf(path, sizeof(path), "--config.file=%s", cfg);
	snprintf(log, sizeof(log), "%s/prometheus.log", prom_dir);
	{
		char *const argv[] = { PROMETHEUS, path, data, listen, "--log.level=warn", NULL };

		prometheus = tu_spawn(argv, log);
	}
	ck_assert_int_gt(prometheus, 0);
	ck_assert_msg(tu_wait_http(prom_port, "/-/ready", 200, 30000) == 0,
		      "prometheus never became ready; see %s", log);

	/* One query joins rank 0's calls (node 0) with rank 1's (node 1) on comm. */
	/* NCCL's commHash of 128 bytes of 0x5a (see tests/collector/check_nccl_hash.c). */
	snprintf(want, sizeof(want), "0x%llx", 0x3e97385d3fdaa372ull);
	res = NULL;
	for (n = 0; n < 600; n++) {
		res = prom_query("zernel_nccl_comm_calls_total{rank=\"0\"} == 20"
				 " and on (comm) zernel_nccl_comm_calls_total{rank=\"1\"} == 20",
				 now_real(), &root);
		if (res && json_object_array_length(res) == 1)
			break;
		json_object_put(root);
		res = NULL;
		tu_sleep_ms(100);
	}
	ck_assert_msg(res, "the two ranks never joined; see %s", prom_dir);
	json_object_object_get_ex(json_object_array_get_idx(res, 0), "metric", &metric);
	ck_assert(json_object_object_get_ex(metric, "comm", &v));
	ck_assert_str_eq(json_object_get_string(v), want);
	ck_assert(json_object_object_get_ex(metric, "instance", &v));
	ck_assert_uint_eq(strtoul(strrchr(json_object_get_string(v), ':') + 1, NULL, 10),
			  rig.metrics_port);
	json_object_put(root);
	/* Each node reports its own rank only, both of one world of 2. */
	ck_assert(prom_scalar("count(zernel_nccl_comm_info{world_size=\"2\"})", now_real()) == 2);
	ck_assert(prom_scalar("count(count by (comm) (zernel_nccl_comm_info))", now_real()) == 1);
	ck_assert(prom_scalar("count(count by (instance) (zernel_nccl_comm_info))", now_real()) == 2);
	/*
	 * Every one of the 20 collectives of each rank was waited for.  A
	 * rank's waits end at its one synchronisation after its 20 calls, so
	 * a scrape may hold the calls and not yet the waits: up to 10 s.
	 */
	{
		double waits = 0;

		for (n = 0; n < 100 && waits != 40; n++) {
			if (n)
				tu_sleep_ms(100);
			waits = prom_scalar("sum(zernel_nccl_comm_wait_seconds_count)", now_real());
		}
		ck_assert_msg(waits == 40, "%g waits", waits);
	}

	tu_stop(prometheus, SIGTERM, 10000);
	prometheus = 0;
	tu_stop(w0, SIGTERM, 2000);
	tu_stop(w1, SIGTERM, 2000);
	tu_stack_stop(&node1);
	stop_exporter_cleanly();
}
END_TEST

/* Runs the exporter with args; returns its exit status, output in out. */
static int run_exporter(const char *args, char *out, size_t len)
{
	char path[512], log[96], *text;
	int rc;

	snprintf(log, sizeof(log), "/tmp/zernel-exp-flags-%d.log", (int)getpid());
	tu_build_path(path, sizeof(path), "zernel-exporter");
	rc = tu_system("timeout 10 %s %s > %s 2>&1", path, args, log);
	text = tu_read_file(log, NULL);
	snprintf(out, len, "%s", text ? text : "");
	free(text);
	unlink(log);
	return rc;
}

START_TEST(exporter_flags_are_checked)
{
	static const struct {
		const char *args;
		int rc;
		const char *says;
	} cases[] = {
		{ "--help", 0, "--ws-interval MS" },
		{ "--version", 0, "zernel-exporter " },
		{ "--bogus", 2, "unknown flag --bogus" },
		{ "--ws-interval 50", 2, "--ws-interval 50: expected a whole number of milliseconds in 100..60000" },
		{ "--ws-interval 60001", 2, "100..60000" },
		{ "--ws-interval 1s", 2, "100..60000" },
		{ "--metrics-listen nope", 2, "--metrics-listen nope: expected ADDR:PORT" },
		{ "--ws-listen 127.0.0.1:0", 2, "--ws-listen 127.0.0.1:0" },
		{ "--shm noslash", 2, "--shm noslash: expected /NAME" },
		{ "--shm /a/b", 2, "expected /NAME" },
		{ "--shm", 2, "--shm needs a value" },
		{ "extra", 2, "unexpected argument extra" },
	};
	char out[4096], args[256];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd;

	ck_assert_msg(access(tu_build_path(out, sizeof(out), "zernel-exporter"), X_OK) == 0,
		      "zernel-exporter is not built");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = run_exporter(cases[i].args, out, sizeof(out));

		ck_assert_msg(rc == cases[i].rc, "%s: exit %d, want %d (%s)", cases[i].args, rc,
			      cases[i].rc, out);
		ck_assert_msg(strstr(out, cases[i].says), "%s: output lacks \"%s\": %s",
			      cases[i].args, cases[i].says, out);
	}
	/* A port already taken: a clear message and exit 1, not a crash. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(args, sizeof(args), "--shm /zernel-flags-test --metrics-listen 127.0.0.1:%u "
		 "--ws-listen 127.0.0.1:%u", ntohs(sa.sin_port), tu_free_port());
	ck_assert_int_eq(run_exporter(args, out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, "cannot bind 127.0.0.1:") && strstr(out, "Address already in use"),
		      "output: %s", out);
	close(fd);
}
END_TEST

Suite *exporter_suite(void);
Suite *exporter_suite(void)
{
	Suite *s = suite_create("exporter");
	TCase *tc = tcase_create("integration");
	TCase *prom = tcase_create("prometheus");

	tcase_add_checked_fixture(tc, NULL, rig_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, exporter_flags_are_checked);
	tcase_add_test(tc, exporter_serves_every_contract_family_with_its_labels);
	tcase_add_test(tc, exporter_families_are_the_catalogs);
	tcase_add_test(tc, exporter_output_passes_promtool_and_validator);
	tcase_add_test(tc, exporter_http_paths_methods_and_limits);
	tcase_add_test(tc, exporter_follows_collector_down_and_back);
	tcase_add_test(tc, exporter_survives_a_garbage_segment);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(prom, NULL, rig_teardown);
	tcase_set_timeout(prom, 300);
	tcase_add_test(prom, prometheus_scrapes_and_histograms_match_summaries);
	tcase_add_test(prom, prometheus_native_histograms_match_summaries);
	tcase_add_test(prom, prometheus_rule_names_the_simulated_straggler);
	tcase_add_test(prom, prometheus_answers_every_dashboard_query_as_the_podmonitor_scrapes);
	tcase_add_test(prom, prometheus_joins_the_ranks_of_one_communicator_across_nodes);
	suite_add_tcase(s, prom);
	return s;
}
