/* SPDX-License-Identifier: BSD-2-Clause */
/* A json-c document as compact text; see json_text.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/explain/json_text.h"

char *json_text_take(struct json_object *doc, size_t *len)
{
	const char *s = doc ? json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN) : NULL;
	char *out = s ? strdup(s) : NULL;

	if (out)
		*len = strlen(out);
	json_object_put(doc);
	if (!out)
		errno = ENOMEM;
	return out;
}
