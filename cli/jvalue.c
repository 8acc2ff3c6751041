/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Typed, defensive reads of json-c objects for the feed parser (see
 * jvalue.h): a value of the wrong type is "missing", numbers must be
 * finite, text comes out as printable ASCII.  Pure functions.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jvalue.h"
#include "common/utf8.h"

struct json_object *jv_get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!o || !json_object_is_type(o, json_type_object))
		return NULL;
	if (!json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

/* A finite number at key (booleans and strings do not count). */
int jv_num(struct json_object *o, const char *key, double *out)
{
	struct json_object *v = jv_get(o, key);
	double d;

	if (!v)
		return 0;
	if (json_object_is_type(v, json_type_int)) {
		/* int64 covers byte counts; larger values are clamped by json-c. */
		d = (double)json_object_get_int64(v);
	} else if (json_object_is_type(v, json_type_double)) {
		d = json_object_get_double(v);
	} else {
		return 0;
	}
	if (!isfinite(d))
		return 0;
	*out = d;
	return 1;
}

/* A non-negative integer that fits in [0, max]. */
int jv_uint(struct json_object *o, const char *key, uint64_t max, uint64_t *out)
{
	double d;

	if (!jv_num(o, key, &d) || d < 0 || d > (double)max || d != floor(d))
		return 0;
	*out = (uint64_t)d;
	return 1;
}

/* Copies printable ASCII only: feed text never reaches a terminal raw. */
void jv_copy_text(char *dst, size_t len, const char *src)
{
	size_t o = 0, n = src ? strlen(src) : 0;

	for (size_t i = 0; i < n && o + 1 < len;) {
		unsigned char c = (unsigned char)src[i];
		/* One '?' per UTF-8 sequence, and per byte that is not UTF-8. */
		size_t seq = c < 0x80 ? 1 : utf8_seq_len(src + i, n - i);

		if (c >= 0x80 || c < 0x20 || c == 0x7f)
			c = c == '\n' || c == '\t' ? ' ' : '?';
		dst[o++] = (char)c;
		i += seq ? seq : 1;
	}
	dst[o] = '\0';
}

int jv_str(struct json_object *o, const char *key, char *dst, size_t len)
{
	struct json_object *v = jv_get(o, key);

	if (!v || !json_object_is_type(v, json_type_string))
		return 0;
	jv_copy_text(dst, len, json_object_get_string(v));
	return 1;
}

struct json_object *jv_array(struct json_object *o, const char *key)
{
	struct json_object *v = jv_get(o, key);

	return v && json_object_is_type(v, json_type_array) ? v : NULL;
}

