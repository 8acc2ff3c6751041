// SPDX-License-Identifier: BSD-2-Clause
/*
 * Streams, events and synchronisation in the fake driver.  Nothing runs on
 * a device, so every queue is always drained: synchronising returns at once
 * and a query always finds the work done.  Host functions enqueued on a
 * stream run at once, in order.  Test code.
 */
#include <stdlib.h>
#include <time.h>

#include "tests/fakes/fake_driver/fake_driver.h"

struct fd_event {
	uint32_t magic;
	unsigned int flags;
	int recorded;
	uint64_t ns;		/* CLOCK_MONOTONIC when recorded */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct fd_stream *fd_stream_check(void *stream, CUresult *err)
{
	struct fd_stream *s = stream;

	*err = CUDA_SUCCESS;
	if (!stream || stream == FD_STREAM_LEGACY || stream == FD_STREAM_PER_THREAD)
		return NULL;
	if (s->magic != FD_MAGIC_STREAM) {
		*err = CUDA_ERROR_INVALID_HANDLE;
		return NULL;
	}
	return s;
}

/* CUDA_SUCCESS for a stream that may be synchronised or waited on now. */
static CUresult stream_usable(void *stream)
{
	CUresult rc;
	struct fd_stream *s = fd_stream_check(stream, &rc);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!s && !fd_current_ctx())
		return CUDA_ERROR_INVALID_CONTEXT;
	/* Work captured into a graph cannot be waited for. */
	if (s && s->capture)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	return CUDA_SUCCESS;
}

static CUresult stream_create(const char *sym, void **ps, unsigned int flags, int priority)
{
	struct fd_ctx *c = fd_current_ctx();
	struct fd_stream *s;

	if (!ps)
		return fd_ret(sym, CUDA_ERROR_INVALID_VALUE, NULL);
	if (!c)
		return fd_ret(sym, CUDA_ERROR_INVALID_CONTEXT, NULL);
	s = calloc(1, sizeof(*s));
	if (!s)
		return fd_ret(sym, CUDA_ERROR_OUT_OF_MEMORY, NULL);
	s->magic = FD_MAGIC_STREAM;
	s->ctx = c;
	s->flags = flags;
	s->priority = priority < -1 ? -1 : priority > 0 ? 0 : priority;
	s->id = fd_next_id();
	*ps = s;
	return fd_ret(sym, CUDA_SUCCESS, "flags=%u priority=%d stream=%p", flags, priority, *ps);
}

FD_EXPORT CUresult cuStreamCreate(void **ps, unsigned int flags)
{
	return stream_create("cuStreamCreate", ps, flags, 0);
}

FD_EXPORT CUresult cuStreamCreateWithPriority(void **ps, unsigned int flags, int priority)
{
	return stream_create("cuStreamCreateWithPriority", ps, flags, priority);
}

FD_EXPORT CUresult cuStreamDestroy_v2(void *stream)
{
	CUresult rc;
	struct fd_stream *s = fd_stream_check(stream, &rc);

	if (!s)
		return fd_ret("cuStreamDestroy_v2", CUDA_ERROR_INVALID_HANDLE, "stream=%p", stream);
	/* Kept, marked dead, so a stale handle is caught (see module.c). */
	s->magic = 0;
	return fd_ret("cuStreamDestroy_v2", CUDA_SUCCESS, "stream=%p", stream);
}

