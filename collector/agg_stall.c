/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * agg_stall.h.  Rows are few (hundreds) and events rate-bounded in the
 * kernel, so plain arrays searched in order are enough.  Rows of a process
 * go when the aggregation evicts it (agg_stall_forget).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg_impl.h"
#include "collector/agg_stall.h"

struct agg_stalls {
	struct shm_py_proc py[SHM_PY_PROCS];
	uint32_t n_py;
	struct shm_stall_site site[SHM_STALL_SITES];
	uint32_t n_site;
};

struct agg_stalls *agg_stalls_new(void)
{
	return calloc(1, sizeof(struct agg_stalls));
}

void agg_stalls_free(struct agg_stalls *s)
{
	free(s);
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

int agg_py_status(struct agg *a, uint32_t pid, uint32_t status, uint32_t major,
		  uint32_t minor)
{
	struct shm_py_proc *p;

	if (!agg_proc_is_watched(a, pid))
		return -ENOENT;
	p = py_row(a, pid);
	if (!p)
		return -ENOSPC;
	p->status = status;
	p->major = major;
	p->minor = minor;
	return 0;
}

int agg_stall_unsampled(struct agg *a, uint32_t pid, uint64_t stalls, uint64_t ns)
{
	struct shm_py_proc *p;

	if (!agg_proc_is_watched(a, pid))
		return -ENOENT;
	p = py_row(a, pid);
	if (!p)
		return -ENOSPC;
	p->unsampled_stalls += stalls;
	p->unsampled_ns += ns;
	return 0;
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

int agg_stall(struct agg *a, uint32_t pid, uint32_t state, uint64_t ns, uint64_t now_ns,
	      const struct stall_where *where)
{
	struct agg_stalls *s = a->stalls;
	struct shm_stall_site *r = NULL;

	if (!agg_proc_is_watched(a, pid))
		return -ENOENT;
	if (state >= SHM_STALL_STATE_COUNT)
		return -EINVAL;
	if (!where)
		return agg_stall_unsampled(a, pid, 1, ns);
	for (uint32_t i = 0; i < s->n_site && !r; i++)
		if (same_site(&s->site[i], pid, state, &where->site))
			r = &s->site[i];
	if (!r) {
		if (s->n_site == SHM_STALL_SITES) {
			a->overflows[SHM_TABLE_STALL_SITES]++;
			return agg_stall_unsampled(a, pid, 1, ns);
		}
		r = &s->site[s->n_site++];
		memset(r, 0, sizeof(*r));
		r->pid = pid;
		r->state = state;
		r->line = where->site.line;
		copy_text(r->file, where->site.file, sizeof(r->file));
		copy_text(r->func, where->site.func, sizeof(r->func));
	}
	/* The leaf shown is the last one's: a site reached through many calls names one. */
	r->leaf_line = where->leaf.line;
	copy_text(r->leaf_file, where->leaf.file, sizeof(r->leaf_file));
	copy_text(r->leaf_func, where->leaf.func, sizeof(r->leaf_func));
	r->stalls++;
	r->total_ns += ns;
	if (ns > r->max_ns)
		r->max_ns = ns;
	r->last_mono_ns = now_ns;
	r->native_stack = where->native_stack;
	r->flags |= where->flags;
	return 0;
}

void agg_stalls_forget(struct agg_stalls *s, uint32_t pid)
{
	uint32_t k = 0;

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
