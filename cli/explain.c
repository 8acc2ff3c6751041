/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli_explain (explain.h): one GET of /api/stalls, then per training
 * process (a rank of a NCCL job, or a Python process whose frames are
 * read): shares of wall time over the collector's window, the top stall
 * sites, and explain_verdict.c's verdict.  Shares come from the Python
 * stalls of the process's threads by state when its frames are read,
 * else from its wait counters (DataLoader, futex, barrier and collective
 * waits, run-queue delay).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli/explain.h"
#include "cli/explain_verdict.h"
#include "cli/http_get.h"
#include "cli/jvalue.h"
#include "common/url.h"

#define EXPLAIN_MAX_PROCS	1024
#define EXPLAIN_TOP_SITES	5

struct proc_view {
	struct json_object *j;
	struct ev_process ev;
	char comm[32];
	char python[16];		/* "3.11", or why there are no frames */
};

static double num(struct json_object *o, const char *key)
{
	double v = 0;

	jv_num(o, key, &v);
	return v < 0 ? 0 : v;
}

static void shares(struct proc_view *v, struct json_object *recent, int frames)
{
	struct json_object *st = jv_get(recent, "stalls");
	double w = v->ev.window_s, sum = 0, *s = v->ev.share;

	if (w <= 0)
		return;
	if (frames) {
		s[EV_INPUT] = num(st, "input") / w;
		s[EV_GPU] = num(st, "gpu") / w;
		s[EV_COLLECTIVE] = num(st, "collective") / w;
		s[EV_LOCK] = num(st, "lock") / w;
		s[EV_SLEEP] = num(st, "sleep") / w;
		s[EV_RUNQ] = num(st, "runq") / w;
		s[EV_OTHER] = num(st, "other") / w;
	} else {
		s[EV_INPUT] = num(recent, "input_wait") / w;
		s[EV_LOCK] = num(recent, "futex_wait") / w;
		s[EV_COLLECTIVE] = (num(recent, "barrier_wait") + num(recent, "collective_wait")) / w;
		s[EV_RUNQ] = num(recent, "runq") / w;
	}
	for (int i = 0; i < EV_ONCPU; i++) {
		if (s[i] > 1)
			s[i] = 1;	/* overlapping waits of several threads */
		sum += s[i];
	}
	s[EV_ONCPU] = sum < 1 ? 1 - sum : 0;
}

static void gpus(struct proc_view *v)
{
	struct json_object *list = jv_array(v->j, "gpus");
	size_t n = list ? json_object_array_length(list) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *g = json_object_array_get_idx(list, i);
		double total = num(g, "total_bytes"), peak = num(g, "peak_bytes");
		uint64_t id = 0;

		jv_uint(g, "gpu", UINT32_MAX, &id);
		if (total > 0 && peak / total > v->ev.gpu_peak_fraction) {
			v->ev.gpu_peak_fraction = peak / total;
			v->ev.gpu_peak_id = (uint32_t)id;
		}
	}
}

