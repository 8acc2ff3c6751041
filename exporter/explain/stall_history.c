/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stall_history.h.  A ring of samples, each a fixed array of processes
 * and of sites sorted by key.  A process is known by pid and start time,
 * so a reused pid is another process; a site by a hash of its process
 * (both again), state, file, line and function, so it stays the same row
 * across samples while the collector's table reorders.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/explain/stall_history.h"

/* The cumulative counters a window's recent row is the difference of. */
enum hist_value {
	HV_THREAD0,
	HV_INPUT = HV_THREAD0 + SHM_STATE_COUNT,
	HV_FUTEX, HV_BARRIER, HV_COLLECTIVE, HV_RUNQ, HV_BLOCKED, HV_PREEMPTED,
	HV_INVOLUNTARY, HV_FAILED_ALLOCS,
	HV_COUNT
};

struct hist_proc {
	uint32_t pid;
	uint32_t reserved0;
	uint64_t start_time_ns;
	uint64_t v[HV_COUNT];
};

struct hist_site {
	uint64_t key;
	uint64_t stalls;
	uint64_t ns;
};

struct hist_sample {
	uint64_t t_ns;			/* the snapshot's heartbeat */
	uint32_t n_procs, n_sites;
	uint64_t procs_dropped, sites_dropped;
	struct hist_proc proc[STALL_HISTORY_PROCS];
	struct hist_site site[STALL_HISTORY_SITES];	/* sorted by key */
};

struct stall_history {
	uint64_t generation;		/* of the samples held */
	uint32_t head, n;		/* the next to write; samples held */
	struct hist_sample *s;		/* STALL_HISTORY_SAMPLES */
};

struct stall_history *stall_history_new(void)
{
	struct stall_history *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->s = calloc(STALL_HISTORY_SAMPLES, sizeof(*h->s));
	if (!h->s) {
		free(h);
		errno = ENOMEM;
		return NULL;
	}
	return h;
}

void stall_history_free(struct stall_history *h)
{
	if (!h)
		return;
	free(h->s);
	free(h);
}

/* Sample k of those held, 0 the oldest. */
static const struct hist_sample *at(const struct stall_history *h, uint32_t k)
{
	return &h->s[(h->head + STALL_HISTORY_SAMPLES - h->n + k) % STALL_HISTORY_SAMPLES];
}

static uint64_t start_time_of(const struct shm_snapshot *snap, uint32_t pid)
{
	const struct shm_proc *p;
	uint32_t n;

	p = shm_snapshot_rows(snap, SHM_TABLE_PROCS, &n);
	for (uint32_t i = 0; i < n; i++)
		if (p[i].pid == pid)
			return p[i].start_time_ns;
	return 0;
}

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
	const unsigned char *b = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t site_key(const struct shm_snapshot *snap, const struct shm_stall_site *s)
{
	uint64_t start = start_time_of(snap, s->pid), h = 0xcbf29ce484222325ull;

	h = fnv(h, &s->pid, sizeof(s->pid));
	h = fnv(h, &start, sizeof(start));
	h = fnv(h, &s->state, sizeof(s->state));
	h = fnv(h, &s->line, sizeof(s->line));
	h = fnv(h, s->file, strnlen(s->file, sizeof(s->file)));
	h = fnv(h, "", 1);
	return fnv(h, s->func, strnlen(s->func, sizeof(s->func)));
}

/*
 * p's counters now.  Collective waits: those of its communicators added
 * up (the collector's own window merges overlapping waits; the segment
 * keeps no such total), used only where its threads' states are unknown.
 */
static void cumulative(const struct shm_snapshot *snap, const struct shm_proc *p, uint64_t *v)
{
	const struct shm_nccl_comm *comm;
	const struct shm_gpu_mem *mem;
	uint32_t n;

	memset(v, 0, HV_COUNT * sizeof(*v));
	for (uint32_t st = 0; st < SHM_STATE_COUNT; st++)
		v[HV_THREAD0 + st] = p->thread_state_ns[st];
	v[HV_INPUT] = p->lat[SHM_FAMILY_DATALOADER_WAIT].sum_ns;
	v[HV_FUTEX] = p->lat[SHM_FAMILY_FUTEX_WAIT].sum_ns;
	v[HV_BARRIER] = p->lat[SHM_FAMILY_BARRIER_WAIT].sum_ns;
	v[HV_RUNQ] = p->lat[SHM_FAMILY_RUNQ_DELAY].sum_ns;
	v[HV_BLOCKED] = p->offcpu_blocked_ns;
	v[HV_PREEMPTED] = p->offcpu_preempted_ns;
	v[HV_INVOLUNTARY] = p->involuntary_switches;
	comm = shm_snapshot_rows(snap, SHM_TABLE_NCCL_COMMS, &n);
	for (uint32_t i = 0; i < n; i++)
		if (comm[i].pid == p->pid)
			v[HV_COLLECTIVE] += comm[i].wait.sum_ns;
	mem = shm_snapshot_rows(snap, SHM_TABLE_GPU_MEM, &n);
	for (uint32_t i = 0; i < n; i++)
		if (mem[i].pid == p->pid)
			v[HV_FAILED_ALLOCS] += mem[i].failed_calls;
}

