/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parsing of the exporter's WebSocket feed with json-c (see feed.h).  Every
 * key is the catalog's (catalog/cat_feed.c), so this reads the format the
 * exporter writes, in its one spelling, and nothing else.  The exporter is
 * trusted no more than any peer on the network: a field of the wrong type
 * counts as missing, numbers must be finite, tables are bounded.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli/feed.h"
#include "cli/jvalue.h"

#define FEED_MAX_DEPTH 16	/* the feed nests four levels; junk gets no more */

/* A non-negative number at id's key (part of a latency), in the feed's unit. */
static int val(struct json_object *o, enum cat_id id, unsigned int part, double *out)
{
	const struct cat_field *f = cat_feed_field(id, part);
	double v;

	if (!f || !jv_num(o, f->key, &v) || v < 0)
		return 0;
	*out = v;
	return 1;
}

/* The same, a duration in nanoseconds (the key says its unit). */
_Static_assert(CAT_ID_PROC_STATE_OTHER - CAT_ID_PROC_STATE_ONCPU == SHM_STATE_OTHER,
	       "catalog ids of the thread states follow enum shm_thread_state");

static int dur(struct json_object *o, enum cat_id id, unsigned int part, double *ns)
{
	const struct cat_field *f = cat_feed_field(id, part);

	if (!f || !val(o, id, part, ns))
		return 0;
	*ns *= cat_feed_ns(f);
	return 1;
}

/* An integer in [0, max] at id's key. */
static int uint_at(struct json_object *o, enum cat_id id, uint64_t max, uint64_t *out)
{
	return jv_uint(o, cat_feed_key(id, 0), max, out);
}

static int str_at(struct json_object *o, enum cat_id id, char *dst, size_t len)
{
	return jv_str(o, cat_feed_key(id, 0), dst, len);
}

/* A number, or -1 when unknown. */
static double num_or_unknown(struct json_object *o, enum cat_id id)
{
	double v = -1;

	return val(o, id, 0, &v) ? v : -1;
}

static void lat(struct json_object *o, enum cat_id id, struct cli_lat *l)
{
	l->p50_ns = l->p99_ns = l->count = -1;
	dur(o, id, CAT_PART_P50, &l->p50_ns);
	dur(o, id, CAT_PART_P99, &l->p99_ns);
	val(o, id, CAT_PART_COUNT, &l->count);
}

/* The rows of one of the feed's arrays. */
static struct json_object *rows(struct json_object *root, enum cat_obj obj, size_t *n)
{
	struct json_object *arr = jv_array(root, cat_objs[obj].key);

	*n = arr ? json_object_array_length(arr) : 0;
	return arr;
}

static void parse_mem(struct json_object *root, struct cli_feed *f)
{
	size_t n;
	struct json_object *arr = rows(root, CAT_OBJ_GPU_MEM, &n);

	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		struct cli_mem m = { 0 };
		uint64_t pid, gpu, v;

		if (!uint_at(e, CAT_ID_MEM_PID, UINT32_MAX, &pid) ||
		    !uint_at(e, CAT_ID_MEM_USED, INT64_MAX, &m.used_bytes)) {
			f->rows_skipped++;
			continue;
		}
		/* null: the physical GPU is not known; the row still counts for its process. */
		if (!uint_at(e, CAT_ID_MEM_GPU, UINT32_MAX - 1, &gpu)) {
			struct json_object *g = NULL;

			if (!json_object_object_get_ex(e, cat_feed_key(CAT_ID_MEM_GPU, 0), &g) || g) {
				f->rows_skipped++;
				continue;
			}
			gpu = UINT32_MAX;
		}
		m.pid = (uint32_t)pid;
		m.gpu_id = (uint32_t)gpu;
		if (uint_at(e, CAT_ID_MEM_PEAK, INT64_MAX, &v))
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
	size_t n;
	struct json_object *arr = rows(root, CAT_OBJ_GPUS, &n);

	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		struct cli_gpu g = { 0 };
		uint64_t v;

		if (!uint_at(e, CAT_ID_GPU_ID, UINT32_MAX, &v)) {
			f->rows_skipped++;
			continue;
		}
		g.gpu_id = (uint32_t)v;
		if (uint_at(e, CAT_ID_GPU_TOTAL, INT64_MAX, &v))
			g.total_bytes = v;
		if (uint_at(e, CAT_ID_GPU_USED, INT64_MAX, &v))
			g.used_bytes = v;
		if (uint_at(e, CAT_ID_GPU_PROCESSES, UINT32_MAX, &v))
			g.processes = (uint32_t)v;
		if (f->n_gpu == CLI_FEED_MAX_GPUS) {
			f->gpu_dropped++;
			continue;
		}
		f->gpu[f->n_gpu++] = g;
	}
}