/* A process worth explaining; fills v.  0, or -1 to skip it. */
static int view(struct json_object *p, uint32_t want, struct proc_view *v)
{
	struct json_object *py = jv_get(p, "python"), *recent = jv_get(p, "recent");
	char status[16] = "";
	uint64_t pid = 0;
	double rank = -1, nranks = -1;
	int frames;

	memset(v, 0, sizeof(*v));
	if (!jv_uint(p, "pid", UINT32_MAX, &pid) || !recent)
		return -1;
	jv_str(py, "status", status, sizeof(status));
	frames = strcmp(status, "frames") == 0;
	if (jv_get(p, "rank"))
		jv_num(p, "rank", &rank);
	if (jv_get(p, "nranks"))
		jv_num(p, "nranks", &nranks);
	if (want ? pid != want : (!frames && rank < 0))
		return -1;
	v->j = p;
	v->ev.pid = (uint32_t)pid;
	v->ev.rank = (int32_t)rank;
	v->ev.nranks = (int32_t)nranks;
	v->ev.window_s = num(recent, "seconds");
	jv_str(p, "comm", v->comm, sizeof(v->comm));
	if (frames)
		jv_str(py, "version", v->python, sizeof(v->python));
	else if (strcmp(status, "unsupported") == 0 || strcmp(status, "mismatch") == 0)
		snprintf(v->python, sizeof(v->python), "%s", status);
	shares(v, recent, frames);
	v->ev.involuntary_per_s = v->ev.window_s > 0 ?
				  num(recent, "involuntary_switches") / v->ev.window_s : 0;
	v->ev.failed_allocs = (uint64_t)num(recent, "failed_allocs");
	gpus(v);
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

static void print_text(const struct proc_view *v, enum ev_verdict verdict, const char *evidence,
		       const char *advice)
{
	struct json_object *sites = jv_array(v->j, "sites");
	size_t n = sites ? json_object_array_length(sites) : 0;
	double total = site_total(sites);

	printf("pid %u %s", v->ev.pid, v->comm);
	if (v->ev.rank >= 0)
		printf(" (rank %d of %d)", v->ev.rank, v->ev.nranks);
	if (v->python[0])
		printf(", Python %s", v->python);
	printf(", last %.0f s\n", v->ev.window_s);
	if (v->ev.window_s <= 0) {
		printf("  not enough data yet: try again in a few seconds\n\n");
		return;
	}
	printf("  where the wall time went:");
	for (int s = 0; s < EV_SHARE_COUNT; s++)
		if (v->ev.share[s] >= 0.005 || s == EV_ONCPU)
			printf("  %s %.0f%%", ev_share_name(s), v->ev.share[s] * 100.0);
	printf("\n");
	if (strcmp(v->python, "unsupported") == 0 || strcmp(v->python, "mismatch") == 0)
		printf("  stall sites: none (this interpreter's frames are not read; see the "
		       "collector's log)\n");
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
	printf("  verdict: %s: %s\n", ev_verdict_name(verdict), evidence);
	printf("  recommendation: %s\n\n", advice);
}

static struct json_object *json_out(const struct proc_view *v, enum ev_verdict verdict,
				    const char *evidence, const char *advice)
{
	struct json_object *o = json_object_new_object(), *sh = json_object_new_object();
	struct json_object *sites = jv_array(v->j, "sites"), *top = json_object_new_array();
	size_t n = sites ? json_object_array_length(sites) : 0;
	double total = site_total(sites);

	json_object_object_add(o, "pid", json_object_new_uint64(v->ev.pid));
	json_object_object_add(o, "comm", json_object_new_string(v->comm));
	json_object_object_add(o, "rank", json_object_new_int(v->ev.rank));
	json_object_object_add(o, "python", json_object_new_string(v->python));
	json_object_object_add(o, "window_seconds", json_object_new_double(v->ev.window_s));
	for (int s = 0; s < EV_SHARE_COUNT; s++)
		json_object_object_add(sh, ev_share_name(s), json_object_new_double(v->ev.share[s]));
	json_object_object_add(o, "shares", sh);
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
	json_object_object_add(o, "verdict", json_object_new_string(ev_verdict_name(verdict)));
	json_object_object_add(o, "evidence", json_object_new_string(evidence));
	json_object_object_add(o, "recommendation", json_object_new_string(advice));
	return o;
}

static struct json_object *fetch(const struct cli_explain_opts *o, int *status)
{
	struct json_tokener *tok;
	struct json_object *doc;
	const char *why = NULL;
	struct url u;
	char *body = NULL;
	size_t len = 0;
	int code;

	*status = 2;
	if (url_parse(o->url_text, &u, &why) < 0 || strcmp(u.scheme, "http") != 0) {
		fprintf(stderr, "zernel explain: bad --url \"%s\": %s\n", o->url_text,
			why ? why : "expected http://HOST[:PORT]");
		return NULL;
	}
	*status = 1;
	code = http_get(&u, "/api/stalls", o->timeout_ms, &body, &len, &why);
	if (code < 0) {
		fprintf(stderr, "zernel explain: %s: %s\n", o->url_text, why ? why : strerror(-code));
		return NULL;
	}
	if (code != 200) {
		fprintf(stderr, "zernel explain: %s/api/stalls answered %d: %.200s", o->url_text,
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

int cli_explain(const struct cli_explain_opts *o)
{
	struct proc_view *v = calloc(EXPLAIN_MAX_PROCS, sizeof(*v));
	struct ev_process *evp[EXPLAIN_MAX_PROCS];
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
	if (o->since_s && (double)o->since_s > window + 0.5)
		fprintf(stderr, "zernel explain: the collector keeps a %.0f s window (its --window):"
			" showing that, not %llu s\n", window, (unsigned long long)o->since_s);
	else if (o->since_s && (double)o->since_s + 0.5 < window)
		fprintf(stderr, "zernel explain: the collector keeps a %.0f s window (its --window):"
			" showing that; start it with --window %llu for %llu s\n", window,
			(unsigned long long)o->since_s, (unsigned long long)o->since_s);
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
	for (size_t i = 0; i < n; i++)
		evp[i] = &v[i].ev;
	ev_stragglers(evp, n);
	if (o->json)
		out = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		char evidence[512];
		const char *advice = "";
		enum ev_verdict verdict = ev_decide(&v[i].ev, evidence, sizeof(evidence), &advice);

		if (out)
			json_object_array_add(out, json_out(&v[i], verdict, evidence, advice));
		else
			print_text(&v[i], verdict, evidence, advice);
	}
	if (out) {
		struct json_object *top = json_object_new_object();

		json_object_object_add(top, "processes", out);
		printf("%s\n", json_object_to_json_string_ext(top, JSON_C_TO_STRING_PLAIN));
		json_object_put(top);
	}
	json_object_put(doc);
	free(v);
	return 0;
}
