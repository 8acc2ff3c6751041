/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Library discovery: finds every libcuda/libcudart/libnccl that any process
 * maps, wherever it lives (system paths, conda or venv site-packages, /tmp,
 * other mount namespaces through /proc/PID/root), attaches the modules'
 * uprobes once per file (device, inode), and marks the processes that map
 * them as watched.  Also evicts watched processes that are gone.  Root.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "collector/elfsyms.h"
#include "collector/probe_module.h"
#include "common/log.h"

unsigned int discovery_lib_kind(const char *path)
{
	static const struct {
		const char *prefix;
		unsigned int kind;
	} names[] = {
		{ "libcuda.so", PROBE_LIB_CUDA },
		{ "libcudart.so", PROBE_LIB_CUDART },
		{ "libnccl.so", PROBE_LIB_NCCL },
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
	return 0;
}

static int attach_one(struct probes *p, struct bpf_program *prog, const char *path,
		      uint64_t offset, int retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = retprobe);
	struct bpf_link *link;

	if (p->n_links >= PROBES_MAX_LINKS)
		return -ENOSPC;
	link = bpf_program__attach_uprobe_opts(prog, -1, path, (size_t)offset, &uo);
	if (!link)
		return -errno;
	p->links[p->n_links++] = link;
	p->n_uprobe_links++;
	return 0;
}

/* Attaches the entry then the return program of one symbol. */
static int attach_symbol(struct probes *p, struct bpf_object *obj, const char *path,
			 const struct probe_uprobe *u, uint64_t offset)
{
	const char *names[2] = { u->prog, u->ret_prog };
	int err = 0;

	for (int ret = 0; ret < 2; ret++) {
		struct bpf_program *prog;

		if (!names[ret])
			continue;
		prog = bpf_object__find_program_by_name(obj, names[ret]);
		if (!prog)
			return -EINVAL;
		err = attach_one(p, prog, path, offset, ret);
		if (err)
			return err;	/* a half-attached pair only loses samples */
	}
	return 0;
}

#define LIB_MAX_SYMBOLS	128

/* The uprobes of every module that apply to a library of this kind. */
static size_t lib_uprobes(const struct probes *p, unsigned int kind,
			  const struct probe_uprobe **ups, size_t *mods, const char **names)
{
	size_t n = 0;

	for (size_t m = 0; m < p->n_mod; m++) {
		const struct probe_module *mod = p->mod[m].mod;

		for (size_t i = 0; i < mod->n_uprobes && n < LIB_MAX_SYMBOLS; i++) {
			if (!(mod->uprobes[i].libs & kind))
				continue;
			ups[n] = &mod->uprobes[i];
			mods[n] = m;
			names[n] = mod->uprobes[i].symbol;
			n++;
		}
	}
	return n;
}

