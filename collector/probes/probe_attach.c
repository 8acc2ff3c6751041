/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Attaching every probe family's rows (families.c): tracepoint rows
 * once at start, uprobe rows in each library file the loader hands over,
 * once per (device, inode), with every symbol of the file resolved in one
 * parse (collector/parser/elfsyms.c, in the parser child), as uprobe_multi links or perf events
 * (collector/probes/uprobe_multi.h).  Told what to attach; finds nothing itself;
 * probe_detach.c closes what it made.  Root-only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "collector/parser/parser.h"
#include "collector/probes/probe_family.h"
#include "collector/probes/probe_loader.h"
#include "collector/probes/uprobe_multi.h"
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
	p->links[p->n_static++] = link;
	p->n_links++;
	return 0;
}

int probe_attach_static(struct probes *p)
{
	size_t count;
	const struct probe_attach *rows = probe_attach_rows(&count);
	int err;

	if (!rows) {
		log_error("the probe families have more attachments than the loader holds");
		return -E2BIG;
	}
	for (size_t i = 0; i < count; i++) {
		const struct probe_attach *r = &rows[i];
		struct bpf_program *prog;

		switch (r->how) {
		case PROBE_AUTO:
			prog = row_prog(p, r);
			if (prog && !bpf_program__autoload(prog))
				break;	/* not for this kernel or these options */
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

#define LIB_MAX_ROWS	256	/* rows of one library kind; the driver has about 120 */
_Static_assert(LIB_MAX_ROWS <= PARSER_MAX_NAMES, "a library's symbols fit one parser request");

/* The uprobe rows for a library of kind; their symbols in names. */
static size_t lib_rows(unsigned int kind, const struct probe_attach **rows, const char **names)
{
	size_t n = 0, count;
	const struct probe_attach *all = probe_attach_rows(&count);

	for (size_t i = 0; i < count && n < LIB_MAX_ROWS; i++) {
		const struct probe_attach *r = &all[i];

		if ((r->how != PROBE_UPROBE && r->how != PROBE_URETPROBE) || !(r->libs & kind))
			continue;
		rows[n] = r;
		names[n] = r->symbol;
		n++;
	}
	return n;
}

static int attach_uprobe(struct probes *p, struct probe_lib *lib, const struct probe_attach *r,
			 const char *path, uint64_t offset)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = r->how == PROBE_URETPROBE);
	struct bpf_program *prog = row_prog(p, r);
	struct bpf_link *link;

	if (!prog)
		return -EINVAL;
	if (p->n_links >= PROBES_MAX_LINKS) {
		p->refused++;
		return -ENOSPC;
	}
	link = bpf_program__attach_uprobe_opts(prog, -1, path, (size_t)offset, &uo);
	if (!link)
		return -errno;
	lib->links[lib->n_links++] = link;
	p->n_links++;
	if (p->opts.between_attaches)
		p->opts.between_attaches(p->opts.between_ctx);
	return 0;
}

/* An entry row whose return row (right before it) did not attach is not tried. */
static int partner_ok(const struct probe_attach **rows, const unsigned char *ok, size_t i)
{
	if (rows[i]->how != PROBE_UPROBE || i == 0 || rows[i - 1]->how != PROBE_URETPROBE ||
	    strcmp(rows[i - 1]->symbol, rows[i]->symbol) != 0)
		return 1;
	return ok[i - 1];
}

/* The rows found in the file, one perf event each, in table order; marks them ok. */
static void attach_rows_perf(struct probes *p, struct probe_lib *lib, const char *path,
			     unsigned int kind, const struct probe_attach **rows,
			     const char **names, const uint64_t *offsets, size_t n,
			     unsigned char *ok)
{
	for (size_t i = 0; i < n; i++) {
		int err;

		if (!offsets[i] || !partner_ok(rows, ok, i))
			continue;
		err = attach_uprobe(p, lib, rows[i], path, offsets[i]);
		if (err) {
			log_warnx("%s: cannot probe %s: %s", path, names[i], strerror(-err));
			continue;
		}
		if (kind & PROBE_LIB_GPU)
			p->gpu_links++;
		ok[i] = 1;
	}
}

/* One uprobe_multi link of r's program at the m offsets of rows members; marks them ok. */
static void attach_group(struct probes *p, struct probe_lib *lib, const char *path,
			 unsigned int kind, const struct probe_attach *r, const size_t *members,
			 const uint64_t *offsets, size_t m, const char **names, unsigned char *ok)
{
	struct bpf_program *prog = row_prog(p, r);
	int fd;

	if (!m || !prog)
		return;
	if (p->n_links + m > PROBES_MAX_LINKS) {
		p->refused += m;
		log_warnx("%s: %s not probed: %d uprobes already", path, r->prog,
			  PROBES_MAX_LINKS);
		return;
	}
	fd = uprobe_multi_link(bpf_program__fd(prog), p->uprobe_multi_at, path, offsets, m,
			       r->how == PROBE_URETPROBE);
	if (fd < 0 && m > 1) {
		/* One offset the kernel refuses costs only its own symbol. */
		for (size_t k = 0; k < m; k++)
			attach_group(p, lib, path, kind, r, &members[k], &offsets[k], 1, names, ok);
		return;
	}
	if (fd < 0) {
		log_warnx("%s: cannot probe %s: %s (as a uprobe_multi link; --uprobe-links perf "
			  "attaches perf events instead)", path, names[members[0]], strerror(-fd));
		return;
	}
	lib->multi_fds[lib->n_multi++] = fd;
	lib->n_links += (unsigned int)m;
	p->n_links += m;
	if (kind & PROBE_LIB_GPU)
		p->gpu_links += m;
	for (size_t k = 0; k < m; k++)
		ok[members[k]] = 1;
	if (p->opts.between_attaches)
		p->opts.between_attaches(p->opts.between_ctx);
}

/*
 * The rows found in the file as uprobe_multi links, one per program and
 * direction: every return before any entry, so that a call made while
 * they attach has at worst a return without its entry (probe_loader.h).
 * Marks the rows that attached ok.
 */
static void attach_rows_multi(struct probes *p, struct probe_lib *lib, const char *path,
			      unsigned int kind, const struct probe_attach **rows,
			      const char **names, const uint64_t *offsets, size_t n,
			      unsigned char *ok)
{
	unsigned char taken[LIB_MAX_ROWS] = { 0 };
	uint64_t group[LIB_MAX_ROWS];
	size_t members[LIB_MAX_ROWS];

	for (int pass = 0; pass < 2; pass++) {
		enum probe_how how = pass == 0 ? PROBE_URETPROBE : PROBE_UPROBE;

		for (size_t i = 0; i < n; i++) {
			size_t m = 0;

			if (taken[i] || rows[i]->how != how)
				continue;
			for (size_t j = i; j < n; j++) {
				if (taken[j] || rows[j]->how != how || rows[j]->obj != rows[i]->obj ||
				    strcmp(rows[j]->prog, rows[i]->prog) != 0)
					continue;
				taken[j] = 1;
				if (!offsets[j] || !partner_ok(rows, ok, j))
					continue;
				members[m] = j;
				group[m++] = offsets[j];
			}
			attach_group(p, lib, path, kind, rows[i], members, group, m, names, ok);
		}
	}
}

/*
 * The symbols probed (a row of a symbol that ends its run of rows
 * attached), after logging once those the file lacks.
 */
static unsigned int rows_outcome(const char *path, const char **names, const uint64_t *offsets,
				 const unsigned char *ok, size_t n)
{
	char missing[1024] = "";
	unsigned int symbols = 0;

	for (size_t i = 0; i < n; i++) {
		int first = i == 0 || strcmp(names[i], names[i - 1]) != 0;
		int last = i + 1 == n || strcmp(names[i], names[i + 1]) != 0;

		if (!offsets[i] && first && strlen(missing) + strlen(names[i]) + 2 < sizeof(missing)) {
			strcat(missing, " ");
			strcat(missing, names[i]);
		}
		symbols += ok[i] && last;
	}
	if (missing[0])
		log_info("%s: symbols not in this library, not probed:%s", path, missing);
	return symbols;
}

int probe_attach_lib(struct probes *p, const char *path, unsigned int kind, int pinned)
{
	const struct probe_attach *rows[LIB_MAX_ROWS];
	const char *names[LIB_MAX_ROWS];
	uint64_t offsets[LIB_MAX_ROWS];
	unsigned char ok[LIB_MAX_ROWS] = { 0 };
	struct probe_lib *lib;
	struct stat st, fst;
	size_t n;
	int fd, found;

	if (stat(path, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	for (size_t i = 0; i < p->n_libs; i++) {
		if (p->libs[i].dev == st.st_dev && p->libs[i].ino == st.st_ino) {
			/* Already probed, maybe under another name: still in use. */
			p->libs[i].seen_scan = p->scan;
			p->libs[i].pinned |= pinned;
			return 0;
		}
	}
	if (p->n_libs >= PROBES_MAX_LIBS) {
		p->refused++;
		log_warnx("%s: too many distinct libraries (%d), not probed", path,
			  PROBES_MAX_LIBS);
		return -ENOSPC;
	}
	n = lib_rows(kind, rows, names);
	/*
	 * One parse of the file for all symbols, by the parser child.  The
	 * file it gets is the one looked at above, not a FIFO put in its place.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &fst) != 0 || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
		close(fd);
		return -ESTALE;
	}
	found = parser_elf_functions(fd, names, n, offsets);
	close(fd);
	if (found < 0) {
		log_warnx("%s: not a readable ELF library: %s", path, strerror(-found));
		return found;
	}
	/* Remembered even without a symbol: a libpthread stub stays skipped. */
	lib = &p->libs[p->n_libs];
	memset(lib, 0, sizeof(*lib));
	/* Room for every row: a perf event each, or at most a uprobe_multi link each. */
	if (p->uprobe_multi_at >= 0)
		lib->multi_fds = calloc(n ? n : 1, sizeof(*lib->multi_fds));
	else
		lib->links = calloc(n ? n : 1, sizeof(*lib->links));
	if (!lib->links && !lib->multi_fds)
		return -ENOMEM;
	p->n_libs++;
	lib->dev = st.st_dev;
	lib->ino = st.st_ino;
	lib->kind = kind;
	lib->pinned = pinned || (kind & PROBE_LIB_LIBC);
	lib->seen_scan = p->scan;
	if (strlen(path) < sizeof(lib->path))
		memcpy(lib->path, path, strlen(path) + 1);
	else
		lib->path[0] = '\0';
	if (kind & PROBE_LIB_GPU)
		p->gpu_libs++;
	if (p->uprobe_multi_at >= 0)
		attach_rows_multi(p, lib, path, kind, rows, names, offsets, n, ok);
	else
		attach_rows_perf(p, lib, path, kind, rows, names, offsets, n, ok);
	lib->attached = rows_outcome(path, names, offsets, ok, n);
	lib->probed_boot_ns = now_boot_ns();
	log_info("probing %s (%u symbols)", path, lib->attached);
	return 1;
}