static void parse_procs(struct json_object *root, struct cli_feed *f)
{
	size_t n;
	struct json_object *arr = rows(root, CAT_OBJ_PROCS, &n);

	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		struct cli_proc *p;
		uint64_t v;

		if (!uint_at(e, CAT_ID_PROC_PID, UINT32_MAX, &v)) {
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
		if (uint_at(e, CAT_ID_PROC_PPID, UINT32_MAX, &v))
			p->ppid = (uint32_t)v;
		str_at(e, CAT_ID_PROC_COMM, p->comm, sizeof(p->comm));
		str_at(e, CAT_ID_PROC_POD, p->pod, sizeof(p->pod));
		str_at(e, CAT_ID_PROC_SLURM_JOB, p->slurm_job, sizeof(p->slurm_job));
		str_at(e, CAT_ID_PROC_RANK, p->rank, sizeof(p->rank));
		lat(e, CAT_ID_PROC_CUDA_LAUNCH, &p->launch);
		lat(e, CAT_ID_PROC_DATALOADER, &p->dataloader);
		lat(e, CAT_ID_PROC_FUTEX, &p->futex);
		lat(e, CAT_ID_PROC_BARRIER, &p->barrier);
		lat(e, CAT_ID_PROC_RUNQ, &p->runq);
		p->offcpu_preempted_ns = p->offcpu_blocked_ns = -1;
		dur(e, CAT_ID_PROC_PREEMPTED, 0, &p->offcpu_preempted_ns);
		dur(e, CAT_ID_PROC_BLOCKED, 0, &p->offcpu_blocked_ns);
		p->involuntary_switches = num_or_unknown(e, CAT_ID_PROC_INVOLUNTARY);
		p->voluntary_switches = num_or_unknown(e, CAT_ID_PROC_VOLUNTARY);
		p->migrations = num_or_unknown(e, CAT_ID_PROC_MIGRATIONS);
		p->gpu_bytes = num_or_unknown(e, CAT_ID_PROC_GPU_BYTES);
		for (unsigned int s = 0; s < SHM_STATE_COUNT; s++) {
			p->state_ns[s] = -1;
			dur(e, (enum cat_id)(CAT_ID_PROC_STATE_ONCPU + s), 0, &p->state_ns[s]);
		}
	}
}

static void parse_nccl(struct json_object *root, struct cli_feed *f)
{
	size_t n;
	struct json_object *arr = rows(root, CAT_OBJ_NCCL, &n);

	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		struct cli_nccl c = { 0 };

		if (!str_at(e, CAT_ID_NCCL_OP, c.op, sizeof(c.op))) {
			f->rows_skipped++;
			continue;
		}
		if (f->n_nccl == CLI_FEED_MAX_NCCL) {
			f->nccl_dropped++;
			continue;
		}
		c.calls = num_or_unknown(e, CAT_ID_NCCL_CALLS);
		c.bytes = num_or_unknown(e, CAT_ID_NCCL_BYTES);
		c.errors = num_or_unknown(e, CAT_ID_NCCL_ERRORS);
		lat(e, CAT_ID_NCCL_DURATION, &c.duration);
		lat(e, CAT_ID_NCCL_WAIT, &c.wait);
		f->nccl[f->n_nccl++] = c;
	}
}

static void parse_alerts(struct json_object *root, struct cli_feed *f)
{
	size_t n;
	struct json_object *arr = rows(root, CAT_OBJ_ALERTS, &n);

	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		struct cli_alert *a;
		char state[16] = "";

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
		if (!str_at(e, CAT_ID_ALERT_NAME, a->name, sizeof(a->name)))
			strcpy(a->name, "(unnamed alert)");
		str_at(e, CAT_ID_ALERT_SEVERITY, a->severity, sizeof(a->severity));
		str_at(e, CAT_ID_ALERT_SUMMARY, a->summary, sizeof(a->summary));
		str_at(e, CAT_ID_ALERT_STATE, state, sizeof(state));
		a->firing = strcmp(state, "firing") == 0;
		a->pending = strcmp(state, "pending") == 0;
		/* A pending alert's startsAt is the zero time: it has not started. */
		if (a->firing)
			str_at(e, CAT_ID_ALERT_STARTS, a->starts_at, sizeof(a->starts_at));
	}
}

