/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Attaching the rows of the attach table (probe_table.c): tracepoint rows
 * once at start, uprobe rows in each library file the loader hands over,
 * once per (device, inode), with every symbol of the file resolved in one
 * parse (collector/elfsyms.c).  Told what to attach; finds nothing itself.
 * Root-only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "collector/elfsyms.h"
#include "collector/probe_loader.h"
#include "common/log.h"
#include "common/util.h"

static struct bpf_program *row_prog(const struct probes *p, const struct probe_attach *r)
{
	return bpf_object__find_program_by_name(p->obj[r->obj], r->prog);
}

static int keep_link(struct probes *p, struct bpf_link *link)
{
	if (!link)
		return -errno;
	p->links[p->n_links++] = link;
	return 0;
}

int probe_attach_static(struct probes *p)
{
	int err;

	for (size_t i = 0; i < probe_attach_count; i++) {
		const struct probe_attach *r = &probe_attach_table[i];
		struct bpf_program *prog;

		switch (r->how) {
		case PROBE_AUTO:
			prog = row_prog(p, r);
			if (!prog || p->n_links >= PROBES_MAX_LINKS)
				return prog ? -ENOSPC : -EINVAL;
			err = keep_link(p, bpf_program__attach(prog));
			if (err) {
				log_error("cannot attach %s (%s): %s", r->prog,
					  bpf_program__section_name(prog), strerror(-err));
				return err;
			}
			break;
		default:
			break;	/* uprobes wait for their libraries */
		}
	}
	return 0;
}

#define LIB_MAX_ROWS	128

/* The uprobe rows for a library of kind; their symbols in names. */
static size_t lib_rows(unsigned int kind, const struct probe_attach **rows, const char **names)
{
	size_t n = 0;

	for (size_t i = 0; i < probe_attach_count && n < LIB_MAX_ROWS; i++) {
		const struct probe_attach *r = &probe_attach_table[i];

		if ((r->how != PROBE_UPROBE && r->how != PROBE_URETPROBE) || !(r->libs & kind))
			continue;
		rows[n] = r;
		names[n] = r->symbol;
		n++;
	}
	return n;
}

static int attach_uprobe(struct probes *p, const struct probe_attach *r, const char *path,
			 uint64_t offset)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = r->how == PROBE_URETPROBE);
	struct bpf_program *prog = row_prog(p, r);

	if (!prog)
		return -EINVAL;
	if (p->n_links >= PROBES_MAX_LINKS)
		return -ENOSPC;
	return keep_link(p, bpf_program__attach_uprobe_opts(prog, -1, path, (size_t)offset, &uo));
}

/* Attaches the rows found in the file; returns the symbols probed. */
static unsigned int attach_rows(struct probes *p, const char *path, unsigned int kind,
				const struct probe_attach **rows, const char **names,
				const uint64_t *offsets, size_t n)
{
	const char *failed = NULL;
	char missing[1024] = "";
	unsigned int symbols = 0;

	for (size_t i = 0; i < n; i++) {
		int first = i == 0 || strcmp(names[i], names[i - 1]) != 0;
		int last = i + 1 == n || strcmp(names[i], names[i + 1]) != 0;
		int err;

		if (!offsets[i]) {
			if (first && strlen(missing) + strlen(names[i]) + 2 < sizeof(missing)) {
				strcat(missing, " ");
				strcat(missing, names[i]);
			}
			continue;
		}
		/* A half-attached pair only loses samples; its return waits for its entry. */
		if (failed && strcmp(failed, names[i]) == 0)
			continue;
		err = attach_uprobe(p, rows[i], path, offsets[i]);
		if (err) {
			log_warnx("%s: cannot probe %s: %s", path, names[i], strerror(-err));
			failed = names[i];
			continue;
		}
		if (!(kind & PROBE_LIB_LIBC))
			p->gpu_links++;
		if (last)
			symbols++;
	}
	if (missing[0])
		log_info("%s: symbols not in this library, not probed:%s", path, missing);
	return symbols;
}

int probe_attach_lib(struct probes *p, const char *path, unsigned int kind)
{
	const struct probe_attach *rows[LIB_MAX_ROWS];
	const char *names[LIB_MAX_ROWS];
	uint64_t offsets[LIB_MAX_ROWS];
	struct probe_lib *lib;
	struct stat st;
	size_t n;
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
	n = lib_rows(kind, rows, names);
	/* One parse of the file for all symbols. */
	found = elfsyms_resolve(path, names, n, offsets);
	if (found < 0) {
		log_warnx("%s: not a readable ELF library: %s", path, strerror(-found));
		return found;
	}
	/* Remembered even without a symbol: a libpthread stub stays skipped. */
	lib = &p->libs[p->n_libs++];
	lib->dev = st.st_dev;
	lib->ino = st.st_ino;
	lib->kind = kind;
	if (strlen(path) < sizeof(lib->path))
		memcpy(lib->path, path, strlen(path) + 1);
	else
		lib->path[0] = '\0';
	if (!(kind & PROBE_LIB_LIBC))
		p->gpu_libs++;
	lib->attached = attach_rows(p, path, kind, rows, names, offsets, n);
	lib->probed_boot_ns = now_boot_ns();
	log_info("probing %s (%u symbols)", path, lib->attached);
	return 1;
}

void probe_attach_destroy(struct probes *p)
{
	for (size_t i = 0; i < p->n_links; i++)
		bpf_link__destroy(p->links[i]);
	p->n_links = 0;
}
