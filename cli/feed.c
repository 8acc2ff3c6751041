/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parsing of the exporter's WebSocket feed with json-c (see feed.h).  The
 * exporter is trusted no more than any peer on the network: a field of the
 * wrong type counts as missing, numbers must be finite, tables are bounded.
 * Several spellings of a duration are accepted (x_ns, x_us, x_ms, x_s, or a
 * {p50, p99} object) so the views keep working as the feed grows.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli/feed.h"
#include "cli/jvalue.h"

#define FEED_MAX_DEPTH 16	/* the feed nests three levels; junk gets no more */

/* "pid:gpu" (the seed's gpu_utilization key). */
static int parse_pid_gpu(const char *s, uint32_t *pid, uint32_t *gpu)
{
	unsigned long a, b;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	a = strtoul(s, &end, 10);
	if (errno || *end != ':' || a > UINT32_MAX || end[1] < '0' || end[1] > '9')
		return 0;
	b = strtoul(end + 1, &end, 10);
	if (errno || *end != '\0' || b > UINT32_MAX)
		return 0;
	*pid = (uint32_t)a;
	*gpu = (uint32_t)b;
	return 1;
}

static void parse_mem(struct json_object *root, struct cli_feed *f)
{
	struct json_object *arr = jv_array(root, "gpu_utilization");
	size_t n = arr ? json_object_array_length(arr) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		struct json_object *k = jv_get(e, "key");
		struct cli_mem m = { 0 };
		uint64_t v;

		if (!k || !json_object_is_type(k, json_type_string) ||
		    !parse_pid_gpu(json_object_get_string(k), &m.pid, &m.gpu_id) ||
		    !jv_uint(e, "current_bytes", INT64_MAX, &m.used_bytes)) {
			f->rows_skipped++;
			continue;
		}
		if (jv_uint(e, "peak_bytes", INT64_MAX, &v))
			m.peak_bytes = v;
		if (f->n_mem == CLI_FEED_MAX_MEM) {
			f->mem_dropped++;
			continue;
		}
		f->mem[f->n_mem++] = m;
	}
}

static void parse_gpus(struct json_object *root, struct cli_feed *f)
{
	struct json_object *arr = jv_array(root, "gpus");
	size_t n = arr ? json_object_array_length(arr) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		struct json_object *procs = jv_get(e, "processes");
		struct cli_gpu g = { 0 };
		uint64_t v;

		if (!jv_uint(e, "gpu_id", UINT32_MAX, &v)) {
			f->rows_skipped++;
			continue;
		}
		g.gpu_id = (uint32_t)v;
		if (jv_uint(e, "total_bytes", INT64_MAX, &v))
			g.total_bytes = v;
		if (jv_uint(e, "used_bytes", INT64_MAX, &v))
			g.used_bytes = v;
		if (procs && json_object_is_type(procs, json_type_array))
			g.processes = (uint32_t)json_object_array_length(procs);
		else if (jv_uint(e, "processes", UINT32_MAX, &v))
			g.processes = (uint32_t)v;
		if (f->n_gpu == CLI_FEED_MAX_GPUS) {
			f->gpu_dropped++;
			continue;
		}
		f->gpu[f->n_gpu++] = g;
	}
}

/* Without a gpus table the devices are still known from the memory rows. */
static void gpus_from_mem(struct cli_feed *f)
{
	for (size_t i = 0; i < f->n_mem; i++) {
		struct cli_gpu *g = (struct cli_gpu *)cli_feed_gpu(f, f->mem[i].gpu_id);

		if (!g) {
			if (f->n_gpu == CLI_FEED_MAX_GPUS) {
				f->gpu_dropped++;
				continue;
			}
			g = &f->gpu[f->n_gpu++];
			memset(g, 0, sizeof(*g));
			g->gpu_id = f->mem[i].gpu_id;
		}
		g->used_bytes += f->mem[i].used_bytes;
		g->processes++;
	}
}