/* The telemetry figures in feed order; a map (table_overflows) as its sum. */
static void parse_telemetry(struct json_object *root, struct cli_feed *f)
{
	struct json_object *t = jv_get(root, cat_objs[CAT_OBJ_TELEMETRY].key);
	const struct cat_field *fs;
	size_t n;

	if (!t || !json_object_is_type(t, json_type_object))
		return;
	str_at(t, CAT_ID_MODE, f->mode, sizeof(f->mode));
	str_at(t, CAT_ID_SCENARIO, f->scenario, sizeof(f->scenario));
	fs = cat_feed_fields(CAT_OBJ_TELEMETRY, &n);
	for (size_t i = 0; i < n && f->n_telemetry < CLI_FEED_MAX_TELEMETRY; i++) {
		struct json_object *map = jv_get(t, fs[i].key);
		double v = 0, part;
		int have = 0;

		if (fs[i].child != CAT_OBJ_COUNT) {
			if (!map || !json_object_is_type(map, json_type_object))
				continue;
			json_object_object_foreach(map, k, unused) {
				(void)unused;
				if (jv_num(map, k, &part)) {
					v += part;
					have = 1;
				}
			}
		} else if (cat_feed_is_number(&fs[i])) {
			have = jv_num(t, fs[i].key, &v);
		}
		if (!have)
			continue;
		jv_copy_text(f->telemetry[f->n_telemetry].key, CLI_FEED_NAME_LEN, fs[i].key);
		f->telemetry[f->n_telemetry++].value = v;
	}
}

static void parse_health(struct json_object *root, struct cli_feed *f)
{
	struct json_object *up = jv_get(root, cat_feed_key(CAT_ID_COLLECTOR_UP, 0));

	if (up && json_object_is_type(up, json_type_boolean))
		f->collector_up = json_object_get_boolean(up);
	str_at(root, CAT_ID_STALE_REASON, f->stale_reason, sizeof(f->stale_reason));
	str_at(root, CAT_ID_STATUS, f->status, sizeof(f->status));
	f->generation = num_or_unknown(root, CAT_ID_GENERATION);
	f->age_ms = num_or_unknown(root, CAT_ID_AGE);
	dur(root, CAT_ID_CUDA_LATENCY, CAT_PART_P50, &f->cuda_p50_ns);
	dur(root, CAT_ID_CUDA_LATENCY, CAT_PART_P99, &f->cuda_p99_ns);
	dur(root, CAT_ID_NCCL_ALLREDUCE, CAT_PART_P50, &f->nccl_allreduce_p50_ns);
	dur(root, CAT_ID_NCCL_ALLREDUCE, CAT_PART_P99, &f->nccl_allreduce_p99_ns);
	dur(root, CAT_ID_DATALOADER_WAIT, CAT_PART_P50, &f->dataloader_p50_ns);
	dur(root, CAT_ID_DATALOADER_WAIT, CAT_PART_P99, &f->dataloader_p99_ns);
}

void cli_feed_clear(struct cli_feed *f)
{
	memset(f, 0, sizeof(*f));
	f->cuda_p50_ns = f->cuda_p99_ns = -1;
	f->nccl_allreduce_p50_ns = f->nccl_allreduce_p99_ns = -1;
	f->dataloader_p50_ns = f->dataloader_p99_ns = -1;
	f->age_ms = -1;
	f->collector_up = -1;
	f->generation = -1;
}

int cli_feed_parse(const char *msg, size_t len, struct cli_feed *f)
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
	/* Every snapshot carries gpu_utilization, an array: that tells one apart. */
	if (!jv_array(root, cat_objs[CAT_OBJ_GPU_MEM].key)) {
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

	parse_health(root, f);
	parse_mem(root, f);
	parse_gpus(root, f);
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

double cli_feed_telemetry(const struct cli_feed *f, enum cat_id id)
{
	const char *key = cat_feed_key(id, 0);

	for (size_t i = 0; i < f->n_telemetry; i++)
		if (strcmp(f->telemetry[i].key, key) == 0)
			return f->telemetry[i].value;
	return -1;
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

static int known(const char *s)
{
	return s[0] && strcmp(s, "unknown") != 0;
}

void cli_proc_who(char *buf, size_t len, const struct cli_proc *p, size_t width)
{
	char name[CLI_FEED_NAME_LEN + 8] = "", rank[CLI_FEED_NAME_LEN + 4] = "";
	size_t n, r;

	if (known(p->pod))
		snprintf(name, sizeof(name), "%s", p->pod);
	else if (known(p->slurm_job))
		snprintf(name, sizeof(name), "job %s", p->slurm_job);
	if (known(p->rank))
		snprintf(rank, sizeof(rank), "%sr%s", name[0] ? " " : "", p->rank);
	n = strlen(name);
	r = strlen(rank);
	/* Bytes for columns: a name that is not ASCII only comes out narrower. */
	if (n + r > width && n && r + 2 <= width) {
		n = width - r - 1;
		while (n && ((unsigned char)name[n] & 0xc0) == 0x80)
			n--;	/* not inside a UTF-8 sequence */
		name[n++] = '~';
		name[n] = '\0';
	}
	snprintf(buf, len, "%s%s", name, rank);
	if (!buf[0])
		snprintf(buf, len, "-");
}
