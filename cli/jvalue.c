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

/* A duration spelled base_ns, base_us, base_ms, base_s or base_seconds. */
int jv_dur(struct json_object *o, const char *base, double *ns)
{
	static const struct { const char *suffix; double mult; } units[] = {
		{ "_ns", 1.0 }, { "_us", 1e3 }, { "_ms", 1e6 },
		{ "_s", 1e9 }, { "_seconds", 1e9 }, { "_sec", 1e9 },
	};
	char key[96];
	double v;

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if ((size_t)snprintf(key, sizeof(key), "%s%s", base, units[i].suffix) >= sizeof(key))
			return 0;
		if (jv_num(o, key, &v) && v >= 0) {
			*ns = v * units[i].mult;
			return 1;
		}
	}
	return 0;
}

void jv_lat_unknown(struct cli_lat *l)
{
	l->p50_ns = l->p99_ns = l->count = -1;
}

/* A finite number held by v itself. */
static int jv_num_val(struct json_object *v, double *out)
{
	double d;

	if (json_object_is_type(v, json_type_int))
		d = (double)json_object_get_int64(v);
	else if (json_object_is_type(v, json_type_double))
		d = json_object_get_double(v);
	else
		return 0;
	if (!isfinite(d))
		return 0;
	*out = d;
	return 1;
}

/* Multiplier to nanoseconds of a unit suffix ("us"), or 0. */
static double jv_unit_mult(const char *unit)
{
	static const struct { const char *name; double mult; } units[] = {
		{ "ns", 1.0 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
		{ "seconds", 1e9 }, { "sec", 1e9 },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(unit, units[i].name) == 0)
			return units[i].mult;
	return 0;
}

/* One field of a series: "count", "p50_<unit>" or "p99_<unit>". */
static void jv_lat_field(const char *field, struct json_object *v, struct cli_lat *l)
{
	double d, mult;

	if (!jv_num_val(v, &d) || d < 0)
		return;
	if (strcmp(field, "count") == 0) {
		l->count = d;
		return;
	}
	if (strncmp(field, "p50_", 4) != 0 && strncmp(field, "p99_", 4) != 0)
		return;
	mult = jv_unit_mult(field + 4);
	if (mult == 0)
		return;
	if (field[1] == '5')
		l->p50_ns = d * mult;
	else
		l->p99_ns = d * mult;
}

/*
 * Latency series of an object in one pass over its keys (a feed may hold a
 * thousand processes): flat name_p50_us / name_p99_ms / name_count keys, or
 * name: {"p50_us": .., "p99_us": .., "count": ..}.
 */
void jv_lats(struct json_object *o, const struct jv_lat_want *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		jv_lat_unknown(w[i].out);
	if (!o || !json_object_is_type(o, json_type_object))
		return;
	json_object_object_foreach(o, key, val) {
		for (size_t i = 0; i < n; i++) {
			for (const char *const *nm = w[i].names; *nm; nm++) {
				size_t len = strlen(*nm);

				if (strncmp(key, *nm, len) != 0)
					continue;
				if (key[len] == '_') {
					jv_lat_field(key + len + 1, val, w[i].out);
				} else if (key[len] == '\0' && json_object_is_type(val, json_type_object)) {
					json_object_object_foreach(val, k2, v2)
						jv_lat_field(k2, v2, w[i].out);
				}
			}
		}
	}
}

struct json_object *jv_array(struct json_object *o, const char *key)
{
	struct json_object *v = jv_get(o, key);

	return v && json_object_is_type(v, json_type_array) ? v : NULL;
}

