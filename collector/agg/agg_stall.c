/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * agg_stall.h.  Rows are few (hundreds) and events rate-bounded in the
 * kernel, so plain arrays searched in order are enough.  Rows of a process
 * go when the aggregation evicts it (agg_stall_forget).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg/agg_impl.h"
#include "collector/agg/agg_stall.h"

/* The cumulative counters shm_proc_recent is the difference of. */
enum recent_value {
	RV_INPUT, RV_FUTEX, RV_BARRIER, RV_COLLECTIVE, RV_RUNQ, RV_BLOCKED, RV_PREEMPTED,
	RV_INVOLUNTARY, RV_FAILED_ALLOCS, RV_SITES, RV_STALL0,
	RV_THREAD0 = RV_STALL0 + SHM_STALL_STATE_COUNT,
	RV_COUNT = RV_THREAD0 + SHM_STATE_COUNT
};

struct recent_sample {
	uint64_t mono_ns;
	uint64_t v[RV_COUNT];
};

/* Per process slot of the aggregation (agg.proc_idx), reset when its pid changes. */
struct proc_extra {
	uint32_t pid;
	uint64_t collective_ns;
	uint64_t collective_until;	/* end of the waits already in collective_ns */
	uint64_t sites_ns;
	uint64_t stall_ns[SHM_STALL_STATE_COUNT];
	struct recent_sample ring[SHM_RECENT_SLOTS + 1];
	uint32_t n, head;		/* samples kept; the next to write */
};

struct agg_stalls {
	struct shm_py_proc py[SHM_PY_PROCS];
	uint32_t n_py;
	struct shm_stall_site site[SHM_STALL_SITES];
	uint32_t n_site;
	struct proc_extra *extra;	/* cap.procs */
	struct shm_proc_recent *stage;	/* cap.procs */
	uint32_t n_stage;
};

struct agg_stalls *agg_stalls_new(uint32_t procs)
{
	struct agg_stalls *s = calloc(1, sizeof(struct agg_stalls));

	if (!s)
		return NULL;
	s->extra = calloc(procs, sizeof(*s->extra));
	s->stage = calloc(procs, sizeof(*s->stage));
	if (!s->extra || !s->stage) {
		agg_stalls_free(s);
		return NULL;
	}
	return s;
}

void agg_stalls_free(struct agg_stalls *s)
{
	if (!s)
		return;
	free(s->extra);
	free(s->stage);
	free(s);
}

/* The extra counters of a watched pid, or NULL. */
static struct proc_extra *extra_of(struct agg *a, uint32_t pid)
{
	int32_t slot = keyindex_find(&a->proc_idx, pid, 0);
	struct proc_extra *e;

	if (slot < 0)
		return NULL;
	e = &a->stalls->extra[slot];
	if (e->pid != pid) {
		memset(e, 0, sizeof(*e));
		e->pid = pid;
	}
	return e;
}

int agg_collective_wait(struct agg *a, uint32_t pid, uint64_t ns)
{
	struct proc_extra *e = extra_of(a, pid);

	if (!e)
		return -ENOENT;
	e->collective_ns += ns;
	return 0;
}

int agg_collective_span(struct agg *a, uint32_t pid, uint64_t start_ns, uint64_t end_ns)
{
	struct proc_extra *e = extra_of(a, pid);

	if (!e)
		return -ENOENT;
	if (start_ns < e->collective_until)
		start_ns = e->collective_until;
	if (end_ns > start_ns) {
		e->collective_ns += end_ns - start_ns;
		e->collective_until = end_ns;
	}
	return 0;
}

static struct shm_py_proc *py_row(struct agg *a, uint32_t pid)
{
	struct agg_stalls *s = a->stalls;

	for (uint32_t i = 0; i < s->n_py; i++)
		if (s->py[i].pid == pid)
			return &s->py[i];
	if (s->n_py == SHM_PY_PROCS) {
		a->overflows[SHM_TABLE_PY_PROCS]++;
		return NULL;
	}
	memset(&s->py[s->n_py], 0, sizeof(s->py[0]));
	s->py[s->n_py].pid = pid;
	return &s->py[s->n_py++];
}

/* The Python row of a watched process: -ENOENT if not watched, -ENOSPC if no room. */
static int watched_py_row(struct agg *a, uint32_t pid, struct shm_py_proc **p)
{
	if (!agg_proc_is_watched(a, pid))
		return -ENOENT;
	*p = py_row(a, pid);
	return *p ? 0 : -ENOSPC;
}

int agg_py_status(struct agg *a, uint32_t pid, uint32_t status, uint32_t major,
		  uint32_t minor)
{
	struct shm_py_proc *p;
	int err = watched_py_row(a, pid, &p);

	if (err)
		return err;
	p->status = status;
	p->major = major;
	p->minor = minor;
	return 0;
}

