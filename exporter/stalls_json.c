/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stalls_json.h.  Shape:
 *   {"window": "since the process was first watched",
 *    "overflows": {"sites": N, "processes": N},
 *    "processes": [{"pid", "comm", "python": {"status", "version"},
 *                   "unsampled_stalls", "unsampled_seconds",
 *                   "sites": [{"state", "file", "line", "function",
 *                              "leaf": {"file", "line", "function"},
 *                              "stalls", "seconds", "max_seconds",
 *                              "native_stack", "truncated"}]}]}
 * Sites of a process are sorted by time, longest first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "exporter/stalls_json.h"

static const void *rows(const struct shm_snapshot *snap, enum shm_table_id id, uint32_t *n)
{
	const struct shm_table *t = &snap->hdr->table[id];

	*n = t->count;
	return (const char *)snap->buf + t->offset;
}

/* Segment text (untrusted): bounded, printable ASCII only. */
static struct json_object *text(const char *s, size_t cap)
{
	char buf[SHM_SITE_FILE_LEN + 1];
	size_t n = strnlen(s, cap < sizeof(buf) - 1 ? cap : sizeof(buf) - 1);

	for (size_t i = 0; i < n; i++)
		buf[i] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
	buf[n] = '\0';
	return json_object_new_string(buf);
}

static struct json_object *seconds(uint64_t ns)
{
	return json_object_new_double((double)ns / 1e9);
}

static const char *status_name(uint32_t status)
{
	static const char *const names[] = { "none", "frames", "unsupported", "mismatch" };

	return status <= SHM_PY_MAX_STATUS ? names[status] : "none";
}

static struct json_object *site_json(const struct shm_stall_site *r)
{
	struct json_object *o = json_object_new_object(), *leaf = json_object_new_object();

	json_object_object_add(o, "state", json_object_new_string(shm_stall_state_name(r->state)));
	json_object_object_add(o, "file", text(r->file, sizeof(r->file)));
	json_object_object_add(o, "line", json_object_new_uint64(r->line));
	json_object_object_add(o, "function", text(r->func, sizeof(r->func)));
	json_object_object_add(leaf, "file", text(r->leaf_file, sizeof(r->leaf_file)));
	json_object_object_add(leaf, "line", json_object_new_uint64(r->leaf_line));
	json_object_object_add(leaf, "function", text(r->leaf_func, sizeof(r->leaf_func)));
	json_object_object_add(o, "leaf", leaf);
	json_object_object_add(o, "stalls", json_object_new_uint64(r->stalls));
	json_object_object_add(o, "seconds", seconds(r->total_ns));
	json_object_object_add(o, "max_seconds", seconds(r->max_ns));
	json_object_object_add(o, "native_stack", json_object_new_int(r->native_stack));
	json_object_object_add(o, "truncated",
			       json_object_new_boolean((r->flags & SHM_SITE_TRUNCATED) != 0));
	return o;
}

static int by_time(const void *a, const void *b)
{
	const struct shm_stall_site *x = *(const struct shm_stall_site *const *)a;
	const struct shm_stall_site *y = *(const struct shm_stall_site *const *)b;

	return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : 0;
}

static struct json_object *process_json(const struct shm_snapshot *snap,
					const struct shm_proc *p,
					const struct shm_stall_site **order, uint32_t n_order)
{
	const struct shm_py_proc *py;
	struct json_object *o = json_object_new_object(), *pj = json_object_new_object();
	struct json_object *sites = json_object_new_array();
	const struct shm_py_proc *mine = NULL;
	uint32_t n_py;
	char version[16] = "";

	py = rows(snap, SHM_TABLE_PY_PROCS, &n_py);
	for (uint32_t i = 0; i < n_py && !mine; i++)
		if (py[i].pid == p->pid)
			mine = &py[i];
	json_object_object_add(o, "pid", json_object_new_uint64(p->pid));
	json_object_object_add(o, "comm", text(p->comm, sizeof(p->comm)));
	json_object_object_add(pj, "status", json_object_new_string(status_name(mine ? mine->status : 0)));
	if (mine && mine->major)
		snprintf(version, sizeof(version), "%u.%u", mine->major % 100, mine->minor % 1000);
	json_object_object_add(pj, "version", json_object_new_string(version));
	json_object_object_add(o, "python", pj);
	json_object_object_add(o, "unsampled_stalls",
			       json_object_new_uint64(mine ? mine->unsampled_stalls : 0));
	json_object_object_add(o, "unsampled_seconds", seconds(mine ? mine->unsampled_ns : 0));
	for (uint32_t i = 0; i < n_order; i++)
		if (order[i]->pid == p->pid)
			json_object_array_add(sites, site_json(order[i]));
	json_object_object_add(o, "sites", sites);
	return o;
}

char *stalls_json_render(const struct shm_snapshot *snap, size_t *len)
{
	const struct shm_stall_site *site, **order;
	const struct shm_proc *procs;
	struct json_object *doc, *list, *ovf;
	uint32_t n_site, n_procs;
	const char *s;
	char *out;

	site = rows(snap, SHM_TABLE_STALL_SITES, &n_site);
	procs = rows(snap, SHM_TABLE_PROCS, &n_procs);
	order = calloc(n_site ? n_site : 1, sizeof(*order));
	doc = json_object_new_object();
	list = json_object_new_array();
	ovf = json_object_new_object();
	if (!order || !doc || !list || !ovf) {
		free(order);
		json_object_put(doc);
		json_object_put(list);
		json_object_put(ovf);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < n_site; i++)
		order[i] = &site[i];
	qsort(order, n_site, sizeof(*order), by_time);
	for (uint32_t i = 0; i < n_procs; i++)
		json_object_array_add(list, process_json(snap, &procs[i], order, n_site));
	json_object_object_add(ovf, "sites",
			       json_object_new_uint64(snap->hdr->table[SHM_TABLE_STALL_SITES].overflows));
	json_object_object_add(ovf, "processes",
			       json_object_new_uint64(snap->hdr->table[SHM_TABLE_PY_PROCS].overflows));
	json_object_object_add(doc, "overflows", ovf);
	json_object_object_add(doc, "processes", list);
	free(order);
	s = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
	out = s ? strdup(s) : NULL;
	if (out)
		*len = strlen(out);
	json_object_put(doc);
	if (!out)
		errno = ENOMEM;
	return out;
}