/* It launches kernels, holds a communicator or has its Python frames read. */
static int trainer_like(const struct shm_snapshot *snap, const struct shm_proc *p)
{
	const struct shm_nccl_comm *comm;
	const struct shm_py_proc *py;
	uint32_t n;

	if (p->lat[SHM_FAMILY_CUDA_LAUNCH].count || p->lat[SHM_FAMILY_CUDA_GRAPH_LAUNCH].count)
		return 1;
	comm = shm_snapshot_rows(snap, SHM_TABLE_NCCL_COMMS, &n);
	for (uint32_t i = 0; i < n; i++)
		if (comm[i].pid == p->pid)
			return 1;
	py = shm_snapshot_rows(snap, SHM_TABLE_PY_PROCS, &n);
	for (uint32_t i = 0; i < n; i++)
		if (py[i].pid == p->pid && py[i].status == SHM_PY_FRAMES)
			return 1;
	return 0;
}

static int by_key(const void *a, const void *b)
{
	uint64_t x = ((const struct hist_site *)a)->key, y = ((const struct hist_site *)b)->key;

	return x < y ? -1 : x > y;
}

static void fill(struct hist_sample *smp, const struct shm_snapshot *snap)
{
	const struct shm_stall_site *site;
	const struct shm_proc *p;
	uint32_t n;

	smp->t_ns = snap->hdr->heartbeat_mono_ns;
	smp->n_procs = smp->n_sites = 0;
	smp->procs_dropped = smp->sites_dropped = 0;
	p = shm_snapshot_rows(snap, SHM_TABLE_PROCS, &n);
	/* Trainers first: they are the ones judged, and the bound must not leave them out. */
	for (int trainers = 1; trainers >= 0; trainers--) {
		for (uint32_t i = 0; i < n; i++) {
			struct hist_proc *hp;

			if (trainer_like(snap, &p[i]) != trainers)
				continue;
			if (smp->n_procs == STALL_HISTORY_PROCS) {
				smp->procs_dropped++;
				continue;
			}
			hp = &smp->proc[smp->n_procs++];
			hp->pid = p[i].pid;
			hp->start_time_ns = p[i].start_time_ns;
			cumulative(snap, &p[i], hp->v);
		}
	}
	site = shm_snapshot_rows(snap, SHM_TABLE_STALL_SITES, &n);
	for (uint32_t i = 0; i < n; i++) {
		struct hist_site *hs;

		if (smp->n_sites == STALL_HISTORY_SITES) {
			smp->sites_dropped++;
			continue;
		}
		hs = &smp->site[smp->n_sites++];
		hs->key = site_key(snap, &site[i]);
		hs->stalls = site[i].stalls;
		hs->ns = site[i].total_ns;
	}
	qsort(smp->site, smp->n_sites, sizeof(smp->site[0]), by_key);
}

int stall_history_note(struct stall_history *h, const struct shm_snapshot *snap)
{
	uint64_t t = snap->hdr->heartbeat_mono_ns;

	if (h->n && (snap->hdr->generation != h->generation || t < at(h, h->n - 1)->t_ns))
		h->n = 0;
	if (h->n && t - at(h, h->n - 1)->t_ns < STALL_HISTORY_PERIOD_NS)
		return 0;
	h->generation = snap->hdr->generation;
	fill(&h->s[h->head], snap);
	h->head = (h->head + 1) % STALL_HISTORY_SAMPLES;
	if (h->n < STALL_HISTORY_SAMPLES)
		h->n++;
	return 1;
}

void stall_history_window(const struct stall_history *h, const struct shm_snapshot *snap,
			  uint64_t asked_ns, struct stall_window *w)
{
	uint64_t now = snap->hdr->heartbeat_mono_ns, target, best = UINT64_MAX;
	uint32_t n = snap->hdr->generation == h->generation ? h->n : 0;

	memset(w, 0, sizeof(*w));
	w->h = h;
	w->snap = snap;
	w->base = -1;
	w->now_ns = now;
	w->asked_ns = asked_ns;
	target = now > asked_ns ? now - asked_ns : 0;
	for (uint32_t k = 0; k < n; k++) {
		uint64_t t = at(h, k)->t_ns, d = t > target ? t - target : target - t;

		if (t >= now)
			break;
		if (w->base < 0)
			w->held_ns = now - t;
		if (d < best) {
			best = d;
			w->base = (int)k;
		}
	}
	if (w->base < 0)
		return;
	w->span_ns = now - at(h, (uint32_t)w->base)->t_ns;
	/* Nearest sample: a span within half a period of the one asked is what was asked. */
	w->covered = now - w->held_ns <= target + STALL_HISTORY_PERIOD_NS / 2;
	w->procs_dropped = at(h, n - 1)->procs_dropped;
	w->sites_dropped = at(h, n - 1)->sites_dropped;
}

