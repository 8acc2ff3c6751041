/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Typed, defensive reads of json-c objects, for parsing the feed: any key
 * may be missing or hold the wrong type; such a value reads as missing
 * (the functions return 0) and never as a default that looks real.
 */
#ifndef ZERNEL_CLI_JVALUE_H
#define ZERNEL_CLI_JVALUE_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "cli/feed.h"

/* o[key] when o is an object holding key, else NULL. */
struct json_object *jv_get(struct json_object *o, const char *key);
/* o[key] when it is an array, else NULL. */
struct json_object *jv_array(struct json_object *o, const char *key);
/* A finite number at key (booleans and strings do not count): 1, else 0. */
int jv_num(struct json_object *o, const char *key, double *out);
/* An integer in [0, max] at key. */
int jv_uint(struct json_object *o, const char *key, uint64_t max, uint64_t *out);
/* A string at key, copied as printable ASCII (see jv_copy_text). */
int jv_str(struct json_object *o, const char *key, char *dst, size_t len);
/*
 * Copies src as printable ASCII: one '?' per non-ASCII UTF-8 sequence or
 * control character (newline and tab become blanks); always NUL-terminated.
 */
void jv_copy_text(char *dst, size_t len, const char *src);
/* A duration spelled base_ns, base_us, base_ms, base_s or base_seconds, in ns. */
int jv_dur(struct json_object *o, const char *base, double *ns);

void jv_lat_unknown(struct cli_lat *l);

struct jv_lat_want {
	const char *const *names;	/* NULL-terminated spellings of one series */
	struct cli_lat *out;
};

/*
 * Latency series of an object in one pass over its keys (a feed may hold a
 * thousand processes): flat name_p50_us / name_p99_ms / name_count keys, or
 * name: {"p50_us": .., "p99_us": .., "count": ..}.  Unknown parts stay < 0.
 */
void jv_lats(struct json_object *o, const struct jv_lat_want *w, size_t n);

#endif /* ZERNEL_CLI_JVALUE_H */
