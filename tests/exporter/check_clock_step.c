/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Clock steps while zernel-collector --simulate and zernel-exporter run.
 * The wall clock is stepped inside the processes by an LD_PRELOAD shim
 * (tests/fakes/clock_step.c), back an hour and forward again, as NTP or
 * `date -s` would; the collector's monotonic clock is moved by restarting
 * it in a time namespace (unshare --time, root), as an OCI runtime's
 * timeOffsets would.  Through every step: no negative duration or age on
 * /metrics or the feed, counters and quantile windows sane, no stale
 * report, HTTP timeouts as long as they should be, and alert notices whose
 * end is never before their start.  About 40 s.
 */
#include <arpa/inet.h>
#include <check.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/util.h"
#include "exporter/http/http.h"
#include "shm/shm_consts.h"
#include "shm/shm_reader.h"
#include "tests/exporter/prom_validate.h"
#include "tests/exporter/strmap.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"
#include "tests/support/tu_hook.h"

#define PY		"/usr/bin/python3"
#define INTERVAL_MS	500u
#define LIMIT_MS	(3 * INTERVAL_MS)	/* the reader's stale limit */
#define HOUR_S		3600

/* ---- the wall-clock shim ------------------------------------------------ */

/* Now on CLOCK_MONOTONIC, in seconds: the shim's step times are absolute. */
static double mono_s(void)
{
	return (double)now_mono_ns() / 1e9;
}

/*
 * Programs started from now on get the shim with these steps ("AT:BY,...",
 * AT in seconds of CLOCK_MONOTONIC), or no shim when steps is NULL.
 */
static void shim_for_next_spawns(const char *steps)
{
	char shim[1024];

	if (!steps) {
		unsetenv("LD_PRELOAD");
		unsetenv("ZERNEL_CLOCK_STEPS");
		return;
	}
	tu_build_path(shim, sizeof(shim), "tests/fakes/libzernel-clockstep.so");
	ck_assert_msg(access(shim, R_OK) == 0, "%s is not built (make tests-build)", shim);
	setenv("LD_PRELOAD", shim, 1);
	setenv("ZERNEL_CLOCK_STEPS", steps, 1);
}

/*
 * The collector and the exporter (with exporter_args, may be NULL), each
 * with the shim when its steps are not NULL.
 */
static void rig_start(struct tu_stack *rig, const char *col_steps, const char *exp_steps,
		      const char *const *exporter_args)
{
	char publish[16];
	const char *args[] = { "--publish-interval", publish, NULL };

	tu_stack_init(rig);
	rig->exporter_args = exporter_args;
	snprintf(publish, sizeof(publish), "%u", INTERVAL_MS);
	rig->ws_interval_ms = INTERVAL_MS;
	shim_for_next_spawns(col_steps);
	ck_assert_int_eq(tu_stack_start_collector(rig, args), 0);
	shim_for_next_spawns(exp_steps);
	if (tu_stack_start_exporter(rig) < 0 || tu_stack_wait_up(rig, 10000) < 0) {
		shim_for_next_spawns(NULL);
		tu_stack_dump_logs(rig);
		ck_abort_msg("the rig never came up");
	}
	shim_for_next_spawns(NULL);
}

/* ---- what every scrape must show ---------------------------------------- */

/* The cumulative series of one collector generation, to see none go down. */
struct memory {
	struct strmap idx;
	double *val;
	size_t n, cap;
	double generation;
	unsigned int scrapes;
};

static void memory_reset(struct memory *m, double generation)
{
	strmap_free(&m->idx);
	memset(&m->idx, 0, sizeof(m->idx));
	m->n = 0;
	m->generation = generation;
}