int discovery_attach_lib(struct probes *p, const char *path, unsigned int kind)
{
	const struct probe_uprobe *ups[LIB_MAX_SYMBOLS];
	const char *names[LIB_MAX_SYMBOLS];
	uint64_t offsets[LIB_MAX_SYMBOLS];
	size_t mods[LIB_MAX_SYMBOLS], n;
	struct probe_lib *lib;
	struct stat st;
	char missing[1024] = "";
	unsigned int attached = 0;
	int found;

	if (stat(path, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	for (size_t i = 0; i < p->n_libs; i++)
		if (p->libs[i].dev == st.st_dev && p->libs[i].ino == st.st_ino)
			return 0;	/* already probed, maybe under another name */
	if (p->n_libs >= PROBES_MAX_LIBS) {
		log_warnx("%s: too many distinct libraries (%d), not probed", path,
			  PROBES_MAX_LIBS);
		return -ENOSPC;
	}
	n = lib_uprobes(p, kind, ups, mods, names);
	/* One parse of the file for all symbols. */
	found = elfsyms_resolve(path, names, n, offsets);
	if (found < 0) {
		log_warnx("%s: not a readable ELF library: %s", path, strerror(-found));
		return found;
	}
	lib = &p->libs[p->n_libs++];
	lib->dev = st.st_dev;
	lib->ino = st.st_ino;
	lib->kind = kind;

	for (size_t i = 0; i < n; i++) {
		int err;

		if (!offsets[i]) {
			if (strlen(missing) + strlen(names[i]) + 2 < sizeof(missing)) {
				strcat(missing, " ");
				strcat(missing, names[i]);
			}
			continue;
		}
		err = attach_symbol(p, p->mod[mods[i]].obj, path, ups[i], offsets[i]);
		if (err == 0)
			attached++;
		else
			log_warnx("%s: cannot probe %s: %s", path, names[i], strerror(-err));
	}
	lib->attached = attached;
	if (missing[0])
		log_info("%s: symbols not in this library, not probed:%s", path, missing);
	log_info("probing %s (%u symbols)", path, attached);
	return 1;
}

static int read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -errno;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -EIO;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* ppid and start time (boot-relative ns) from /proc/PID/stat. */
static void proc_stat(uint32_t pid, uint32_t *ppid, uint64_t *start_ns)
{
	char path[64], buf[1024], *s;
	unsigned long long start = 0;
	long hz = sysconf(_SC_CLK_TCK);
	int pp = 0;

	*ppid = 0;
	*start_ns = 0;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if (read_small(path, buf, sizeof(buf)) != 0)
		return;
	/* The name may hold spaces and parentheses: parse after the last ')'. */
	s = strrchr(buf, ')');
	if (!s || sscanf(s + 1, " %*c %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			 "%*s %*s %*s %*s %llu", &pp, &start) != 2)
		return;
	*ppid = (uint32_t)pp;
	if (hz > 0)
		*start_ns = start * (1000000000ull / (unsigned long long)hz);
}

static void watch_from_proc(struct probes *p, uint32_t pid, uint32_t reason)
{
	char path[64], comm[32] = "";
	uint32_t ppid;
	uint64_t start;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	if (read_small(path, comm, sizeof(comm)) != 0)
		return;	/* gone already */
	proc_stat(pid, &ppid, &start);
	probes_watch(p, pid, ppid, reason, comm, start);
}

/* Looks through one process's mappings; returns SHM_WATCH_* reasons found. */
static uint32_t scan_maps(struct probes *p, uint32_t pid)
{
	char path[64], line[4096], root[PATH_MAX + 64];
	uint32_t reasons = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');
		unsigned int kind;

		/* Cheap test first: most lines are not CUDA libraries. */
		if (!file || !strstr(file, "lib"))
			continue;
		file[strcspn(file, "\n")] = '\0';
		kind = discovery_lib_kind(file);
		if (!kind)
			continue;
		if (strstr(file, " (deleted)"))
			continue;	/* replaced on disk; its new inode is found when mapped */
		reasons |= kind == PROBE_LIB_NCCL ? SHM_WATCH_NCCL : SHM_WATCH_CUDA;
		/* The path is the process's own view: go through its root. */
		snprintf(root, sizeof(root), "/proc/%u/root%s", pid, file);
		if (discovery_attach_lib(p, root, kind) < 0)
			log_debug("cannot probe %s of pid %u", file, pid);
	}
	fclose(f);
	return reasons;
}

static int comm_named(const struct probes *p, uint32_t pid)
{
	char path[64], comm[32];

	if (p->opts.n_comms == 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	if (read_small(path, comm, sizeof(comm)) != 0)
		return 0;
	for (size_t i = 0; i < p->opts.n_comms; i++)
		if (strncmp(comm, p->opts.comms[i], 15) == 0)
			return 1;
	return 0;
}

void discovery_scan(struct probes *p)
{
	uint32_t self = (uint32_t)getpid();
	struct dirent *d;
	DIR *dir = opendir("/proc");

	if (!dir) {
		log_warn("opendir /proc");
		return;
	}
	while ((d = readdir(dir)) != NULL) {
		uint32_t pid, reasons;

		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		pid = (uint32_t)strtoul(d->d_name, NULL, 10);
		if (pid == self)
			continue;
		reasons = scan_maps(p, pid);
		if (comm_named(p, pid))
			reasons |= SHM_WATCH_COMM;
		if (reasons)
			watch_from_proc(p, pid, reasons);
	}
	closedir(dir);
}

void discovery_sweep(struct probes *p)
{
	uint32_t cursor = 0, pid;

	while (agg_proc_next(p->agg, &cursor, &pid))
		if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
			probes_unwatch(p, pid);
}
