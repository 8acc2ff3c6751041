// SPDX-License-Identifier: BSD-2-Clause
/*
 * NCCL communicators in the aggregation (see agg.h): one row per rank a
 * watched process holds, keyed by (pid, ncclComm_t), named by NCCL's own
 * commHash so that the ranks of one communicator join across processes
 * and nodes, with their waits, gaps and pending calls.  Runs in the
 * privileged collector; memory is the segment's capacity of communicators.
 *
 * Where NCCL's hash cannot be had (the uniqueId was unreadable, a split
 * of a parent never seen created, ncclCommInitAll, whose uniqueId never
 * crosses an API), comm_id is made from (pid, handle) and flagged
 * SHM_NCCL_COMM_LOCAL_ID: unique, but joinable only within the process.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg/agg_impl.h"
#include "collector/agg/nccl_hash.h"

#define NCCL_SPLIT_NOCOLOR	(-1)	/* nccl.h: this rank joins no child */

int agg_nccl_init(struct agg *a)
{
	uint32_t cap = a->opts.cap.nccl_comms;

	if (keyindex_init(&a->comm_idx, cap, 0) < 0)
		return -ENOMEM;
	a->comms = calloc(cap, sizeof(*a->comms));
	a->stage_comms = calloc(cap, sizeof(*a->stage_comms));
	return a->comms && a->stage_comms ? 0 : -ENOMEM;
}

static void comm_release(struct agg *a, int32_t slot)
{
	latency_destroy(&a->comms[slot].wait);
	latency_destroy(&a->comms[slot].gap);
	latency_destroy(&a->comms[slot].gpu);
	memset(&a->comms[slot], 0, sizeof(a->comms[slot]));
	keyindex_remove(&a->comm_idx, slot);
}

void agg_nccl_destroy(struct agg *a)
{
	if (a->comms && a->comm_idx.live)
		for (uint32_t s = 0; s < keyindex_top(&a->comm_idx); s++)
			if (keyindex_live(&a->comm_idx, s))
				comm_release(a, (int32_t)s);
	keyindex_destroy(&a->comm_idx);
	free(a->comms);
	free(a->stage_comms);
	a->comms = NULL;
	a->stage_comms = NULL;
}

void agg_nccl_proc_exit(struct agg *a, uint32_t pid)
{
	uint32_t kept = 0;

	for (uint32_t s = 0; s < keyindex_top(&a->comm_idx); s++)
		if (keyindex_live(&a->comm_idx, s) && a->comms[s].row.pid == pid)
			comm_release(a, (int32_t)s);
	for (uint32_t i = 0; i < a->n_child_waits; i++)
		if (a->child_waits[i].pid != pid)
			a->child_waits[kept++] = a->child_waits[i];
	a->n_child_waits = kept;
}

/*
 * An ended communicator's row is keyed apart from every handle (user
 * space addresses never have the top bit set), so the handle is free.
 */
#define COMM_ENDED_KEY	(1ull << 63)

static struct agg_comm *comm_find(struct agg *a, uint32_t pid, uint64_t handle)
{
	int32_t s = keyindex_find(&a->comm_idx, pid, handle);

	return s < 0 ? NULL : &a->comms[s];
}

/*
 * Makes room by releasing the row that ended first, if any: a live
 * communicator outweighs the grace period of one that ended.  0, or -ENOSPC.
 */
static int comm_release_oldest_ended(struct agg *a)
{
	int32_t oldest = -1;

	for (uint32_t s = 0; s < keyindex_top(&a->comm_idx); s++)
		if (keyindex_live(&a->comm_idx, s) && a->comms[s].ended_ns &&
		    (oldest < 0 || a->comms[s].ended_ns < a->comms[oldest].ended_ns))
			oldest = (int32_t)s;
	if (oldest < 0)
		return -ENOSPC;
	comm_release(a, oldest);
	return 0;
}

/* The row of (pid, handle), made when absent; NULL when unwatched or full (counted). */
static struct agg_comm *comm_get(struct agg *a, uint32_t pid, uint64_t handle)
{
	struct agg_comm *c = comm_find(a, pid, handle);
	int32_t s;

