/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Alert evaluation and state (see alert_engine.h for the state machine and
 * the threading rule: one evaluating thread, every entry point under the
 * engine's mutex).  Unprivileged; reads only validated snapshots.  Memory
 * is bounded: at most ALERT_MAX_RULES rules of at most ALERT_MAX_INSTANCES
 * label sets each.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "common/log.h"
#include "exporter/alerts/alert_engine.h"
#include "exporter/alerts/alert_template.h"
#include "exporter/prom/prom_write.h"

/* A series' labels escaped: every value can double, and none is ever cut. */
#define KEY_MAX (ALERT_SERIES_LABELS * (ALERT_NAME_MAX + 4 + 2 * ALERT_LABEL_VALUE_MAX))
/* Every label of one alert, escaped; a buffer that grows, never cuts. */
#define ALERT_LABELS_LIMIT	(64u << 10)

struct instance {
	char key[KEY_MAX];		/* series labels as Prometheus text */
	struct alert_series series;	/* the latest one */
	enum alert_state state;
	uint64_t active_mono_ns;
	uint64_t active_real_ns;
	uint64_t fired_mono_ns;
	uint64_t fired_real_ns;
	uint64_t round;			/* last evaluation that matched */
};

struct rule_state {
	struct alert_rule rule;
	struct instance *inst;
	size_t n, cap;
};

struct transitions {
	char name[ALERT_NAME_MAX];
	uint64_t firing, resolved;
};

struct alert_engine {
	pthread_mutex_t mu;
	struct rule_state *rs;
	size_t n_rules;
	char origin[256];
	alert_notify_fn notify;
	void *notify_arg;
	uint64_t round;
	struct transitions *tr;		/* per alertname, kept across reloads */
	size_t n_tr;
	uint64_t reloads_ok, reloads_failed;
	int last_reload_ok;
	uint64_t dropped;		/* label sets beyond ALERT_MAX_INSTANCES */
	uint64_t last_drop_log_ns;
};

void alert_time_rfc3339(uint64_t real_ns, char *buf, size_t len)
{
	time_t t = (time_t)(real_ns / 1000000000ull);
	struct tm tm;

	if (!real_ns || !gmtime_r(&t, &tm)) {
		snprintf(buf, len, "0001-01-01T00:00:00Z");
		return;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned int)(real_ns % 1000000000ull / 1000000ull));
}

/* ---- labels ------------------------------------------------------------ */

/* The series' labels as Prometheus text: the instance's identity. */
static void series_key(const struct alert_series *s, char *key, size_t len)
{
	key[0] = '\0';
	for (unsigned int i = 0; i < s->n_labels; i++)
		if (prom_label_add(key, len, s->label_name[i], s->label_value[i]) < 0)
			break;
}

static int cmp_label(const void *a, const void *b)
{
	return strcmp(((const struct alert_label *)a)->name, ((const struct alert_label *)b)->name);
}

/* Every label of the alert, sorted by name, and its fingerprint. */
static void notice_labels(const struct alert_rule *r, const struct alert_series *s,
			  struct alert_notice *n)
{
	uint64_t h = 14695981039346656037ull;	/* FNV-1a */

	n->n_labels = 0;
#define PUSH(nm, val) do {							\
	snprintf(n->labels[n->n_labels].name, ALERT_NAME_MAX, "%s", (nm));	\
	snprintf(n->labels[n->n_labels].value, ALERT_LABEL_VALUE_MAX, "%s", (val)); \
	n->n_labels++;								\
} while (0)
	PUSH("alertname", r->name);
	PUSH("severity", r->severity);
	for (unsigned int i = 0; i < s->n_labels; i++)
		PUSH(s->label_name[i], s->label_value[i]);
	for (unsigned int i = 0; i < r->n_labels; i++)
		PUSH(r->labels[i].name, r->labels[i].value);
