/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli_explain (explain.h): one GET of /api/stalls (with --since,
 * /api/stalls?since=SECONDS: the exporter's history of the last minutes),
 * then per training process the exporter judged (its "explain": shares
 * of wall time over the span, verdict, evidence, recommendation; see
 * exporter/explain/stalls_json.c and exporter/explain/explain_verdict.c)
 * with its top stall sites, as text or JSON.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli/explain.h"
#include "cli/http_get.h"
#include "cli/jvalue.h"
#include "common/url.h"

#define EXPLAIN_MAX_PROCS	1024
#define EXPLAIN_TOP_SITES	5

struct proc_view {
	struct json_object *j;		/* the process */
	struct json_object *x;		/* its "explain" */
	uint32_t pid;
	int32_t rank, nranks;
	double window_s;
	char comm[32];
	char python[16];		/* "3.11", or why there are no frames */
};

static double num(struct json_object *o, const char *key)
{
	double v = 0;

	jv_num(o, key, &v);
	return v < 0 ? 0 : v;
}

/* A process to explain (one the exporter judged); fills v.  0, or -1 to skip it. */
static int view(struct json_object *p, uint32_t want, struct proc_view *v)
{
	struct json_object *py = jv_get(p, "python");
	char status[16] = "";
	uint64_t pid = 0;
	double rank = -1, nranks = -1;

	memset(v, 0, sizeof(*v));
	if (!jv_uint(p, "pid", UINT32_MAX, &pid) || (want && pid != want))
		return -1;
	v->x = jv_get(p, "explain");
	if (!v->x && !want)
		return -1;
	v->j = p;
	v->pid = (uint32_t)pid;
	jv_num(p, "rank", &rank);
	jv_num(p, "nranks", &nranks);
	v->rank = (int32_t)rank;
	v->nranks = (int32_t)nranks;
	v->window_s = num(v->x, "window_seconds");
	jv_str(p, "comm", v->comm, sizeof(v->comm));
	jv_str(py, "status", status, sizeof(status));
	if (strcmp(status, "frames") == 0)
		jv_str(py, "version", v->python, sizeof(v->python));
	else if (strcmp(status, "unsupported") == 0 || strcmp(status, "mismatch") == 0)
		snprintf(v->python, sizeof(v->python), "%s", status);
	return 0;
}

static double site_total(struct json_object *sites)
{
	size_t n = sites ? json_object_array_length(sites) : 0;
	double t = 0;

	for (size_t i = 0; i < n; i++)
		t += num(json_object_array_get_idx(sites, i), "seconds");
	return t;
}

static void print_text(const struct proc_view *v, int since)
{
	struct json_object *sites = jv_array(v->j, "sites"), *shares = jv_get(v->x, "shares");
	size_t n = sites ? json_object_array_length(sites) : 0;
	double total = site_total(sites);
	char verdict[64] = "", evidence[512] = "", advice[512] = "";

	printf("pid %u %s", v->pid, v->comm);
	if (v->rank >= 0)
		printf(" (rank %d of %d)", v->rank, v->nranks);
	if (v->python[0])
		printf(", Python %s", v->python);
	if (!v->x) {
		printf("\n  not a training process the exporter can judge yet (no rank, no "
		       "Python frames, or no data so far)\n\n");
		return;
	}
	printf(", last %.0f s\n", v->window_s);
	printf("  where the wall time went:");
	json_object_object_foreach(shares, name, val) {
		double f = json_object_get_double(val);

		if (f >= 0.005 || strcmp(name, "on CPU or short waits") == 0)
			printf("  %s %.0f%%", name, f * 100.0);
	}
	printf("\n");
	if (strcmp(v->python, "unsupported") == 0 || strcmp(v->python, "mismatch") == 0)
		printf("  stall sites: none (this interpreter's frames are not read; see the "
		       "collector's log)\n");
	else if (n && since)
		printf("  top stall sites (share of its stall time in the last %.0f s):\n",
		       v->window_s);
	else if (n)
		printf("  top stall sites (share of its stall time since it was watched):\n");
	for (size_t i = 0; i < n && i < EXPLAIN_TOP_SITES; i++) {
		struct json_object *s = json_object_array_get_idx(sites, i), *leaf = jv_get(s, "leaf");
		char file[160], func[80], state[16], lfile[160], lfunc[80];
		uint64_t line = 0, lline = 0;

		jv_str(s, "file", file, sizeof(file));
		jv_str(s, "function", func, sizeof(func));
		jv_str(s, "state", state, sizeof(state));
		jv_uint(s, "line", UINT32_MAX, &line);
		jv_str(leaf, "file", lfile, sizeof(lfile));
		jv_str(leaf, "function", lfunc, sizeof(lfunc));
		jv_uint(leaf, "line", UINT32_MAX, &lline);
		printf("    %s:%llu in %s  %s  %.0f%%  (%.2f s in %.0f stall%s)", file,
		       (unsigned long long)line, func, state,
		       total > 0 ? num(s, "seconds") / total * 100.0 : 0.0, num(s, "seconds"),
		       num(s, "stalls"), num(s, "stalls") == 1 ? "" : "s");
		if (strcmp(lfile, file) != 0 || lline != line)
			printf("\n      waiting in %s:%llu in %s", lfile, (unsigned long long)lline,
			       lfunc);
		printf("\n");
	}
	jv_str(v->x, "verdict", verdict, sizeof(verdict));
	jv_str(v->x, "evidence", evidence, sizeof(evidence));
	jv_str(v->x, "recommendation", advice, sizeof(advice));
	printf("  verdict: %s: %s\n", verdict, evidence);
	printf("  recommendation: %s\n\n", advice);
}

static struct json_object *json_out(const struct proc_view *v)
{
	struct json_object *o = json_object_new_object();
	struct json_object *sites = jv_array(v->j, "sites"), *top = json_object_new_array();
	size_t n = sites ? json_object_array_length(sites) : 0;
	double total = site_total(sites);
	static const char *const copied[] = { "shares", "verdict", "evidence", "recommendation" };

	json_object_object_add(o, "pid", json_object_new_uint64(v->pid));
	json_object_object_add(o, "comm", json_object_new_string(v->comm));
	json_object_object_add(o, "rank", json_object_new_int(v->rank));
	json_object_object_add(o, "python", json_object_new_string(v->python));
	json_object_object_add(o, "window_seconds", json_object_new_double(v->window_s));
	for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]); i++) {
		struct json_object *c = NULL, *src = jv_get(v->x, copied[i]);

		if (src)
			json_object_deep_copy(src, &c, NULL);
		json_object_object_add(o, copied[i], c);
	}
	for (size_t i = 0; i < n && i < EXPLAIN_TOP_SITES; i++) {
		struct json_object *s = json_object_array_get_idx(sites, i);
		struct json_object *t = NULL;

		json_object_deep_copy(s, &t, NULL);
		if (t)
			json_object_object_add(t, "share", json_object_new_double(
				total > 0 ? num(s, "seconds") / total : 0));
		json_object_array_add(top, t);
	}
	json_object_object_add(o, "top_sites", top);
	return o;
}

