/* SPDX-License-Identifier: BSD-2-Clause */
/* A json-c document as the compact text an HTTP answer carries. */
#ifndef ZERNEL_EXPORTER_JSON_TEXT_H
#define ZERNEL_EXPORTER_JSON_TEXT_H

#include <stddef.h>

#include <json-c/json.h>

/*
 * Takes doc (put, whatever happens) and returns its text, malloc'd, with
 * *len its length; NULL with errno ENOMEM when there is no memory.
 */
char *json_text_take(struct json_object *doc, size_t *len);

#endif /* ZERNEL_EXPORTER_JSON_TEXT_H */
