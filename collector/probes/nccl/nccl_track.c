// SPDX-License-Identifier: BSD-2-Clause
/*
 * NCCL waits that follow CUDA streams (see nccl_track.h for the rules and
 * bounds).  Runs in the collector's main loop, fed by the decoder; reports
 * through the aggregation.  Memory: the fixed tables below, and per stream
 * a ring of queued collectives that grows by doubling up to NT_MAX_PENDING.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg/agg_stall.h"
#include "collector/agg/keyindex.h"
#include "collector/probes/nccl/nccl_track.h"

struct nt_pending {
	uint64_t pos;		/* its place in the stream's order */
	uint64_t call_ns;	/* the call's entry */
	uint64_t start_ns;	/* its launch: the call, or its group's ncclGroupEnd */
	uint64_t comm;		/* its ncclComm_t */
	uint32_t op;
	uint32_t tid;
	uint32_t launched;	/* 0: inside a group not yet ended */
	uint32_t known;		/* the aggregation counted it on comm's row */
};

/* How a collective leaves its stream's queue. */
enum nt_end {
	NT_WAITED,	/* a host-blocking call covered it: its wait is timed */
	NT_SETTLED,	/* its communicator's finalize flushed it: done, untimed */
	NT_GIVEN_UP,	/* never known to complete */
};

/* From position `at` on, the stream waits for stream src up to src_pos. */
struct nt_dep {
	uint64_t at;
	uint64_t src_pos;
	int32_t src;
	uint32_t src_gen;
};

struct nt_stream {
	uint32_t pid;
	int32_t dev;
	uint64_t handle;
	uint32_t gen;		/* tells a reused slot from the one an event saw */
	uint32_t capturing;
	int32_t capture_root;	/* while capturing: the stream whose capture this is */
	uint32_t capture_gen;	/* and its gen */
	uint64_t pos;		/* positions handed out */
	uint64_t last_ns;	/* last use */
	struct nt_pending *ring;
	uint32_t cap, head, n;
	uint32_t unlaunched;	/* entries with launched 0 */
	struct nt_dep deps[NT_MAX_DEPS];
	uint32_t ndeps;
};

struct nt_event {
	int32_t stream;		/* -1: recorded on a stream with nothing to cover */
	uint32_t gen;
	uint64_t pos;
	uint64_t last_ns;
	uint32_t pid;
	uint32_t captured;	/* recorded inside a capture: a node of its graph */
	int32_t capture_root;	/* that capture's stream, and its gen */
	uint32_t capture_gen;
};

/* A process that made NCCL calls: what the scheduler probe is told of it. */
struct nt_proc {
	struct zs_coll_known known;
	uint32_t pid;
	uint32_t dirty;		/* changed since the last nccltrack_known */
};

struct nccltrack {
	struct agg *agg;
	struct keyindex proc_idx;	/* (pid, 0) */
	struct nt_proc *procs;
	struct keyindex stream_idx;	/* (pid | device of handle 0, handle) */
	struct nt_stream *streams;
	uint32_t stream_hand;		/* next eviction victim when full */
	uint32_t gen;
	struct keyindex event_idx;	/* (pid, handle) */
	struct nt_event *events;
	uint32_t event_hand;
	struct keyindex thread_idx;	/* (pid, tid) of threads inside a group */
	uint32_t *depth;
	uint32_t thread_hand;
	uint64_t pending;
};

