/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /api/stalls: where watched Python processes lose time, from the
 * segment's stall-site and Python tables, as JSON.  Sites are text of
 * unbounded variety, so they are served here and in no Prometheus label.
 * Runs unprivileged on a validated private snapshot; every string is
 * bounded and made printable ASCII before it is written.
 */
#ifndef ZERNEL_STALLS_JSON_H
#define ZERNEL_STALLS_JSON_H

#include <stddef.h>

#include "shm/shm_reader.h"

/*
 * The document for snap, malloc'ed and NUL-terminated, *len its length;
 * NULL with errno set on failure.
 */
char *stalls_json_render(const struct shm_snapshot *snap, size_t *len);

/*
 * The same document over the last since_s seconds as h holds them (see
 * the shape above: window_seconds the span covered, explain and sites
 * from differences with the sample nearest to its start).
 */
struct stall_history;
char *stalls_json_render_since(const struct shm_snapshot *snap, const struct stall_history *h,
			       uint64_t since_s, size_t *len);

#endif /* ZERNEL_STALLS_JSON_H */
