/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The operator-facing files in docs/: the Grafana dashboard (imports
 * anywhere: the datasource is a variable, no UID is hard-coded, the
 * dashboard's own uid is fixed, every panel has a unit and a place of its
 * own) and the Prometheus rules (promtool check and promtool test).  Every
 * metric either file queries must exist in a live /metrics of
 * zernel-exporter serving zernel-collector --simulate.
 */
#include <check.h>
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "exporter/alerts/alerts.h"
#include "common/sbuf.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define METRICS_MAX	(8u << 20)
#define MAX_NAMES	1024

static struct json_object *load_dashboard(void)
{
	char path[512];
	struct json_object *d;

	snprintf(path, sizeof(path), "%s/docs/grafana-dashboard.json", tu_src_dir());
	d = json_object_from_file(path);
	ck_assert_msg(d != NULL, "%s does not parse: %s", path, json_util_get_last_err());
	return d;
}

/* ---- names ------------------------------------------------------------- */

struct names {
	char *v[MAX_NAMES];
	int n;
};

static int names_has(const struct names *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->v[i], name) == 0)
			return 1;
	return 0;
}

static void names_add(struct names *s, const char *name, size_t len)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%.*s", (int)len, name);
	if (!names_has(s, buf) && s->n < MAX_NAMES)
		s->v[s->n++] = strdup(buf);
}

static void names_free(struct names *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->v[i]);
	s->n = 0;
}

/* Every zernel_* identifier in a PromQL expression. */
static void names_in_expr(struct names *s, const char *expr)
{
	for (const char *p = strstr(expr, "zernel_"); p; p = strstr(p, "zernel_")) {
		size_t n = 0;

		if (p > expr && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) {
			p++;
			continue;
		}
		while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == ':')
			n++;
		names_add(s, p, n);
		p += n;
	}
}

/* Sample names of an exposition, plus the series names its families imply. */
static void names_in_exposition(struct names *s, const char *text)
{
	static const char *const sfx[] = { "", "_bucket", "_sum", "_count" };

	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, "# TYPE ", 7) == 0) {
			const char *n = line + 7, *e = strchr(n, ' ');
			char fam[256];

			if (!e)
				continue;
			snprintf(fam, sizeof(fam), "%.*s", (int)(e - n), n);
			for (size_t i = 0; i < 4; i++) {
				char full[300];

				if (i == 1 && strncmp(e + 1, "histogram", 9) != 0)
					continue;
				if (i >= 2 && strncmp(e + 1, "histogram", 9) != 0 &&
				    strncmp(e + 1, "summary", 7) != 0)
					continue;
				snprintf(full, sizeof(full), "%s%s", fam, sfx[i]);
				names_add(s, full, strlen(full));
			}
		} else if (*line != '#' && *line != '\n') {
			names_add(s, line, strcspn(line, "{ \n"));
		}
	}
}

/* ---- a live exporter --------------------------------------------------- */

/* What a live exporter over a simulated collector serves on /metrics. */
static void live_metric_names(struct names *s)
{
	const char *args[] = { "--publish-interval", "200", "--processes", "6", "--gpus", "2", NULL };
	char *body = malloc(METRICS_MAX);
	struct tu_stack st;
	int status = -1;

	ck_assert_ptr_nonnull(body);
	tu_stack_init(&st);
	ck_assert_int_eq(tu_stack_start_collector(&st, args), 0);
	ck_assert_int_eq(tu_stack_start_exporter(&st), 0);
	/* Wait until every family has samples: a few publishes of the simulated job. */
	for (int i = 0; i < 100; i++) {
		status = tu_http_request(st.metrics_port, "GET", "/metrics", body, METRICS_MAX);
		if (status == 200 && strstr(body, "\nzernel_collector_up 1\n") &&
		    strstr(body, "zernel_nccl_wait_duration_seconds_bucket") &&
		    strstr(body, "zernel_dataloader_wait_duration_seconds_bucket"))
			break;
		tu_sleep_ms(100);
	}
	if (status != 200 || !strstr(body, "\nzernel_collector_up 1\n")) {
		tu_stack_dump_logs(&st);
		ck_abort_msg("no fresh /metrics from the exporter (status %d)", status);
	}
	tu_stack_stop(&st);
	names_in_exposition(s, body);
	free(body);
}