static const struct hist_proc *find_proc(const struct hist_sample *smp, uint32_t pid,
					 uint64_t start_time_ns)
{
	for (uint32_t i = 0; i < smp->n_procs; i++)
		if (smp->proc[i].pid == pid && smp->proc[i].start_time_ns == start_time_ns)
			return &smp->proc[i];
	return NULL;
}

/* The first sample of the window holding the process; -1 when none does. */
static int proc_base(const struct stall_window *w, uint32_t pid, uint64_t start_time_ns,
		     const struct hist_proc **row)
{
	if (w->base < 0)
		return -1;
	for (uint32_t k = (uint32_t)w->base; k < w->h->n; k++) {
		const struct hist_sample *smp = at(w->h, k);

		if (smp->t_ns >= w->now_ns)
			break;
		*row = find_proc(smp, pid, start_time_ns);
		if (*row)
			return (int)k;
	}
	return -1;
}

void stall_window_site(const struct stall_window *w, const struct shm_stall_site *s,
		       uint64_t *stalls, uint64_t *ns)
{
	const struct hist_proc *row;
	const struct hist_sample *smp;
	struct hist_site key, *was;
	int k;

	*stalls = *ns = 0;
	if (w->base < 0)
		return;
	/* From where its process's window starts: both then cover the same span. */
	k = proc_base(w, s->pid, start_time_of(w->snap, s->pid), &row);
	smp = at(w->h, (uint32_t)(k < 0 ? w->base : k));
	key.key = site_key(w->snap, s);
	was = bsearch(&key, smp->site, smp->n_sites, sizeof(smp->site[0]), by_key);
	*stalls = s->stalls;
	*ns = s->total_ns;
	if (was) {
		*stalls = s->stalls > was->stalls ? s->stalls - was->stalls : 0;
		*ns = s->total_ns > was->ns ? s->total_ns - was->ns : 0;
	}
}

static uint64_t diff(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

int stall_window_proc(const struct stall_window *w, const struct shm_proc *p,
		      struct shm_proc_recent *out)
{
	const struct shm_stall_site *site;
	const struct hist_proc *was;
	uint64_t v[HV_COUNT];
	uint32_t n;
	int k = proc_base(w, p->pid, p->start_time_ns, &was);

	memset(out, 0, sizeof(*out));
	out->pid = p->pid;
	if (k < 0)
		return -ENOENT;
	cumulative(w->snap, p, v);
	out->covered_ns = w->now_ns - at(w->h, (uint32_t)k)->t_ns;
	for (uint32_t st = 0; st < SHM_STATE_COUNT; st++)
		out->thread_state_ns[st] = diff(v[HV_THREAD0 + st], was->v[HV_THREAD0 + st]);
	out->input_wait_ns = diff(v[HV_INPUT], was->v[HV_INPUT]);
	out->futex_wait_ns = diff(v[HV_FUTEX], was->v[HV_FUTEX]);
	out->barrier_wait_ns = diff(v[HV_BARRIER], was->v[HV_BARRIER]);
	out->collective_wait_ns = diff(v[HV_COLLECTIVE], was->v[HV_COLLECTIVE]);
	out->runq_ns = diff(v[HV_RUNQ], was->v[HV_RUNQ]);
	out->blocked_ns = diff(v[HV_BLOCKED], was->v[HV_BLOCKED]);
	out->preempted_ns = diff(v[HV_PREEMPTED], was->v[HV_PREEMPTED]);
	out->involuntary_switches = diff(v[HV_INVOLUNTARY], was->v[HV_INVOLUNTARY]);
	out->failed_allocs = diff(v[HV_FAILED_ALLOCS], was->v[HV_FAILED_ALLOCS]);
	/* Python stall time by state: its sites' (every thread's; the collector's is its main thread's). */
	site = shm_snapshot_rows(w->snap, SHM_TABLE_STALL_SITES, &n);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t stalls, ns;

		if (site[i].pid != p->pid || site[i].state >= SHM_STALL_STATE_COUNT)
			continue;
		stall_window_site(w, &site[i], &stalls, &ns);
		out->stall_ns[site[i].state] += ns;
		out->stall_sites_ns += ns;
	}
	return 0;
}