#undef PUSH
	qsort(n->labels, n->n_labels, sizeof(n->labels[0]), cmp_label);
	for (unsigned int i = 0; i < n->n_labels; i++) {
		for (const char *p = n->labels[i].name; ; p++) {
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
			if (!*p)
				break;
		}
		for (const char *p = n->labels[i].value; ; p++) {
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
			if (!*p)
				break;
		}
	}
	n->fingerprint = h;
}

/* ---- transitions ------------------------------------------------------- */

static struct transitions *tr_get(struct alert_engine *e, const char *name)
{
	struct transitions *t;

	for (size_t i = 0; i < e->n_tr; i++)
		if (strcmp(e->tr[i].name, name) == 0)
			return &e->tr[i];
	/* Bounded: names come from rules, at most ALERT_MAX_RULES per load. */
	if (e->n_tr >= 4 * ALERT_MAX_RULES)
		return NULL;
	t = realloc(e->tr, (e->n_tr + 1) * sizeof(*t));
	if (!t)
		return NULL;
	e->tr = t;
	t = &e->tr[e->n_tr++];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	return t;
}

static void transition(struct alert_engine *e, const struct alert_rule *r,
		       struct instance *in, int resolved, uint64_t now_real_ns)
{
	struct alert_notice n;
	struct transitions *t = tr_get(e, r->name);
	char key[KEY_MAX];

	memset(&n, 0, sizeof(n));
	n.resolved = resolved;
	notice_labels(r, &in->series, &n);
	alert_template_expand(r->summary, r, &in->series, n.summary, sizeof(n.summary));
	alert_template_expand(r->description, r, &in->series, n.description,
			      sizeof(n.description));
	n.starts_real_ns = in->fired_real_ns;
	n.ends_real_ns = resolved ? now_real_ns : 0;
	n.value = in->series.value;
	if (t) {
		if (resolved)
			t->resolved++;
		else
			t->firing++;
	}
	snprintf(key, sizeof(key), "%s", in->key[0] ? in->key : "no labels");
	log_info("alert %s %s {%s}: %s", r->name, resolved ? "resolved" : "firing", key,
		 n.summary);
	if (e->notify)
		e->notify(e->notify_arg, &n);
}

/* ---- wall-clock stamps ------------------------------------------------- */

/* When then_mono_ns was, by the wall clock as it reads now. */
static uint64_t real_at(uint64_t then_mono_ns, uint64_t now_mono_ns, uint64_t now_real_ns)
{
	uint64_t ago = now_mono_ns - then_mono_ns;

	return now_real_ns > ago ? now_real_ns - ago : 1;
}

/*
 * The wall clock stepped back past this alert's stamps (NTP, date -s):
 * restate them by the clock as it reads now, from the monotonic time since
 * each, so that activeAt <= startsAt <= endsAt holds and durations stay
 * true.  Alertmanager refuses an alert that ends before it starts ("end
 * time must not be before start time").  Called before every new stamp.
 */
static void restamp(struct instance *in, uint64_t now_mono_ns, uint64_t now_real_ns)
{
	int firing = in->state == ALERT_FIRING;

	if (now_real_ns >= in->active_real_ns && (!firing || now_real_ns >= in->fired_real_ns))
		return;
	in->active_real_ns = real_at(in->active_mono_ns, now_mono_ns, now_real_ns);
	if (firing)
		in->fired_real_ns = real_at(in->fired_mono_ns, now_mono_ns, now_real_ns);
}

/* ---- evaluation -------------------------------------------------------- */

struct eval_ctx {
	struct alert_engine *e;
	struct rule_state *rs;
	uint64_t now_mono_ns, now_real_ns;
};

static int scope_matches(const struct alert_rule *r, const struct alert_series *s)
{
	for (unsigned int i = 0; i < r->n_scope; i++) {
		unsigned int j;

		for (j = 0; j < s->n_labels; j++)
			if (strcmp(s->label_name[j], r->scope[i].name) == 0 &&
			    strcmp(s->label_value[j], r->scope[i].value) == 0)
				break;
		if (j == s->n_labels)
			return 0;
	}
	return 1;
}