static void parse_procs(struct json_object *root, struct cli_feed *f)
{
	static const char *const launch[] = { "launch", "cuda_launch", "launch_latency", NULL };
	static const char *const dl[] = { "dataloader_wait", "dataloader", NULL };
	static const char *const futex[] = { "futex_wait", "futex", NULL };
	static const char *const barrier[] = { "barrier_wait", "barrier", NULL };
	static const char *const runq[] = { "runq_delay", "runq", NULL };
	struct json_object *arr = jv_array(root, "processes");
	size_t n = arr ? json_object_array_length(arr) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		struct cli_proc *p;
		uint64_t v;

		if (!jv_uint(e, "pid", UINT32_MAX, &v)) {
			f->rows_skipped++;
			continue;
		}
		if (f->n_proc == CLI_FEED_MAX_PROCS) {
			f->proc_dropped++;
			continue;
		}
		p = &f->proc[f->n_proc++];
		memset(p, 0, sizeof(*p));
		p->pid = (uint32_t)v;
		if (jv_uint(e, "ppid", UINT32_MAX, &v))
			p->ppid = (uint32_t)v;
		jv_str(e, "comm", p->comm, sizeof(p->comm));
		{
			const struct jv_lat_want want[] = {
				{ launch, &p->launch }, { dl, &p->dataloader }, { futex, &p->futex },
				{ barrier, &p->barrier }, { runq, &p->runq },
			};

			jv_lats(e, want, sizeof(want) / sizeof(want[0]));
		}
		if (!jv_dur(e, "offcpu_preempted", &p->offcpu_preempted_ns))
			p->offcpu_preempted_ns = -1;
		if (!jv_dur(e, "offcpu_blocked", &p->offcpu_blocked_ns))
			p->offcpu_blocked_ns = -1;
		if (!jv_num(e, "involuntary_switches", &p->involuntary_switches))
			p->involuntary_switches = -1;
		if (!jv_num(e, "voluntary_switches", &p->voluntary_switches))
			p->voluntary_switches = -1;
		if (!jv_num(e, "migrations", &p->migrations))
			p->migrations = -1;
		if (!jv_num(e, "gpu_bytes", &p->gpu_bytes))
			p->gpu_bytes = -1;
	}
}

static void parse_nccl(struct json_object *root, struct cli_feed *f)
{
	static const char *const duration[] = { "duration", "call", NULL };
	static const char *const wait[] = { "wait", NULL };
	struct json_object *arr = jv_array(root, "nccl");
	size_t n = arr ? json_object_array_length(arr) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		struct cli_nccl *c;

		if (!jv_get(e, "op") || !json_object_is_type(jv_get(e, "op"), json_type_string)) {
			f->rows_skipped++;
			continue;
		}
		if (f->n_nccl == CLI_FEED_MAX_NCCL) {
			f->nccl_dropped++;
			continue;
		}
		c = &f->nccl[f->n_nccl++];
		memset(c, 0, sizeof(*c));
		jv_str(e, "op", c->op, sizeof(c->op));
		if (!jv_num(e, "calls", &c->calls))
			c->calls = -1;
		if (!jv_num(e, "bytes", &c->bytes))
			c->bytes = -1;
		if (!jv_num(e, "errors", &c->errors))
			c->errors = -1;
		{
			const struct jv_lat_want want[] = { { duration, &c->duration }, { wait, &c->wait } };

			jv_lats(e, want, sizeof(want) / sizeof(want[0]));
		}
	}
}

