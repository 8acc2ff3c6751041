/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pyfind.h.  A file is a CPython candidate by its name (python3.X,
 * libpython3.X.so*); its version comes from Py_Version (3.11 and later),
 * read from the live process, or else from the name.  The layout check
 * follows the same pointers the BPF walk will: _PyRuntime's first
 * interpreter, its first thread state, whose interp must point back and
 * whose native thread id must be one of the process's threads, as they
 * are named in the process's own PID namespace (a pod's main thread is 1).
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "collector/parser/parser.h"
#include "collector/python/pyfind.h"
#include "common/util.h"

/* python3.11, libpython3.11.so.1.0: sets minor from the name. */
static int python_name(const char *path, uint32_t *minor)
{
	const char *base = strrchr(path, '/');
	unsigned int m;
	char tail;

	base = base ? base + 1 : path;
	if (strncmp(base, "lib", 3) == 0)
		base += 3;
	if (sscanf(base, "python3.%u%c", &m, &tail) < 1)
		return 0;
	*minor = m;
	return 1;
}

/*
 * The symbols of the interpreter files read last, by the file's identity:
 * every DataLoader worker a job forks maps the same binary, and reading
 * its symbol tables again for each would cost more than watching it.
 */
#define ELF_CACHE	8

struct elf_cached {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct pyelf_syms syms;
};

static struct elf_cached elf_cache[ELF_CACHE];
static unsigned int elf_cache_used, elf_cache_next;

static int same_file(const struct elf_cached *c, const struct stat *st)
{
	return c->dev == st->st_dev && c->ino == st->st_ino && c->size == st->st_size &&
	       c->mtime.tv_sec == st->st_mtim.tv_sec && c->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static const struct pyelf_syms *elf_cache_find(const struct stat *st)
{
	for (unsigned int i = 0; i < elf_cache_used; i++)
		if (same_file(&elf_cache[i], st))
			return &elf_cache[i].syms;
	return NULL;
}

static void elf_cache_add(const struct stat *st, const struct pyelf_syms *s)
{
	struct elf_cached *c = &elf_cache[elf_cache_next];

	elf_cache_next = (elf_cache_next + 1) % ELF_CACHE;
	if (elf_cache_used < ELF_CACHE)
		elf_cache_used++;
	c->dev = st->st_dev;
	c->ino = st->st_ino;
	c->size = st->st_size;
	c->mtime = st->st_mtim;
	c->syms = *s;
}

/* The interpreter's symbols, parsed by the parser child once per file. */
static int read_elf(const char *file, struct pyelf_syms *s)
{
	const struct pyelf_syms *known;
	struct stat st;
	int fd, err = 0;

	memset(s, 0, sizeof(*s));
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOEXEC;
	}
	known = elf_cache_find(&st);
	if (known)
		*s = *known;
	else if ((err = parser_elf_python(fd, s)) == 0)
		elf_cache_add(&st, s);
	close(fd);
	return err;
}

/* Where a file is mapped, and which file it is: its device and inode, as maps gives them. */
struct mapping {
	uint64_t start;
	unsigned int dev_major, dev_minor;
	unsigned long long ino;
};

/*
 * The nth CPython file pid maps (by name), and its offset-0 mapping.  0,
 * or -ENOENT.  A python3.X executable linked against libpython3.X.so (as
 * pyenv and python.org build it) is one, and holds none of the runtime:
 * the caller goes on to the next.
 */
static int find_file(uint32_t pid, int nth, char *path, size_t len, struct mapping *m,
		     uint32_t *minor)
{
	char maps[64], line[PATH_MAX + 128], buf[PROC_READ_BUF];
	int found = -ENOENT;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%u/maps", pid);
	f = fopen(maps, "re");
	if (!f)
		return -errno;
	setvbuf(f, buf, _IOFBF, sizeof(buf));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, off, ino;
		unsigned int dev_major, dev_minor;
		char *file;
		int pos = 0;

		if (sscanf(line, "%llx-%*x %*s %llx %x:%x %llu %n", &lo, &off, &dev_major, &dev_minor,
			   &ino, &pos) < 5 || !pos)
			continue;
		file = line + pos;
		file[strcspn(file, "\n")] = '\0';
		if (file[0] != '/' || off != 0 || !python_name(file, minor))
			continue;
		if (strstr(strrchr(file, '/'), "python3.") == NULL || nth-- > 0)
			continue;
		snprintf(path, len, "%s", file);
		*m = (struct mapping){ lo, dev_major, dev_minor, ino };
		found = 0;
		break;
	}
	fclose(f);
	return found;
}