	if (c)
		return c;
	if (!agg_proc_is_watched(a, pid))
		return NULL;
	s = keyindex_insert(&a->comm_idx, pid, handle);
	if (s < 0 && comm_release_oldest_ended(a) == 0)
		s = keyindex_insert(&a->comm_idx, pid, handle);
	if (s < 0) {
		a->overflows[SHM_TABLE_NCCL_COMMS]++;
		return NULL;
	}
	c = &a->comms[s];
	memset(c, 0, sizeof(*c));
	c->handle = handle;
	c->row.pid = pid;
	c->row.rank = -1;
	c->row.nranks = -1;
	c->row.gpu_id = UINT32_MAX;
	latency_init(&c->wait, a->opts.window_ns);
	latency_init(&c->gap, a->opts.window_ns);
	latency_init(&c->gpu, a->opts.window_ns);
	return c;
}

static uint64_t local_id(uint32_t pid, uint64_t handle)
{
	uint64_t key[3] = { 0x6c61636f6c2d7a6eull /* "zn-local" */, pid, handle };

	return nccl_hash_bytes(key, sizeof(key));
}

static void set_size(struct agg_comm *c, int32_t rank, int32_t nranks)
{
	/* Nonsense (a rank outside its size) is not published. */
	if (nranks < 1 || rank < 0 || rank >= nranks)
		return;
	c->row.rank = rank;
	c->row.nranks = nranks;
}

/*
 * A process never holds one rank of one communicator twice at a time, so
 * a second row with c's (comm_id, rank) belongs to a communicator that
 * was destroyed and then made again from the same uniqueId (an abort and
 * re-init).  Both would print one series, and Prometheus refuses a scrape
 * with a series twice: the earlier row continues under c's handle, with
 * c's description and the calls c already queued.
 */
static void comm_continue_earlier(struct agg *a, struct agg_comm *c)
{
	int32_t cs = (int32_t)(c - a->comms), es = -1, s;
	struct agg_comm *e, now;

	if (!c->made)
		return;
	for (uint32_t i = 0; i < keyindex_top(&a->comm_idx) && es < 0; i++) {
		e = &a->comms[i];
		if ((int32_t)i != cs && keyindex_live(&a->comm_idx, i) && e->made &&
		    e->row.pid == c->row.pid && e->row.comm_id == c->row.comm_id &&
		    e->row.rank == c->row.rank)
			es = (int32_t)i;
	}
	if (es < 0)
		return;
	e = &a->comms[es];
	now = *e;
	now.handle = c->handle;
	now.splits = c->splits;
	now.row.nranks = c->row.nranks;
	now.row.gpu_id = c->row.gpu_id;
	now.row.parent_id = c->row.parent_id;
	now.row.origin = c->row.origin;
	now.row.flags = c->row.flags;
	now.row.calls += c->row.calls;
	now.row.bytes += c->row.bytes;
	/* The destroyed communicator's pending calls never complete. */
	now.row.pending = c->row.pending;
	now.pending_since_ns = c->pending_since_ns;
	now.last_done_ns = c->last_done_ns > e->last_done_ns ? c->last_done_ns : e->last_done_ns;
	now.ended_ns = 0;
	latency_destroy(&c->wait);
	latency_destroy(&c->gap);
	latency_destroy(&c->gpu);
	keyindex_remove(&a->comm_idx, cs);
	keyindex_remove(&a->comm_idx, es);
	s = keyindex_insert(&a->comm_idx, now.row.pid, now.handle);
	/* Two slots were just released, so the insert cannot fail. */
	a->comms[s] = now;
	if (s != es)
		memset(&a->comms[es], 0, sizeof(a->comms[es]));
	if (s != cs)
		memset(&a->comms[cs], 0, sizeof(a->comms[cs]));
}