static struct json_object *fetch(const struct cli_explain_opts *o, int *status)
{
	struct json_tokener *tok;
	struct json_object *doc;
	const char *why = NULL;
	struct url u;
	char *body = NULL, path[64] = "/api/stalls";
	size_t len = 0;
	int code;

	*status = 2;
	if (url_parse(o->url_text, &u, &why) < 0 || strcmp(u.scheme, "http") != 0) {
		fprintf(stderr, "zernel explain: bad --url \"%s\": %s\n", o->url_text,
			why ? why : "expected http://HOST[:PORT]");
		return NULL;
	}
	*status = 1;
	if (o->since_s)
		snprintf(path, sizeof(path), "/api/stalls?since=%llu", (unsigned long long)o->since_s);
	code = http_get(&u, path, o->timeout_ms, &body, &len, &why);
	if (code < 0) {
		fprintf(stderr, "zernel explain: %s: %s\n", o->url_text, why ? why : strerror(-code));
		return NULL;
	}
	if (code != 200) {
		fprintf(stderr, "zernel explain: %s%s answered %d: %.200s", o->url_text, path,
			code, body);
		free(body);
		return NULL;
	}
	tok = json_tokener_new();
	doc = tok ? json_tokener_parse_ex(tok, body, (int)len) : NULL;
	if (!doc || json_tokener_get_error(tok) != json_tokener_success ||
	    !jv_array(doc, "processes")) {
		fprintf(stderr, "zernel explain: %s/api/stalls: not the expected JSON\n", o->url_text);
		json_object_put(doc);
		doc = NULL;
	}
	if (tok)
		json_tokener_free(tok);
	free(body);
	return doc;
}

