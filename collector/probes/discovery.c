/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The /proc scanner (discovery.h): /proc/PID/maps for the libraries a
 * process maps, and what each process is (collector/proc/proc_stat.h).
 * It reports; the loader (probes.c) attaches and watches.  Root.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/probe_abi.h"
#include "collector/probes/discovery.h"
#include "collector/proc/proc_stat.h"
#include "shm/shm_consts.h"

unsigned int discovery_lib_kind(const char *path)
{
	static const struct {
		const char *prefix;
		unsigned int kind;
	} names[] = {
		{ "libcuda.so", PROBE_LIB_CUDA },
		{ "libcudart.so", PROBE_LIB_CUDART },
		{ "libnccl.so", PROBE_LIB_NCCL },
		{ "libzernel-nccl-profiler.so", PROBE_LIB_NCCL_PROFILER },
	};
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i].prefix);

		/* "libcuda.so" or "libcuda.so.<version>", not "libcudart.so" */
		if (strncmp(base, names[i].prefix, n) == 0 &&
		    (base[n] == '\0' || base[n] == '.'))
			return names[i].kind;
	}
	/* The dynamic loader: ld-linux-x86-64.so.2, ld-linux-aarch64.so.1. */
	if (strncmp(base, "ld-linux", 8) == 0 && strstr(base, ".so"))
		return PROBE_LIB_LOADER;
	/* libc.so.6 holds the barrier since glibc 2.34; libpthread.so.0 before. */
	if (strcmp(base, "libc.so.6") == 0 || strcmp(base, "libpthread.so.0") == 0 ||
	    strncmp(base, "libc-2.", 7) == 0 || strncmp(base, "libpthread-2.", 13) == 0)
		return PROBE_LIB_LIBC;
	return 0;
}

struct tree_node {
	uint32_t pid, ppid;
	uint64_t start_ns;
};

/* Every process's parent, from /proc/PID/stat; NULL with errno on failure. */
static struct tree_node *read_tree(size_t *n)
{
	struct tree_node *nodes = NULL, *grown;
	size_t cap = 0;
	struct dirent *e;
	DIR *proc = opendir("/proc");

	*n = 0;
	if (!proc)
		return NULL;
	while ((e = readdir(proc))) {
		struct tree_node t;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		t.pid = (uint32_t)strtoul(e->d_name, NULL, 10);
		if (proc_stat_read(t.pid, &t.ppid, &t.start_ns, NULL) != 0)
			continue;	/* gone meanwhile */
		if (*n == cap) {
			cap = cap ? cap * 2 : 1024;
			grown = realloc(nodes, cap * sizeof(*nodes));
			if (!grown) {
				free(nodes);
				closedir(proc);
				errno = ENOMEM;
				return NULL;
			}
			nodes = grown;
		}
		nodes[(*n)++] = t;
	}
	closedir(proc);
	return nodes ? nodes : calloc(1, sizeof(*nodes));
}

int discovery_descendants(const uint32_t *roots, size_t n_roots,
			  void (*fn)(void *ctx, const struct discovery_item *it), void *ctx)
{
	/*
	 * One bit per pid in each: in the set (a root, or below one), and
	 * looked at.  A root below another root is reported too.
	 */
	uint8_t *in = calloc(ZW_PID_LIMIT / 8, 2), *done = in + ZW_PID_LIMIT / 8;
	struct tree_node *nodes;
	size_t n = 0;
	int found = 0, more = 1;

	if (!in)
		return -ENOMEM;
	nodes = read_tree(&n);
	if (!nodes) {
		free(in);
		return -errno;
	}
	for (size_t i = 0; i < n_roots; i++)
		if (roots[i] < ZW_PID_LIMIT)
			in[roots[i] / 8] |= (uint8_t)(1u << (roots[i] % 8));
	/* A pass per generation: a child is reported once its parent is in. */
	while (more) {
		more = 0;
		for (size_t i = 0; i < n; i++) {
			const struct tree_node *t = &nodes[i];
			struct discovery_item it;

			if (t->pid >= ZW_PID_LIMIT || t->ppid >= ZW_PID_LIMIT ||
			    (done[t->pid / 8] & (1u << (t->pid % 8))) ||
			    !(in[t->ppid / 8] & (1u << (t->ppid % 8))))
				continue;
			done[t->pid / 8] |= (uint8_t)(1u << (t->pid % 8));
			in[t->pid / 8] |= (uint8_t)(1u << (t->pid % 8));
			/* In now, gone or not: a subreaper's adopted children follow. */
			more = 1;
			memset(&it, 0, sizeof(it));
			if (proc_comm(t->pid, it.comm, sizeof(it.comm)) != 0)
				continue;
			it.what = DISCOVERY_PROC;
			it.pid = t->pid;
			it.ppid = t->ppid;
			it.reasons = SHM_WATCH_DESCENDANT;
			it.start_ns = t->start_ns;
			fn(ctx, &it);
			found++;
		}
	}
	free(nodes);
	free(in);
	return found;
}

static int open_maps(struct discovery *d, uint32_t pid)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	d->pid = pid;
	d->reasons = 0;
	d->last[0] = '\0';
	d->maps = fopen(path, "re");
	if (!d->maps)
		return -errno;
	setvbuf(d->maps, d->maps_buf, _IOFBF, sizeof(d->maps_buf));
	return 0;
}