/* ---- the dashboard ----------------------------------------------------- */

static int is_variable_ref(const char *s)
{
	return strcmp(s, "${datasource}") == 0 || strcmp(s, "$datasource") == 0;
}

/* Every "uid" below the top level must name the datasource variable. */
static void check_uids(struct json_object *o, const char *where, int depth)
{
	if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++)
			check_uids(json_object_array_get_idx(o, i), where, depth + 1);
		return;
	}
	if (!json_object_is_type(o, json_type_object))
		return;
	json_object_object_foreach(o, k, v) {
		if (depth > 0 && strcmp(k, "uid") == 0)
			ck_assert_msg(json_object_is_type(v, json_type_string) &&
				      is_variable_ref(json_object_get_string(v)),
				      "%s: hard-coded uid %s", where, json_object_get_string(v));
		check_uids(v, where, depth + 1);
	}
}

static void collect_exprs(struct json_object *panels, struct names *exprs_metrics, int *n_exprs)
{
	for (size_t i = 0; i < json_object_array_length(panels); i++) {
		struct json_object *p = json_object_array_get_idx(panels, i), *t, *sub;

		if (json_object_object_get_ex(p, "panels", &sub))
			collect_exprs(sub, exprs_metrics, n_exprs);
		if (!json_object_object_get_ex(p, "targets", &t))
			continue;
		for (size_t k = 0; k < json_object_array_length(t); k++) {
			struct json_object *e;

			ck_assert(json_object_object_get_ex(json_object_array_get_idx(t, k), "expr", &e));
			names_in_expr(exprs_metrics, json_object_get_string(e));
			(*n_exprs)++;
		}
	}
}

START_TEST(dashboard_imports_anywhere)
{
	struct json_object *d = load_dashboard(), *v, *list, *panels;
	int found_ds = 0, n_panels = 0;
	unsigned char grid[256][24];

	ck_assert(json_object_object_get_ex(d, "uid", &v));
	ck_assert_str_eq(json_object_get_string(v), "zernel-gpu-overview");
	ck_assert(json_object_object_get_ex(d, "title", &v));
	ck_assert(json_object_object_get_ex(d, "schemaVersion", &v));
	ck_assert_int_ge(json_object_get_int(v), 30);
	ck_assert_msg(!json_object_object_get_ex(d, "id", &v) || json_object_is_type(v, json_type_null),
		      "a fixed numeric id would clash on import");

	ck_assert(json_object_object_get_ex(d, "templating", &v));
	ck_assert(json_object_object_get_ex(v, "list", &list));
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct json_object *var = json_object_array_get_idx(list, i), *t, *q, *n;

		if (json_object_object_get_ex(var, "type", &t) &&
		    strcmp(json_object_get_string(t), "datasource") == 0 &&
		    json_object_object_get_ex(var, "query", &q) &&
		    strcmp(json_object_get_string(q), "prometheus") == 0 &&
		    json_object_object_get_ex(var, "name", &n) &&
		    strcmp(json_object_get_string(n), "datasource") == 0)
			found_ds = 1;
	}
	ck_assert_msg(found_ds, "no datasource variable of type prometheus named datasource");
	check_uids(d, "dashboard", 0);

	/* Units, and a grid place of its own for every panel. */
	memset(grid, 0, sizeof(grid));
	ck_assert(json_object_object_get_ex(d, "panels", &panels));
	for (size_t i = 0; i < json_object_array_length(panels); i++) {
		struct json_object *p = json_object_array_get_idx(panels, i), *t, *g, *fc, *def, *u;
		int x, y, w, h;

		ck_assert(json_object_object_get_ex(p, "type", &t));
		ck_assert(json_object_object_get_ex(p, "gridPos", &g));
		x = json_object_get_int(json_object_object_get(g, "x"));
		y = json_object_get_int(json_object_object_get(g, "y"));
		w = json_object_get_int(json_object_object_get(g, "w"));
		h = json_object_get_int(json_object_object_get(g, "h"));
		ck_assert_msg(x >= 0 && w > 0 && x + w <= 24 && y >= 0 && h > 0 && y + h <= 256,
			      "panel %zu outside the grid", i);
		for (int r = y; r < y + h; r++)
			for (int c = x; c < x + w; c++) {
				ck_assert_msg(!grid[r][c], "panel %zu overlaps another", i);
				grid[r][c] = 1;
			}
		if (strcmp(json_object_get_string(t), "row") == 0)
			continue;
		n_panels++;
		ck_assert_msg(json_object_object_get_ex(p, "fieldConfig", &fc) &&
			      json_object_object_get_ex(fc, "defaults", &def) &&
			      json_object_object_get_ex(def, "unit", &u) &&
			      json_object_get_string_len(u) > 0, "panel %zu has no unit", i);
		ck_assert_msg(json_object_object_get_ex(p, "targets", &t) &&
			      json_object_array_length(t) > 0, "panel %zu has no query", i);
	}
	ck_assert_int_ge(n_panels, 20);
	json_object_put(d);
}
END_TEST