struct nccltrack *nccltrack_new(struct agg *agg)
{
	struct nccltrack *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->agg = agg;
	if (keyindex_init(&t->proc_idx, NT_MAX_PROCS, 0) < 0 ||
	    keyindex_init(&t->stream_idx, NT_MAX_STREAMS, 0) < 0 ||
	    keyindex_init(&t->event_idx, NT_MAX_EVENTS, 0) < 0 ||
	    keyindex_init(&t->thread_idx, NT_MAX_THREADS, 0) < 0)
		goto fail;
	t->streams = calloc(NT_MAX_STREAMS, sizeof(*t->streams));
	t->events = calloc(NT_MAX_EVENTS, sizeof(*t->events));
	t->depth = calloc(NT_MAX_THREADS, sizeof(*t->depth));
	t->procs = calloc(NT_MAX_PROCS, sizeof(*t->procs));
	if (!t->streams || !t->events || !t->depth || !t->procs)
		goto fail;
	return t;
fail:
	nccltrack_free(t);
	errno = ENOMEM;
	return NULL;
}

void nccltrack_free(struct nccltrack *t)
{
	if (!t)
		return;
	if (t->streams)
		for (uint32_t s = 0; s < NT_MAX_STREAMS; s++)
			free(t->streams[s].ring);
	free(t->streams);
	free(t->events);
	free(t->depth);
	free(t->procs);
	keyindex_destroy(&t->proc_idx);
	keyindex_destroy(&t->stream_idx);
	keyindex_destroy(&t->event_idx);
	keyindex_destroy(&t->thread_idx);
	free(t);
}

uint64_t nccltrack_pending(const struct nccltrack *t)
{
	return t->pending;
}

/* ---- processes ---------------------------------------------------------- */

/* pid's row; made (create) at its first NCCL call; NULL when unknown or full. */
static struct nt_proc *proc_of(struct nccltrack *t, uint32_t pid, int create)
{
	int32_t slot = keyindex_find(&t->proc_idx, pid, 0);

	if (slot < 0 && create) {
		slot = keyindex_insert(&t->proc_idx, pid, 0);
		if (slot >= 0)
			t->procs[slot] = (struct nt_proc){ .pid = pid };
	}
	return slot < 0 ? NULL : &t->procs[slot];
}

/* p's record of now_ns was read: the probe may take what is known of it as of then. */
static void proc_seen(struct nt_proc *p, uint64_t now_ns)
{
	if (p && now_ns > p->known.at_ns) {
		p->known.at_ns = now_ns;
		p->dirty = 1;
	}
}

static void proc_read(struct nccltrack *t, uint32_t pid, uint64_t now_ns)
{
	proc_seen(proc_of(t, pid, 0), now_ns);
}

static void proc_add(struct nt_proc *p, int delta)
{
	if (!p || (delta < 0 && p->known.outstanding == 0))
		return;
	p->known.outstanding += (uint64_t)(int64_t)delta;
	p->dirty = 1;
}

void nccltrack_known(struct nccltrack *t, nccltrack_known_fn fn, void *ctx)
{
	for (uint32_t slot = 0; slot < keyindex_top(&t->proc_idx); slot++) {
		struct nt_proc *p = &t->procs[slot];

		if (keyindex_live(&t->proc_idx, slot) && p->dirty) {
			fn(ctx, p->pid, &p->known);
			p->dirty = 0;
		}
	}
}

/* ---- queued collectives ------------------------------------------------- */

/*
 * A collective leaves the queue, at done_ns as how says.  Only a wait a
 * host-blocking call ended is timed: a finalize's return is no measure of
 * when the collectives it flushed had finished.
 */
static void finish(struct nccltrack *t, uint32_t pid, const struct nt_pending *p,
		   uint64_t done_ns, enum nt_end how)
{
	uint64_t start = p->launched ? p->start_ns : p->call_ns;

	t->pending--;
	proc_add(proc_of(t, pid, 0), -1);
	if (how == NT_WAITED) {
		agg_nccl_wait(t->agg, (enum shm_nccl_op_kind)p->op,
			      done_ns > start ? done_ns - start : 0, done_ns);
		agg_collective_span(t->agg, pid, start, done_ns);
	}
	if (!p->known)
		return;
	if (how == NT_SETTLED)
		agg_nccl_comm_settled(t->agg, pid, p->comm, done_ns);
	else
		agg_nccl_comm_done(t->agg, pid, p->comm, start, how == NT_WAITED ? done_ns : 0);
}