static struct instance *find(struct rule_state *rs, const char *key)
{
	for (size_t i = 0; i < rs->n; i++)
		if (strcmp(rs->inst[i].key, key) == 0)
			return &rs->inst[i];
	return NULL;
}

static struct instance *add_instance(struct alert_engine *e, struct rule_state *rs,
				     const char *key, uint64_t now_mono_ns)
{
	struct instance *in;
	size_t len;

	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? 2 * rs->cap : 4;

		if (rs->cap >= ALERT_MAX_INSTANCES) {
			e->dropped++;
			if (now_mono_ns - e->last_drop_log_ns > 60ull * 1000000000ull) {
				log_warnx("alert %s: more than %u label sets; the rest are not "
					  "tracked", rs->rule.name, ALERT_MAX_INSTANCES);
				e->last_drop_log_ns = now_mono_ns;
			}
			return NULL;
		}
		if (cap > ALERT_MAX_INSTANCES)
			cap = ALERT_MAX_INSTANCES;
		in = realloc(rs->inst, cap * sizeof(*in));
		if (!in)
			return NULL;
		rs->inst = in;
		rs->cap = cap;
	}
	in = &rs->inst[rs->n++];
	memset(in, 0, sizeof(*in));
	len = strnlen(key, sizeof(in->key) - 1);
	memcpy(in->key, key, len);
	return in;
}

static int on_series(void *arg, const struct alert_series *s)
{
	struct eval_ctx *c = arg;
	struct rule_state *rs = c->rs;
	const struct alert_rule *r = &rs->rule;
	struct instance *in;
	char key[KEY_MAX];

	if (!scope_matches(r, s) || !alert_cmp_holds(r->cmp, s->value, r->threshold))
		return 0;
	series_key(s, key, sizeof(key));
	in = find(rs, key);
	if (!in) {
		in = add_instance(c->e, rs, key, c->now_mono_ns);
		if (!in)
			return 0;
		in->state = ALERT_PENDING;
		in->active_mono_ns = c->now_mono_ns;
		in->active_real_ns = c->now_real_ns;
	}
	in->series = *s;
	in->round = c->e->round;
	restamp(in, c->now_mono_ns, c->now_real_ns);
	if (in->state == ALERT_PENDING && c->now_mono_ns - in->active_mono_ns >= r->for_ns) {
		in->state = ALERT_FIRING;
		in->fired_mono_ns = c->now_mono_ns;
		in->fired_real_ns = c->now_real_ns;
		transition(c->e, r, in, 0, c->now_real_ns);
	}
	return 0;
}

void alert_engine_eval(struct alert_engine *e, const struct shm_snapshot *snap,
		       uint64_t age_ns, uint64_t now_mono_ns, uint64_t now_real_ns)
{
	pthread_mutex_lock(&e->mu);
	e->round++;
	for (size_t i = 0; i < e->n_rules; i++) {
		struct rule_state *rs = &e->rs[i];
		struct eval_ctx c = { e, rs, now_mono_ns, now_real_ns };

		alert_metric_collect(rs->rule.metric, snap, age_ns, on_series, &c);
		/* Label sets not seen true this round: resolve or forget. */
		for (size_t j = 0; j < rs->n;) {
			struct instance *in = &rs->inst[j];

			if (in->round == e->round) {
				j++;
				continue;
			}
			if (in->state == ALERT_FIRING) {
				restamp(in, now_mono_ns, now_real_ns);
				transition(e, &rs->rule, in, 1, now_real_ns);
			}
			rs->inst[j] = rs->inst[--rs->n];
		}
	}
	pthread_mutex_unlock(&e->mu);
}

/* ---- life cycle -------------------------------------------------------- */