/* Alertmanager-shaped ({labels, annotations}) or flat alert objects. */
static void parse_alerts(struct json_object *root, struct cli_feed *f)
{
	struct json_object *arr = jv_array(root, "alerts");
	size_t n = arr ? json_object_array_length(arr) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		struct json_object *labels = jv_get(e, "labels"), *ann = jv_get(e, "annotations");
		struct json_object *firing = jv_get(e, "firing");
		struct cli_alert *a;
		char state[32] = "";

		if (!e || !json_object_is_type(e, json_type_object)) {
			f->rows_skipped++;
			continue;
		}
		if (f->n_alert == CLI_FEED_MAX_ALERTS) {
			f->alert_dropped++;
			continue;
		}
		a = &f->alert[f->n_alert++];
		memset(a, 0, sizeof(*a));
		if (!jv_str(e, "alertname", a->name, sizeof(a->name)) &&
		    !jv_str(labels, "alertname", a->name, sizeof(a->name)) &&
		    !jv_str(e, "name", a->name, sizeof(a->name)))
			strcpy(a->name, "(unnamed alert)");
		if (!jv_str(e, "severity", a->severity, sizeof(a->severity)))
			jv_str(labels, "severity", a->severity, sizeof(a->severity));
		if (!jv_str(e, "summary", a->summary, sizeof(a->summary)) &&
		    !jv_str(ann, "summary", a->summary, sizeof(a->summary)) &&
		    !jv_str(e, "description", a->summary, sizeof(a->summary)))
			jv_str(ann, "description", a->summary, sizeof(a->summary));
		if (!jv_str(e, "startsAt", a->starts_at, sizeof(a->starts_at)))
			jv_str(e, "starts_at", a->starts_at, sizeof(a->starts_at));
		/* An alert in the list without any state is taken as firing. */
		a->firing = 1;
		if (firing && json_object_is_type(firing, json_type_boolean))
			a->firing = json_object_get_boolean(firing);
		else if (jv_str(e, "state", state, sizeof(state)) || jv_str(e, "status", state, sizeof(state)))
			a->firing = strcmp(state, "firing") == 0;
		a->pending = !a->firing && strcmp(state, "pending") == 0;
	}
}

/*
 * Numbers of the telemetry object in feed order; a nested object of numbers
 * (table_overflows: {procs: 0, ...}) counts as its sum.
 */
static void parse_telemetry(struct json_object *root, struct cli_feed *f)
{
	struct json_object *t = jv_get(root, "telemetry");
	double v;

	if (!t || !json_object_is_type(t, json_type_object))
		return;
	jv_str(t, "mode", f->mode, sizeof(f->mode));
	jv_str(t, "scenario", f->scenario, sizeof(f->scenario));
	json_object_object_foreach(t, key, val) {
		struct cli_kv *kv;
		int have = jv_num(t, key, &v);

		if (f->n_telemetry == CLI_FEED_MAX_TELEMETRY)
			break;
		if (!have && json_object_is_type(val, json_type_object)) {
			double part;

			v = 0;
			json_object_object_foreach(val, k2, v2) {
				(void)v2;
				if (jv_num(val, k2, &part)) {
					v += part;
					have = 1;
				}
			}
		}
		if (!have)
			continue;
		kv = &f->telemetry[f->n_telemetry++];
		jv_copy_text(kv->key, sizeof(kv->key), key);
		kv->value = v;
	}
}

static void parse_health(struct json_object *root, double now_real_ms, struct cli_feed *f)
{
	struct json_object *up = jv_get(root, "collector_up");
	double d;

	if (up && json_object_is_type(up, json_type_boolean))
		f->collector_up = json_object_get_boolean(up);
	else if (jv_num(root, "collector_up", &d))
		f->collector_up = d != 0;
	if (!jv_str(root, "stale_reason", f->stale_reason, sizeof(f->stale_reason)) &&
	    !jv_str(root, "stale", f->stale_reason, sizeof(f->stale_reason)))
		jv_str(root, "reason", f->stale_reason, sizeof(f->stale_reason));
	if (!jv_num(root, "generation", &f->generation) || f->generation < 0)
		f->generation = -1;
	jv_str(root, "status", f->status, sizeof(f->status));

	if (!jv_num(root, "last_update_ms", &f->last_update_ms) || f->last_update_ms < 0)
		f->last_update_ms = -1;
	if (jv_num(root, "snapshot_age_ms", &d) || jv_num(root, "age_ms", &d)) {
		f->age_ms = d >= 0 ? d : -1;
	} else if (jv_dur(root, "snapshot_age", &d) || jv_dur(root, "age", &d)) {
		f->age_ms = d / 1e6;
	} else if (f->last_update_ms > 0 && now_real_ms > 0) {
		/* last_update_ms is the wall-clock time of the publish. */
		d = now_real_ms - f->last_update_ms;
		f->age_ms = d < 0 ? 0 : d;
	}
}