static struct nt_pending *ring_at(struct nt_stream *s, uint32_t i)
{
	return &s->ring[(s->head + i) & (s->cap - 1)];
}

static void pop_front(struct nccltrack *t, struct nt_stream *s, uint64_t done_ns,
		      enum nt_end how)
{
	struct nt_pending *p = ring_at(s, 0);

	if (!p->launched)
		s->unlaunched--;
	finish(t, s->pid, p, done_ns, how);
	s->head = (s->head + 1) & (s->cap - 1);
	s->n--;
}

/* Room for one more entry: grows the ring, or gives up the oldest (counted). */
static int ring_room(struct nccltrack *t, struct nt_stream *s)
{
	struct nt_pending *r;
	uint32_t cap;

	if (s->n < s->cap)
		return 0;
	if (s->cap >= NT_MAX_PENDING) {
		pop_front(t, s, 0, NT_GIVEN_UP);
		agg_nccl_count(t->agg, AGG_NCCL_PENDING_DROPPED, 1);
		return 0;
	}
	cap = s->cap ? s->cap * 2 : 16;
	r = malloc(cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->n; i++)
		r[i] = *ring_at(s, i);
	free(s->ring);
	s->ring = r;
	s->cap = cap;
	s->head = 0;
	return 0;
}

/* ---- streams ------------------------------------------------------------ */

static void stream_key(uint32_t pid, uint64_t handle, int32_t dev, uint64_t *a)
{
	/* The legacy default stream is one per device. */
	*a = pid | (handle == 0 ? (uint64_t)(uint32_t)(dev + 1) << 32 : 0);
}

static void stream_drop(struct nccltrack *t, int32_t slot)
{
	struct nt_stream *s = &t->streams[slot];

	while (s->n)
		pop_front(t, s, 0, NT_GIVEN_UP);
	free(s->ring);
	memset(s, 0, sizeof(*s));
	keyindex_remove(&t->stream_idx, slot);
}

static struct nt_stream *stream_find(struct nccltrack *t, uint32_t pid, uint64_t handle,
				     int32_t dev)
{
	uint64_t a;
	int32_t s;

	stream_key(pid, handle, dev, &a);
	s = keyindex_find(&t->stream_idx, a, handle);
	return s < 0 ? NULL : &t->streams[s];
}

static struct nt_stream *stream_get(struct nccltrack *t, uint32_t pid, uint64_t handle,
				    int32_t dev, uint64_t now_ns)
{
	struct nt_stream *s = stream_find(t, pid, handle, dev);
	uint64_t a;
	int32_t slot;

	if (s)
		goto out;
	stream_key(pid, handle, dev, &a);
	slot = keyindex_insert(&t->stream_idx, a, handle);
	if (slot < 0) {
		/* Full: the clock hand picks a victim, whose waits are given up. */
		uint32_t v = t->stream_hand++ % NT_MAX_STREAMS;

		agg_nccl_count(t->agg, AGG_NCCL_STATE_EVICTED, 1);
		agg_nccl_count(t->agg, AGG_NCCL_PENDING_DROPPED, t->streams[v].n);
		stream_drop(t, (int32_t)v);
		slot = keyindex_insert(&t->stream_idx, a, handle);
		if (slot < 0)
			return NULL;
	}
	s = &t->streams[slot];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->dev = dev;
	s->handle = handle;
	s->gen = ++t->gen;
out:
	s->last_ns = now_ns;
	return s;
}

static struct nt_stream *stream_at(struct nccltrack *t, int32_t slot, uint32_t gen)
{
	if (slot < 0 || !keyindex_live(&t->stream_idx, (uint32_t)slot) ||
	    t->streams[slot].gen != gen)
		return NULL;
	return &t->streams[slot];
}

