/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /api/trace?seconds=N: the segment's recent notable events (Python stalls
 * with their site, NCCL calls and their waits) of the last N seconds, in
 * Chrome's trace event format, which Perfetto and chrome://tracing open.
 * Runs unprivileged on a validated private snapshot.
 */
#ifndef ZERNEL_TRACE_JSON_H
#define ZERNEL_TRACE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "shm/shm_reader.h"

#define TRACE_DEFAULT_SECONDS	30u
#define TRACE_MAX_SECONDS	3600u

/*
 * The document for the last seconds before the snapshot's heartbeat,
 * malloc'ed and NUL-terminated, *len its length; NULL + errno on failure.
 */
char *trace_json_render(const struct shm_snapshot *snap, uint32_t seconds, size_t *len);

#endif /* ZERNEL_TRACE_JSON_H */