/* Whether path, as the collector sees it, is the file of mapping m. */
static int is_mapped_file(const char *path, const struct mapping *m)
{
	struct stat st;

	return stat(path, &st) == 0 && major(st.st_dev) == m->dev_major &&
	       minor(st.st_dev) == m->dev_minor && (unsigned long long)st.st_ino == m->ino;
}

/*
 * A thread's id in its own PID namespace: the last field of the NSpid
 * line of /proc/PID/task/TID/status (the only one in the host's), or 0.
 */
static uint64_t ns_tid_of(uint32_t pid, const char *task)
{
	char path[300], line[256];
	unsigned long long id = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/task/%s/status", pid, task);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *field, *save = NULL;

		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		for (field = strtok_r(line + 6, " \t\n", &save); field;
		     field = strtok_r(NULL, " \t\n", &save))
			id = strtoull(field, NULL, 10);
		break;
	}
	fclose(f);
	return id;
}

/* Whether tid, as the process itself names its threads, is one of pid's. */
static int tid_exists(uint32_t pid, uint64_t tid)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int found = 0;

	if (tid == 0 || tid > INT32_MAX)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while (!found && (d = readdir(dir)))
		found = d->d_name[0] != '.' && ns_tid_of(pid, d->d_name) == tid;
	closedir(dir);
	return found;
}

/*
 * 3.10's thread states name their threads by pthread_self(), which /proc
 * does not show: one of them must name the main thread as _PyRuntime does.
 */
static int check_main_thread(int mem, const struct py_interp *pi, uint64_t ts, char *why,
			     size_t why_len)
{
	const struct py_layout *l = &pi->layout;
	uint64_t main = 0, named = 0;

	if (pymem_read(mem, pi->runtime + l->walk.runtime_main_thread, &main, 8) != 0 || !main)
		return snprintf(why, why_len, "_PyRuntime names no main thread"), -EPROTO;
	for (int i = 0; i < ZP_MAX_TSTATES && ts; i++) {
		if (pymem_read(mem, ts + l->walk.tstate_native_tid, &named, 8) != 0)
			break;
		if (named == main)
			return 0;
		if (pymem_read(mem, ts + l->walk.tstate_next, &ts, 8) != 0)
			break;
	}
	return snprintf(why, why_len, "no thread state names the main thread %#llx",
			(unsigned long long)main), -EPROTO;
}

/*
 * The layout against the live interpreter: the id its first thread state
 * names its thread by in the process's PID namespace (0 where that is
 * pthread_self(), checked here), or -errno.
 */
static int check_layout(int mem, const struct py_interp *pi, char *why, size_t why_len)
{
	const struct py_layout *l = &pi->layout;
	uint64_t interp = 0, ts = 0, back = 0, tid = 0;

	if (pymem_read(mem, pi->runtime + l->walk.runtime_interp_head, &interp, 8) != 0)
		return snprintf(why, why_len, "cannot read _PyRuntime"), -EIO;
	if (!interp)
		return snprintf(why, why_len, "interpreter not initialised yet"), -EAGAIN;
	if (pymem_read(mem, interp + l->walk.interp_threads_head, &ts, 8) != 0)
		return snprintf(why, why_len, "_PyRuntime's interpreter is unreadable"), -EPROTO;
	if (!ts)
		return snprintf(why, why_len, "no thread state yet"), -EAGAIN;
	if (pymem_read(mem, ts + l->tstate_interp, &back, 8) != 0 || back != interp)
		return snprintf(why, why_len, "thread state does not match the %u.%u layout",
				pi->major, pi->minor), -EPROTO;
	if (l->walk.runtime_main_thread)
		return check_main_thread(mem, pi, ts, why, why_len);
	if (pymem_read(mem, ts + l->walk.tstate_native_tid, &tid, 8) != 0 ||
	    tid == 0 || tid > INT32_MAX)
		return snprintf(why, why_len, "thread state does not match the %u.%u layout",
				pi->major, pi->minor), -EPROTO;
	return (int)tid;
}