/* The comm_id (and its flags) of what m made; parent: the split's, when known. */
static uint64_t made_id(struct agg *a, uint32_t pid, const struct agg_comm_made *m,
			const struct agg_comm *parent, uint64_t handle, uint32_t *flags)
{
	*flags = 0;
	switch (m->origin) {
	case SHM_NCCL_ORIGIN_INIT_RANK:
	case SHM_NCCL_ORIGIN_SCALABLE:
		if (m->id)
			return nccl_hash_unique_id(m->id);
		*flags = SHM_NCCL_COMM_LOCAL_ID;
		a->stats.nccl_id_unreadable++;
		return local_id(pid, handle);
	case SHM_NCCL_ORIGIN_INIT_ALL:
		/* One call makes every rank: rank 0 names them all. */
		if (m->rank == 0 || a->init_all_id == 0)
			a->init_all_id = local_id(pid, handle);
		*flags = SHM_NCCL_COMM_LOCAL_ID;
		return a->init_all_id;
	default:
		if (!parent) {
			*flags = SHM_NCCL_COMM_LOCAL_ID;
			return local_id(pid, handle);
		}
		*flags = parent->row.flags & SHM_NCCL_COMM_LOCAL_ID;
		return m->origin == SHM_NCCL_ORIGIN_SPLIT ?
			nccl_hash_child(parent->row.comm_id, parent->splits, m->color) :
			nccl_hash_child(parent->row.comm_id, 0, 0);
	}
}

/* c is the communicator w (or the like) describes, from now on. */
static void comm_make(struct agg *a, struct agg_comm *c, const struct agg_child_wait *w,
		      int32_t rank, int32_t nranks)
{
	c->made = 1;
	c->made_ns = w->ts_ns;
	c->alloc_parent = 0;
	c->row.comm_id = w->id;
	c->row.parent_id = w->parent_id;
	c->row.origin = w->origin;
	c->row.flags = w->flags;
	c->row.gpu_id = w->gpu;
	set_size(c, rank, nranks);
	comm_continue_earlier(a, c);
}

/* Row c is the child wait i describes: made so, and the wait gone. */
static void bind_wait(struct agg *a, struct agg_comm *c, uint32_t i)
{
	struct agg_child_wait w = a->child_waits[i];

	memmove(&a->child_waits[i], &a->child_waits[i + 1],
		(a->n_child_waits - i - 1) * sizeof(w));
	a->n_child_waits--;
	comm_make(a, c, &w, c->row.rank, c->row.nranks);
}

/*
 * pid's children of parent that commAlloc made and no split is bound to
 * yet, and its splits of parent still waiting for theirs: where there is
 * one of each, they are the same child.  With more in flight at once their
 * async jobs run in any order, and each is bound at its first call
 * (bind_at_call).
 */
static void bind_lone(struct agg *a, uint32_t pid, uint64_t parent)
{
	struct agg_comm *row = NULL;
	uint32_t rows = 0, waits = 0, wait = 0;

	for (uint32_t s = 0; s < keyindex_top(&a->comm_idx); s++) {
		struct agg_comm *c = &a->comms[s];

		if (keyindex_live(&a->comm_idx, s) && !c->made && !c->ended_ns &&
		    c->row.pid == pid && c->alloc_parent == parent) {
			row = c;
			rows++;
		}
	}
	for (uint32_t i = 0; i < a->n_child_waits; i++) {
		if (a->child_waits[i].pid == pid && a->child_waits[i].parent == parent) {
			wait = i;
			waits++;
		}
	}
	if (rows == 1 && waits == 1)
		bind_wait(a, row, wait);
}

/*
 * c, made by commAlloc with a parent that has several children in flight,
 * gets its first call: it is the one whose split's *newcomm now holds its
 * handle (NCCL sets it as the child completes, and the process called on
 * what it found there).  0, or -ENOENT when none does or nothing can tell.
 */
static int bind_at_call(struct agg *a, struct agg_comm *c)
{
	uint64_t parent = c->alloc_parent, held;
	uint32_t pid = c->row.pid;

	for (uint32_t i = 0; a->read_u64 && i < a->n_child_waits; i++) {
		const struct agg_child_wait *w = &a->child_waits[i];

		if (w->pid != pid || w->parent != parent || !w->out ||
		    a->read_u64(a->read_ctx, pid, w->out, &held) != 0 || held != c->handle)
			continue;
		bind_wait(a, c, i);
		bind_lone(a, pid, parent);
		return 0;
	}
	return -ENOENT;
}

/*
 * A non-blocking child w whose handle is not known yet: kept until the
 * row commAlloc makes with its parent can be told to be its own.
 */