START_TEST(dashboard_and_rules_query_only_live_metrics)
{
	struct json_object *d = load_dashboard(), *panels, *v, *list;
	struct names live = { 0 }, wanted = { 0 };
	char path[512], *rules;
	int n_exprs = 0;

	ck_assert(json_object_object_get_ex(d, "panels", &panels));
	collect_exprs(panels, &wanted, &n_exprs);
	ck_assert(json_object_object_get_ex(d, "templating", &v));
	ck_assert(json_object_object_get_ex(v, "list", &list));
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct json_object *def;

		if (json_object_object_get_ex(json_object_array_get_idx(list, i), "definition", &def))
			names_in_expr(&wanted, json_object_get_string(def));
	}
	ck_assert_int_ge(n_exprs, 30);
	snprintf(path, sizeof(path), "%s/docs/prometheus-rules.yml", tu_src_dir());
	rules = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(rules);
	names_in_expr(&wanted, rules);
	free(rules);

	live_metric_names(&live);
	ck_assert_int_ge(live.n, 50);
	/* The families the issue asks the dashboard to show. */
	ck_assert(names_has(&wanted, "zernel_gpu_memory_total_bytes"));
	ck_assert(names_has(&wanted, "zernel_cuda_launch_latency_seconds"));
	ck_assert(names_has(&wanted, "zernel_nccl_wait_seconds"));
	ck_assert(names_has(&wanted, "zernel_dataloader_wait_seconds"));
	ck_assert(names_has(&wanted, "zernel_sched_offcpu_seconds_total"));
	ck_assert(names_has(&wanted, "zernel_alert_firing"));
	ck_assert(names_has(&wanted, "zernel_collector_up"));
	for (int i = 0; i < wanted.n; i++)
		ck_assert_msg(names_has(&live, wanted.v[i]),
			      "%s is queried but zernel-exporter does not emit it", wanted.v[i]);
	names_free(&live);
	names_free(&wanted);
	json_object_put(d);
}
END_TEST

START_TEST(prometheus_rules_pass_promtool)
{
	if (tu_system("command -v promtool >/dev/null 2>&1") != 0) {
		tu_skip_missing("prometheus_rules_pass_promtool: promtool is not installed "
			"(Debian package prometheus; make test-deps)\n");
		return;
	}
	ck_assert_int_eq(tu_system("promtool check rules '%s/docs/prometheus-rules.yml' >&2",
				   tu_src_dir()), 0);
	ck_assert_int_eq(tu_system("promtool test rules '%s/tests/promrules_test.yml' >&2",
				   tu_src_dir()), 0);
}
END_TEST

Suite *dashboards_suite(void);

Suite *dashboards_suite(void)
{
	Suite *s = suite_create("dashboards");
	TCase *tc = tcase_create("docs");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, dashboard_imports_anywhere);
	tcase_add_test(tc, dashboard_and_rules_query_only_live_metrics);
	tcase_add_test(tc, prometheus_rules_pass_promtool);
	suite_add_tcase(s, tc);
	return s;
}