/* Everything of stream (slot, gen) up to position upto is done at now_ns, as how says. */
static void complete(struct nccltrack *t, int32_t slot, uint32_t gen, uint64_t upto,
		     uint64_t now_ns, enum nt_end how, unsigned int depth)
{
	struct nt_stream *s = stream_at(t, slot, gen);
	uint32_t i = 0;

	if (!s)
		return;
	/* A group not yet ended has put nothing on the stream: it, and what follows, waits. */
	while (s->n && ring_at(s, 0)->pos <= upto && ring_at(s, 0)->launched)
		pop_front(t, s, now_ns, how);
	while (i < s->ndeps) {
		struct nt_dep d = s->deps[i];

		if (d.at > upto) {
			i++;
			continue;
		}
		memmove(&s->deps[i], &s->deps[i + 1], (s->ndeps - i - 1) * sizeof(s->deps[0]));
		s->ndeps--;
		if (depth < NT_DEP_DEPTH)
			complete(t, d.src, d.src_gen, d.src_pos, now_ns, how, depth + 1);
	}
}

/*
 * Inserts (a, b) into ix, of max slots; when it is full the clock hand
 * evicts a row to make room (counted).  Rows that need more than their
 * slot freed (streams' waits) are evicted by their own code.
 */
static int32_t insert_evicting(struct nccltrack *t, struct keyindex *ix, uint32_t *hand,
			       uint32_t max, uint64_t a, uint64_t b)
{
	int32_t s = keyindex_insert(ix, a, b);

	if (s < 0) {
		uint32_t v = (*hand)++ % max;

		agg_nccl_count(t->agg, AGG_NCCL_STATE_EVICTED, 1);
		keyindex_remove(ix, (int32_t)v);
		s = keyindex_insert(ix, a, b);
	}
	return s;
}

/* ---- threads inside a group --------------------------------------------- */

static uint32_t *thread_depth(struct nccltrack *t, uint32_t pid, uint32_t tid, int create)
{
	int32_t s = keyindex_find(&t->thread_idx, pid, tid);

	if (s >= 0 || !create)
		return s < 0 ? NULL : &t->depth[s];
	s = insert_evicting(t, &t->thread_idx, &t->thread_hand, NT_MAX_THREADS, pid, tid);
	if (s < 0)
		return NULL;
	t->depth[s] = 0;
	return &t->depth[s];
}

/* The outermost ncclGroupEnd of (pid, tid) at now_ns launches its calls. */
static void launch_group(struct nccltrack *t, uint32_t pid, uint32_t tid, uint64_t now_ns)
{
	for (uint32_t slot = 0; slot < keyindex_top(&t->stream_idx); slot++) {
		struct nt_stream *s = &t->streams[slot];

		if (!keyindex_live(&t->stream_idx, slot) || s->pid != pid || !s->unlaunched)
			continue;
		/* Calls of an open group are the newest: walk back from the tail. */
		for (uint32_t i = s->n; i-- > 0 && s->unlaunched;) {
			struct nt_pending *p = ring_at(s, i);

			if (p->launched || p->tid != tid)
				continue;
			p->launched = 1;
			p->start_ns = now_ns;
			s->unlaunched--;
		}
	}
}

void nccltrack_group(struct nccltrack *t, const struct zev_nccl_group *e)
{
	uint32_t *d = thread_depth(t, e->hdr.pid, e->hdr.tid, !e->end);
	int32_t slot;

	proc_read(t, e->hdr.pid, e->hdr.ts_ns);
	if (!d)
		return;
	if (!e->end) {
		(*d)++;
		return;
	}
	if (*d && --*d)
		return;
	launch_group(t, e->hdr.pid, e->hdr.tid, e->hdr.ts_ns);
	slot = keyindex_find(&t->thread_idx, e->hdr.pid, e->hdr.tid);
	if (slot >= 0)
		keyindex_remove(&t->thread_idx, slot);
}