static int install(struct alert_engine *e, struct alert_ruleset *rules)
{
	struct rule_state *rs = calloc(rules->n ? rules->n : 1, sizeof(*rs));

	if (!rs)
		return -ENOMEM;
	for (size_t i = 0; i < rules->n; i++) {
		rs[i].rule = rules->rules[i];
		tr_get(e, rules->rules[i].name);	/* counters exist from the start */
	}
	e->rs = rs;
	e->n_rules = rules->n;
	snprintf(e->origin, sizeof(e->origin), "%s", rules->origin);
	alert_ruleset_free(rules);
	return 0;
}

struct alert_engine *alert_engine_new(struct alert_ruleset *rules,
				      alert_notify_fn notify, void *notify_arg)
{
	struct alert_engine *e = calloc(1, sizeof(*e));
	int err;

	if (!e)
		return NULL;
	pthread_mutex_init(&e->mu, NULL);
	e->notify = notify;
	e->notify_arg = notify_arg;
	e->last_reload_ok = 1;
	err = install(e, rules);
	if (err) {
		alert_ruleset_free(rules);
		pthread_mutex_destroy(&e->mu);
		free(e);
		errno = -err;
		return NULL;
	}
	return e;
}

static void free_rules(struct rule_state *rs, size_t n)
{
	for (size_t i = 0; rs && i < n; i++)
		free(rs[i].inst);
	free(rs);
}

