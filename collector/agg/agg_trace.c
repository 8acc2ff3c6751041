/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * agg_trace.h.  Events arrive in the order the ring buffer delivers them,
 * nearly by end time; the ring keeps that order and the reader sorts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg/agg_impl.h"
#include "collector/agg/agg_trace.h"

struct agg_trace_ring {
	struct shm_trace_event ev[SHM_TRACE_EVENTS];
	struct shm_trace_event stage[SHM_TRACE_EVENTS];
	uint32_t head;			/* next to write */
	uint32_t n;
};

struct agg_trace_ring *agg_trace_new(void)
{
	return calloc(1, sizeof(struct agg_trace_ring));
}

void agg_trace_free(struct agg_trace_ring *r)
{
	free(r);
}

int agg_trace(struct agg *a, uint32_t pid, uint32_t tid, enum shm_trace_kind kind,
	      uint32_t detail, uint64_t end_ns, uint64_t dur_ns, const char *name)
{
	struct agg_trace_ring *r = a->trace;
	struct shm_trace_event *e;

	if (!agg_proc_is_watched(a, pid))
		return -ENOENT;
	if ((unsigned int)kind >= SHM_TRACE_KIND_COUNT)
		return -EINVAL;
	if (r->n == SHM_TRACE_EVENTS)
		a->overflows[SHM_TABLE_TRACE]++;
	else
		r->n++;
	e = &r->ev[r->head];
	r->head = (r->head + 1) % SHM_TRACE_EVENTS;
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->tid = tid;
	e->kind = kind;
	e->detail = detail;
	e->end_mono_ns = end_ns;
	e->dur_ns = dur_ns < end_ns ? dur_ns : end_ns;
	if (name)
		memcpy(e->name, name, strnlen(name, sizeof(e->name) - 1));
	return 0;
}

const struct shm_trace_event *agg_trace_rows(struct agg *a, uint32_t *n)
{
	struct agg_trace_ring *r = a->trace;
	uint32_t first = (r->head + SHM_TRACE_EVENTS - r->n) % SHM_TRACE_EVENTS;

	for (uint32_t i = 0; i < r->n; i++)
		r->stage[i] = r->ev[(first + i) % SHM_TRACE_EVENTS];
	*n = r->n;
	return r->stage;
}

void agg_trace_forget(struct agg_trace_ring *r, uint32_t pid)
{
	uint32_t first = (r->head + SHM_TRACE_EVENTS - r->n) % SHM_TRACE_EVENTS, k = 0;

	/* Compacted in place, oldest first; the ring restarts at 0. */
	for (uint32_t i = 0; i < r->n; i++) {
		const struct shm_trace_event *e = &r->ev[(first + i) % SHM_TRACE_EVENTS];

		if (e->pid != pid)
			r->stage[k++] = *e;
	}
	memcpy(r->ev, r->stage, k * sizeof(r->ev[0]));
	r->n = k;
	r->head = k % SHM_TRACE_EVENTS;
}
