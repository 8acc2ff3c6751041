/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proc_seen.h.  Processes by pid in the collector's hash table
 * (keyindex.h), each slot's program and files in arrays beside it; the
 * files the processes map, each with how many map it, in a small array
 * (a node has a few dozen distinct library files that are probed and not
 * kept for good).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collector/agg/keyindex.h"
#include "collector/probes/proc_seen.h"

/* Processes remembered at most; past that, the others are read at every scan. */
#define PS_MAX_PROCS	65536u

struct ps_file {
	uint64_t dev, ino;
};

struct ps_entry {
	uint64_t exe_dev, exe_ino;	/* the program; 0, 0 when /proc says none */
	uint64_t scan;			/* the last scan that found it */
	uint32_t reasons;		/* what its maps gave (proc_seen_set_reasons) */
	struct ps_file *files;
	uint32_t n_files;
};

struct ps_count {
	struct ps_file f;
	uint32_t n;			/* processes that map it */
};

struct proc_seen {
	struct keyindex ix;		/* pid -> slot */
	struct ps_entry *e;		/* by slot */
	struct ps_count *counts;
	uint32_t n_counts, cap_counts;
};

static struct ps_entry *find(const struct proc_seen *ps, uint32_t pid)
{
	int32_t slot = keyindex_find(&ps->ix, pid, 0);

	return slot < 0 ? NULL : &ps->e[slot];
}

static struct ps_count *count_of(const struct proc_seen *ps, uint64_t dev, uint64_t ino)
{
	for (uint32_t i = 0; i < ps->n_counts; i++)
		if (ps->counts[i].f.dev == dev && ps->counts[i].f.ino == ino)
			return &ps->counts[i];
	return NULL;
}

static void release_files(struct proc_seen *ps, struct ps_entry *e)
{
	for (uint32_t k = 0; k < e->n_files; k++) {
		struct ps_count *c = count_of(ps, e->files[k].dev, e->files[k].ino);

		if (c && --c->n == 0)
			*c = ps->counts[--ps->n_counts];
	}
	free(e->files);
	e->files = NULL;
	e->n_files = 0;
}

struct proc_seen *proc_seen_new(void)
{
	struct proc_seen *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	/* calloc: slots are touched only as processes fill them. */
	ps->e = calloc(PS_MAX_PROCS, sizeof(*ps->e));
	if (!ps->e || keyindex_init(&ps->ix, PS_MAX_PROCS, 0) < 0) {
		proc_seen_free(ps);
		return NULL;
	}
	return ps;
}

void proc_seen_free(struct proc_seen *ps)
{
	if (!ps)
		return;
	for (uint32_t i = 0; ps->e && i < keyindex_top(&ps->ix); i++)
		free(ps->e[i].files);
	keyindex_destroy(&ps->ix);
	free(ps->e);
	free(ps->counts);
	free(ps);
}

int proc_seen_mark(struct proc_seen *ps, uint32_t pid, uint64_t scan, int full, int fresh)
{
	struct ps_entry *e = find(ps, pid);
	uint64_t dev = 0, ino = 0;
	struct stat st;
	char path[48];
	int32_t slot;

	/* Neither forked nor exec'd since: the program it ran. */
	if (e && !fresh && !full) {
		e->scan = scan;
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	if (stat(path, &st) == 0) {
		dev = st.st_dev;
		ino = st.st_ino;
	}
	if (e) {
		int same = e->exe_dev == dev && e->exe_ino == ino;

		e->scan = scan;
		if (same && !full)
			return 0;
		release_files(ps, e);
		e->reasons = 0;
	} else {
		slot = keyindex_insert(&ps->ix, pid, 0);
		if (slot < 0)
			return -ENOMEM;
		e = &ps->e[slot];
		memset(e, 0, sizeof(*e));
		e->scan = scan;
	}
	e->exe_dev = dev;
	e->exe_ino = ino;
	return 1;
}

static void add_file(struct proc_seen *ps, struct ps_entry *e, uint64_t dev, uint64_t ino)
{
	struct ps_file *files;
	struct ps_count *c;

	for (uint32_t k = 0; k < e->n_files; k++)
		if (e->files[k].dev == dev && e->files[k].ino == ino)
			return;
	c = count_of(ps, dev, ino);
	if (!c) {
		if (ps->n_counts == ps->cap_counts) {
			uint32_t cap = ps->cap_counts ? ps->cap_counts * 2 : 16;
			struct ps_count *grown = realloc(ps->counts, cap * sizeof(*grown));

			if (!grown)
				return;
			ps->counts = grown;
			ps->cap_counts = cap;
		}
		c = &ps->counts[ps->n_counts++];
		c->f.dev = dev;
		c->f.ino = ino;
		c->n = 0;
	}
	files = realloc(e->files, (e->n_files + 1) * sizeof(*files));
	if (!files) {
		if (c->n == 0)
			*c = ps->counts[--ps->n_counts];
		return;
	}
	e->files = files;
	e->files[e->n_files].dev = dev;
	e->files[e->n_files].ino = ino;
	e->n_files++;
	c->n++;
}

int proc_seen_inherit(struct proc_seen *ps, uint32_t pid, uint32_t ppid, uint64_t scan)
{
	struct ps_entry *e = find(ps, pid);
	const struct ps_entry *parent = find(ps, ppid);

	/* Marked at this scan: the parent's files are what it maps now. */
	if (!e || e->n_files || !parent || parent == e || parent->scan != scan)
		return -ENOENT;
	/* Another program: the process was reparented, or ran exec since. */
	if (!e->exe_ino || e->exe_dev != parent->exe_dev || e->exe_ino != parent->exe_ino)
		return -ENOENT;
	for (uint32_t k = 0; k < parent->n_files; k++)
		add_file(ps, e, parent->files[k].dev, parent->files[k].ino);
	e->reasons = parent->reasons;
	return (int)e->reasons;
}

void proc_seen_set_reasons(struct proc_seen *ps, uint32_t pid, uint32_t reasons)
{
	struct ps_entry *e = find(ps, pid);

	if (e)
		e->reasons |= reasons;
}

void proc_seen_add_file(struct proc_seen *ps, uint32_t pid, uint64_t dev, uint64_t ino)
{
	struct ps_entry *e = find(ps, pid);

	if (e)
		add_file(ps, e, dev, ino);
}

void proc_seen_sweep(struct proc_seen *ps, uint64_t scan)
{
	for (uint32_t i = 0; i < keyindex_top(&ps->ix); i++) {
		if (!keyindex_live(&ps->ix, i) || ps->e[i].scan == scan)
			continue;
		release_files(ps, &ps->e[i]);
		keyindex_remove(&ps->ix, (int32_t)i);
	}
}

uint32_t proc_seen_mappers(const struct proc_seen *ps, uint64_t dev, uint64_t ino)
{
	const struct ps_count *c = count_of(ps, dev, ino);

	return c ? c->n : 0;
}

uint32_t proc_seen_count(const struct proc_seen *ps)
{
	return ps->ix.used;
}
