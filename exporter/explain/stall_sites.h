/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A process's Python stall sites as JSON: the one rendering that
 * /api/stalls and the feed (processes[].stall_sites) share, so that a
 * site reads the same in both: over all the time the process was watched
 * or, for /api/stalls?since=, over a span of the exporter's history
 * (stall_history.h).  Its keys are the catalog's (catalog.c,
 * CAT_ID_SITE_*).  Site text comes from the traced process: it is bounded
 * and made printable ASCII here.  Runs unprivileged on a validated
 * private snapshot.
 */
#ifndef ZERNEL_STALL_SITES_H
#define ZERNEL_STALL_SITES_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "shm/shm_reader.h"

struct stall_window;

/*
 * The sites of pid, longest first (equal times in table order), at most
 * max (0: every one): state, file, line, function, stalls, seconds and
 * share (of the time of all its sites).  With a window w, stalls, seconds
 * and share are those of its span, a site without time in it is left
 * out, and the order follows; NULL w: since the process was watched.
 * detail adds what /api/stalls serves besides: leaf (the innermost
 * frame), max_seconds (the longest ever, window or not), native_stack and
 * truncated.  NULL when memory is short.
 */
struct json_object *stall_sites_json(const struct shm_snapshot *snap,
				     const struct stall_window *w, uint32_t pid,
				     uint32_t max, int detail);

/* Text of the segment (untrusted) as a JSON string: at most cap bytes, printable ASCII. */
struct json_object *stall_sites_text(const char *s, size_t cap);

#endif /* ZERNEL_STALL_SITES_H */
