/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Attaching the rows of the attach table (probe_table.c): tracepoint rows
 * once at start, uprobe rows in each library file the loader hands over,
 * once per (device, inode), with every symbol of the file resolved in one
 * parse (collector/elfsyms.c).  Told what to attach; finds nothing itself.
 * Root-only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "collector/elfsyms.h"
#include "collector/probe_loader.h"
#include "collector/uprobe_multi.h"
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
	int err;

	for (size_t i = 0; i < probe_attach_count; i++) {
		const struct probe_attach *r = &probe_attach_table[i];
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

/* Attaches the rows found in the file; returns the symbols probed. */
static unsigned int attach_rows(struct probes *p, struct probe_lib *lib, const char *path,
				unsigned int kind,
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
		/* A return alone is harmless, an entry alone is not: it waits for its return. */
		if (failed && strcmp(failed, names[i]) == 0)
			continue;
		err = attach_uprobe(p, lib, rows[i], path, offsets[i]);
		if (err) {
			log_warnx("%s: cannot probe %s: %s", path, names[i], strerror(-err));
			failed = names[i];
			continue;
		}
		if (kind & PROBE_LIB_GPU)
			p->gpu_links++;
		if (last)
			symbols++;
	}
	if (missing[0])
		log_info("%s: symbols not in this library, not probed:%s", path, missing);
	return symbols;
}

/* An entry row whose return row (right before it) did not attach is not tried. */
static int partner_ok(const struct probe_attach **rows, const unsigned char *ok, size_t i)
{
	if (rows[i]->how != PROBE_UPROBE || i == 0 || rows[i - 1]->how != PROBE_URETPROBE ||
	    strcmp(rows[i - 1]->symbol, rows[i]->symbol) != 0)
		return 1;
	return ok[i - 1];
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
		log_warnx("%s: cannot probe %s: %s", path, names[members[0]], strerror(-fd));
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
 * The rows as uprobe_multi links, one per program and direction: every
 * return before any entry, so that a call made while they attach has at
 * worst a return without its entry (probe_loader.h).  Returns the symbols
 * probed, counted as attach_rows counts them.
 */
static unsigned int attach_rows_multi(struct probes *p, struct probe_lib *lib, const char *path,
				      unsigned int kind, const struct probe_attach **rows,
				      const char **names, const uint64_t *offsets, size_t n)
{
	unsigned char taken[LIB_MAX_ROWS] = { 0 }, ok[LIB_MAX_ROWS] = { 0 };
	uint64_t group[LIB_MAX_ROWS];
	size_t members[LIB_MAX_ROWS];
	unsigned int symbols = 0;
	char missing[1024] = "";

	lib->multi_fds = calloc(n ? n : 1, sizeof(*lib->multi_fds));
	if (!lib->multi_fds)
		return 0;
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
	struct probe_lib *lib;
	struct stat st;
	size_t n;
	int found;

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
	/* One parse of the file for all symbols. */
	found = elfsyms_resolve(path, names, n, offsets);
	if (found < 0) {
		log_warnx("%s: not a readable ELF library: %s", path, strerror(-found));
		return found;
	}
	/* Remembered even without a symbol: a libpthread stub stays skipped. */
	lib = &p->libs[p->n_libs];
	memset(lib, 0, sizeof(*lib));
	lib->links = calloc(n ? n : 1, sizeof(*lib->links));
	if (!lib->links)
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
		lib->attached = attach_rows_multi(p, lib, path, kind, rows, names, offsets, n);
	else
		lib->attached = attach_rows(p, lib, path, kind, rows, names, offsets, n);
	lib->probed_boot_ns = now_boot_ns();
	log_info("probing %s (%u symbols)", path, lib->attached);
	return 1;
}

/* ---- closing links ------------------------------------------------------ */

/*
 * Closing a uprobe link waits in the kernel for an RCU-tasks-trace grace
 * period, one link after the other (tens of ms each here): a thousand
 * links take tens of seconds, in D state.  Whoever drops the last
 * reference of a link's files pays that.  So before closing links the
 * collector forks a child that shares every descriptor; the collector's
 * own closes then only drop a reference and return at once, and the child,
 * once told the collector is done, closes its copies (the last ones) and
 * pays the wait instead, off the collector's main loop and after its exit.
 * The child only makes system calls (fork in a threaded process allows no
 * more), and the collector reaps it (probe_attach_reap).
 */
static pid_t hand_over_begin(int *go)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char c;

		prctl(PR_SET_NAME, "zernel-unprobe");
		close(fds[1]);
		/* EOF once the collector has closed its copies. */
		while (read(fds[0], &c, 1) < 0 && errno == EINTR)
			;
		syscall(SYS_close_range, 3u, ~0u, 0u);
		_exit(0);
	}
	close(fds[0]);
	if (pid < 0) {
		close(fds[1]);
		return -1;
	}
	*go = fds[1];
	return pid;
}