/*
 * pi's layout: its version's row, or else the offsets the interpreter
 * publishes; bounded either way.  0, or -errno with why set.
 */
static int layout_of(int mem, struct py_interp *pi, char *why, size_t why_len)
{
	const struct py_layout *row = py_layout_find(pi->major, pi->minor);
	char detail[160] = "";
	int err = 0;

	if (row)
		pi->layout = *row;
	else
		err = parser_py_layout(mem, pi->runtime, pi->major, pi->minor, &pi->layout, detail,
				       sizeof(detail));
	if (err == -EPROTONOSUPPORT) {
		snprintf(why, why_len, "CPython %u.%u is not supported for Python frames "
			 "(supported: %s%s%s); its stalls are kept without Python sites",
			 pi->major, pi->minor, py_layout_supported(), *detail ? "; " : "", detail);
		return err;
	}
	if (err) {
		snprintf(why, why_len, "%s", detail);
		return err;
	}
	if (!py_layout_fits(&pi->layout)) {
		snprintf(why, why_len, "the %u.%u layout is outside what the collector reads",
			 pi->major, pi->minor);
		return -EPROTO;
	}
	return 0;
}

int pyfind(uint32_t pid, struct py_interp *pi, char *why, size_t why_len)
{
	char file[PATH_MAX + 64], mempath[64];
	struct pyelf_syms s;
	uint64_t bias, version = 0;
	struct mapping m;
	uint32_t minor = 0;
	int mem = -1, err, tid;

	memset(pi, 0, sizeof(*pi));
	snprintf(why, why_len, "no CPython");
	for (int nth = 0;; nth++) {
		err = find_file(pid, nth, pi->path, sizeof(pi->path), &m, &minor);
		if (err)
			return err;
		snprintf(file, sizeof(file), "/proc/%u/root%s", pid, pi->path);
		err = read_elf(file, &s);
		/*
		 * A chrooted process's maps name its files as the collector's
		 * root sees them (its root lies below ours), so through its
		 * root the path is wrong: the path itself is the file, when it
		 * is the very one mapped.
		 */
		if (err == -ENOENT && is_mapped_file(pi->path, &m))
			err = read_elf(pi->path, &s);
		if (err) {
			snprintf(why, why_len, "%s: not a readable ELF file", pi->path);
			return err;
		}
		if (s.runtime)
			break;
		snprintf(why, why_len, "%s has no _PyRuntime symbol", pi->path);
	}
	bias = m.start - (s.first_load & ~0xfffull);
	pi->runtime = s.runtime + bias;
	pi->code_type = s.code_type ? s.code_type + bias : 0;
	pi->major = 3;
	pi->minor = minor;
	snprintf(mempath, sizeof(mempath), "/proc/%u/mem", pid);
	mem = open(mempath, O_RDONLY | O_CLOEXEC);
	if (mem < 0) {
		err = -errno;
		snprintf(why, why_len, "cannot open %s", mempath);
		return err;
	}
	if (s.version && pymem_read(mem, s.version + bias, &version, 8) == 0 && version) {
		pi->major = (uint32_t)(version >> 24) & 0xff;
		pi->minor = (uint32_t)(version >> 16) & 0xff;
		pi->micro = (uint32_t)(version >> 8) & 0xff;
		pi->micro_known = 1;
	}
	err = layout_of(mem, pi, why, why_len);
	if (err)
		goto cleanup;
	if (!pi->code_type) {
		snprintf(why, why_len, "%s has no PyCode_Type symbol", pi->path);
		err = -EPROTO;
		goto cleanup;
	}
	tid = check_layout(mem, pi, why, why_len);
	if (tid < 0) {
		err = tid;
		goto cleanup;
	}
	if (tid && !tid_exists(pid, (uint64_t)tid)) {
		snprintf(why, why_len, "thread state names thread %d, not one of pid %u's",
			 tid, pid);
		err = -EPROTO;
		goto cleanup;
	}
	err = 0;

cleanup:
	close(mem);
	return err;
}