static void memory_free(struct memory *m)
{
	strmap_free(&m->idx);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

/* Stores v for series: 1 with its value at the previous scrape in *old, 0 when new. */
static int memory_swap(struct memory *m, const char *series, double v, double *old)
{
	size_t i;

	if (strmap_get(&m->idx, series, &i)) {
		*old = m->val[i];
		m->val[i] = v;
		return 1;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 4096;
		m->val = realloc(m->val, m->cap * sizeof(*m->val));
		ck_assert_ptr_nonnull(m->val);
	}
	ck_assert_int_eq(strmap_put(&m->idx, series, m->n), 0);
	m->val[m->n++] = v;
	return 0;
}

static int cumulative(const char *name, size_t len)
{
	static const char *const suffixes[] = { "_total", "_count", "_sum", "_bucket" };

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t k = strlen(suffixes[i]);

		if (len > k && memcmp(name + len - k, suffixes[i], k) == 0)
			return 1;
	}
	return 0;
}

/* One sample line: no negative or non-finite value, quantiles in order and range. */
static void check_sample(struct memory *m, const char *line, size_t len, char *last_q_base,
			 double *last_q)
{
	char series[1024], num[64];
	size_t slen = len, nlen = strcspn(line, "{ ");
	const char *q;
	double v, old;
	int had;

	/* The value follows the last space. */
	while (slen > 0 && line[slen - 1] != ' ')
		slen--;
	ck_assert_msg(slen > 1 && slen - 1 < sizeof(series) && len - slen < sizeof(num),
		      "odd line: %.*s", (int)len, line);
	memcpy(series, line, slen - 1);
	series[slen - 1] = '\0';
	memcpy(num, line + slen, len - slen);
	num[len - slen] = '\0';
	v = strtod(num, NULL);
	had = memory_swap(m, series, v, &old);
	q = strstr(series, "quantile=\"");
	if (q) {
		size_t base = (size_t)(q - series);

		/* Unknown (no sample in the window) is fine, unless it had samples. */
		if (isnan(v)) {
			ck_assert_msg(!had || isnan(old), "%s: window emptied (was %g)", series, old);
			return;
		}
		ck_assert_msg(v >= 0 && v <= (double)HIST_MAX_VALUE / 1e9,
			      "%s = %g: outside the histogram's range", series, v);
		if (strncmp(last_q_base, series, base) == 0 && last_q_base[base] == '\0')
			ck_assert_msg(v >= *last_q, "%s = %g below the lower quantile %g", series,
				      v, *last_q);
		snprintf(last_q_base, 1024, "%.*s", (int)base, series);
		*last_q = v;
		return;
	}
	ck_assert_msg(isfinite(v) && v >= 0, "%s = %s", series, num);
	if (had && cumulative(series, nlen))
		ck_assert_msg(v >= old, "%s went down from %.17g to %.17g", series, old, v);
}