/* Synchronisations and queries, legacy and per-thread default stream alike. */
#define STREAM_WAIT(sym)							\
	FD_EXPORT CUresult sym(void *stream)					\
	{									\
		return fd_ret(#sym, stream_usable(stream), "stream=%p", stream); \
	}
#define STREAM_SYNC(sym)							\
	FD_EXPORT CUresult sym(void *stream)					\
	{									\
		CUresult rc = stream_usable(stream);				\
										\
		if (rc == CUDA_SUCCESS)						\
			fd_pools_settle();					\
		return fd_ret(#sym, rc, "stream=%p", stream);			\
	}
STREAM_SYNC(cuStreamSynchronize)
STREAM_SYNC(cuStreamSynchronize_ptsz)
STREAM_WAIT(cuStreamQuery)
STREAM_WAIT(cuStreamQuery_ptsz)

FD_EXPORT CUresult cuCtxSynchronize(void)
{
	CUresult rc = fd_current_ctx() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;

	if (rc == CUDA_SUCCESS)
		fd_pools_settle();
	return fd_ret("cuCtxSynchronize", rc, NULL);
}

FD_EXPORT CUresult cuCtxSynchronize_v2(void *ctx)
{
	struct fd_ctx *c = ctx ? fd_ctx_check(ctx) : fd_current_ctx();

	if (c)
		fd_pools_settle();
	return fd_ret("cuCtxSynchronize_v2", c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT,
		      "ctx=%p", ctx);
}

static CUresult stream_get(const char *sym, void *stream, int what, void *out)
{
	CUresult rc;
	struct fd_stream *s = fd_stream_check(stream, &rc);
	struct fd_ctx *c = s ? s->ctx : fd_current_ctx();

	if (rc != CUDA_SUCCESS || !out)
		return fd_ret(sym, rc ? rc : CUDA_ERROR_INVALID_VALUE, "stream=%p", stream);
	if (!c)
		return fd_ret(sym, CUDA_ERROR_INVALID_CONTEXT, "stream=%p", stream);
	switch (what) {
	case 0: *(int *)out = s ? s->priority : 0; break;
	case 1: *(unsigned int *)out = s ? s->flags : 0; break;
	/* The special streams have fixed ids, as with the driver. */
	case 2: *(unsigned long long *)out = s ? s->id : (uintptr_t)stream; break;
	case 3: *(void **)out = c; break;
	case 4: *(CUdevice *)out = c->dev; break;
	}
	return fd_ret(sym, CUDA_SUCCESS, "stream=%p", stream);
}

#define STREAM_GET(sym, what, type)						\
	FD_EXPORT CUresult sym(void *stream, type out)				\
	{									\
		return stream_get(#sym, stream, what, out);			\
	}
STREAM_GET(cuStreamGetPriority, 0, int *)
STREAM_GET(cuStreamGetPriority_ptsz, 0, int *)
STREAM_GET(cuStreamGetFlags, 1, unsigned int *)
STREAM_GET(cuStreamGetFlags_ptsz, 1, unsigned int *)
STREAM_GET(cuStreamGetId, 2, unsigned long long *)
STREAM_GET(cuStreamGetId_ptsz, 2, unsigned long long *)
STREAM_GET(cuStreamGetCtx, 3, void **)
STREAM_GET(cuStreamGetDevice, 4, CUdevice *)
STREAM_GET(cuStreamGetDevice_ptsz, 4, CUdevice *)

static struct fd_event *event_check(void *ev)
{
	struct fd_event *e = ev;

	return e && e->magic == FD_MAGIC_EVENT ? e : NULL;
}

static CUresult stream_wait_event(const char *sym, void *stream, void *ev, unsigned int flags)
{
	CUresult rc;

	fd_stream_check(stream, &rc);
	if (rc == CUDA_SUCCESS && !event_check(ev))
		rc = CUDA_ERROR_INVALID_HANDLE;
	return fd_ret(sym, rc, "stream=%p event=%p flags=%u", stream, ev, flags);
}

FD_EXPORT CUresult cuStreamWaitEvent(void *stream, void *ev, unsigned int flags)
{
	return stream_wait_event("cuStreamWaitEvent", stream, ev, flags);
}

FD_EXPORT CUresult cuStreamWaitEvent_ptsz(void *stream, void *ev, unsigned int flags)
{
	return stream_wait_event("cuStreamWaitEvent_ptsz", stream, ev, flags);
}

typedef void (*host_fn)(void *user);
typedef void (*stream_cb)(void *stream, CUresult status, void *user);

static CUresult host_func(const char *sym, void *stream, host_fn fn, void *user)
{
	CUresult rc = stream_usable(stream);

	if (rc == CUDA_SUCCESS && !fn)
		rc = CUDA_ERROR_INVALID_VALUE;
	fd_ret(sym, rc, "stream=%p", stream);
	if (rc == CUDA_SUCCESS)
		fn(user);
	return rc;
}

FD_EXPORT CUresult cuLaunchHostFunc(void *stream, host_fn fn, void *user)
{
	return host_func("cuLaunchHostFunc", stream, fn, user);
}

FD_EXPORT CUresult cuLaunchHostFunc_ptsz(void *stream, host_fn fn, void *user)
{
	return host_func("cuLaunchHostFunc_ptsz", stream, fn, user);
}

static CUresult stream_callback(const char *sym, void *stream, stream_cb cb, void *user,
				unsigned int flags)
{
	CUresult rc = stream_usable(stream);

	if (rc == CUDA_SUCCESS && (!cb || flags != 0))
		rc = CUDA_ERROR_INVALID_VALUE;
	fd_ret(sym, rc, "stream=%p", stream);
	if (rc == CUDA_SUCCESS)
		cb(stream, CUDA_SUCCESS, user);
	return rc;
}

FD_EXPORT CUresult cuStreamAddCallback(void *stream, stream_cb cb, void *user, unsigned int flags)
{
	return stream_callback("cuStreamAddCallback", stream, cb, user, flags);
}

FD_EXPORT CUresult cuStreamAddCallback_ptsz(void *stream, stream_cb cb, void *user,
					    unsigned int flags)
{
	return stream_callback("cuStreamAddCallback_ptsz", stream, cb, user, flags);
}

/* ------------------------------------------------------------------------- */

FD_EXPORT CUresult cuEventCreate(void **pev, unsigned int flags)
{
	struct fd_event *e;

	if (!pev)
		return fd_ret("cuEventCreate", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!fd_current_ctx())
		return fd_ret("cuEventCreate", CUDA_ERROR_INVALID_CONTEXT, NULL);
	e = calloc(1, sizeof(*e));
	if (!e)
		return fd_ret("cuEventCreate", CUDA_ERROR_OUT_OF_MEMORY, NULL);
	e->magic = FD_MAGIC_EVENT;
	e->flags = flags;
	*pev = e;
	return fd_ret("cuEventCreate", CUDA_SUCCESS, "flags=%u event=%p", flags, *pev);
}

FD_EXPORT CUresult cuEventDestroy_v2(void *ev)
{
	struct fd_event *e = event_check(ev);

	if (!e)
		return fd_ret("cuEventDestroy_v2", CUDA_ERROR_INVALID_HANDLE, "event=%p", ev);
	e->magic = 0;
	return fd_ret("cuEventDestroy_v2", CUDA_SUCCESS, "event=%p", ev);
}

static CUresult event_record(const char *sym, void *ev, void *stream, unsigned int flags)
{
	struct fd_event *e = event_check(ev);
	CUresult rc = stream_usable(stream);

	if (rc == CUDA_SUCCESS && !e)
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (rc == CUDA_SUCCESS) {
		e->recorded = 1;
		e->ns = now_ns();
	}
	return fd_ret(sym, rc, "event=%p stream=%p flags=%u", ev, stream, flags);
}

FD_EXPORT CUresult cuEventRecord(void *ev, void *stream)
{
	return event_record("cuEventRecord", ev, stream, 0);
}

FD_EXPORT CUresult cuEventRecord_ptsz(void *ev, void *stream)
{
	return event_record("cuEventRecord_ptsz", ev, stream, 0);
}

FD_EXPORT CUresult cuEventRecordWithFlags(void *ev, void *stream, unsigned int flags)
{
	return event_record("cuEventRecordWithFlags", ev, stream, flags);
}

FD_EXPORT CUresult cuEventRecordWithFlags_ptsz(void *ev, void *stream, unsigned int flags)
{
	return event_record("cuEventRecordWithFlags_ptsz", ev, stream, flags);
}

FD_EXPORT CUresult cuEventQuery(void *ev)
{
	return fd_ret("cuEventQuery", event_check(ev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE,
		      "event=%p", ev);
}

FD_EXPORT CUresult cuEventSynchronize(void *ev)
{
	int known = event_check(ev) != NULL;

	if (known)
		fd_pools_settle();
	return fd_ret("cuEventSynchronize", known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE,
		      "event=%p", ev);
}

static CUresult elapsed(const char *sym, float *ms, void *start, void *end)
{
	struct fd_event *a = event_check(start), *b = event_check(end);

	if (!ms || !a || !b)
		return fd_ret(sym, CUDA_ERROR_INVALID_HANDLE, NULL);
	if (!a->recorded || !b->recorded)
		return fd_ret(sym, CUDA_ERROR_NOT_READY, NULL);
	*ms = (float)((double)(int64_t)(b->ns - a->ns) / 1e6);
	return fd_ret(sym, CUDA_SUCCESS, "start=%p end=%p", start, end);
}

FD_EXPORT CUresult cuEventElapsedTime(float *ms, void *start, void *end)
{
	return elapsed("cuEventElapsedTime", ms, start, end);
}

FD_EXPORT CUresult cuEventElapsedTime_v2(float *ms, void *start, void *end)
{
	return elapsed("cuEventElapsedTime_v2", ms, start, end);
}