/*
 * The span the answer covers, said once before the processes: plainly
 * shorter than asked when the exporter's history does not reach back so
 * far (it keeps its last minutes, and nothing from before it started).
 */
static void span_line(struct json_object *doc, const struct cli_explain_opts *o, double window)
{
	double held = 0, most = 0;
	struct json_object *h = jv_get(doc, "history");

	jv_num(h, "seconds", &held);
	jv_num(h, "max_seconds", &most);
	if (json_object_get_boolean(jv_get(doc, "covered"))) {
		if (!o->json)
			printf("the last %.0f s (asked: %llu s)\n\n", window,
			       (unsigned long long)o->since_s);
		return;
	}
	fprintf(o->json ? stderr : stdout,
		"%sthe exporter's history holds only %.0f s (it keeps at most %.0f s): showing "
		"the last %.0f s, not %llu s\n%s", o->json ? "zernel explain: " : "", held, most,
		window, (unsigned long long)o->since_s, o->json ? "" : "\n");
}

int cli_explain(const struct cli_explain_opts *o)
{
	struct proc_view *v = calloc(EXPLAIN_MAX_PROCS, sizeof(*v));
	struct json_object *doc, *list, *out = NULL;
	double window = 0;
	size_t n = 0, all;
	int status;

	if (!v)
		return 1;
	doc = fetch(o, &status);
	if (!doc) {
		free(v);
		return status;
	}
	jv_num(doc, "window_seconds", &window);
	if (o->since_s)
		span_line(doc, o, window);
	list = jv_array(doc, "processes");
	all = json_object_array_length(list);
	for (size_t i = 0; i < all && n < EXPLAIN_MAX_PROCS; i++)
		if (view(json_object_array_get_idx(list, i), o->pid, &v[n]) == 0)
			n++;
	if (n == 0) {
		if (o->pid)
			fprintf(stderr, "zernel explain: pid %u is not watched\n", o->pid);
		else
			fprintf(stderr, "zernel explain: no training process is watched\n");
		json_object_put(doc);
		free(v);
		return 1;
	}
	if (o->json)
		out = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		if (out)
			json_object_array_add(out, json_out(&v[i]));
		else
			print_text(&v[i], o->since_s != 0);
	}
	if (out) {
		struct json_object *top = json_object_new_object();

		if (o->since_s) {
			json_object_object_add(top, "window_seconds", json_object_new_double(window));
			json_object_object_add(top, "since_seconds_asked",
					       json_object_new_uint64(o->since_s));
			json_object_object_add(top, "covered", json_object_new_boolean(
				json_object_get_boolean(jv_get(doc, "covered"))));
		}
		json_object_object_add(top, "processes", out);
		printf("%s\n", json_object_to_json_string_ext(top, JSON_C_TO_STRING_PLAIN));
		json_object_put(top);
	}
	json_object_put(doc);
	free(v);
	return 0;
}
