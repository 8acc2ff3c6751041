/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Aggregation state of zernel-collector (see agg.h).  Runs in the privileged
 * collector, fed by the probes or the simulator.  Every table is allocated
 * once at its segment capacity, so memory depends on the capacities alone,
 * never on the number of events.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg.h"
#include "common/latency.h"
#include "common/util.h"

/*
 * A fixed-capacity hash index from a 64-bit key to a slot in [0, cap):
 * chained through next[], with a free list, so removal is O(chain) and a
 * slot's rows in the parallel arrays stay put while it lives.
 */
struct agg_index {
	uint32_t cap;
	uint32_t used;
	uint32_t mask;			/* buckets - 1 */
	int32_t free_head;
	int32_t *head;			/* per bucket */
	int32_t *next;			/* per slot: chain, or free list */
	uint64_t *key;			/* per slot */
	uint8_t *live;			/* per slot */
};

struct agg_proc {
	uint32_t pid;
	uint32_t ppid;
	uint32_t watch_reason;
	char comm[SHM_COMM_LEN];
	uint64_t start_time_ns;
	struct latency_series lat[SHM_FAMILY_COUNT];
	uint64_t offcpu_preempted_ns;
	uint64_t offcpu_blocked_ns;
	uint64_t involuntary_switches;
	uint64_t voluntary_switches;
	uint64_t migrations;
};

struct agg_nccl {
	uint64_t calls;
	uint64_t bytes;
	uint64_t errors;
	struct latency_series duration;
	struct latency_series wait;
};

struct agg {
	struct agg_opts opts;
	int series_ready;		/* node and NCCL series initialised */

	struct agg_index proc_idx;
	struct agg_proc *procs;

	struct agg_index mem_idx;	/* key: pid << 32 | gpu */
	struct shm_gpu_mem *mem;

	/* GPUs and comms are few and change rarely: plain arrays. */
	struct shm_gpu *gpus;
	uint32_t n_gpus;
	struct shm_nccl_comm *comms;
	uint32_t n_comms;

	struct agg_nccl nccl[SHM_NCCL_OP_COUNT];
	struct latency_series node[SHM_FAMILY_COUNT];

	uint64_t overflows[SHM_TABLE_COUNT];
	struct shm_stats stats;

	/* Rows prepared outside the seqlock, then copied in one go. */
	struct shm_proc *stage_procs;
	struct shm_gpu_mem *stage_mem;
	struct shm_gpu *stage_gpus;
	struct shm_nccl_op stage_nccl[SHM_NCCL_OP_COUNT];
	struct shm_latency stage_node[SHM_FAMILY_COUNT];
	uint32_t published[SHM_TABLE_COUNT];	/* counts of the last publish */
};

/* ---------------------------------------------------------------------- */

static uint32_t idx_hash(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (uint32_t)key;
}

static int idx_init(struct agg_index *ix, uint32_t cap)
{
	uint32_t buckets = 16;

	while (buckets < 2 * (uint64_t)cap)
		buckets <<= 1;
	memset(ix, 0, sizeof(*ix));
	ix->cap = cap;
	ix->mask = buckets - 1;
	ix->head = malloc(buckets * sizeof(*ix->head));
	ix->next = calloc(cap ? cap : 1, sizeof(*ix->next));
	ix->key = calloc(cap ? cap : 1, sizeof(*ix->key));
	ix->live = calloc(cap ? cap : 1, sizeof(*ix->live));
	if (!ix->head || !ix->next || !ix->key || !ix->live)
		return -ENOMEM;
	for (uint32_t b = 0; b < buckets; b++)
		ix->head[b] = -1;
	for (uint32_t s = 0; s < cap; s++)
		ix->next[s] = s + 1 < cap ? (int32_t)(s + 1) : -1;
	ix->free_head = cap ? 0 : -1;
	return 0;
}

static void idx_destroy(struct agg_index *ix)
{
	free(ix->head);
	free(ix->next);
	free(ix->key);
	free(ix->live);
	memset(ix, 0, sizeof(*ix));
}

