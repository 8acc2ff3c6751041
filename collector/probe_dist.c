/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The distributed-sync module (bpf/dist.bpf.c): attaches its programs to
 * the futex syscall tracepoints, and probes pthread_barrier_wait in the
 * system's libc at load and in every other libc that watched processes
 * map (containers, bundled runtimes), once per file, when the process makes
 * its first futex wait (ZEV_LIBC_PROBE).  Root-only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include <bpf/libbpf.h>

#include "bpf/dist.skel.h"
#include "collector/probe_sched.h"
#include "common/log.h"
#include "shm/shm_layout.h"

/* futex_waitv (5.16) and futex_wait (6.7) are skipped where absent. */
static const char *const dist_futex[] = { "futex" };
static const char *const dist_futex2[] = { "futex_waitv", "futex_wait" };

#define DIST_BARRIER_SYMBOL	"pthread_barrier_wait"
#define DIST_MAX_LIBS		64

/* One loader per collector: the module keeps its libc links here. */
static struct {
	struct dist_bpf *skel;
	struct {
		dev_t dev;
		ino_t ino;
	} lib[DIST_MAX_LIBS];
	size_t n_lib;
	struct bpf_link *link[2 * DIST_MAX_LIBS];
	size_t n_link;
	struct probe_syscall_links futex;
	struct probe_syscall_links futex2;
} dist;

/* libc.so.6 holds the barrier since glibc 2.34; libpthread.so.0 before. */
static int dist_is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strcmp(base, "libc.so.6") == 0 || strcmp(base, "libpthread.so.0") == 0 ||
	       strncmp(base, "libc-2.", 7) == 0 || strncmp(base, "libpthread-2.", 13) == 0;
}

/* The file offset of a virtual address, through the loadable segments. */
static long dist_vaddr_to_offset(Elf *elf, GElf_Addr addr)
{
	size_t n;

	if (elf_getphdrnum(elf, &n) != 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		if (addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_memsz)
			return (long)(addr - ph.p_vaddr + ph.p_offset);
	}
	return -ENOENT;
}

/*
 * File offset of a function symbol, -ENOENT when absent.  libc exports
 * pthread_barrier_wait under two symbol versions at one address, which
 * libbpf's own lookup refuses as ambiguous; any match will do here.
 */
static long dist_symbol_offset(const char *path, const char *name)
{
	long off = -ENOENT;
	Elf_Scn *scn = NULL;
	Elf *elf = NULL;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		off = -EINVAL;
		goto cleanup;
	}
	while (off == -ENOENT && (scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || sh.sh_entsize == 0)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *sname;

			if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_value == 0 || sym.st_shndx == SHN_UNDEF)
				continue;
			sname = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!sname || strcmp(sname, name) != 0)
				continue;
			off = dist_vaddr_to_offset(elf, sym.st_value);
			break;
		}
	}
cleanup:
	if (elf)
		elf_end(elf);
	close(fd);
	return off;
}

/* Returns 1 when newly probed, 0 when known or without the symbol, or -errno. */
static int dist_attach_lib(const char *path)
{
	LIBBPF_OPTS(bpf_uprobe_opts, entry);
	LIBBPF_OPTS(bpf_uprobe_opts, ret, .retprobe = 1);
	struct bpf_link *l_entry, *l_ret;
	struct stat st;
	long off;

	if (!dist.skel)
		return -ENODEV;
	if (stat(path, &st) != 0)
		return -errno;
	for (size_t i = 0; i < dist.n_lib; i++)
		if (dist.lib[i].dev == st.st_dev && dist.lib[i].ino == st.st_ino)
			return 0;
	if (dist.n_lib >= DIST_MAX_LIBS)
		return -ENOSPC;
	/* Remembered even without the symbol: libpthread stubs stay skipped. */
	dist.lib[dist.n_lib].dev = st.st_dev;
	dist.lib[dist.n_lib].ino = st.st_ino;
	dist.n_lib++;
	off = dist_symbol_offset(path, DIST_BARRIER_SYMBOL);
	if (off == -ENOENT)
		return 0;
	if (off < 0)
		return (int)off;
	l_entry = bpf_program__attach_uprobe_opts(dist.skel->progs.zs_barrier_enter, -1,
						  path, (size_t)off, &entry);
	if (!l_entry)
		return -errno;
	l_ret = bpf_program__attach_uprobe_opts(dist.skel->progs.zs_barrier_exit, -1,
						path, (size_t)off, &ret);
	if (!l_ret) {
		int err = -errno;

		bpf_link__destroy(l_entry);
		return err;
	}
	dist.link[dist.n_link++] = l_entry;
	dist.link[dist.n_link++] = l_ret;
	log_info("probing %s in %s", DIST_BARRIER_SYMBOL, path);
	return 1;
}