void alert_engine_free(struct alert_engine *e)
{
	if (!e)
		return;
	free_rules(e->rs, e->n_rules);
	free(e->tr);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

static int same_rule(const struct alert_rule *a, const struct alert_rule *b)
{
	if (strcmp(a->name, b->name) || strcmp(a->severity, b->severity) ||
	    a->metric != b->metric || a->n_scope != b->n_scope)
		return 0;
	for (unsigned int i = 0; i < a->n_scope; i++)
		if (strcmp(a->scope[i].name, b->scope[i].name) ||
		    strcmp(a->scope[i].value, b->scope[i].value))
			return 0;
	return 1;
}

int alert_engine_replace(struct alert_engine *e, struct alert_ruleset *rules,
			 uint64_t now_mono_ns, uint64_t now_real_ns)
{
	struct rule_state *old;
	size_t n_old;
	int err;

	pthread_mutex_lock(&e->mu);
	old = e->rs;
	n_old = e->n_rules;
	err = install(e, rules);
	if (err) {
		e->reloads_failed++;
		e->last_reload_ok = 0;
		pthread_mutex_unlock(&e->mu);
		return err;
	}
	/* Kept rules keep their label sets; the others' firing alerts resolve. */
	for (size_t i = 0; i < n_old; i++) {
		struct rule_state *o = &old[i];
		size_t j;

		for (j = 0; j < e->n_rules; j++)
			if (!e->rs[j].inst && same_rule(&o->rule, &e->rs[j].rule))
				break;
		if (j < e->n_rules) {
			e->rs[j].inst = o->inst;
			e->rs[j].n = o->n;
			e->rs[j].cap = o->cap;
			o->inst = NULL;
			continue;
		}
		for (size_t k = 0; k < o->n; k++) {
			if (o->inst[k].state != ALERT_FIRING)
				continue;
			restamp(&o->inst[k], now_mono_ns, now_real_ns);
			transition(e, &o->rule, &o->inst[k], 1, now_real_ns);
		}
	}
	free_rules(old, n_old);
	e->reloads_ok++;
	e->last_reload_ok = 1;
	log_info("alerts: %zu rules from %s", e->n_rules, e->origin);
	pthread_mutex_unlock(&e->mu);
	return 0;
}

int alert_engine_reload(struct alert_engine *e, const char *path, uint64_t now_mono_ns,
			uint64_t now_real_ns)
{
	struct alert_ruleset rs;
	char err[1024];
	int r;

	r = alert_rules_load(path, &rs, err, sizeof(err));
	if (r < 0) {
		pthread_mutex_lock(&e->mu);
		e->reloads_failed++;
		e->last_reload_ok = 0;
		log_warnx("alerts: reload failed, keeping the %zu rules from %s: %s",
			  e->n_rules, e->origin, err);
		pthread_mutex_unlock(&e->mu);
		return r;
	}
	return alert_engine_replace(e, &rs, now_mono_ns, now_real_ns);
}

/* ---- output ------------------------------------------------------------ */

/* alertname, severity, the series' labels, the rule's labels. */
static void alert_labels(struct sbuf *b, const struct rule_state *rs, const struct instance *in)
{
	sbuf_reset(b);
	sbuf_puts(b, "");
	prom_label_put(b, "alertname", rs->rule.name);
	prom_label_put(b, "severity", rs->rule.severity);
	if (in->key[0]) {
		sbuf_append(b, ",", 1);
		sbuf_puts(b, in->key);
	}
	for (unsigned int i = 0; i < rs->rule.n_labels; i++)
		prom_label_put(b, rs->rule.labels[i].name, rs->rule.labels[i].value);
}

static void prom_states(struct alert_engine *e, struct prom_out *o, enum alert_state st)
{
	const struct cat_metric *m = cat_metric(st == ALERT_FIRING ? CAT_ID_ALERT_FIRING :
						CAT_ID_ALERT_PENDING);
	struct sbuf labels;

	sbuf_init(&labels, ALERT_LABELS_LIMIT, 0);
	prom_family_of(o, m, 0);
	for (size_t i = 0; i < e->n_rules; i++) {
		for (size_t j = 0; j < e->rs[i].n; j++) {
			if (e->rs[i].inst[j].state != st)
				continue;
			alert_labels(&labels, &e->rs[i], &e->rs[i].inst[j]);
			if (sbuf_error(&labels)) {
				prom_out_fail(o, sbuf_error(&labels));
				break;
			}
			prom_series_u64(o, m->prom, labels.data, 1);
		}
	}
	sbuf_free(&labels);
}

/* A catalog family and its first series. */
static void family1(struct prom_out *o, enum cat_id id, const char *labels, uint64_t v)
{
	const struct cat_metric *m = cat_metric(id);

	prom_family_of(o, m, 0);
	prom_series_u64(o, m->prom, labels, v);
}

int alert_engine_render_prom(struct alert_engine *e, struct prom_out *o)
{
	const struct cat_metric *tr = cat_metric(CAT_ID_ALERT_TRANSITIONS);
	const char *name = cat_metric(CAT_ID_ALERT_RELOADS)->prom;
	char labels[2 * ALERT_NAME_MAX + 32];

	pthread_mutex_lock(&e->mu);
	prom_states(e, o, ALERT_FIRING);
	prom_states(e, o, ALERT_PENDING);
	prom_family_of(o, tr, 0);
	for (size_t i = 0; i < e->n_tr; i++) {
		labels[0] = '\0';
		prom_label_add(labels, sizeof(labels), "alertname", e->tr[i].name);
		prom_label_add(labels, sizeof(labels), "to", "firing");
		prom_series_u64(o, tr->prom, labels, e->tr[i].firing);
		labels[0] = '\0';
		prom_label_add(labels, sizeof(labels), "alertname", e->tr[i].name);
		prom_label_add(labels, sizeof(labels), "to", "resolved");
		prom_series_u64(o, tr->prom, labels, e->tr[i].resolved);
	}
	family1(o, CAT_ID_ALERT_RULES, "", e->n_rules);
	family1(o, CAT_ID_ALERT_RELOADS, "result=\"success\"", e->reloads_ok);
	prom_series_u64(o, name, "result=\"failure\"", e->reloads_failed);
	family1(o, CAT_ID_ALERT_RELOAD_OK, "", (uint64_t)e->last_reload_ok);
	family1(o, CAT_ID_ALERT_DROPPED, "", e->dropped);
	pthread_mutex_unlock(&e->mu);
	return prom_out_error(o);
}

/* A key of the feed's alert object, named by the catalog. */
static void put(struct json_object *o, enum cat_id id, struct json_object *v)
{
	json_object_object_add(o, cat_feed_key(id, 0), v);
}

struct json_object *alert_engine_feed_json(struct alert_engine *e)
{
	struct json_object *arr = json_object_new_array();
	char ts[40], text[ALERT_TEXT_MAX];

	if (!arr)
		return NULL;
	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < e->n_rules; i++) {
		const struct rule_state *rs = &e->rs[i];

		for (size_t j = 0; j < rs->n; j++) {
			const struct instance *in = &rs->inst[j];
			struct json_object *o = json_object_new_object();
			struct json_object *l = json_object_new_object();

			if (!o || !l) {
				json_object_put(o);
				json_object_put(l);
				continue;
			}
			put(o, CAT_ID_ALERT_NAME, json_object_new_string(rs->rule.name));
			put(o, CAT_ID_ALERT_SEVERITY, json_object_new_string(rs->rule.severity));
			put(o, CAT_ID_ALERT_STATE, json_object_new_string(in->state == ALERT_FIRING ?
								     "firing" : "pending"));
			alert_template_expand(rs->rule.summary, &rs->rule, &in->series, text,
					      sizeof(text));
			put(o, CAT_ID_ALERT_SUMMARY, json_object_new_string(text));
			for (unsigned int k = 0; k < in->series.n_labels; k++)
				json_object_object_add(l, in->series.label_name[k],
					json_object_new_string(in->series.label_value[k]));
			for (unsigned int k = 0; k < rs->rule.n_labels; k++)
				json_object_object_add(l, rs->rule.labels[k].name,
					json_object_new_string(rs->rule.labels[k].value));
			put(o, CAT_ID_ALERT_LABELS, l);
			alert_time_rfc3339(in->state == ALERT_FIRING ? in->fired_real_ns : 0,
					   ts, sizeof(ts));
			put(o, CAT_ID_ALERT_STARTS, json_object_new_string(ts));
			alert_time_rfc3339(in->active_real_ns, ts, sizeof(ts));
			put(o, CAT_ID_ALERT_ACTIVE, json_object_new_string(ts));
			put(o, CAT_ID_ALERT_VALUE, json_object_new_double(in->series.value));
			json_object_array_add(arr, o);
		}
	}
	pthread_mutex_unlock(&e->mu);
	return arr;
}

