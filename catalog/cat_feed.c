/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The feed's layout, derived once from the catalog (see catalog.h): for
 * every object of the WebSocket JSON, its keys in order, each naming the
 * entry (and latency part), the label or the nested object it holds.  The
 * exporter writes the feed by walking these lists, the schema is written
 * from them and `zernel watch` reads exactly these keys.  Pure.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "catalog/catalog.h"
#include "common/util.h"

#define MAX_FIELDS	48	/* keys of one object; the build checks it */
#define PARTS		3	/* p50, p99, count */

static struct cat_field fields[CAT_OBJ_COUNT][MAX_FIELDS];
static unsigned char pos_of[CAT_OBJ_COUNT][MAX_FIELDS];
static size_t n_fields[CAT_OBJ_COUNT];
static const struct cat_field *by_id[CAT_ID_COUNT][PARTS];
static pthread_once_t layout_once = PTHREAD_ONCE_INIT;

static int part_index(unsigned int part)
{
	return part == CAT_PART_P99 ? 1 : part == CAT_PART_COUNT ? 2 : 0;
}

/* Inserts after every key of a lower or equal position: stable by position. */
static struct cat_field *add(unsigned int obj, unsigned int pos)
{
	size_t n = n_fields[obj], i = n;

	if (n == MAX_FIELDS)
		return NULL;
	while (i > 0 && pos_of[obj][i - 1] > pos) {
		fields[obj][i] = fields[obj][i - 1];
		pos_of[obj][i] = pos_of[obj][i - 1];
		i--;
	}
	memset(&fields[obj][i], 0, sizeof(fields[obj][i]));
	fields[obj][i].child = CAT_OBJ_COUNT;
	pos_of[obj][i] = (unsigned char)pos;
	n_fields[obj]++;
	return &fields[obj][i];
}

/* Labels of a row source (owner NULL) or of an info entry. */
static void add_labels(unsigned int obj, const struct cat_label *l, unsigned int n,
		       const struct cat_metric *owner)
{
	for (unsigned int i = 0; i < n; i++) {
		struct cat_field *f;

		if (!l[i].feed || !(f = add(obj, l[i].feed_pos)))
			continue;
		f->label = &l[i];
		f->m = owner;
		snprintf(f->key, sizeof(f->key), "%s", l[i].feed);
	}
}

static void add_metric(const struct cat_metric *m)
{
	static const struct { unsigned int part; const char *name; } parts[] = {
		{ CAT_PART_P50, "p50" }, { CAT_PART_P99, "p99" }, { CAT_PART_COUNT, "count" },
	};
	const char *unit = m->feed_fmt == CAT_FMT_US ? "us" : m->feed_fmt == CAT_FMT_S ? "s" : "ms";
	struct cat_field *f;

	if (m->kind != CAT_LATENCY) {
		if ((f = add(m->feed_obj, m->feed_pos))) {
			f->m = m;
			snprintf(f->key, sizeof(f->key), "%s", m->feed);
		}
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		if (!(m->feed_parts & parts[i].part) || !(f = add(m->feed_obj, m->feed_pos)))
			continue;
		f->m = m;
		f->part = (unsigned char)parts[i].part;
		if (parts[i].part == CAT_PART_COUNT)
			snprintf(f->key, sizeof(f->key), "%s_count", m->feed);
		else
			snprintf(f->key, sizeof(f->key), "%s_%s_%s", m->feed, parts[i].name, unit);
	}
}

static void layout_build(void)
{
	for (unsigned int o = 1; o < CAT_OBJ_COUNT; o++) {
		struct cat_field *f = add(cat_objs[o].parent, cat_objs[o].pos);

		if (!f)
			continue;
		f->child = (unsigned char)o;
		snprintf(f->key, sizeof(f->key), "%s", cat_objs[o].key);
	}
	for (unsigned int o = 0; o < CAT_OBJ_COUNT; o++)
		if (cat_objs[o].shape == CAT_SHAPE_ARRAY)
			add_labels(o, cat_rows_defs[cat_objs[o].rows].labels,
				   cat_rows_defs[cat_objs[o].rows].n_labels, NULL);
	for (size_t i = 0; i < cat_metrics_count; i++) {
		const struct cat_metric *m = &cat_metrics[i];

		if (m->feed)
			add_metric(m);
		add_labels(m->feed_obj, m->labels, m->n_labels, m);
	}
	for (unsigned int o = 0; o < CAT_OBJ_COUNT; o++) {
		for (size_t i = 0; i < n_fields[o]; i++) {
			const struct cat_field *f = &fields[o][i];
			unsigned int id = f->label ? f->label->id : f->m ? f->m->id : 0;

			if (id && !by_id[id][part_index(f->part)])
				by_id[id][part_index(f->part)] = f;
		}
	}
}

const struct cat_field *cat_feed_fields(enum cat_obj obj, size_t *n)
{
	pthread_once(&layout_once, layout_build);
	*n = (unsigned int)obj < CAT_OBJ_COUNT ? n_fields[obj] : 0;
	return *n ? fields[obj] : NULL;
}

const struct cat_field *cat_feed_field(enum cat_id id, unsigned int part)
{
	pthread_once(&layout_once, layout_build);
	return (unsigned int)id < CAT_ID_COUNT ? by_id[id][part_index(part)] : NULL;
}

const char *cat_feed_key(enum cat_id id, unsigned int part)
{
	const struct cat_field *f = cat_feed_field(id, part);

	return f ? f->key : "";
}

double cat_feed_ns(const struct cat_field *f)
{
	if (f->label || !f->m || f->part == CAT_PART_COUNT)
		return 1;
	switch (f->m->feed_fmt) {
	case CAT_FMT_US:	return 1e3;
	case CAT_FMT_MS:
	case CAT_FMT_INT_MS:	return 1e6;
	case CAT_FMT_S:		return 1e9;
	default:		return 1;
	}
}

int cat_feed_is_number(const struct cat_field *f)
{
	if (f->child != CAT_OBJ_COUNT)
		return 0;
	if (f->label)
		return f->label->type == CAT_L_U32 || f->label->type == CAT_L_I32 ||
		       f->label->type == CAT_L_GPU;
	return f->m->feed_fmt != CAT_FMT_BOOL && f->m->feed_fmt != CAT_FMT_TEXT &&
	       f->m->feed_fmt != CAT_FMT_TEXT_MAP;
}