static int32_t idx_find(const struct agg_index *ix, uint64_t key)
{
	for (int32_t s = ix->head[idx_hash(key) & ix->mask]; s >= 0; s = ix->next[s])
		if (ix->key[s] == key)
			return s;
	return -1;
}

/* A fresh slot for key (which must not be present), or -1 when full. */
static int32_t idx_insert(struct agg_index *ix, uint64_t key)
{
	uint32_t b = idx_hash(key) & ix->mask;
	int32_t s = ix->free_head;

	if (s < 0)
		return -1;
	ix->free_head = ix->next[s];
	ix->key[s] = key;
	ix->live[s] = 1;
	ix->next[s] = ix->head[b];
	ix->head[b] = s;
	ix->used++;
	return s;
}

static void idx_remove(struct agg_index *ix, int32_t slot)
{
	int32_t *link = &ix->head[idx_hash(ix->key[slot]) & ix->mask];

	while (*link >= 0 && *link != slot)
		link = &ix->next[*link];
	if (*link != slot)
		return;
	*link = ix->next[slot];
	ix->live[slot] = 0;
	ix->next[slot] = ix->free_head;
	ix->free_head = slot;
	ix->used--;
}

/* ---------------------------------------------------------------------- */

struct agg *agg_new(const struct agg_opts *opts)
{
	struct agg *a;
	const struct shm_capacity *cap = &opts->cap;

	if (cap->procs == 0 || cap->procs > SHM_LIMIT_PROCS ||
	    cap->gpu_mem == 0 || cap->gpu_mem > SHM_LIMIT_GPU_MEM ||
	    cap->gpus == 0 || cap->gpus > SHM_LIMIT_GPUS ||
	    cap->nccl_comms == 0 || cap->nccl_comms > SHM_LIMIT_NCCL_COMMS) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->opts = *opts;
	if (a->opts.window_ns == 0)
		a->opts.window_ns = LATENCY_DEFAULT_WINDOW_NS;

	if (idx_init(&a->proc_idx, cap->procs) < 0 ||
	    idx_init(&a->mem_idx, cap->gpu_mem) < 0)
		goto fail;
	a->procs = calloc(cap->procs, sizeof(*a->procs));
	a->mem = calloc(cap->gpu_mem, sizeof(*a->mem));
	a->gpus = calloc(cap->gpus, sizeof(*a->gpus));
	a->comms = calloc(cap->nccl_comms, sizeof(*a->comms));
	a->stage_procs = calloc(cap->procs, sizeof(*a->stage_procs));
	a->stage_mem = calloc(cap->gpu_mem, sizeof(*a->stage_mem));
	a->stage_gpus = calloc(cap->gpus, sizeof(*a->stage_gpus));
	if (!a->procs || !a->mem || !a->gpus || !a->comms ||
	    !a->stage_procs || !a->stage_mem || !a->stage_gpus)
		goto fail;

	for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
		latency_init(&a->node[f], a->opts.window_ns);
	for (unsigned int op = 0; op < SHM_NCCL_OP_COUNT; op++) {
		latency_init(&a->nccl[op].duration, a->opts.window_ns);
		latency_init(&a->nccl[op].wait, a->opts.window_ns);
	}
	a->series_ready = 1;
	return a;
fail:
	agg_free(a);
	errno = ENOMEM;
	return NULL;
}

static void proc_release(struct agg_proc *p)
{
	for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
		latency_destroy(&p->lat[f]);
	memset(p, 0, sizeof(*p));
}

void agg_free(struct agg *a)
{
	if (!a)
		return;
	if (a->procs && a->proc_idx.live)
		for (uint32_t s = 0; s < a->proc_idx.cap; s++)
			if (a->proc_idx.live[s])
				proc_release(&a->procs[s]);
	if (a->series_ready) {
		for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
			latency_destroy(&a->node[f]);
		for (unsigned int op = 0; op < SHM_NCCL_OP_COUNT; op++) {
			latency_destroy(&a->nccl[op].duration);
			latency_destroy(&a->nccl[op].wait);
		}
	}
	idx_destroy(&a->proc_idx);
	idx_destroy(&a->mem_idx);
	free(a->procs);
	free(a->mem);
	free(a->gpus);
	free(a->comms);
	free(a->stage_procs);
	free(a->stage_mem);
	free(a->stage_gpus);
	free(a);
}