size_t alert_engine_rule_count(struct alert_engine *e)
{
	size_t n;

	pthread_mutex_lock(&e->mu);
	n = e->n_rules;
	pthread_mutex_unlock(&e->mu);
	return n;
}

size_t alert_engine_firing_count(struct alert_engine *e)
{
	size_t n = 0;

	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < e->n_rules; i++)
		for (size_t j = 0; j < e->rs[i].n; j++)
			n += e->rs[i].inst[j].state == ALERT_FIRING;
	pthread_mutex_unlock(&e->mu);
	return n;
}

uint64_t alert_engine_transitions(struct alert_engine *e, const char *alertname, int resolved)
{
	uint64_t v = 0;

	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < e->n_tr; i++)
		if (strcmp(e->tr[i].name, alertname) == 0)
			v = resolved ? e->tr[i].resolved : e->tr[i].firing;
	pthread_mutex_unlock(&e->mu);
	return v;
}

enum alert_state alert_engine_state(struct alert_engine *e, const char *alertname,
				    const char *labels)
{
	enum alert_state st = ALERT_INACTIVE;

	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < e->n_rules && st == ALERT_INACTIVE; i++) {
		struct instance *in;

		if (strcmp(e->rs[i].rule.name, alertname) != 0)
			continue;
		in = find(&e->rs[i], labels);
		if (in)
			st = in->state;
	}
	pthread_mutex_unlock(&e->mu);
	return st;
}
