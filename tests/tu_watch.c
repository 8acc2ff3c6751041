/* SPDX-License-Identifier: BSD-2-Clause */
/* Simulated collector + exporter and /metrics helpers; see tu_watch.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "tests/tu_watch.h"

#define REAPER_ENV "ZERNEL_TU_REAPER"

void tu_reaper_setup(void)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/tests", tu_build_dir());
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/tests/reaper-%d.pids", tu_build_dir(), (int)getpid());
	unlink(path);
	setenv(REAPER_ENV, path, 1);
}

static void reaper_note(pid_t pid, int stopped)
{
	const char *path = getenv(REAPER_ENV);
	FILE *f;

	if (!path || pid <= 0)
		return;
	f = fopen(path, "a");
	if (!f)
		return;
	fprintf(f, "%s%d\n", stopped ? "-" : "", (int)pid);
	fclose(f);
}

void tu_reaper_track(pid_t pid)
{
	reaper_note(pid, 0);
}

void tu_reaper_stopped(pid_t pid)
{
	reaper_note(pid, 1);
}

void tu_reaper_teardown(void)
{
	const char *path = getenv(REAPER_ENV);
	char *text = path ? tu_read_file(path, NULL) : NULL, *all = NULL;

	if (text && asprintf(&all, "\n%s", text) < 0)
		all = NULL;
	for (char *line = all ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
		pid_t pid = (pid_t)atoi(line);
		char stopped[32];

		/* Skip what the test stopped itself: that pid may be someone else's by now. */
		snprintf(stopped, sizeof(stopped), "\n-%d\n", (int)pid);
		if (pid <= 1 || strstr(all, stopped) || kill(pid, 0) < 0)
			continue;
		kill(pid, SIGTERM);
		for (int waited = 0; waited < 2000 && kill(pid, 0) == 0; waited += 20)
			tu_sleep_ms(20);
		kill(pid, SIGKILL);
	}
	free(all);
	free(text);
	if (path)
		unlink(path);
}

int tu_have_binary(const char *rel)
{
	char path[1024];

	tu_build_path(path, sizeof(path), rel);
	return access(path, X_OK) == 0;
}

int tu_stack_start_exporter(struct tu_stack *s)
{
	char exe[1024], log[700], metrics[32], ws[32], interval[16];
	char *argv[] = { exe, "--shm", s->shm, "--metrics-listen", metrics, "--ws-listen", ws,
			 "--ws-interval", interval, NULL };

	tu_build_path(exe, sizeof(exe), "zernel-exporter");
	snprintf(metrics, sizeof(metrics), "127.0.0.1:%u", s->metrics_port);
	snprintf(ws, sizeof(ws), "127.0.0.1:%u", s->ws_port);
	snprintf(interval, sizeof(interval), "%u", s->ws_interval_ms);
	snprintf(log, sizeof(log), "%s/exporter.log", s->log_dir);
	s->exporter = tu_spawn(argv, log);
	if (s->exporter < 0)
		return -ECHILD;
	tu_reaper_track(s->exporter);
	return tu_wait_http(s->metrics_port, "/metrics", 200, 10000);
}

void tu_stack_stop_exporter(struct tu_stack *s)
{
	if (s->exporter > 0) {
		tu_stop(s->exporter, SIGTERM, 3000);
		tu_reaper_stopped(s->exporter);
	}
	s->exporter = 0;
}

void tu_stack_stop(struct tu_stack *s)
{
	tu_stack_stop_exporter(s);
	if (s->collector > 0) {
		tu_stop(s->collector, SIGTERM, 3000);
		tu_reaper_stopped(s->collector);
	}
	s->collector = 0;
}

int tu_stack_start(struct tu_stack *s, const char *scenario, unsigned int publish_ms,
		   unsigned int ws_interval_ms)
{
	char exe[1024], log[700], publish[16];
	char *argv[] = { exe, "--simulate", "--shm", s->shm, "--publish-interval", publish,
			 scenario ? "--scenario" : NULL, (char *)scenario, NULL };
	int err = -ETIMEDOUT;

	memset(s, 0, sizeof(*s));
	tu_unique_shm_name(s->shm, sizeof(s->shm));
	s->metrics_port = tu_free_port();
	do
		s->ws_port = tu_free_port();
	while (s->ws_port == s->metrics_port);
	s->ws_interval_ms = ws_interval_ms;
	snprintf(s->log_dir, sizeof(s->log_dir), "%s/tests/logs", tu_build_dir());
	mkdir(s->log_dir, 0755);

	tu_build_path(exe, sizeof(exe), "zernel-collector");
	snprintf(publish, sizeof(publish), "%u", publish_ms);
	snprintf(log, sizeof(log), "%s/collector.log", s->log_dir);
	s->collector = tu_spawn(argv, log);
	if (s->collector < 0)
		return -ECHILD;
	tu_reaper_track(s->collector);
	if (tu_stack_start_exporter(s) < 0)
		goto fail;
	/* Up means the exporter has read at least one publish. */
	for (int waited = 0; waited < 10000; waited += 100) {
		char *m = tu_scrape(s->metrics_port);
		double up = 0;
		int ok = m && tu_metric(m, "zernel_collector_up", NULL, &up) == 0 && up == 1;

		free(m);
		if (ok)
			return 0;
		tu_sleep_ms(100);
	}
fail:
	tu_stack_stop(s);
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

char *tu_capture(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	size_t cap = 65536, used = 0, r;
	char *buf = malloc(cap);
	int st;

	*status = -1;
	if (!p || !buf) {
		if (p)
			pclose(p);
		free(buf);
		return NULL;
	}
	while ((r = fread(buf + used, 1, cap - used - 1, p)) > 0) {
		used += r;
		if (used + 1 == cap) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger)
				break;
			buf = bigger;
			cap *= 2;
		}
	}
	buf[used] = '\0';
	st = pclose(p);
	if (st != -1 && WIFEXITED(st))
		*status = WEXITSTATUS(st);
	return buf;
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
