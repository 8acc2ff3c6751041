/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * JSON snapshot of the segment for the WebSocket feed (see feed_json.h):
 * a walk of the catalog's feed layout, object by object, key by key.
 * Runs unprivileged in the WebSocket thread, once per interval whatever
 * the number of clients; it reads only a validated private snapshot.
 */
#include <errno.h>
#include <string.h>

#include <json-c/json.h>

#include "exporter/explain/stall_sites.h"
#include "exporter/feed/feed_json.h"

#define TEXT_MAX 512	/* a stale reason, a sanitised name */

/* What one rendering needs besides the rows. */
struct feed_ctx {
	struct alerts *alerts;		/* may be NULL */
	int full;			/* every process, not the top ones */
};

static struct json_object *object(unsigned int obj, const struct cat_input *in,
				  const void *row, const struct feed_ctx *ctx);

/* json-c takes ownership of v (a NULL v, out of memory, adds null). */
static void put(struct json_object *o, const char *k, struct json_object *v)
{
	json_object_object_add(o, k, v);
}

static struct json_object *ns_in(uint64_t ns, double unit)
{
	return json_object_new_double((double)ns / unit);
}

/* A label's value: a number, a string, or null for an unknown GPU. */
static struct json_object *label_value(const struct cat_label *l, const struct cat_input *in,
				       const void *row)
{
	char text[TEXT_MAX];
	int known;

	if (l->type == CAT_L_I32)
		return json_object_new_int((int32_t)cat_label_int(l, row));
	if (l->type == CAT_L_U32 || l->type == CAT_L_GPU) {
		if (cat_label_text(l, in, row, text, sizeof(text), &known) == 0 && !known)
			return NULL;
		return json_object_new_uint64((uint64_t)cat_label_int(l, row));
	}
	if (cat_label_text(l, in, row, text, sizeof(text), &known) < 0)
		text[0] = '\0';
	return json_object_new_string(text);
}

/* An entry's value, or a latency's part, in the feed's unit. */
static struct json_object *value(const struct cat_field *f, const struct cat_input *in,
				 const void *row)
{
	const struct cat_metric *m = f->m;
	char text[TEXT_MAX];
	uint64_t v;

	if (m->kind == CAT_LATENCY) {
		const struct shm_latency *l = cat_latency(m, in, row);

		if (f->part == CAT_PART_COUNT)
			return json_object_new_uint64(row ? l->count : 0);
		v = row ? cat_latency_quantile(l, f->part == CAT_PART_P99 ? CAT_Q_P99 : CAT_Q_P50) : 0;
		return ns_in(v, cat_feed_ns(f));
	}
	if (m->kind == CAT_TEXT) {
		if (!row || cat_text(m, in, row, text, sizeof(text)) < 0)
			text[0] = '\0';
		return json_object_new_string(text);
	}
	v = row ? cat_value(m, in, row) : 0;
	switch (m->feed_fmt) {
	case CAT_FMT_BOOL:
		return json_object_new_boolean(v != 0);
	case CAT_FMT_INT_MS:
		return json_object_new_uint64(v / 1000000ull);
	case CAT_FMT_S:
	case CAT_FMT_MS:
	case CAT_FMT_US:
		return ns_in(v, cat_feed_ns(f));
	default:
		return json_object_new_uint64(v);
	}
}

struct proc_rank {
	uint64_t gpu_bytes;
	uint64_t launches;
	uint32_t row;
};

/* Most GPU memory first, then most CUDA launches, then table order. */
static int by_weight(const void *a, const void *b)
{
	const struct proc_rank *x = a, *y = b;

	if (x->gpu_bytes != y->gpu_bytes)
		return x->gpu_bytes < y->gpu_bytes ? 1 : -1;
	if (x->launches != y->launches)
		return x->launches < y->launches ? 1 : -1;
	return (x->row > y->row) - (x->row < y->row);
}

/*
 * The max process rows that weigh most, heaviest first; NULL when memory
 * is short (the caller then takes the first rows).
 */
static struct proc_rank *top_procs(const struct cat_input *in, const struct cat_rowset *rs)
{
	const struct cat_metric *gpu = cat_metric(CAT_ID_PROC_GPU_BYTES);
	const struct cat_metric *launch = cat_metric(CAT_ID_PROC_CUDA_LAUNCH);
	struct proc_rank *r = calloc(rs->n, sizeof(*r));

	if (!r || !gpu || !launch) {
		free(r);
		return NULL;
	}
	for (uint32_t i = 0; i < rs->n; i++) {
		const void *row = cat_row(rs, i);

		r[i].gpu_bytes = cat_value(gpu, in, row);
		r[i].launches = cat_latency(launch, in, row)->count;
		r[i].row = i;
	}
	qsort(r, rs->n, sizeof(*r), by_weight);
	return r;
}

/*
 * An array of one object per row, within its bound (the top processes);
 * parent is the row of the object that holds it (NULL at the root).
 */