/* ---- the records -------------------------------------------------------- */

void nccltrack_call(struct nccltrack *t, const struct zev_nccl_call *e)
{
	uint64_t now = e->hdr.ts_ns, call_ns = now > e->ns ? now - e->ns : now;
	uint32_t pid = e->hdr.pid, *depth;
	struct nt_stream *s;
	struct nt_pending *p;
	struct nt_proc *proc;
	int known;

	if (e->op >= SHM_NCCL_OP_COUNT)
		return;
	proc = proc_of(t, pid, 1);
	proc_seen(proc, now);
	s = stream_get(t, pid, e->stream, e->dev, now);
	if (!s)
		return;
	if (s->capturing) {
		/* Runs at each graph launch, where no NCCL call is made. */
		agg_nccl_count(t->agg, AGG_NCCL_CAPTURED, 1);
		return;
	}
	known = agg_nccl_comm_call(t->agg, pid, e->comm, e->bytes, call_ns) == 0;
	if (!known)
		agg_nccl_count(t->agg, AGG_NCCL_UNKNOWN_COMM, 1);
	if (ring_room(t, s) < 0) {
		if (known)
			agg_nccl_comm_done(t->agg, pid, e->comm, call_ns, 0);
		agg_nccl_count(t->agg, AGG_NCCL_PENDING_DROPPED, 1);
		return;
	}
	depth = thread_depth(t, pid, e->hdr.tid, 0);
	p = ring_at(s, s->n++);
	memset(p, 0, sizeof(*p));
	p->pos = ++s->pos;
	p->call_ns = call_ns;
	p->start_ns = call_ns;
	p->comm = e->comm;
	p->known = known;
	p->op = e->op;
	p->tid = e->hdr.tid;
	p->launched = !(depth && *depth);
	if (!p->launched)
		s->unlaunched++;
	t->pending++;
	proc_add(proc, 1);
}

static struct nt_event *event_get(struct nccltrack *t, uint32_t pid, uint64_t handle)
{
	int32_t s = keyindex_find(&t->event_idx, pid, handle);

	if (s >= 0)
		return &t->events[s];
	s = insert_evicting(t, &t->event_idx, &t->event_hand, NT_MAX_EVENTS, pid, handle);
	return s < 0 ? NULL : &t->events[s];
}

static struct nt_event *event_find(struct nccltrack *t, uint32_t pid, uint64_t handle)
{
	int32_t s = keyindex_find(&t->event_idx, pid, handle);

	return s < 0 ? NULL : &t->events[s];
}

static void record(struct nccltrack *t, const struct zev_cuda_order *e)
{
	struct nt_stream *s = stream_find(t, e->hdr.pid, e->b, e->dev);
	struct nt_event *ev;

	/* A stream we never saw queue or wait gives the event nothing to cover. */
	ev = s || event_find(t, e->hdr.pid, e->a) ? event_get(t, e->hdr.pid, e->a) : NULL;
	if (!ev)
		return;
	ev->pid = e->hdr.pid;
	ev->last_ns = e->hdr.ts_ns;
	ev->stream = s ? (int32_t)(s - t->streams) : -1;
	ev->gen = s ? s->gen : 0;
	ev->pos = s ? s->pos : 0;
	ev->captured = s && s->capturing;
	ev->capture_root = s ? s->capture_root : -1;
	ev->capture_gen = s ? s->capture_gen : 0;
}

/*
 * Stream s waits on an event recorded inside a capture: CUDA makes s part
 * of that capture (how ProcessGroupNCCL brings its own stream into a
 * graph), until the capture ends.  What it queues meanwhile is captured.
 */
static void join_capture(struct nccltrack *t, const struct zev_cuda_order *e,
			 const struct nt_event *ev)
{
	struct nt_stream *s = stream_get(t, e->hdr.pid, e->a, e->dev, e->hdr.ts_ns);

	if (!s || s->capturing)
		return;
	s->capturing = 1;
	s->capture_root = ev->capture_root;
	s->capture_gen = ev->capture_gen;
}