void cli_feed_clear(struct cli_feed *f)
{
	memset(f, 0, sizeof(*f));
	f->cuda_p50_ns = f->cuda_p99_ns = -1;
	f->nccl_allreduce_p50_ns = f->nccl_allreduce_p99_ns = -1;
	f->dataloader_p50_ns = f->dataloader_p99_ns = -1;
	f->last_update_ms = f->age_ms = -1;
	f->collector_up = -1;
	f->generation = -1;
}

int cli_feed_parse(const char *msg, size_t len, double now_real_ms, struct cli_feed *f)
{
	struct json_tokener *tok = NULL;
	struct json_object *root = NULL;
	int err = 0;

	cli_feed_clear(f);
	if (len > CLI_FEED_MAX_BYTES)
		return -E2BIG;
	if (!msg || len == 0 || len > INT32_MAX)
		return -EINVAL;
	tok = json_tokener_new_ex(FEED_MAX_DEPTH);
	if (!tok)
		return -ENOMEM;
	/* Strict: no raw control characters in strings, no comments, no NaN. */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, msg, (int)len);
	/* One complete object, nothing after it but blanks. */
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(root, json_type_object)) {
		err = -EINVAL;
		goto cleanup;
	}
	/* The seed's contract: every snapshot carries gpu_utilization, an array. */
	if (!jv_array(root, "gpu_utilization")) {
		err = -EINVAL;
		goto cleanup;
	}
	for (size_t i = json_tokener_get_parse_end(tok); i < len; i++) {
		if (msg[i] != ' ' && msg[i] != '\n' && msg[i] != '\r' &&
		    msg[i] != '\t' && msg[i] != '\0') {
			err = -EINVAL;
			goto cleanup;
		}
	}

	jv_dur(root, "cuda_latency_p50", &f->cuda_p50_ns);
	jv_dur(root, "cuda_latency_p99", &f->cuda_p99_ns);
	jv_dur(root, "nccl_allreduce_p50", &f->nccl_allreduce_p50_ns);
	jv_dur(root, "nccl_allreduce_p99", &f->nccl_allreduce_p99_ns);
	jv_dur(root, "dataloader_wait_p50", &f->dataloader_p50_ns);
	jv_dur(root, "dataloader_wait_p99", &f->dataloader_p99_ns);
	parse_health(root, now_real_ms, f);
	parse_mem(root, f);
	parse_gpus(root, f);
	if (f->n_gpu == 0)
		gpus_from_mem(f);
	parse_procs(root, f);
	parse_nccl(root, f);
	parse_alerts(root, f);
	parse_telemetry(root, f);

cleanup:
	if (err)
		cli_feed_clear(f);
	json_object_put(root);
	json_tokener_free(tok);
	return err;
}

size_t cli_feed_firing(const struct cli_feed *f)
{
	size_t n = 0;

	for (size_t i = 0; i < f->n_alert; i++)
		n += f->alert[i].firing != 0;
	return n;
}

const struct cli_gpu *cli_feed_gpu(const struct cli_feed *f, uint32_t gpu_id)
{
	for (size_t i = 0; i < f->n_gpu; i++)
		if (f->gpu[i].gpu_id == gpu_id)
			return &f->gpu[i];
	return NULL;
}

const struct cli_proc *cli_feed_proc(const struct cli_feed *f, uint32_t pid)
{
	for (size_t i = 0; i < f->n_proc; i++)
		if (f->proc[i].pid == pid)
			return &f->proc[i];
	return NULL;
}