/*
 * Probes every libc that the process mapping maps_path maps; root is
 * prefixed to the paths so that other mount namespaces resolve.
 */
static void dist_scan_maps(const char *maps_path, const char *root)
{
	char line[4096], path[PATH_MAX + 64];
	FILE *f = fopen(maps_path, "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');
		int err;

		if (!file)
			continue;
		file[strcspn(file, "\n")] = '\0';
		if (!dist_is_libc(file))
			continue;
		snprintf(path, sizeof(path), "%s%s", root, file);
		err = dist_attach_lib(path);
		if (err < 0 && err != -ENOENT)
			log_warnx("%s: cannot probe %s: %s", path, DIST_BARRIER_SYMBOL,
				  strerror(-err));
	}
	fclose(f);
}

/* A watched process made its first wait: probe the libc it maps. */
void probe_dist_libc(uint32_t pid)
{
	char maps[64], root[64];

	if (!dist.skel)
		return;
	snprintf(maps, sizeof(maps), "/proc/%u/maps", pid);
	snprintf(root, sizeof(root), "/proc/%u/root", pid);
	dist_scan_maps(maps, root);
}

static int dist_open(void **skel, struct bpf_object **obj, const struct probes_opts *opts)
{
	struct dist_bpf *s = dist_bpf__open();

	(void)opts;
	if (!s)
		return -errno;
	*skel = s;
	*obj = s->obj;
	return 0;
}

static int dist_load(void *skel)
{
	struct dist_bpf *s = skel;
	int err = dist_bpf__load(s);

	if (err)
		return err;
	/* The loader attaches tp* sections itself; these go per syscall. */
	err = probe_syscalls_attach(s->progs.zs_futex_enter, s->progs.zs_futex_exit,
				    dist_futex, 1, &dist.futex);
	if (err)
		goto fail;
	/* futex2 is optional: older kernels lack it. */
	if (probe_syscalls_attach(s->progs.zs_futex2_enter, s->progs.zs_futex_exit,
				  dist_futex2, 2, &dist.futex2) != 0)
		log_debug("no futex_waitv/futex_wait tracepoints: futex(2) waits only");
	dist.skel = skel;
	/* Our own libc is the system's: most processes share it. */
	dist_scan_maps("/proc/self/maps", "");
	if (dist.n_link == 0)
		log_warnx("no libc with %s found: barrier waits are not measured",
			  DIST_BARRIER_SYMBOL);
	return 0;

fail:
	probe_syscalls_detach(&dist.futex);
	probe_syscalls_detach(&dist.futex2);
	return err;
}

static void dist_destroy(void *skel)
{
	for (size_t i = 0; i < dist.n_link; i++)
		bpf_link__destroy(dist.link[i]);
	dist.n_link = 0;
	dist.n_lib = 0;
	probe_syscalls_detach(&dist.futex);
	probe_syscalls_detach(&dist.futex2);
	dist.skel = NULL;
	dist_bpf__destroy(skel);
}

const struct probe_module probe_dist_module = {
	.name = "dist",
	.open = dist_open,
	.load = dist_load,
	.destroy = dist_destroy,
};
