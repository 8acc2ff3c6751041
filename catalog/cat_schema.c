/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The feed's JSON Schema (draft 2020-12), written from the catalog's
 * layout (cat_feed.c): docs/feed.schema.json is this function's output,
 * and tests/exporter/check_feed_contract.c checks that the committed file
 * is, and that the live exporter's output validates against it.  Strict
 * on purpose: every key required (but the collector's telemetry while it
 * is down), no other key allowed.  Pure.
 */
#include <stdio.h>
#include <string.h>

#include "catalog/catalog.h"
#include "common/sbuf.h"

static void indent(struct sbuf *b, int depth)
{
	sbuf_printf(b, "\n%*s", 2 * depth, "");
}

/* A JSON string; the catalog's texts are ASCII. */
static void str(struct sbuf *b, const char *s)
{
	sbuf_puts(b, "\"");
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			sbuf_printf(b, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			sbuf_printf(b, "\\u%04x", (unsigned char)*s);
		else
			sbuf_append(b, s, 1);
	}
	sbuf_puts(b, "\"");
}

static void key(struct sbuf *b, int depth, const char *k, int first)
{
	if (!first)
		sbuf_puts(b, ",");
	indent(b, depth);
	str(b, k);
	sbuf_puts(b, ": ");
}

/* The description of a key: its entry's help and, for a converted value, the unit. */
static void describe(struct sbuf *b, int depth, const struct cat_field *f)
{
	static const char *const unit[] = {
		[CAT_FMT_INT_MS] = "whole milliseconds", [CAT_FMT_S] = "seconds",
		[CAT_FMT_MS] = "milliseconds", [CAT_FMT_US] = "microseconds",
	};
	char text[512];
	const char *help = f->label ? f->label->help : f->child != CAT_OBJ_COUNT ?
			   cat_objs[f->child].help : f->m->help;
	const struct cat_metric *m = f->label ? NULL : f->m;
	size_t n;

	snprintf(text, sizeof(text), "%s", help ? help : "");
	n = strlen(text);
	if (m && m->kind == CAT_LATENCY) {
		if (f->part == CAT_PART_COUNT)
			snprintf(text + n, sizeof(text) - n, " Here: samples since start.");
		else
			snprintf(text + n, sizeof(text) - n, " Here: the %s over the summary window, "
				 "in %s; 0 when the window holds no sample.",
				 f->part == CAT_PART_P50 ? "median" : "99th percentile",
				 unit[m->feed_fmt]);
	} else if (m && m->feed_fmt >= CAT_FMT_INT_MS && m->feed_fmt <= CAT_FMT_US) {
		snprintf(text + n, sizeof(text) - n, " Here: in %s.", unit[m->feed_fmt]);
	} else if (m && m->unit == CAT_UNIT_MS) {
		snprintf(text + n, sizeof(text) - n, " Here: in milliseconds.");
	}
	key(b, depth, "description", 1);
	str(b, text);
}

static void type(struct sbuf *b, int depth, const char *t, int minimum)
{
	key(b, depth, "type", 0);
	str(b, t);
	if (minimum) {
		key(b, depth, "minimum", 0);
		sbuf_puts(b, "0");
	}
}

/* Opens an object's "properties"; block_close() ends it. */
static void properties_open(struct sbuf *b, int depth)
{
	key(b, depth, "properties", 0);
	sbuf_puts(b, "{");
}

static void block_close(struct sbuf *b, int depth)
{
	indent(b, depth);
	sbuf_puts(b, "}");
}

/* Ends an object's schema: no keys beyond those listed. */
static void no_more_keys(struct sbuf *b, int depth)
{
	key(b, depth, "additionalProperties", 0);
	sbuf_puts(b, "false");
}

static void object(struct sbuf *b, int depth, unsigned int obj);