int discovery_open(struct discovery *d, const char *const *comms, size_t n_comms)
{
	memset(d, 0, sizeof(*d));
	/* Loaders too: a process that loads a CUDA library later says so at once. */
	d->kinds = PROBE_LIB_GPU | PROBE_LIB_LOADER;
	d->comms = comms;
	d->n_comms = n_comms;
	d->self = (uint32_t)getpid();
	d->proc = opendir("/proc");
	return d->proc ? 0 : -errno;
}

int discovery_open_one(struct discovery *d, uint32_t pid, const char *const *comms,
		       size_t n_comms)
{
	int err;

	memset(d, 0, sizeof(*d));
	d->kinds = PROBE_LIB_GPU | PROBE_LIB_LOADER;
	d->comms = comms;
	d->n_comms = n_comms;
	err = open_maps(d, pid);
	d->proc_due = 1;
	return err;
}

void discovery_filter(struct discovery *d, discovery_wanted_fn wanted, void *ctx)
{
	d->wanted = wanted;
	d->wanted_ctx = ctx;
}

int discovery_open_pid(struct discovery *d, uint32_t pid, unsigned int kinds)
{
	memset(d, 0, sizeof(*d));
	d->kinds = kinds;
	return open_maps(d, pid);
}

void discovery_close(struct discovery *d)
{
	if (d->maps)
		fclose(d->maps);
	if (d->proc)
		closedir(d->proc);
	memset(d, 0, sizeof(*d));
}

unsigned int discovery_maps_line(char *line, char **file)
{
	char *f = strchr(line, '/');

	*file = NULL;
	/* Cheap test first: most lines are not libraries we probe. */
	if (!f || !strstr(f, "lib"))
		return 0;
	f[strcspn(f, "\n")] = '\0';
	if (strstr(f, " (deleted)"))
		return 0;	/* replaced on disk; its new inode is found when mapped */
	*file = f;
	return discovery_lib_kind(f);
}

/* The next library of d->pid's maps, or 0 at their end. */
static int next_lib(struct discovery *d, struct discovery_item *it)
{
	char line[4096];

	while (fgets(line, sizeof(line), d->maps)) {
		char *file;
		unsigned int kind = discovery_maps_line(line, &file) & d->kinds;

		if (!kind)
			continue;
		if (kind & PROBE_LIB_GPU)
			d->reasons |= kind & (PROBE_LIB_NCCL | PROBE_LIB_NCCL_PROFILER) ?
				      SHM_WATCH_NCCL : SHM_WATCH_CUDA;
		/* A library spans several mappings: report it once. */
		if (strcmp(file, d->last) == 0)
			continue;
		snprintf(d->last, sizeof(d->last), "%s", file);
		memset(it, 0, sizeof(*it));
		it->what = DISCOVERY_LIB;
		it->pid = d->pid;
		it->kind = kind;
		/* The path is the process's own view: go through its root. */
		if (d->pid)
			snprintf(it->path, sizeof(it->path), "/proc/%u/root%s", d->pid, file);
		else
			snprintf(it->path, sizeof(it->path), "%s", file);
		return 1;
	}
	fclose(d->maps);
	d->maps = NULL;
	return 0;
}

static int comm_named(const struct discovery *d, const char *comm)
{
	for (size_t i = 0; i < d->n_comms; i++)
		if (strncmp(comm, d->comms[i], 15) == 0)
			return 1;
	return 0;
}

/* d->pid as a process to watch, when it is one and still there. */
static int proc_item(struct discovery *d, struct discovery_item *it)
{
	uint32_t reasons = d->reasons;

	/* Most processes map nothing of ours: their name matters only for --comm. */
	if (!reasons && d->n_comms == 0)
		return 0;
	memset(it, 0, sizeof(*it));
	if (proc_comm(d->pid, it->comm, sizeof(it->comm)) != 0)
		return 0;	/* gone already */
	if (comm_named(d, it->comm))
		reasons |= SHM_WATCH_COMM;
	if (!reasons)
		return 0;
	it->what = DISCOVERY_PROC;
	it->pid = d->pid;
	it->reasons = reasons;
	proc_stat_read(d->pid, &it->ppid, &it->start_ns, NULL);
	return 1;
}

int discovery_next(struct discovery *d, struct discovery_item *it)
{
	struct dirent *e;

	for (;;) {
		if (d->maps && next_lib(d, it))
			return 1;
		if (d->proc_due) {
			d->proc_due = 0;
			if (proc_item(d, it))
				return 1;
		}
		if (!d->proc)
			return 0;
		e = readdir(d->proc);
		if (!e)
			return 0;
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		d->pid = (uint32_t)strtoul(e->d_name, NULL, 10);
		if (d->pid == d->self)
			continue;
		d->reasons = 0;
		if (d->wanted && !d->wanted(d->wanted_ctx, d->pid, &d->reasons)) {
			/* Maps read already; a name set since (prctl) may still count. */
			d->proc_due = d->reasons || d->n_comms > 0;
			continue;
		}
		/* Unreadable maps (a kernel thread, a race): its name may still count. */
		open_maps(d, d->pid);
		d->proc_due = 1;
	}
}
