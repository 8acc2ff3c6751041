/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli_trace (trace.h).  The document is checked to be a trace (JSON with
 * a traceEvents array) before it is written, and a file is written
 * whole or not at all (a temporary file renamed over it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli/http_get.h"
#include "cli/trace.h"
#include "common/url.h"

static int write_out(const char *path, const char *doc, size_t len)
{
	char tmp[4096];
	FILE *f;
	int err = 0;

	if (strcmp(path, "-") == 0)
		return fwrite(doc, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : -EIO;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	if (fwrite(doc, 1, len, f) != len || fputc('\n', f) == EOF)
		err = -EIO;
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) != 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* Events that are not metadata, and the threads they are on. */
static void count(struct json_object *events, size_t *n_events, size_t *n_threads)
{
	*n_events = *n_threads = 0;
	for (size_t i = 0; i < json_object_array_length(events); i++) {
		struct json_object *e = json_object_array_get_idx(events, i), *ph = NULL, *name = NULL;

		if (!json_object_object_get_ex(e, "ph", &ph))
			continue;
		if (strcmp(json_object_get_string(ph), "M") != 0)
			(*n_events)++;
		else if (json_object_object_get_ex(e, "name", &name) &&
			 strcmp(json_object_get_string(name), "thread_name") == 0)
			(*n_threads)++;
	}
}

int cli_trace(const struct cli_trace_opts *o)
{
	struct json_object *doc = NULL, *events = NULL;
	const char *why = NULL;
	char path[64], *body = NULL;
	size_t len = 0, n_events, n_threads;
	struct url u;
	int code, err;

	if (url_parse(o->url_text, &u, &why) < 0 || strcmp(u.scheme, "http") != 0) {
		fprintf(stderr, "zernel trace: bad --url \"%s\": %s\n", o->url_text,
			why ? why : "expected http://HOST[:PORT]");
		return 2;
	}
	snprintf(path, sizeof(path), "/api/trace?seconds=%u", o->seconds);
	code = http_get(&u, path, o->timeout_ms, &body, &len, &why);
	if (code < 0) {
		fprintf(stderr, "zernel trace: %s: %s\n", o->url_text, why ? why : strerror(-code));
		return 1;
	}
	if (code != 200) {
		fprintf(stderr, "zernel trace: %s%s answered %d: %.200s", o->url_text, path, code,
			body);
		free(body);
		return 1;
	}
	doc = json_tokener_parse(body);
	if (!doc || !json_object_object_get_ex(doc, "traceEvents", &events) ||
	    !json_object_is_type(events, json_type_array)) {
		fprintf(stderr, "zernel trace: %s%s: not a trace\n", o->url_text, path);
		json_object_put(doc);
		free(body);
		return 1;
	}
	count(events, &n_events, &n_threads);
	err = write_out(o->out, body, len);
	json_object_put(doc);
	free(body);
	if (err) {
		fprintf(stderr, "zernel trace: cannot write %s: %s\n", o->out, strerror(-err));
		return 1;
	}
	if (strcmp(o->out, "-") != 0)
		fprintf(stderr, "zernel trace: %zu events on %zu threads over the last %u s "
			"written to %s (open it in https://ui.perfetto.dev or chrome://tracing)\n",
			n_events, n_threads, o->seconds, o->out);
	return 0;
}