static void hand_over_end(struct probes *p, pid_t pid, int go)
{
	if (pid < 0)
		return;
	close(go);
	for (size_t i = 0; i < PROBES_MAX_HELPERS; i++) {
		if (!p->helpers[i]) {
			p->helpers[i] = pid;
			return;
		}
	}
	/* No slot to remember it: it is reaped when the collector exits. */
}

/*
 * Closes n perf links and n_fds uprobe_multi links; the kernel's wait
 * falls on a child when one can be forked.
 */
static void close_links(struct probes *p, struct bpf_link **links, size_t n, const int *fds,
			size_t n_fds)
{
	int go = -1;
	pid_t pid;

	if (!n && !n_fds)
		return;
	pid = hand_over_begin(&go);
	for (size_t i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	for (size_t i = 0; i < n_fds; i++)
		close(fds[i]);
	hand_over_end(p, pid, go);
}

/*
 * At exit even the collector's own closes cost: libbpf disables each perf
 * event (an ioctl that waits on the same kernel mutex) before closing it.
 * With a child holding every descriptor, the links are only forgotten
 * here (disconnected, no system call) and the collector's exit drops its
 * references; the child's pipe closes with the exit, after them.
 */
static void forget_links_at_exit(struct probes *p, struct bpf_link **links, size_t n)
{
	int go = -1;
	pid_t pid;

	(void)p;
	if (!n)
		return;
	pid = hand_over_begin(&go);
	for (size_t i = 0; i < n; i++) {
		if (pid > 0)
			bpf_link__disconnect(links[i]);
		bpf_link__destroy(links[i]);
	}
	/* go stays open: the exit closes it once every link's descriptor is closed. */
}

void probe_attach_reap(struct probes *p)
{
	for (size_t i = 0; i < PROBES_MAX_HELPERS; i++)
		if (p->helpers[i] && waitpid(p->helpers[i], NULL, WNOHANG) != 0)
			p->helpers[i] = 0;
}

static void drop_lib(struct probes *p, size_t i)
{
	struct probe_lib *lib = &p->libs[i];

	p->n_links -= lib->n_links;
	if (lib->kind & PROBE_LIB_GPU) {
		p->gpu_links -= lib->n_links;
		p->gpu_libs--;
	}
	free(lib->links);
	free(lib->multi_fds);
	p->libs[i] = p->libs[--p->n_libs];
}

size_t probe_attach_idle(struct probes *p)
{
	struct bpf_link **batch;
	size_t n = 0, n_fds = 0, dropped = 0;
	int *fds;

	batch = calloc(p->n_links ? p->n_links : 1, sizeof(*batch));
	fds = calloc(p->n_links ? p->n_links : 1, sizeof(*fds));
	if (!batch || !fds) {
		free(batch);
		free(fds);
		return 0;
	}
	for (size_t i = 0; i < p->n_libs;) {
		struct probe_lib *lib = &p->libs[i];

		if (lib->pinned || p->scan - lib->seen_scan < PROBES_LIB_IDLE_SCANS) {
			i++;
			continue;
		}
		log_info("no process maps %s any more: %u uprobes detached", lib->path,
			 lib->n_links);
		if (lib->multi_fds) {
			memcpy(fds + n_fds, lib->multi_fds, lib->n_multi * sizeof(*fds));
			n_fds += lib->n_multi;
		} else {
			memcpy(batch + n, lib->links, lib->n_links * sizeof(*batch));
			n += lib->n_links;
		}
		drop_lib(p, i);		/* the last library moves to i */
		dropped++;
	}
	close_links(p, batch, n, fds, n_fds);
	free(batch);
	free(fds);
	probe_attach_reap(p);
	return dropped;
}

void probe_attach_destroy(struct probes *p)
{
	struct bpf_link **all = calloc(p->n_links ? p->n_links : 1, sizeof(*all));
	size_t n = 0;

	/*
	 * uprobe_multi links are descriptors only: they stay open until the
	 * exit, like the perf links forget_links_at_exit disconnects, and the
	 * child it forks holds them too.
	 */
	for (size_t i = 0; i < p->n_libs; i++) {
		struct probe_lib *lib = &p->libs[i];

		if (!lib->multi_fds) {
			if (all)
				memcpy(all + n, lib->links, lib->n_links * sizeof(*all));
			else
				close_links(p, lib->links, lib->n_links, NULL, 0);
			n += lib->n_links;
		}
		free(lib->links);
		free(lib->multi_fds);
	}
	if (all) {
		memcpy(all + n, p->links, p->n_static * sizeof(*all));
		forget_links_at_exit(p, all, n + p->n_static);
		free(all);
	} else {
		close_links(p, p->links, p->n_static, NULL, 0);
	}
	p->n_libs = 0;
	p->n_static = 0;
	p->n_links = 0;
}