/* The capture that stream slot began (gen) ends: it and every stream it drew in. */
static void end_capture(struct nccltrack *t, int32_t slot, uint32_t gen)
{
	for (uint32_t i = 0; i < keyindex_top(&t->stream_idx); i++) {
		struct nt_stream *s = &t->streams[i];

		if (keyindex_live(&t->stream_idx, i) && s->capturing &&
		    s->capture_root == slot && s->capture_gen == gen)
			s->capturing = 0;
	}
}

static void stream_wait(struct nccltrack *t, const struct zev_cuda_order *e)
{
	struct nt_event *ev = event_find(t, e->hdr.pid, e->b);
	struct nt_stream *src, *s;
	struct nt_dep d;

	if (ev && ev->captured) {
		join_capture(t, e, ev);
		return;
	}
	if (!ev || !(src = stream_at(t, ev->stream, ev->gen)) || (!src->n && !src->ndeps))
		return;
	d.src = ev->stream;
	d.src_gen = ev->gen;
	d.src_pos = ev->pos;
	s = stream_get(t, e->hdr.pid, e->a, e->dev, e->hdr.ts_ns);
	if (!s || s == src)
		return;
	if (s->ndeps == NT_MAX_DEPS) {
		/* The oldest dependency goes: its source may now wait longer. */
		memmove(&s->deps[0], &s->deps[1], (NT_MAX_DEPS - 1) * sizeof(s->deps[0]));
		s->ndeps--;
		agg_nccl_count(t->agg, AGG_NCCL_STATE_EVICTED, 1);
	}
	d.at = ++s->pos;
	s->deps[s->ndeps++] = d;
}

void nccltrack_order(struct nccltrack *t, const struct zev_cuda_order *e)
{
	struct nt_stream *s;

	proc_read(t, e->hdr.pid, e->hdr.ts_ns);
	switch (e->kind) {
	case ZN_ORDER_RECORD:
		record(t, e);
		break;
	case ZN_ORDER_WAIT:
		stream_wait(t, e);
		break;
	case ZN_ORDER_CAPTURE_BEGIN:
		s = stream_get(t, e->hdr.pid, e->a, e->dev, e->hdr.ts_ns);
		if (s) {
			s->capturing = 1;
			s->capture_root = (int32_t)(s - t->streams);
			s->capture_gen = s->gen;
		}
		break;
	case ZN_ORDER_CAPTURE_END:
		s = stream_get(t, e->hdr.pid, e->a, e->dev, e->hdr.ts_ns);
		if (s && s->capturing)
			end_capture(t, s->capture_root, s->capture_gen);
		break;
	default:
		break;
	}
}

void nccltrack_sync(struct nccltrack *t, const struct zev_cuda_sync *e)
{
	uint64_t now = e->hdr.ts_ns;
	struct nt_stream *s;
	struct nt_event *ev;

	proc_read(t, e->hdr.pid, now);
	switch (e->kind) {
	case ZN_SYNC_STREAM:
	case ZN_SYNC_STREAM_QUERY:
		s = stream_find(t, e->hdr.pid, e->handle, e->dev);
		if (s)
			complete(t, (int32_t)(s - t->streams), s->gen, UINT64_MAX, now,
				 NT_WAITED, 0);
		break;
	case ZN_SYNC_EVENT:
	case ZN_SYNC_EVENT_QUERY:
		ev = event_find(t, e->hdr.pid, e->handle);
		if (ev)
			complete(t, ev->stream, ev->gen, ev->pos, now, NT_WAITED, 0);
		break;
	case ZN_SYNC_DEVICE:
		for (uint32_t slot = 0; slot < keyindex_top(&t->stream_idx); slot++) {
			s = &t->streams[slot];
			if (keyindex_live(&t->stream_idx, slot) && s->pid == e->hdr.pid &&
			    (s->dev == e->dev || s->dev < 0 || e->dev < 0))
				complete(t, (int32_t)slot, s->gen, UINT64_MAX, now, NT_WAITED, 0);
		}
		break;
	default:
		break;
	}
}