/* The schema of one key, as the members of its object. */
static void field(struct sbuf *b, int depth, const struct cat_field *f)
{
	describe(b, depth, f);
	if (f->child != CAT_OBJ_COUNT) {
		const struct cat_obj_def *o = &cat_objs[f->child];

		if (o->shape != CAT_SHAPE_ARRAY) {
			object(b, depth, f->child);
			return;
		}
		type(b, depth, "array", 0);
		if (o->max_rows) {
			key(b, depth, "maxItems", 0);
			sbuf_printf(b, "%u", o->max_rows);
		}
		key(b, depth, "items", 0);
		sbuf_puts(b, "{");
		key(b, depth + 1, "type", 1);
		str(b, "object");
		object(b, depth + 1, f->child);
		indent(b, depth);
		sbuf_puts(b, "}");
		return;
	}
	if (f->label) {
		if (f->label->type == CAT_L_GPU) {
			key(b, depth, "type", 0);
			sbuf_puts(b, "[\"integer\", \"null\"]");
			key(b, depth, "minimum", 0);
			sbuf_puts(b, "0");
		} else if (f->label->type == CAT_L_U32 || f->label->type == CAT_L_I32) {
			type(b, depth, "integer", f->label->type == CAT_L_U32);
		} else {
			type(b, depth, "string", 0);
		}
		return;
	}
	switch (f->m->kind == CAT_LATENCY && f->part == CAT_PART_COUNT ? CAT_FMT_INT :
		f->m->feed_fmt) {
	case CAT_FMT_BOOL:
		type(b, depth, "boolean", 0);
		break;
	case CAT_FMT_TEXT:
		type(b, depth, "string", 0);
		if (f->m->feed_values) {
			char v[128], *save = NULL;
			int first = 1;

			snprintf(v, sizeof(v), "%s", f->m->feed_values);
			key(b, depth, "enum", 0);
			sbuf_puts(b, "[");
			for (char *t = strtok_r(v, "|", &save); t; t = strtok_r(NULL, "|", &save)) {
				sbuf_puts(b, first ? "" : ", ");
				str(b, t);
				first = 0;
			}
			sbuf_puts(b, "]");
		}
		break;
	case CAT_FMT_TEXT_MAP:
		type(b, depth, "object", 0);
		key(b, depth, "additionalProperties", 0);
		sbuf_puts(b, "{ \"type\": \"string\" }");
		break;
	case CAT_FMT_NUMBER:
		type(b, depth, "number", 0);
		break;
	case CAT_FMT_S:
	case CAT_FMT_MS:
	case CAT_FMT_US:
		type(b, depth, "number", 1);
		break;
	default:
		type(b, depth, "integer", 1);
		break;
	}
}

/* Keys left out while the collector is down: its telemetry. */
static int optional(unsigned int obj, const struct cat_field *f)
{
	unsigned int rows;

	if (!cat_objs[obj].segment_only)
		return 0;
	if (f->child != CAT_OBJ_COUNT)
		rows = cat_objs[f->child].rows;
	else
		rows = f->m ? f->m->rows : CAT_ROWS_HEADER;
	return cat_rows_segment(rows);
}

/* A map: the row labels of its (fixed) rows as keys. */
static void map_keys(unsigned int obj, char names[][32], size_t *n)
{
	*n = 0;
	if (cat_objs[obj].rows != CAT_ROWS_TABLES)
		return;
	for (uint32_t t = 0; t < SHM_TABLE_COUNT && *n < 16; t++)
		snprintf(names[(*n)++], 32, "%s", shm_table_name(t));
}

/* "properties", "required" and "additionalProperties" of an object. */
static void object(struct sbuf *b, int depth, unsigned int obj)
{
	const struct cat_field *fs;
	size_t n, n_req = 0;
	int first = 1;

	if (cat_objs[obj].shape == CAT_SHAPE_MAP) {
		char names[16][32];

		map_keys(obj, names, &n);
		type(b, depth, "object", 0);
		properties_open(b, depth);
		for (size_t i = 0; i < n; i++) {
			key(b, depth + 1, names[i], i == 0);
			sbuf_puts(b, "{ \"type\": \"integer\", \"minimum\": 0 }");
		}
		block_close(b, depth);
		key(b, depth, "required", 0);
		sbuf_puts(b, "[");
		for (size_t i = 0; i < n; i++) {
			sbuf_puts(b, i ? ", " : "");
			str(b, names[i]);
		}
		sbuf_puts(b, "]");
		no_more_keys(b, depth);
		return;
	}
	fs = cat_feed_fields(obj, &n);
	if (cat_objs[obj].shape == CAT_SHAPE_OBJECT && obj != CAT_OBJ_ROOT)
		type(b, depth, "object", 0);
	properties_open(b, depth);
	for (size_t i = 0; i < n; i++) {
		key(b, depth + 1, fs[i].key, i == 0);
		sbuf_puts(b, "{");
		field(b, depth + 2, &fs[i]);
		indent(b, depth + 1);
		sbuf_puts(b, "}");
	}
	block_close(b, depth);
	key(b, depth, "required", 0);
	sbuf_puts(b, "[");
	for (size_t i = 0; i < n; i++) {
		if (optional(obj, &fs[i]))
			continue;
		if (!first)
			sbuf_puts(b, ",");
		indent(b, depth + 1);
		str(b, fs[i].key);
		first = 0;
		n_req++;
	}
	if (n_req)
		indent(b, depth);
	sbuf_puts(b, "]");
	no_more_keys(b, depth);
}

int cat_schema_write(struct sbuf *out)
{
	sbuf_puts(out, "{");
	key(out, 1, "$schema", 1);
	str(out, "https://json-schema.org/draft/2020-12/schema");
	key(out, 1, "title", 0);
	str(out, "zernel-exporter WebSocket feed");
	key(out, 1, "description", 0);
	str(out, "One JSON snapshot of the feed on :9092, every --ws-interval. Generated "
	    "from the metric catalog (catalog/catalog.c) by `make feed-contract`; do not edit.");
	key(out, 1, "type", 0);
	str(out, "object");
	object(out, 1, CAT_OBJ_ROOT);
	sbuf_puts(out, "\n}\n");
	return sbuf_error(out);
}
