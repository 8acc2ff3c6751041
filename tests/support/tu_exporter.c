/* SPDX-License-Identifier: BSD-2-Clause */
/* The simulated collector + exporter rig and /metrics helpers; see tu_exporter.h. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

void tu_stack_init(struct tu_stack *s)
{
	char dir[400];

	memset(s, 0, sizeof(*s));
	tu_unique_shm_name(s->shm, sizeof(s->shm));
	s->metrics_port = tu_free_port();
	do
		s->ws_port = tu_free_port();
	while (s->ws_port == s->metrics_port);
	/* Named after the segment: one pair per test, so a failed test's stay readable. */
	snprintf(dir, sizeof(dir), "%s/tests/logs", tu_build_dir());
	mkdir(dir, 0755);
	snprintf(s->col_log, sizeof(s->col_log), "%s%s.collector.log", dir, s->shm);
	snprintf(s->exp_log, sizeof(s->exp_log), "%s%s.exporter.log", dir, s->shm);
}

int tu_stack_start_collector(struct tu_stack *s, const char *const *args)
{
	char exe[1024];
	char *argv[32] = { exe, "--simulate", "--shm", s->shm };
	size_t n = 4;

	while (args && *args && n < sizeof(argv) / sizeof(argv[0]) - 1)
		argv[n++] = (char *)*args++;
	argv[n] = NULL;
	tu_build_path(exe, sizeof(exe), "zernel-collector");
	s->collector = tu_spawn(argv, s->col_log);
	return s->collector > 0 ? 0 : -ECHILD;
}

int tu_stack_start_exporter(struct tu_stack *s)
{
	char exe[1024], metrics[32], ws[32], interval[16];
	char *argv[32] = { exe, "--shm", s->shm, "--metrics-listen", metrics, "--ws-listen", ws };
	const char *const *more = s->exporter_args;
	size_t n = 7;

	snprintf(metrics, sizeof(metrics), "127.0.0.1:%u", s->metrics_port);
	snprintf(ws, sizeof(ws), "127.0.0.1:%u", s->ws_port);
	if (s->ws_interval_ms) {
		snprintf(interval, sizeof(interval), "%u", s->ws_interval_ms);
		argv[n++] = "--ws-interval";
		argv[n++] = interval;
	}
	while (more && *more && n < sizeof(argv) / sizeof(argv[0]) - 1)
		argv[n++] = (char *)*more++;
	argv[n] = NULL;
	tu_build_path(exe, sizeof(exe), "zernel-exporter");
	s->exporter = tu_spawn(argv, s->exp_log);
	if (s->exporter < 0)
		return -ECHILD;
	return tu_wait_http(s->metrics_port, "/metrics", 200, 10000);
}

int tu_stack_wait_up(const struct tu_stack *s, int timeout_ms)
{
	for (int waited = 0; waited <= timeout_ms; waited += 100) {
		char *m = tu_scrape(s->metrics_port);
		double up = 0;
		int ok = m && tu_metric(m, "zernel_collector_up", NULL, &up) == 0 && up == 1;

		free(m);
		if (ok)
			return 0;
		tu_sleep_ms(100);
	}
	return -ETIMEDOUT;
}

int tu_stack_stop_collector(struct tu_stack *s, int sig)
{
	int st = s->collector > 0 ? tu_stop(s->collector, sig, 3000) : -1;

	s->collector = 0;
	return st;
}

int tu_stack_stop_exporter(struct tu_stack *s)
{
	int st = s->exporter > 0 ? tu_stop(s->exporter, SIGTERM, 5000) : -1;

	s->exporter = 0;
	return st;
}

void tu_stack_stop(struct tu_stack *s)
{
	tu_stack_stop_exporter(s);
	tu_stack_stop_collector(s, SIGTERM);
	if (s->shm[0])
		shm_unlink(s->shm);
	unlink(s->col_log);
	unlink(s->exp_log);
}

static void dump_file(const char *path)
{
	char *text = tu_read_file(path, NULL);

	fprintf(stderr, "---- %s\n%s", path, text ? text : "(unreadable)\n");
	free(text);
}

void tu_stack_dump_logs(const struct tu_stack *s)
{
	dump_file(s->col_log);
	dump_file(s->exp_log);
}

int tu_stack_start(struct tu_stack *s, const char *scenario, unsigned int publish_ms,
		   unsigned int ws_interval_ms)
{
	char publish[16];
	const char *args[] = { "--publish-interval", publish,
			       scenario ? "--scenario" : NULL, scenario, NULL };
	int err;

	tu_stack_init(s);
	s->ws_interval_ms = ws_interval_ms;
	snprintf(publish, sizeof(publish), "%u", publish_ms);
	err = tu_stack_start_collector(s, args);
	if (err == 0)
		err = tu_stack_start_exporter(s);
	/* Up means the exporter has read at least one publish. */
	if (err == 0)
		err = tu_stack_wait_up(s, 10000);
	if (err < 0) {
		tu_stack_dump_logs(s);
		tu_stack_stop(s);
	}
	return err;
}

char *tu_scrape(uint16_t port)
{
	size_t len = 8u << 20;
	char *body = malloc(len);

	if (!body)
		return NULL;
	if (tu_http_request(port, "GET", "/metrics", body, len) != 200) {
		free(body);
		return NULL;
	}
	return body;
}

double tu_scrape_value(uint16_t port, const char *name)
{
	char *body = tu_scrape(port);
	double v = -1;

	ck_assert_ptr_nonnull(body);
	if (tu_metric(body, name, NULL, &v) < 0)
		v = -1;
	free(body);
	return v;
}

/* 1 when the label set {…} of a sample contains every pair of want. */
static int labels_match(const char *set, size_t set_len, const char *want)
{
	char pair[256];

	while (want && *want) {
		size_t n = strcspn(want, ",");
		char *hit;

		if (n >= sizeof(pair))
			return 0;
		memcpy(pair, want, n);
		pair[n] = '\0';
		hit = memmem(set, set_len, pair, n);
		/* Whole pairs only: pid="1" must not match pid="10". */
		if (!hit || (hit != set && hit[-1] != '{' && hit[-1] != ','))
			return 0;
		want += n + (want[n] == ',');
	}
	return 1;
}

int tu_metric(const char *text, const char *name, const char *labels, double *out)
{
	size_t nlen = strlen(name);

	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (len > nlen && strncmp(line, name, nlen) == 0 &&
		    (line[nlen] == '{' || line[nlen] == ' ')) {
			const char *sp = memrchr(line, ' ', len);
			const char *set = line + nlen;
			size_t set_len = (size_t)(sp - set);

			if (sp && labels_match(set, set_len, labels)) {
				char num[64];
				size_t vlen = len - (size_t)(sp + 1 - line);

				if (vlen >= sizeof(num))
					return -ENOENT;
				memcpy(num, sp + 1, vlen);
				num[vlen] = '\0';
				*out = strtod(num, NULL);
				return 0;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return -ENOENT;
}

int tu_wait_metric(uint16_t port, const char *name, int n, int timeout_ms)
{
	char prefix[256];

	snprintf(prefix, sizeof(prefix), "\n%s{", name);
	for (int waited = 0; waited <= timeout_ms; waited += 100) {
		char *m = tu_scrape(port);
		int found = 0;

		for (const char *p = m; p && (p = strstr(p, prefix)); p++)
			found++;
		free(m);
		if (found >= n)
			return 0;
		tu_sleep_ms(100);
	}
	return -ETIMEDOUT;
}