/* ---------------------------------------------------------------------- */
/* Processes */

static struct agg_proc *proc_get(const struct agg *a, uint32_t pid)
{
	int32_t s = idx_find(&a->proc_idx, pid);

	return s < 0 ? NULL : &a->procs[s];
}

int agg_proc_watch(struct agg *a, uint32_t pid, uint32_t ppid, uint32_t reason,
		   const char *comm, uint64_t start_time_ns)
{
	struct agg_proc *p = proc_get(a, pid);
	int32_t s;

	if (pid == 0)
		return -EINVAL;
	/* The same pid with another start time is a new process. */
	if (p && start_time_ns && p->start_time_ns &&
	    p->start_time_ns != start_time_ns) {
		agg_proc_exit(a, pid);
		p = NULL;
	}
	if (!p) {
		s = idx_insert(&a->proc_idx, pid);
		if (s < 0) {
			a->overflows[SHM_TABLE_PROCS]++;
			return -ENOSPC;
		}
		p = &a->procs[s];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->start_time_ns = start_time_ns;
		for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
			latency_init(&p->lat[f], a->opts.window_ns);
	}
	p->watch_reason |= reason & SHM_WATCH_ALL_BITS;
	if (ppid)
		p->ppid = ppid;
	if (!p->start_time_ns)
		p->start_time_ns = start_time_ns;
	if (comm && *comm) {
		memset(p->comm, 0, sizeof(p->comm));
		strncpy(p->comm, comm, sizeof(p->comm) - 1);
	}
	return 0;
}

int agg_proc_is_watched(const struct agg *a, uint32_t pid)
{
	return proc_get(a, pid) != NULL;
}

void agg_proc_exit(struct agg *a, uint32_t pid)
{
	int32_t s = idx_find(&a->proc_idx, pid);
	uint32_t i;

	if (s < 0)
		return;
	proc_release(&a->procs[s]);
	idx_remove(&a->proc_idx, s);
	a->stats.processes_evicted++;

	/* Exit is rare next to events: a scan of the memory rows is fine. */
	for (uint32_t m = 0; m < a->mem_idx.cap; m++)
		if (a->mem_idx.live[m] && a->mem[m].pid == pid)
			idx_remove(&a->mem_idx, (int32_t)m);
	for (i = 0; i < a->n_comms;) {
		if (a->comms[i].pid == pid)
			a->comms[i] = a->comms[--a->n_comms];
		else
			i++;
	}
}

int agg_latency(struct agg *a, uint32_t pid, enum shm_family family,
		uint64_t now_ns, uint64_t value_ns)
{
	struct agg_proc *p;
	int err, err2;

	if ((unsigned int)family >= SHM_FAMILY_COUNT)
		return -EINVAL;
	p = proc_get(a, pid);
	if (!p)
		return -ENOENT;
	err = latency_record(&p->lat[family], now_ns, value_ns);
	err2 = latency_record(&a->node[family], now_ns, value_ns);
	return err ? err : err2;
}

int agg_latency_batch(struct agg *a, uint32_t pid, enum shm_family family, uint64_t now_ns,
		      const uint64_t *hist_counts, const uint64_t *prom_counts,
		      uint64_t count, uint64_t sum_ns, uint64_t max_ns)
{
	struct agg_proc *p;
	int err, err2;

	if ((unsigned int)family >= SHM_FAMILY_COUNT)
		return -EINVAL;
	p = proc_get(a, pid);
	if (!p)
		return -ENOENT;
	err = latency_record_batch(&p->lat[family], now_ns, hist_counts, prom_counts, count,
				   sum_ns, max_ns);
	if (err == -EINVAL)
		return err;
	err2 = latency_record_batch(&a->node[family], now_ns, hist_counts, prom_counts, count,
				    sum_ns, max_ns);
	return err ? err : err2;
}

