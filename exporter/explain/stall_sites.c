/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A process's stall sites as JSON (see stall_sites.h): its rows of the
 * stall_sites table, each seen with its figures over the span answered,
 * the longest kept in place as they are found.
 */
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "exporter/explain/stall_history.h"
#include "exporter/explain/stall_sites.h"

struct json_object *stall_sites_text(const char *s, size_t cap)
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

/* Under the key the catalog gives the entry id. */
static void put(struct json_object *o, enum cat_id id, struct json_object *v)
{
	json_object_object_add(o, cat_feed_key(id, 0), v);
}

/* A site, with its stalls and time over the span answered (its totals, or a window's). */
struct site_view {
	const struct shm_stall_site *r;
	uint64_t stalls, ns;
};

static struct site_view view_of(const struct shm_stall_site *r, const struct stall_window *w)
{
	struct site_view v = { r, r->stalls, r->total_ns };

	if (w)
		stall_window_site(w, r, &v.stalls, &v.ns);
	return v;
}

static struct json_object *site_json(const struct site_view *v, uint64_t all_ns, int detail)
{
	const struct shm_stall_site *r = v->r;
	struct json_object *o = json_object_new_object(), *leaf;

	put(o, CAT_ID_SITE_STATE, json_object_new_string(shm_stall_state_name(r->state)));
	put(o, CAT_ID_SITE_FILE, stall_sites_text(r->file, sizeof(r->file)));
	put(o, CAT_ID_SITE_LINE, json_object_new_uint64(r->line));
	put(o, CAT_ID_SITE_FUNCTION, stall_sites_text(r->func, sizeof(r->func)));
	if (detail) {
		leaf = json_object_new_object();
		json_object_object_add(leaf, "file", stall_sites_text(r->leaf_file,
								      sizeof(r->leaf_file)));
		json_object_object_add(leaf, "line", json_object_new_uint64(r->leaf_line));
		json_object_object_add(leaf, "function", stall_sites_text(r->leaf_func,
									  sizeof(r->leaf_func)));
		json_object_object_add(o, "leaf", leaf);
	}
	put(o, CAT_ID_SITE_STALLS, json_object_new_uint64(v->stalls));
	put(o, CAT_ID_SITE_SECONDS, seconds(v->ns));
	put(o, CAT_ID_SITE_SHARE, json_object_new_double(all_ns ? (double)v->ns /
							 (double)all_ns : 0));
	if (detail) {
		json_object_object_add(o, "max_seconds", seconds(r->max_ns));
		json_object_object_add(o, "native_stack", json_object_new_int(r->native_stack));
		json_object_object_add(o, "truncated",
				       json_object_new_boolean((r->flags & SHM_SITE_TRUNCATED) != 0));
	}
	return o;
}

struct json_object *stall_sites_json(const struct shm_snapshot *snap,
				     const struct stall_window *w, uint32_t pid,
				     uint32_t max, int detail)
{
	const struct shm_stall_site *site;
	struct site_view *top;
	struct json_object *arr;
	uint64_t all_ns = 0;
	uint32_t n, kept = 0;

	site = shm_snapshot_rows(snap, SHM_TABLE_STALL_SITES, &n);
	if (!max || max > n)
		max = n;
	top = calloc(max ? max : 1, sizeof(*top));
	arr = json_object_new_array();
	if (!top || !arr) {
		free(top);
		json_object_put(arr);
		return NULL;
	}
	/* One pass: every site counts in the share, the longest max are kept. */
	for (uint32_t i = 0; i < n; i++) {
		struct site_view v;
		uint32_t at;

		if (site[i].pid != pid)
			continue;
		v = view_of(&site[i], w);
		/* A span lists what happened in it; the totals list every site. */
		if (w && !v.ns)
			continue;
		all_ns += v.ns;
		at = kept < max ? kept++ : max;
		while (at > 0 && top[at - 1].ns < v.ns) {
			if (at < max)
				top[at] = top[at - 1];
			at--;
		}
		if (at < max)
			top[at] = v;
	}
	for (uint32_t i = 0; i < kept; i++)
		json_object_array_add(arr, site_json(&top[i], all_ns, detail));
	free(top);
	return arr;
}