static struct json_object *array(unsigned int obj, const struct cat_input *in,
				 const void *parent, const struct feed_ctx *ctx)
{
	const struct cat_obj_def *o = &cat_objs[obj];
	struct json_object *arr;
	struct proc_rank *top = NULL;
	struct cat_rowset rs;
	uint32_t max;

	if (o->rows == CAT_ROWS_ALERTS)
		return alerts_feed_json(ctx->alerts);
	/*
	 * A process's sites, written as /api/stalls writes them (its top ones
	 * in a push), over all the time it was watched.
	 */
	if (o->rows == CAT_ROWS_STALL_SITES)
		return in->snap && parent ?
		       stall_sites_json(in->snap, NULL, ((const struct shm_proc *)parent)->pid,
					ctx->full ? 0 : o->max_rows, 0) : json_object_new_array();
	arr = json_object_new_array();
	cat_rowset(o->rows, in, &rs);
	max = o->max_rows && !(ctx->full && obj == CAT_OBJ_PROCS) ? o->max_rows : rs.n;
	if (obj == CAT_OBJ_PROCS && rs.n > max)
		top = top_procs(in, &rs);
	for (uint32_t i = 0; arr && i < rs.n && i < max; i++)
		json_object_array_add(arr, object(obj, in, cat_row(&rs, top ? top[i].row : i), ctx));
	free(top);
	return arr;
}

/* An object keyed by its rows' label: table name -> overflows. */
static struct json_object *map(unsigned int obj, const struct cat_input *in)
{
	struct json_object *o = json_object_new_object();
	const struct cat_field *f;
	const struct cat_label *l = cat_rows_defs[cat_objs[obj].rows].labels;
	struct cat_rowset rs;
	char k[TEXT_MAX];
	size_t n;
	int known;

	f = cat_feed_fields(obj, &n);
	cat_rowset(cat_objs[obj].rows, in, &rs);
	for (uint32_t i = 0; o && f && l && i < rs.n; i++)
		if (cat_label_text(l, in, cat_row(&rs, i), k, sizeof(k), &known) == 0)
			put(o, k, value(f, in, cat_row(&rs, i)));
	return o;
}

/*
 * One object.  In an array every key reads row; in a single object each
 * key reads the first row of its own source (or none: zero, or left out
 * where the object says segment keys need a fresh snapshot).
 */
static struct json_object *object(unsigned int obj, const struct cat_input *in,
				  const void *row, const struct feed_ctx *ctx)
{
	const struct cat_obj_def *def = &cat_objs[obj];
	struct json_object *o = json_object_new_object();
	const struct cat_field *fs;
	size_t n;

	fs = cat_feed_fields(obj, &n);
	for (size_t i = 0; o && i < n; i++) {
		const struct cat_field *f = &fs[i];
		const void *r = row;

		if (f->child != CAT_OBJ_COUNT) {
			const struct cat_obj_def *c = &cat_objs[f->child];

			if (c->shape == CAT_SHAPE_ARRAY)
				put(o, f->key, array(f->child, in, row, ctx));
			else if (c->shape == CAT_SHAPE_MAP && (in->snap || !def->segment_only))
				put(o, f->key, map(f->child, in));
			else if (c->shape == CAT_SHAPE_OBJECT)
				put(o, f->key, object(f->child, in, NULL, ctx));
			continue;
		}
		if (def->shape != CAT_SHAPE_ARRAY) {
			struct cat_rowset rs;

			cat_rowset(f->m->rows, in, &rs);
			r = rs.n ? cat_row(&rs, 0) : NULL;
			if (!r && def->segment_only && cat_rows_segment(f->m->rows))
				continue;
		}
		put(o, f->key, f->label ? (r ? label_value(f->label, in, r) :
					   json_object_new_string("")) : value(f, in, r));
	}
	return o;
}

static int render(struct sbuf *out, const struct shm_snapshot *snap, const struct cat_status *st,
		  const struct exporter_stats *stats, const struct feed_ctx *ctx)
{
	struct cat_input in = {
		.snap = st->status == SHM_READ_OK ? snap : NULL,
		.status = st,
		.stats = stats->v,
	};
	struct json_object *root;
	const char *text;
	size_t len;
	int err;

	/* Short decimal forms instead of %.17g noise; per thread, no locking. */
	json_c_set_serialization_double_format("%.9g", JSON_C_OPTION_THREAD);
	root = object(CAT_OBJ_ROOT, &in, NULL, ctx);
	text = root ? json_object_to_json_string_length(root, JSON_C_TO_STRING_PLAIN, &len) : NULL;
	err = text ? sbuf_append(out, text, len) : -ENOMEM;
	json_object_put(root);
	/* json-c keeps a per-thread copy of the format: free it, threads end. */
	json_c_set_serialization_double_format(NULL, JSON_C_OPTION_THREAD);
	return err;
}

int feed_render(struct sbuf *out, const struct shm_snapshot *snap, const struct cat_status *st,
		const struct exporter_stats *stats, struct alerts *alerts)
{
	const struct feed_ctx ctx = { .alerts = alerts };

	return render(out, snap, st, stats, &ctx);
}

int feed_render_full(struct sbuf *out, const struct shm_snapshot *snap,
		     const struct cat_status *st, const struct exporter_stats *stats,
		     struct alerts *alerts)
{
	const struct feed_ctx ctx = { .alerts = alerts, .full = 1 };

	return render(out, snap, st, stats, &ctx);
}
