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

#endif /* ZERNEL_CLI_JVALUE_H */