int agg_stall_unsampled(struct agg *a, uint32_t pid, uint64_t stalls, uint64_t ns)
{
	struct shm_py_proc *p;
	int err = watched_py_row(a, pid, &p);

	if (err)
		return err;
	p->unsampled_stalls += stalls;
	p->unsampled_ns += ns;
	return 0;
}

/* Stall time by state, for the recent table; sites_ns when a site is known. */
static void count_state(struct agg *a, uint32_t pid, uint32_t state, uint64_t ns, int site)
{
	struct proc_extra *e = extra_of(a, pid);

	if (!e || state >= SHM_STALL_STATE_COUNT)
		return;
	e->stall_ns[state] += ns;
	if (site)
		e->sites_ns += ns;
}

static int same_site(const struct shm_stall_site *r, uint32_t pid, uint32_t state,
		     const struct stall_frame *f)
{
	return r->pid == pid && r->state == state && r->line == f->line &&
	       strncmp(r->file, f->file, sizeof(r->file)) == 0 &&
	       strncmp(r->func, f->func, sizeof(r->func)) == 0;
}

static void copy_text(char *dst, const char *src, size_t len)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	memset(dst + n, 0, len - n);
}

int agg_stall(struct agg *a, uint32_t pid, uint32_t tid, uint32_t state, uint64_t ns,
	      uint64_t now_ns, const struct stall_where *where)
{
	int main_thread = tid == pid;

	struct agg_stalls *s = a->stalls;
	struct shm_stall_site *r = NULL;

	if (!agg_proc_is_watched(a, pid))
		return -ENOENT;
	if (state >= SHM_STALL_STATE_COUNT)
		return -EINVAL;
	if (!where) {
		if (main_thread)
			count_state(a, pid, state, ns, 0);
		return agg_stall_unsampled(a, pid, 1, ns);
	}
	for (uint32_t i = 0; i < s->n_site && !r; i++)
		if (same_site(&s->site[i], pid, state, &where->site))
			r = &s->site[i];
	if (!r) {
		if (s->n_site == SHM_STALL_SITES) {
			a->overflows[SHM_TABLE_STALL_SITES]++;
			if (main_thread)
				count_state(a, pid, state, ns, 0);
			return agg_stall_unsampled(a, pid, 1, ns);
		}
		r = &s->site[s->n_site++];
		memset(r, 0, sizeof(*r));
		r->pid = pid;
		r->state = state;
		r->native_stack = -1;
		r->line = where->site.line;
		copy_text(r->file, where->site.file, sizeof(r->file));
		copy_text(r->func, where->site.func, sizeof(r->func));
	}
	/* The leaf shown is the last one's: a site reached through many calls names one. */
	r->leaf_line = where->leaf.line;
	copy_text(r->leaf_file, where->leaf.file, sizeof(r->leaf_file));
	copy_text(r->leaf_func, where->leaf.func, sizeof(r->leaf_func));
	if (main_thread)
		count_state(a, pid, state, ns, 1);
	r->stalls++;
	r->total_ns += ns;
	if (ns > r->max_ns)
		r->max_ns = ns;
	r->last_mono_ns = now_ns;
	/* The probe takes a site's user stack at its next stall there: keep the last taken. */
	if (where->native_stack >= 0)
		r->native_stack = where->native_stack;
	r->flags |= where->flags;
	return 0;
}

void agg_stalls_forget(struct agg_stalls *s, uint32_t pid, int32_t slot)
{
	uint32_t k = 0;

	/*
	 * The slot's counters go too: the same pid after exec (or reused)
	 * takes the slot back, and its recent rows must not be differences
	 * with the old program's samples.
	 */
	memset(&s->extra[slot], 0, sizeof(s->extra[slot]));

	for (uint32_t i = 0; i < s->n_py; i++)
		if (s->py[i].pid != pid)
			s->py[k++] = s->py[i];
	s->n_py = k;
	k = 0;
	for (uint32_t i = 0; i < s->n_site; i++)
		if (s->site[i].pid != pid)
			s->site[k++] = s->site[i];
	s->n_site = k;
}

void agg_stalls_rows(const struct agg_stalls *s, const struct shm_py_proc **py,
		     uint32_t *n_py, const struct shm_stall_site **site, uint32_t *n_site)
{
	*py = s->py;
	*n_py = s->n_py;
	*site = s->site;
	*n_site = s->n_site;
}