static void child_wait(struct agg *a, const struct agg_child_wait *w)
{
	if (a->n_child_waits == AGG_CHILD_WAITS) {
		/* The oldest is given up: its child's calls will be on an unknown communicator. */
		memmove(&a->child_waits[0], &a->child_waits[1],
			(AGG_CHILD_WAITS - 1) * sizeof(a->child_waits[0]));
		a->n_child_waits--;
		a->stats.nccl_state_evicted++;
	}
	a->child_waits[a->n_child_waits++] = *w;
	bind_lone(a, w->pid, w->parent);
}

int agg_nccl_comm_made(struct agg *a, uint32_t pid, const struct agg_comm_made *m)
{
	struct agg_comm *parent = NULL, *c;
	struct agg_child_wait w = { .pid = pid, .origin = m->origin, .parent = m->parent,
				    .out = m->out, .ts_ns = m->ts_ns };

	if (m->origin >= SHM_NCCL_ORIGIN_COUNT)
		return -EINVAL;
	if (!agg_proc_is_watched(a, pid))
		return -ENOENT;
	if (m->origin == SHM_NCCL_ORIGIN_SPLIT || m->origin == SHM_NCCL_ORIGIN_SHRINK) {
		parent = comm_find(a, pid, m->parent);
		/* Every split of the parent counts, one that made nothing here too. */
		if (parent && m->origin == SHM_NCCL_ORIGIN_SPLIT)
			parent->splits++;
	}
	w.parent_id = parent ? parent->row.comm_id : 0;
	w.gpu = parent ? parent->row.gpu_id : m->gpu;
	if (m->handle == 0) {
		/* In progress, a child (not NCCL_SPLIT_NOCOLOR's none) comes later. */
		if (m->in_progress && parent &&
		    (m->origin == SHM_NCCL_ORIGIN_SHRINK ||
		     (m->origin == SHM_NCCL_ORIGIN_SPLIT && m->color != NCCL_SPLIT_NOCOLOR))) {
			w.id = made_id(a, pid, m, parent, 0, &w.flags);
			child_wait(a, &w);
		}
		return 0;
	}
	w.id = made_id(a, pid, m, parent, m->handle, &w.flags);
	c = comm_get(a, pid, m->handle);
	if (!c)
		return -ENOSPC;
	comm_make(a, c, &w, m->rank, m->nranks);
	return 0;
}

int agg_nccl_comm_size(struct agg *a, uint32_t pid, uint64_t handle, uint64_t parent,
		       int32_t rank, int32_t nranks)
{
	struct agg_comm *c = comm_get(a, pid, handle);

	if (!c)
		return agg_proc_is_watched(a, pid) ? -ENOSPC : -ENOENT;
	set_size(c, rank, nranks);
	if (!c->made && parent) {
		/* A non-blocking child: its split's, if that can be told. */
		c->alloc_parent = parent;
		bind_lone(a, pid, parent);
		if (c->made)
			return 0;
	}
	comm_continue_earlier(a, c);
	return 0;
}

int agg_nccl_comm_call(struct agg *a, uint32_t pid, uint64_t handle, uint64_t bytes,
		       uint64_t call_ns)
{
	struct agg_comm *c = comm_find(a, pid, handle);

	if (c && !c->made && c->alloc_parent)
		bind_at_call(a, c);
	if (!c || !c->made)
		return -ENOENT;
	c->row.calls++;
	c->row.bytes += bytes;
	if (c->row.pending == 0) {
		if (c->last_done_ns && call_ns > c->last_done_ns)
			latency_record(&c->gap, call_ns, call_ns - c->last_done_ns);
		c->pending_since_ns = call_ns;
	}
	c->row.pending++;
	return 0;
}

/* A queued call of (pid, handle) leaves; done_ns > 0: it was known complete then. */
static struct agg_comm *comm_call_leaves(struct agg *a, uint32_t pid, uint64_t handle,
					 uint64_t done_ns)
{
	struct agg_comm *c = comm_find(a, pid, handle);

	if (!c || c->row.pending == 0)
		return NULL;
	c->row.pending--;
	if (done_ns > c->last_done_ns)
		c->last_done_ns = done_ns;
	return c;
}