void nccltrack_expire(struct nccltrack *t, uint64_t now_ns)
{
	uint64_t horizon = now_ns > NT_IDLE_NS ? now_ns - NT_IDLE_NS : 0;

	/* A stream with calls pending is kept: they stay pending until covered or ended. */
	for (uint32_t slot = 0; slot < keyindex_top(&t->stream_idx); slot++) {
		struct nt_stream *s = &t->streams[slot];

		if (keyindex_live(&t->stream_idx, slot) && !s->n && s->last_ns < horizon)
			stream_drop(t, (int32_t)slot);
	}
	for (uint32_t slot = 0; slot < keyindex_top(&t->event_idx); slot++)
		if (keyindex_live(&t->event_idx, slot) && t->events[slot].last_ns < horizon)
			keyindex_remove(&t->event_idx, (int32_t)slot);
}

/*
 * The calls on comm leave stream s: settled at done_ns, and with them
 * everything the stream ordered before the last of them (stream order:
 * it ran first), or given up (0, counted as ended).
 */
static void stream_end_comm(struct nccltrack *t, struct nt_stream *s, uint64_t comm,
			    uint64_t done_ns)
{
	uint32_t kept = 0, n = s->n;
	uint64_t last = 0;

	if (done_ns) {
		for (uint32_t i = 0; i < n; i++)
			if (ring_at(s, i)->comm == comm && ring_at(s, i)->launched)
				last = ring_at(s, i)->pos;
		if (last)
			complete(t, (int32_t)(s - t->streams), s->gen, last, done_ns, NT_SETTLED, 0);
		n = s->n;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct nt_pending p = *ring_at(s, i);

		if (p.comm != comm) {
			*ring_at(s, kept++) = p;
			continue;
		}
		if (!p.launched)
			s->unlaunched--;
		finish(t, s->pid, &p, done_ns, done_ns ? NT_SETTLED : NT_GIVEN_UP);
		if (!done_ns)
			agg_nccl_count(t->agg, AGG_NCCL_PENDING_ENDED, 1);
	}
	s->n = kept;
}

void nccltrack_comm_end(struct nccltrack *t, uint32_t pid, uint64_t comm, uint64_t done_ns)
{
	if (comm == 0)
		return;
	for (uint32_t slot = 0; slot < keyindex_top(&t->stream_idx); slot++)
		if (keyindex_live(&t->stream_idx, slot) && t->streams[slot].pid == pid)
			stream_end_comm(t, &t->streams[slot], comm, done_ns);
}

void nccltrack_proc_gone(struct nccltrack *t, uint32_t pid)
{
	int32_t row = keyindex_find(&t->proc_idx, pid, 0);

	/* The scheduler probe forgets it at its last thread's exit. */
	if (row >= 0)
		keyindex_remove(&t->proc_idx, row);
	for (uint32_t slot = 0; slot < keyindex_top(&t->stream_idx); slot++)
		if (keyindex_live(&t->stream_idx, slot) && t->streams[slot].pid == pid)
			stream_drop(t, (int32_t)slot);
	for (uint32_t slot = 0; slot < keyindex_top(&t->event_idx); slot++)
		if (keyindex_live(&t->event_idx, slot) && t->events[slot].pid == pid)
			keyindex_remove(&t->event_idx, (int32_t)slot);
	for (uint32_t slot = 0; slot < keyindex_top(&t->thread_idx); slot++)
		if (keyindex_live(&t->thread_idx, slot) && t->thread_idx.key[slot].a == pid)
			keyindex_remove(&t->thread_idx, (int32_t)slot);
}