/* A scrape while the collector runs: valid, fresh, nothing negative, nothing going back. */
static void check_metrics(const char *text, struct memory *m)
{
	char err[256], last_q_base[1024] = "";
	double up = 0, ok = 0, age = -1, gen = 0, last_q = 0;

	ck_assert_msg(prom_validate(text, strlen(text), err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(tu_metric(text, "zernel_collector_up", NULL, &up), 0);
	tu_metric(text, "zernel_collector_status", "status=\"ok\"", &ok);
	ck_assert_int_eq(tu_metric(text, "zernel_collector_last_publish_age_seconds", NULL, &age), 0);
	ck_assert_msg(up == 1 && ok == 1, "collector reported down or not ok:\n%.2000s",
		      strstr(text, "zernel_collector_up") ? strstr(text, "zernel_collector_up") : text);
	ck_assert_msg(age >= 0 && age <= LIMIT_MS / 1e3, "publish age %g s", age);
	ck_assert_int_eq(tu_metric(text, "zernel_segment_generation", NULL, &gen), 0);
	if (gen != m->generation)
		memory_reset(m, gen);
	for (const char *line = text; *line; line += *line == '\n') {
		size_t len = strcspn(line, "\n");

		if (len && line[0] != '#')
			check_sample(m, line, len, last_q_base, &last_q);
		line += len;
	}
	m->scrapes++;
}

/* Scrapes every 250 ms until until_s (CLOCK_MONOTONIC), checking each. */
static void scrape_until(const struct tu_stack *rig, struct memory *m, double until_s)
{
	while (mono_s() < until_s) {
		char *text = tu_scrape(rig->metrics_port);

		ck_assert_msg(text != NULL, "no /metrics answer");
		check_metrics(text, m);
		free(text);
		tu_sleep_ms(250);
	}
}

static double scrape_value(const struct tu_stack *rig, const char *name, const char *labels)
{
	char *text = tu_scrape(rig->metrics_port);
	double v = -1;

	ck_assert_ptr_nonnull(text);
	tu_metric(text, name, labels, &v);
	free(text);
	return v;
}

/* The feed client (tests/py/clock_step_feed.py) for seconds; its pid, or 0 without it. */
static pid_t feed_start(const struct tu_stack *rig, double seconds)
{
	char script[1024], port[16], secs[32], limit[16];
	char *argv[] = { PY, script, port, secs, limit, NULL };

	if (tu_system(PY " -c 'import websockets' 2>/dev/null") != 0) {
		tu_skip_missing("the feed checks: %s lacks python3-websockets\n", PY);
		return 0;
	}
	snprintf(script, sizeof(script), "%s/tests/py/clock_step_feed.py", tu_src_dir());
	snprintf(port, sizeof(port), "%u", rig->ws_port);
	snprintf(secs, sizeof(secs), "%.1f", seconds);
	snprintf(limit, sizeof(limit), "%u", LIMIT_MS);
	return tu_spawn(argv, NULL);
}

static void feed_wait(pid_t pid)
{
	int st;

	if (pid <= 0)
		return;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the feed failed its checks");
}

static void collector_still_running(const struct tu_stack *rig)
{
	int st;

	ck_assert_msg(waitpid(rig->collector, &st, WNOHANG) == 0,
		      "the collector exited (status 0x%x)", st);
}

/* ---- the wall clock steps ----------------------------------------------- */

/* The collector's publishes so far and its last heartbeat (CLOCK_MONOTONIC), from its segment. */
static void segment_publishes(const struct tu_stack *rig, uint64_t *publishes, uint64_t *mono_ns)
{
	struct shm_reader r;
	struct shm_snapshot snap = { 0 };
	enum shm_read_status st;
	char why[256];

	shm_reader_init(&r, rig->shm);
	st = shm_reader_snapshot(&r, &snap, why, sizeof(why));
	ck_assert_msg(st == SHM_READ_OK || st == SHM_READ_STALE, "segment %s: %s", rig->shm, why);
	*publishes = snap.hdr->stats.publishes;
	*mono_ns = snap.hdr->heartbeat_mono_ns;
	shm_snapshot_free(&snap);
	shm_reader_close(&r);
}

/*
 * Both processes' wall clocks go back an hour 3 s in, then forward two
 * hours 3 s later; /metrics and the feed are checked throughout.
 */
START_TEST(wall_clock_steps_keep_metrics_and_feed_sane)
{
	struct tu_stack rig;
	struct memory m = { 0 };
	char steps[128];
	double t0 = mono_s(), t1;
	uint64_t pubs0, pubs1, beat0, beat1;
	pid_t feed;

	snprintf(steps, sizeof(steps), "%.3f:%d,%.3f:%d", t0 + 3, -HOUR_S, t0 + 6, 2 * HOUR_S);
	rig_start(&rig, steps, steps, NULL);
	t1 = mono_s();
	ck_assert_msg(t1 < t0 + 3, "the rig took over 3 s to start");
	segment_publishes(&rig, &pubs0, &beat0);
	feed = feed_start(&rig, t0 + 8.5 - t1);
	scrape_until(&rig, &m, t0 + 9);
	feed_wait(feed);
	segment_publishes(&rig, &pubs1, &beat1);
	fprintf(stderr, "wall clock steps: %u scrapes sane, %llu publishes in %.1f s\n",
		m.scrapes, (unsigned long long)(pubs1 - pubs0), (double)(beat1 - beat0) / 1e9);
	/*
	 * Publishing kept its cadence through both steps: as many publishes
	 * as intervals between the first and the last heartbeat (the
	 * collector's monotonic clock, which no step moves), less one for a
	 * publish a busy machine made late.
	 */
	ck_assert_uint_gt(beat1, beat0 + 5000000000ull);
	ck_assert_uint_ge(pubs1 - pubs0 + 1, (beat1 - beat0) / (INTERVAL_MS * 1000000ull));
	collector_still_running(&rig);
	ck_assert_int_eq(tu_wait_http(rig.metrics_port, "/healthz", 200, 1000), 0);
	memory_free(&m);
	tu_stack_stop(&rig);
}
END_TEST

/* A connection to the metrics port; sends req (may be partial) and reads no answer yet. */
static int open_conn(uint16_t port, const char *req)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	return fd;
}

struct conn {
	const char *what;
	int fd;
	double opened, closed;		/* seconds of CLOCK_MONOTONIC; closed 0: open */
};

/* Reads what each open connection has; notes when the exporter closed it. */
static void conns_poll(struct conn *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct pollfd p = { .fd = c[i].fd, .events = POLLIN };
		char buf[4096];

		if (c[i].fd < 0 || c[i].closed || poll(&p, 1, 0) != 1)
			continue;
		if (recv(c[i].fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			c[i].closed = mono_s();
	}
}

/*
 * The exporter's wall clock goes back an hour, later forward an hour.
 * Connections idle or slow before the back step (A, C), one slow after it
 * (B), and one slow across the forward step (D) are each closed
 * HTTP_REQ_TIMEOUT_MS after their last byte: not an hour later, not at once.
 */
START_TEST(http_timeouts_hold_across_wall_clock_steps)
{
	static const char partial[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
	const double timeout = HTTP_REQ_TIMEOUT_MS / 1e3;
	struct tu_stack rig;
	struct conn c[4] = { { .what = "idle A" }, { .what = "slow C" }, { .what = "slow B" },
			     { .what = "slow D" } };
	char steps[128], buf[4096];
	double t0 = mono_s() + 3;

	snprintf(steps, sizeof(steps), "%.3f:%d,%.3f:%d", t0 + 1, -HOUR_S, t0 + 6, HOUR_S);
	rig_start(&rig, NULL, steps, NULL);
	ck_assert_msg(mono_s() < t0, "the rig took over 3 s to start");
	tu_sleep_ms((unsigned int)((t0 - mono_s()) * 1000));

	c[0].fd = open_conn(rig.metrics_port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert_int_gt(recv(c[0].fd, buf, sizeof(buf), 0), 0);	/* answered; kept alive */
	c[1].fd = open_conn(rig.metrics_port, partial);
	c[0].opened = c[1].opened = mono_s();
	c[2].fd = c[3].fd = -1;
	while (mono_s() < t0 + 10) {
		if (c[2].fd < 0 && mono_s() >= t0 + 1.5) {
			c[2].fd = open_conn(rig.metrics_port, partial);
			c[2].opened = mono_s();
		}
		if (c[3].fd < 0 && mono_s() >= t0 + 5) {
			c[3].fd = open_conn(rig.metrics_port, partial);
			c[3].opened = mono_s();
		}
		conns_poll(c, 4);
		tu_sleep_ms(20);
	}
	for (size_t i = 0; i < 4; i++) {
		double after = c[i].closed ? c[i].closed - c[i].opened : -1;

		fprintf(stderr, "http timeouts: %s closed %.2f s after its last byte\n", c[i].what,
			after);
		ck_assert_msg(c[i].closed, "%s still open %.1f s after its last byte", c[i].what,
			      mono_s() - c[i].opened);
		ck_assert_msg(after >= timeout - 0.3 && after <= timeout + 1.5,
			      "%s closed %.2f s after its last byte, not about %.1f s", c[i].what,
			      after, timeout);
		close(c[i].fd);
	}
	ck_assert_int_eq(tu_wait_http(rig.metrics_port, "/healthz", 200, 1000), 0);
	tu_stack_stop(&rig);
}
END_TEST

/* ---- alerts ------------------------------------------------------------- */

static const char rules[] =
	"{\"rules\": [\n"
	" {\"name\": \"Up\", \"metric\": \"collector_up\", \"comparison\": \"==\",\n"
	"  \"threshold\": 1, \"for\": \"0s\", \"severity\": \"info\"},\n"
	" {\"name\": \"UpLong\", \"metric\": \"collector_up\", \"comparison\": \"==\",\n"
	"  \"threshold\": 1, \"for\": \"3s\", \"severity\": \"info\"}]}\n";

/* The first alert of notification i: status, alertname, startsAt, endsAt. */
static void notice(struct tu_hook *h, int i, char out[4][64])
{
	static const char *const keys[] = { "status", NULL, "startsAt", "endsAt" };
	struct tu_hook_request req;
	struct json_object *j, *a;

	tu_hook_get(h, i, &req);
	j = json_tokener_parse(req.body);
	ck_assert_msg(j != NULL, "notification %d is not JSON: %s", i, req.body);
	a = json_object_array_get_idx(json_object_object_get(j, "alerts"), 0);
	ck_assert_ptr_nonnull(a);
	for (int k = 0; k < 4; k++) {
		struct json_object *v = keys[k] ? json_object_object_get(a, keys[k]) :
			json_object_object_get(json_object_object_get(a, "labels"), "alertname");

		ck_assert_msg(v != NULL, "notification %d lacks field %d", i, k);
		snprintf(out[k], 64, "%s", json_object_get_string(v));
	}
	json_object_put(j);
}

/* In the feed's (and /snapshot's) alerts, no firing one started before it was active. */
static int check_snapshot_alerts(const struct tu_stack *rig)
{
	size_t len = 8u << 20;
	char *body = malloc(len);
	struct json_object *j, *arr;
	int firing = 0;

	ck_assert_ptr_nonnull(body);
	ck_assert_int_eq(tu_http_request(rig->metrics_port, "GET", "/snapshot", body, len), 200);
	j = json_tokener_parse(body);
	ck_assert_ptr_nonnull(j);
	arr = json_object_object_get(j, "alerts");
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *a = json_object_array_get_idx(arr, i);
		const char *st = json_object_get_string(json_object_object_get(a, "state"));
		const char *s = json_object_get_string(json_object_object_get(a, "startsAt"));
		const char *act = json_object_get_string(json_object_object_get(a, "activeAt"));

		if (strcmp(st, "firing") != 0)
			continue;
		firing++;
		ck_assert_msg(strcmp(s, act) >= 0, "/snapshot: %s startsAt %s before activeAt %s",
			      json_object_get_string(json_object_object_get(a, "alertname")), s, act);
	}
	json_object_put(j);
	free(body);
	return firing;
}

/*
 * The exporter's wall clock goes back an hour while UpLong is pending; the
 * collector then stops (SIGSTOP) and both alerts resolve; it resumes and Up
 * fires again.  Every notice: endsAt zero while firing, never before
 * startsAt once resolved, and no start before the previous end.
 */
START_TEST(alert_notices_stay_in_order_when_the_wall_clock_steps_back)
{
	struct tu_stack rig;
	struct tu_hook hook;
	struct memory m = { 0 };
	char dir[64], path[128], url[64], steps[64], n[8][4][64];
	const char *eargs[] = { "--alerts", path, "--webhook", url, NULL };
	double t0;
	FILE *f;
	int collector_pid;

	snprintf(dir, sizeof(dir), "/tmp/zernel-clock-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	tu_system("chmod 755 '%s'", dir);
	snprintf(path, sizeof(path), "%s/alerts.json", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(rules, f);
	ck_assert_int_eq(fclose(f), 0);
	tu_system("chmod 644 '%s'", path);
	tu_hook_start(&hook, NULL, 0, 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/hook", hook.port);

	t0 = mono_s();
	snprintf(steps, sizeof(steps), "%.3f:%d", t0 + 2.5, -HOUR_S);
	rig_start(&rig, NULL, steps, eargs);
	collector_pid = rig.collector;
	ck_assert_msg(mono_s() < t0 + 2.5, "the rig took over 2.5 s to start");

	/* Up fires at once; UpLong 3 s later, after the step: never stale meanwhile. */
	scrape_until(&rig, &m, t0 + 5);
	ck_assert_int_eq(tu_hook_wait(&hook, 2, 3000), 0);
	ck_assert_int_eq(check_snapshot_alerts(&rig), 2);

	/* The collector stops: both resolve, with the clock an hour back. */
	ck_assert_int_eq(kill(collector_pid, SIGSTOP), 0);
	ck_assert_msg(tu_hook_wait(&hook, 4, 6000) == 0, "%d notices, not 4", tu_hook_count(&hook));
	ck_assert_int_eq(kill(collector_pid, SIGCONT), 0);
	ck_assert_msg(tu_hook_wait(&hook, 5, 6000) == 0, "Up did not fire again");
	tu_sleep_ms(200);

	for (int i = 0; i < tu_hook_count(&hook) && i < 8; i++) {
		notice(&hook, i, n[i]);
		fprintf(stderr, "notice %d: %s %s startsAt %s endsAt %s\n", i, n[i][1], n[i][0],
			n[i][2], n[i][3]);
		if (strcmp(n[i][0], "firing") == 0) {
			ck_assert_str_eq(n[i][3], "0001-01-01T00:00:00Z");
		} else {
			ck_assert_str_eq(n[i][0], "resolved");
			ck_assert_msg(strcmp(n[i][3], n[i][2]) >= 0,
				      "%s resolved with endsAt %s before startsAt %s", n[i][1],
				      n[i][3], n[i][2]);
		}
		/* Each alert's notices in order: this start or end not before the last end. */
		for (int k = i - 1; k >= 0; k--) {
			if (strcmp(n[k][1], n[i][1]) != 0 || strcmp(n[k][0], "resolved") != 0)
				continue;
			ck_assert_msg(strcmp(n[i][2], n[k][3]) >= 0,
				      "%s started at %s, before its previous end %s", n[i][1],
				      n[i][2], n[k][3]);
			break;
		}
	}
	memory_free(&m);
	tu_stack_stop(&rig);
	tu_hook_stop(&hook);
	tu_system("rm -rf '%s'", dir);
}
END_TEST

/* ---- the monotonic clock: a collector in another time namespace ---------- */

/* The collector's pid as the segment says (unshare --fork is its parent). */
static int writer_pid(const struct tu_stack *rig)
{
	char *text = tu_scrape(rig->metrics_port), *p;
	int pid = 0;

	ck_assert_ptr_nonnull(text);
	p = strstr(text, "\nzernel_collector_info{");
	if (p && (p = strstr(p, "writer_pid=\"")))
		pid = atoi(p + 12);
	free(text);
	return pid;
}

/* Stops the collector by its own pid, so that it is gone before another starts. */
static void stop_namespaced_collector(struct tu_stack *rig)
{
	int pid = writer_pid(rig);

	ck_assert_int_gt(pid, 1);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	for (int i = 0; i < 300 && kill(pid, 0) == 0; i++)
		tu_sleep_ms(10);
	ck_assert_msg(kill(pid, 0) < 0, "collector %d did not stop", pid);
	tu_stack_stop_collector(rig, SIGTERM);
}

/* Polls /metrics until the collector is up on another generation than gen; seconds taken. */
static double wait_up_on_new_generation(const struct tu_stack *rig, double gen)
{
	double t = mono_s();

	while (mono_s() - t < 10) {
		char *text = tu_scrape(rig->metrics_port);
		double up = 0, g = gen;

		if (text) {
			tu_metric(text, "zernel_collector_up", NULL, &up);
			tu_metric(text, "zernel_segment_generation", NULL, &g);
		}
		free(text);
		if (up == 1 && g != gen)
			return mono_s() - t;
		tu_sleep_ms(50);
	}
	ck_abort_msg("the collector in the time namespace never came up");
	return 0;
}

/* Seconds until /metrics says status; 0 after 10 s. */
static double wait_status(const struct tu_stack *rig, const char *status)
{
	char want[64];
	double t = mono_s();

	snprintf(want, sizeof(want), "status=\"%s\"", status);
	while (mono_s() - t < 10) {
		if (scrape_value(rig, "zernel_collector_status", want) == 1)
			return mono_s() - t;
		tu_sleep_ms(50);
	}
	return 0;
}

/*
 * The exporter runs on the machine's clocks; the collector is restarted in
 * a time namespace whose CLOCK_MONOTONIC (and BOOTTIME) is 10 minutes
 * behind, then 10 minutes ahead.  Each time the exporter reports it up
 * within two publishes of its start, fresh with true ages, and stale when
 * it stops publishing.
 */
START_TEST(collector_in_another_time_namespace_is_fresh)
{
	static const int offsets[] = { -600, 600 };
	struct tu_stack rig;
	char exe[1024], publish[16], mono[32], boot[32];
	char *argv[] = { "/usr/bin/unshare", "--time", "--fork", "--kill-child=SIGTERM", mono,
			 boot, "--", exe, "--simulate", "--shm", NULL, "--publish-interval",
			 publish, NULL };

	if (tu_skip_unless_root("collector_in_another_time_namespace_is_fresh"))
		return;
	if (tu_system("/usr/bin/unshare --time --fork --monotonic=-1 true 2>/dev/null") != 0) {
		fprintf(stderr, "SKIP collector_in_another_time_namespace_is_fresh: no time "
			"namespaces here (Linux 5.6, CONFIG_TIME_NS, util-linux 2.36)\n");
		return;
	}
	rig_start(&rig, NULL, NULL, NULL);
	tu_build_path(exe, sizeof(exe), "zernel-collector");
	argv[10] = rig.shm;
	snprintf(publish, sizeof(publish), "%u", INTERVAL_MS);
	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		struct memory m = { 0 };
		double gen = scrape_value(&rig, "zernel_segment_generation", NULL), took;
		pid_t feed;
		int pid;

		if (i == 0)
			tu_stack_stop_collector(&rig, SIGTERM);
		else
			stop_namespaced_collector(&rig);
		snprintf(mono, sizeof(mono), "--monotonic=%d", offsets[i]);
		snprintf(boot, sizeof(boot), "--boottime=%d", offsets[i]);
		rig.collector = tu_spawn(argv, rig.col_log);
		ck_assert_int_gt(rig.collector, 0);
		took = wait_up_on_new_generation(&rig, gen);
		fprintf(stderr, "time namespace %+d s: up %.2f s after the collector started\n",
			offsets[i], took);
		ck_assert_double_le(took, 2.0 * INTERVAL_MS / 1e3 + 1.0);

		feed = feed_start(&rig, 2.0);
		scrape_until(&rig, &m, mono_s() + 2.5);
		feed_wait(feed);
		memory_free(&m);

		pid = writer_pid(&rig);
		ck_assert_int_gt(pid, 1);
		ck_assert_int_eq(kill(pid, SIGSTOP), 0);
		took = wait_status(&rig, "stale");
		fprintf(stderr, "time namespace %+d s: stale %.2f s after the collector stopped\n",
			offsets[i], took);
		ck_assert_msg(took >= (LIMIT_MS - INTERVAL_MS) / 1e3 - 0.2 && took <= LIMIT_MS / 1e3 + 1.0,
			      "stale %.2f s after the collector stopped, limit %.1f s", took,
			      LIMIT_MS / 1e3);
		ck_assert_int_eq(kill(pid, SIGCONT), 0);
		took = wait_status(&rig, "ok");
		ck_assert_msg(took > 0 && took <= 2.0, "not fresh again %.2f s after SIGCONT", took);
	}
	stop_namespaced_collector(&rig);
	tu_stack_stop(&rig);
}
END_TEST

Suite *clock_step_suite(void);

Suite *clock_step_suite(void)
{
	Suite *s = suite_create("clock_step");
	TCase *tc = tcase_create("steps");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, wall_clock_steps_keep_metrics_and_feed_sane);
	tcase_add_test(tc, http_timeouts_hold_across_wall_clock_steps);
	tcase_add_test(tc, alert_notices_stay_in_order_when_the_wall_clock_steps_back);
	tcase_add_test(tc, collector_in_another_time_namespace_is_fresh);
	suite_add_tcase(s, tc);
	return s;
}