void agg_nccl_comm_done(struct agg *a, uint32_t pid, uint64_t handle, uint64_t start_ns,
			uint64_t done_ns)
{
	struct agg_comm *c = comm_call_leaves(a, pid, handle, done_ns);

	if (c && done_ns)
		latency_record(&c->wait, done_ns, done_ns > start_ns ? done_ns - start_ns : 0);
}

int agg_nccl_comm_gpu(struct agg *a, uint32_t pid, uint64_t comm_id, int32_t rank, uint64_t ns,
		      uint64_t now_ns)
{
	for (uint32_t s = 0; s < keyindex_top(&a->comm_idx); s++) {
		struct agg_comm *c = &a->comms[s];

		if (keyindex_live(&a->comm_idx, s) && c->made && !c->ended_ns &&
		    c->row.pid == pid && c->row.comm_id == comm_id && c->row.rank == rank)
			return latency_record(&c->gpu, now_ns, ns);
	}
	return -ENOENT;
}

void agg_nccl_comm_settled(struct agg *a, uint32_t pid, uint64_t handle, uint64_t done_ns)
{
	comm_call_leaves(a, pid, handle, done_ns);
}

uint64_t agg_nccl_comm_made_at(struct agg *a, uint32_t pid, uint64_t handle)
{
	const struct agg_comm *c = comm_find(a, pid, handle);

	return c && c->made ? (c->made_ns ? c->made_ns : 1) : 0;
}

int agg_nccl_comm_end(struct agg *a, uint32_t pid, uint64_t handle, uint64_t ts_ns)
{
	int32_t s = keyindex_find(&a->comm_idx, pid, handle), n;
	struct agg_comm row;

	if (s < 0)
		return -ENOENT;
	row = a->comms[s];
	row.ended_ns = ts_ns ? ts_ns : 1;
	row.row.pending = 0;
	keyindex_remove(&a->comm_idx, s);
	n = keyindex_insert(&a->comm_idx, pid, COMM_ENDED_KEY | ++a->comms_ended);
	/* A slot was just released, so the insert cannot fail. */
	if (n != s)
		memset(&a->comms[s], 0, sizeof(a->comms[s]));
	a->comms[n] = row;
	return 0;
}

void agg_nccl_count(struct agg *a, enum agg_nccl_loss why, uint64_t n)
{
	uint64_t *slot[] = {
		[AGG_NCCL_ID_UNREADABLE] = &a->stats.nccl_id_unreadable,
		[AGG_NCCL_UNKNOWN_COMM] = &a->stats.nccl_unknown_comm,
		[AGG_NCCL_BAD_ARGS] = &a->stats.nccl_bad_args,
		[AGG_NCCL_CAPTURED] = &a->stats.nccl_captured,
		[AGG_NCCL_PENDING_DROPPED] = &a->stats.nccl_pending_dropped,
		[AGG_NCCL_PENDING_ENDED] = &a->stats.nccl_pending_ended,
		[AGG_NCCL_STATE_EVICTED] = &a->stats.nccl_state_evicted,
	};

	if ((unsigned int)why < sizeof(slot) / sizeof(slot[0]))
		*slot[why] += n;
}

uint32_t agg_nccl_stage(struct agg *a, uint64_t now_ns)
{
	uint32_t n = 0;

	for (uint32_t s = 0; s < keyindex_top(&a->comm_idx); s++) {
		struct agg_comm *c = &a->comms[s];
		struct shm_nccl_comm *r;
		uint64_t since;

		if (!keyindex_live(&a->comm_idx, s))
			continue;
		if (c->ended_ns && now_ns > c->ended_ns + AGG_NCCL_END_GRACE_NS) {
			comm_release(a, (int32_t)s);
			continue;
		}
		if (!c->made)
			continue;
		r = &a->stage_comms[n++];
		*r = c->row;
		r->stalled_ns = 0;
		if (r->pending) {
			since = c->last_done_ns > c->pending_since_ns ? c->last_done_ns :
				c->pending_since_ns;
			r->stalled_ns = now_ns > since ? now_ns - since : 0;
		}
		latency_export(&c->wait, now_ns, &r->wait);
		latency_export(&c->gap, now_ns, &r->gap);
		latency_export(&c->gpu, now_ns, &r->gpu);
	}
	return n;
}