int agg_offcpu(struct agg *a, uint32_t pid, uint64_t off_ns, int involuntary)
{
	struct agg_proc *p = proc_get(a, pid);

	if (!p)
		return -ENOENT;
	if (involuntary) {
		p->offcpu_preempted_ns += off_ns;
		p->involuntary_switches++;
	} else {
		p->offcpu_blocked_ns += off_ns;
		p->voluntary_switches++;
	}
	return 0;
}

int agg_migration(struct agg *a, uint32_t pid)
{
	struct agg_proc *p = proc_get(a, pid);

	if (!p)
		return -ENOENT;
	p->migrations++;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* GPUs and GPU memory */

static struct shm_gpu *gpu_get(struct agg *a, uint32_t gpu, int create)
{
	for (uint32_t i = 0; i < a->n_gpus; i++)
		if (a->gpus[i].gpu_id == gpu)
			return &a->gpus[i];
	if (!create)
		return NULL;
	if (a->n_gpus >= a->opts.cap.gpus) {
		a->overflows[SHM_TABLE_GPUS]++;
		return NULL;
	}
	memset(&a->gpus[a->n_gpus], 0, sizeof(a->gpus[0]));
	a->gpus[a->n_gpus].gpu_id = gpu;
	return &a->gpus[a->n_gpus++];
}

static struct shm_gpu_mem *mem_get(struct agg *a, uint32_t pid, uint32_t gpu,
				   int *err)
{
	uint64_t key = (uint64_t)pid << 32 | gpu;
	int32_t s;

	*err = 0;
	if (!proc_get(a, pid)) {
		*err = -ENOENT;
		return NULL;
	}
	s = idx_find(&a->mem_idx, key);
	if (s >= 0)
		return &a->mem[s];
	s = idx_insert(&a->mem_idx, key);
	if (s < 0) {
		a->overflows[SHM_TABLE_GPU_MEM]++;
		*err = -ENOSPC;
		return NULL;
	}
	memset(&a->mem[s], 0, sizeof(a->mem[s]));
	a->mem[s].pid = pid;
	a->mem[s].gpu_id = gpu;
	/* A device seen through memory is a device of this node. */
	gpu_get(a, gpu, 1);
	return &a->mem[s];
}

int agg_gpu_alloc(struct agg *a, uint32_t pid, uint32_t gpu, uint64_t bytes)
{
	int err;
	struct shm_gpu_mem *m = mem_get(a, pid, gpu, &err);

	if (!m)
		return err;
	m->used_bytes = bytes > UINT64_MAX - m->used_bytes ? UINT64_MAX
							   : m->used_bytes + bytes;
	if (m->used_bytes > m->peak_bytes)
		m->peak_bytes = m->used_bytes;
	m->alloc_calls++;
	return 0;
}

int agg_gpu_free(struct agg *a, uint32_t pid, uint32_t gpu, uint64_t bytes)
{
	int err;
	struct shm_gpu_mem *m = mem_get(a, pid, gpu, &err);

	if (!m)
		return err;
	m->used_bytes = bytes > m->used_bytes ? 0 : m->used_bytes - bytes;
	m->free_calls++;
	return 0;
}

int agg_gpu_alloc_failed(struct agg *a, uint32_t pid, uint32_t gpu)
{
	int err;
	struct shm_gpu_mem *m = mem_get(a, pid, gpu, &err);

	if (!m)
		return err;
	m->failed_calls++;
	return 0;
}

int agg_gpu_total(struct agg *a, uint32_t gpu, uint64_t total_bytes, uint32_t source)
{
	struct shm_gpu *g;

	if (source > SHM_TOTAL_MAX_SOURCE)
		return -EINVAL;
	g = gpu_get(a, gpu, 1);
	if (!g)
		return -ENOSPC;
	g->total_bytes = total_bytes;
	g->total_source = total_bytes ? source : SHM_TOTAL_UNKNOWN;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* NCCL */

void agg_nccl_call(struct agg *a, enum shm_nccl_op_kind op, uint64_t bytes,
		   uint64_t duration_ns, int failed, uint64_t now_ns)
{
	struct agg_nccl *n;

	if ((unsigned int)op >= SHM_NCCL_OP_COUNT)
		return;
	n = &a->nccl[op];
	n->calls++;
	if (failed) {
		n->errors++;
	} else {
		n->bytes += bytes;
	}
	/* A failed call still cost its caller this long. */
	latency_record(&n->duration, now_ns, duration_ns);
}

void agg_nccl_wait(struct agg *a, enum shm_nccl_op_kind op, uint64_t wait_ns,
		   uint64_t now_ns)
{
	if ((unsigned int)op >= SHM_NCCL_OP_COUNT)
		return;
	latency_record(&a->nccl[op].wait, now_ns, wait_ns);
}

int agg_nccl_comm(struct agg *a, uint32_t pid, int32_t rank, int32_t nranks,
		  uint32_t gpu, uint64_t comm_id)
{
	struct shm_nccl_comm *c = NULL;

	if (!proc_get(a, pid))
		return -ENOENT;
	for (uint32_t i = 0; i < a->n_comms; i++) {
		if (a->comms[i].pid == pid && a->comms[i].comm_id == comm_id) {
			c = &a->comms[i];
			break;
		}
	}
	if (!c) {
		if (a->n_comms >= a->opts.cap.nccl_comms) {
			a->overflows[SHM_TABLE_NCCL_COMMS]++;
			return -ENOSPC;
		}
		c = &a->comms[a->n_comms++];
	}
	c->pid = pid;
	c->rank = rank;
	c->nranks = nranks;
	c->gpu_id = gpu;
	c->comm_id = comm_id;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Self-telemetry */

void agg_count_events(struct agg *a, uint64_t n)
{
	a->stats.events_total += n;
}

void agg_count_dropped(struct agg *a, uint64_t n)
{
	a->stats.events_dropped += n;
}

void agg_set_probes(struct agg *a, uint64_t probes_attached, uint64_t libraries_attached)
{
	a->stats.probes_attached = probes_attached;
	a->stats.libraries_attached = libraries_attached;
}

/* ---------------------------------------------------------------------- */
/* Publishing */

static uint32_t stage_procs(struct agg *a, uint64_t now_ns)
{
	uint32_t n = 0;

	for (uint32_t s = 0; s < a->proc_idx.cap; s++) {
		struct agg_proc *p = &a->procs[s];
		struct shm_proc *r = &a->stage_procs[n];

		if (!a->proc_idx.live[s])
			continue;
		memset(r, 0, sizeof(*r));
		r->pid = p->pid;
		r->ppid = p->ppid;
		r->watch_reason = p->watch_reason;
		r->start_time_ns = p->start_time_ns;
		memcpy(r->comm, p->comm, sizeof(r->comm));
		for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
			latency_export(&p->lat[f], now_ns, &r->lat[f]);
		r->offcpu_preempted_ns = p->offcpu_preempted_ns;
		r->offcpu_blocked_ns = p->offcpu_blocked_ns;
		r->involuntary_switches = p->involuntary_switches;
		r->voluntary_switches = p->voluntary_switches;
		r->migrations = p->migrations;
		n++;
	}
	return n;
}

static uint32_t stage_mem_and_gpus(struct agg *a)
{
	uint32_t n = 0;

	for (uint32_t g = 0; g < a->n_gpus; g++) {
		a->stage_gpus[g] = a->gpus[g];
		a->stage_gpus[g].used_bytes = 0;
		a->stage_gpus[g].processes = 0;
		a->stage_gpus[g].reserved0 = 0;
	}
	for (uint32_t s = 0; s < a->mem_idx.cap; s++) {
		const struct shm_gpu_mem *m = &a->mem[s];

		if (!a->mem_idx.live[s])
			continue;
		a->stage_mem[n++] = *m;
		for (uint32_t g = 0; g < a->n_gpus; g++) {
			struct shm_gpu *sg = &a->stage_gpus[g];

			if (sg->gpu_id != m->gpu_id)
				continue;
			sg->used_bytes += m->used_bytes;
			if (m->used_bytes)
				sg->processes++;
			break;
		}
	}
	return n;
}

static void stage_nccl(struct agg *a, uint64_t now_ns)
{
	for (unsigned int op = 0; op < SHM_NCCL_OP_COUNT; op++) {
		struct shm_nccl_op *r = &a->stage_nccl[op];

		memset(r, 0, sizeof(*r));
		r->op = op;
		r->calls = a->nccl[op].calls;
		r->bytes = a->nccl[op].bytes;
		r->errors = a->nccl[op].errors;
		latency_export(&a->nccl[op].duration, now_ns, &r->duration);
		latency_export(&a->nccl[op].wait, now_ns, &r->wait);
	}
}

/*
 * Copies n rows into a table, clamped to the capacity the segment really
 * has, and zeroes the rows the previous publish used beyond n so that the
 * mapping holds no stale process.
 */
static void put_table(struct agg *a, struct shm_writer *w, enum shm_table_id id,
		      const void *rows, uint32_t n, size_t entry_size)
{
	struct shm_table *t = &w->base->h.table[id];
	uint8_t *dst = shm_writer_table(w, id);
	uint32_t cap = t->capacity, prev = a->published[id];
	uint64_t refused = 0;

	if (!dst || t->entry_size != entry_size)
		return;
	if (n > cap) {
		refused = n - cap;
		n = cap;
	}
	memcpy(dst, rows, (size_t)n * entry_size);
	if (prev > cap)
		prev = cap;
	if (prev > n)
		memset(dst + (size_t)n * entry_size, 0, (size_t)(prev - n) * entry_size);
	t->count = n;
	t->overflows = a->overflows[id] + refused;
	a->published[id] = n;
}

void agg_publish(struct agg *a, struct shm_writer *w, uint64_t mono_ns,
		 uint64_t real_ns, const char *scenario)
{
	struct shm_header_fields *h = &w->base->h;
	uint64_t t0 = now_mono_ns();
	uint32_t n_procs, n_mem;

	/* Everything costly (quantiles above all) happens before begin. */
	n_procs = stage_procs(a, mono_ns);
	n_mem = stage_mem_and_gpus(a);
	stage_nccl(a, mono_ns);
	for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
		latency_export(&a->node[f], mono_ns, &a->stage_node[f]);
	a->stats.publishes++;

	shm_writer_begin(w);
	put_table(a, w, SHM_TABLE_PROCS, a->stage_procs, n_procs, sizeof(struct shm_proc));
	put_table(a, w, SHM_TABLE_GPU_MEM, a->stage_mem, n_mem, sizeof(struct shm_gpu_mem));
	put_table(a, w, SHM_TABLE_GPUS, a->stage_gpus, a->n_gpus, sizeof(struct shm_gpu));
	put_table(a, w, SHM_TABLE_NCCL_OPS, a->stage_nccl, SHM_NCCL_OP_COUNT,
		  sizeof(struct shm_nccl_op));
	put_table(a, w, SHM_TABLE_NCCL_COMMS, a->comms, a->n_comms,
		  sizeof(struct shm_nccl_comm));
	memcpy(h->node, a->stage_node, sizeof(h->node));
	h->heartbeat_mono_ns = mono_ns;
	h->heartbeat_real_ns = real_ns;
	memset(h->scenario, 0, sizeof(h->scenario));
	if (scenario)
		strncpy(h->scenario, scenario, sizeof(h->scenario) - 1);
	h->stats = a->stats;
	memset(h->stats.reserved, 0, sizeof(h->stats.reserved));
	shm_writer_end(w);

	a->stats.last_publish_duration_ns = now_mono_ns() - t0;
}