static void current_values(struct agg *a, uint32_t slot, const struct proc_extra *e,
			   uint64_t *v)
{
	const struct agg_proc *p = &a->procs[slot];

	memset(v, 0, RV_COUNT * sizeof(*v));
	v[RV_INPUT] = p->lat[SHM_FAMILY_DATALOADER_WAIT].sum_ns;
	v[RV_FUTEX] = p->lat[SHM_FAMILY_FUTEX_WAIT].sum_ns;
	v[RV_BARRIER] = p->lat[SHM_FAMILY_BARRIER_WAIT].sum_ns;
	v[RV_RUNQ] = p->lat[SHM_FAMILY_RUNQ_DELAY].sum_ns;
	v[RV_BLOCKED] = p->offcpu_blocked_ns;
	v[RV_PREEMPTED] = p->offcpu_preempted_ns;
	v[RV_INVOLUNTARY] = p->involuntary_switches;
	v[RV_COLLECTIVE] = e->collective_ns;
	v[RV_SITES] = e->sites_ns;
	for (uint32_t st = 0; st < SHM_STALL_STATE_COUNT; st++)
		v[RV_STALL0 + st] = e->stall_ns[st];
	for (uint32_t st = 0; st < SHM_STATE_COUNT; st++)
		v[RV_THREAD0 + st] = p->shown_state_ns[st];
	for (uint32_t m = 0; m < keyindex_top(&a->mem_idx); m++)
		if (keyindex_live(&a->mem_idx, m) && a->mem[m].pid == p->pid)
			v[RV_FAILED_ALLOCS] += a->mem[m].failed_calls;
}

/*
 * One process's recent row: a sample of its counters at least every
 * window / SHM_RECENT_SLOTS, and the difference with the oldest sample
 * still inside the window (the first one, while it is younger).
 */
static void recent_row(struct agg *a, uint32_t slot, uint64_t now_ns, struct shm_proc_recent *r)
{
	struct proc_extra *e = extra_of(a, a->procs[slot].pid);
	uint64_t step = a->opts.window_ns / SHM_RECENT_SLOTS, cur[RV_COUNT];
	const struct recent_sample *base = NULL, *last;
	uint32_t ring = SHM_RECENT_SLOTS + 1;

	current_values(a, slot, e, cur);
	last = e->n ? &e->ring[(e->head + ring - 1) % ring] : NULL;
	if (!last || now_ns - last->mono_ns >= step) {
		e->ring[e->head].mono_ns = now_ns;
		memcpy(e->ring[e->head].v, cur, sizeof(cur));
		e->head = (e->head + 1) % ring;
		if (e->n < ring)
			e->n++;
	}
	for (uint32_t k = 0; k < e->n; k++) {
		const struct recent_sample *smp = &e->ring[(e->head + ring - e->n + k) % ring];

		if (now_ns - smp->mono_ns <= a->opts.window_ns) {
			base = smp;
			break;
		}
	}
	memset(r, 0, sizeof(*r));
	r->pid = e->pid;
	if (!base)
		return;
	r->covered_ns = now_ns - base->mono_ns;
	r->input_wait_ns = cur[RV_INPUT] - base->v[RV_INPUT];
	r->futex_wait_ns = cur[RV_FUTEX] - base->v[RV_FUTEX];
	r->barrier_wait_ns = cur[RV_BARRIER] - base->v[RV_BARRIER];
	r->collective_wait_ns = cur[RV_COLLECTIVE] - base->v[RV_COLLECTIVE];
	r->runq_ns = cur[RV_RUNQ] - base->v[RV_RUNQ];
	r->blocked_ns = cur[RV_BLOCKED] - base->v[RV_BLOCKED];
	r->preempted_ns = cur[RV_PREEMPTED] - base->v[RV_PREEMPTED];
	r->involuntary_switches = cur[RV_INVOLUNTARY] - base->v[RV_INVOLUNTARY];
	r->failed_allocs = cur[RV_FAILED_ALLOCS] - base->v[RV_FAILED_ALLOCS];
	r->stall_sites_ns = cur[RV_SITES] - base->v[RV_SITES];
	for (uint32_t st = 0; st < SHM_STALL_STATE_COUNT; st++)
		r->stall_ns[st] = cur[RV_STALL0 + st] - base->v[RV_STALL0 + st];
	for (uint32_t st = 0; st < SHM_STATE_COUNT; st++)
		r->thread_state_ns[st] = cur[RV_THREAD0 + st] - base->v[RV_THREAD0 + st];
}

const struct shm_proc_recent *agg_stalls_recent(struct agg *a, uint64_t now_ns, uint32_t *n)
{
	struct agg_stalls *s = a->stalls;

	s->n_stage = 0;
	for (uint32_t slot = 0; slot < keyindex_top(&a->proc_idx); slot++)
		if (keyindex_live(&a->proc_idx, slot))
			recent_row(a, slot, now_ns, &s->stage[s->n_stage++]);
	*n = s->n_stage;
	return s->stage;
}
