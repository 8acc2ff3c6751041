/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The BPF loader of zernel-collector, its main loop's side: checks
 * privileges, loads the objects, attaches the tracepoints, then acts on
 * what discovery reports (libraries to probe, processes to watch) and on
 * what the decoder asks of it; drains the ring buffer into the decoder and
 * the launch histograms into the aggregation.  The watched set is the
 * aggregation's process table; the kernel's zw_watched map is the filter
 * kept in step with it.  Root.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/probe_abi.h"
#include "collector/probes/nccl/nccl_track.h"
#include "collector/parser/parser.h"
#include "collector/probes/coverage.h"
#include "collector/identity/gpu_ident.h"
#include "collector/probes/syslibs.h"
#include "collector/proc/proc_mem.h"
#include "collector/proc/proc_stat.h"
#include "collector/probes/sched/open_states.h"
#include "collector/probes/slot_hist.h"
#include "collector/probes/probe_loader.h"
#include "collector/probes/proc_seen.h"
#include "collector/python/pyprocs.h"
#include "collector/python/pyread.h"
#include "common/log.h"
#include "common/util.h"

#define PROBES_STEP_MS	50	/* between two system libraries attached at start */

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *text = NULL, *line, *next;

	/* libbpf's own messages are details: our callers log what failed. */
	if (level == LIBBPF_DEBUG && log_level_get() > LOG_LEVEL_DEBUG)
		return 0;
	if (vasprintf(&text, fmt, ap) < 0)
		return 0;
	/* A message may be a verifier's whole log: each of its lines. */
	for (line = text; *line; line = next) {
		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = '\0';
		log_debug("libbpf: %s", line);
	}
	free(text);
	return 0;
}

/* The kernel's bit for pid (bpf/watch.h): the filter every switch tests. */
static void mark_watched(struct probes *p, uint32_t pid, int on)
{
	uint64_t bit = 1ull << (pid % 64);

	if (pid >= ZW_PID_LIMIT)
		return;
	/* The programs set and clear other bits of the same word meanwhile. */
	if (on)
		__atomic_fetch_or(&p->watched_bits[pid / 64], bit, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(&p->watched_bits[pid / 64], ~bit, __ATOMIC_RELAXED);
}

/*
 * A process /proc or --pid named (started at start_ns; 0: not known): into
 * the kernel's filter, then the set.  Its exit may come at any moment: the
 * kernel takes it out of the filter then, but only once it is in.  So it
 * goes in first and is looked at after; one gone (or a zombie, past its
 * exit) by then is taken out again: 0, where 1 is watched.
 */
static int probes_watch(struct probes *p, uint32_t pid, uint32_t ppid, uint32_t reason,
			const char *comm, uint64_t start_ns)
{
	uint32_t cur = 0;

	bpf_map_lookup_elem(p->watched_fd, &pid, &cur);
	if ((cur & reason) != reason) {
		cur |= reason;
		if (bpf_map_update_elem(p->watched_fd, &pid, &cur, BPF_ANY) != 0) {
			agg_count_dropped(p->agg, 1);
		} else {
			mark_watched(p, pid, 1);
			if (!proc_alive(pid, start_ns)) {
				log_debug("pid %u: gone as it was watched", pid);
				bpf_map_delete_elem(p->watched_fd, &pid);
				mark_watched(p, pid, 0);
				return 0;
			}
		}
	}
	decode_proc_seen(&p->dec, pid, ppid, reason, comm, start_ns, 0);
	return 1;
}

/*
 * The kernel's side of a process that is gone (decode_ops.proc_exit, or
 * found gone by the sweep with start_ns 0): its filter entry, and its
 * launch histograms, whose last launches go to the aggregation while it
 * still knows the process.
 */
static void probes_forget(void *ctx, uint32_t pid, uint64_t start_ns)
{
	struct probes *p = ctx;

	/*
	 * With an exit record, the kernel took pid out of the watched set as
	 * it exited; deleting it here too would take out a later process that
	 * reused the pid.  Without one, it may have left before it was added.
	 */
	if (!start_ns && bpf_map_delete_elem(p->watched_fd, &pid) == 0)
		mark_watched(p, pid, 0);
	slot_hist_release(p->launch_slots, p->agg, pid, start_ns);
	slot_hist_release(p->sched_slots, p->agg, pid, start_ns);
	gpu_ident_forget(p->ident, pid);
	if (p->py)
		pyprocs_forget(p->py, pid);
}

/* decode_ops.proc_reset: a new program or process under a watched pid. */
static void probes_reset(void *ctx, uint32_t pid)
{
	struct probes *p = ctx;

	/*
	 * What was counted so far goes to the old row; the kernel keeps the
	 * pid's slots, whose later differences are the new one's.
	 */
	slot_hist_read_pid(p->launch_slots, p->agg, pid, now_mono_ns());
	slot_hist_read_pid(p->sched_slots, p->agg, pid, now_mono_ns());
	gpu_ident_forget(p->ident, pid);
	/* Another interpreter, or none: looked for afresh at the next scan. */
	if (p->py)
		pyprocs_forget(p->py, pid);
}

/*
 * decode_ops.from_start: every CUDA library pid maps was probed before it
 * started.  Start times are rounded down to the clock tick, so a library
 * probed in the tick the process started counts as too late.
 */
static int probes_from_start(void *ctx, uint32_t pid)
{
	struct probes *p = ctx;
	struct discovery_item it;
	struct discovery d;
	uint64_t start = 0;
	int libs = 0, ok = 1;

	if (agg_proc_start_time(p->agg, pid, &start) != 0 || start == 0)
		return 0;
	if (discovery_open_pid(&d, pid, PROBE_LIB_CUDA | PROBE_LIB_CUDART) != 0)
		return 0;
	while (discovery_next(&d, &it)) {
		const struct probe_lib *lib = NULL;
		struct stat st;

		libs++;
		if (stat(it.path, &st) == 0)
			for (size_t i = 0; i < p->n_libs && !lib; i++)
				if (p->libs[i].dev == st.st_dev && p->libs[i].ino == st.st_ino)
					lib = &p->libs[i];
		if (!lib || lib->probed_boot_ns >= start)
			ok = 0;
	}
	discovery_close(&d);
	return libs > 0 && ok;
}

/* decode_ops.gpu_of: the physical GPU of pid's CUDA ordinal. */
static uint32_t probes_gpu_of(void *ctx, uint32_t pid, uint32_t ordinal, uint32_t *gpu_id)
{
	struct probes *p = ctx;

	return gpu_ident_map(p->ident, pid, ordinal, gpu_id);
}

/* decode_ops.py_where: the frames of a stall, named from the process. */
static int probes_py_where(void *ctx, const struct zev_py_stall *rec, struct stall_where *out)
{
	struct probes *p = ctx;

	return p->py ? pyprocs_where(p->py, rec, out) : -ENOENT;
}

/* The Python-stack probe's process map, from its object. */
static int python_start(struct probes *p)
{
	struct bpf_map *map, *loaders;

	if (p->opts.no_python_frames) {
		log_info("Python frames are not read (--no-python-frames)");
		return 0;
	}
	map = bpf_object__find_map_by_name(p->obj[PROBE_OBJ_PYSTACK], "zp_procs");
	loaders = bpf_object__find_map_by_name(p->obj[PROBE_OBJ_PYSTACK], "zp_loaders");
	if (!map || !loaders)
		return -ENOENT;
	p->py = pyprocs_new(p->agg, bpf_map__fd(map), bpf_map__fd(loaders));
	return p->py ? 0 : -ENOMEM;
}

/*
 * pid maps the library at path, just probed or known: remembered when the
 * file may lose its uprobes once nothing maps it.
 */
static void note_mapper(struct probes *p, uint32_t pid, const char *path)
{
	struct stat st;

	if (!pid || stat(path, &st) != 0)
		return;
	for (size_t i = 0; i < p->n_libs; i++) {
		if (p->libs[i].dev == st.st_dev && p->libs[i].ino == st.st_ino) {
			if (!p->libs[i].pinned)
				proc_seen_add_file(p->seen, pid, st.st_dev, st.st_ino);
			return;
		}
	}
}

/*
 * Whether pid forked or exec'd since the last look (the kernel's bit,
 * taken): 1 too where the kernel keeps no bit for it.
 */
static int take_fresh(struct probes *p, uint32_t pid)
{
	uint64_t bit = 1ull << (pid % 64);

	if (!p->fresh_bits || pid >= ZW_PID_LIMIT)
		return 1;
	/* Taken before the look: a fork or exec after it sets the bit again. */
	return (__atomic_fetch_and(&p->fresh_bits[pid / 64], ~bit, __ATOMIC_RELAXED) & bit) != 0;
}

/* Whether pid runs the program it was forked with (the kernel's bit; 0 where none). */
static int forked_unchanged(const struct probes *p, uint32_t pid)
{
	if (!p->forked_bits || pid >= ZW_PID_LIMIT)
		return 0;
	return (__atomic_load_n(&p->forked_bits[pid / 64], __ATOMIC_RELAXED) >> (pid % 64)) & 1;
}

/*
 * discovery's filter: the maps of a process are read when it runs a
 * program not read yet, unless it is a forked copy of a parent read at
 * this scan (its reasons are then the parent's).
 */
static int scan_wanted(void *ctx, uint32_t pid, uint32_t *reasons)
{
	struct probes *p = ctx;
	int full = p->scan % PROBES_FULL_SCAN_EVERY == 0;
	uint32_t ppid;
	int read, got;

	read = proc_seen_mark(p->seen, pid, p->scan, full, take_fresh(p, pid));
	/* A process the full table cannot hold is read at every scan. */
	if (read <= 0)
		return read != 0;
	if (full || !forked_unchanged(p, pid) || proc_parent(pid, &ppid) != 0)
		return 1;
	got = proc_seen_inherit(p->seen, pid, ppid, p->scan);
	if (got < 0)
		return 1;
	log_debug("pid %u: forked by %u and no exec since; its parent's libraries, maps not read",
		  pid, ppid);
	*reasons = (uint32_t)got;
	return 0;
}

/* One item of a scan: a process to watch, or a library file it maps. */
static void probes_found(struct probes *p, const struct discovery_item *it)
{
	if (it->what == DISCOVERY_PROC) {
		proc_seen_set_reasons(p->seen, it->pid,
				      it->reasons & (SHM_WATCH_CUDA | SHM_WATCH_NCCL));
		probes_watch(p, it->pid, it->ppid, it->reasons, it->comm, it->start_ns);
	} else if (probe_attach_lib(p, it->path, it->kind, 0) < 0) {
		log_debug("cannot probe %s of pid %u", it->path, it->pid);
	} else {
		note_mapper(p, it->pid, it->path);
	}
}

/*
 * Libraries to probe and processes to watch, from one /proc scan: the
 * maps of new programs (a new pid, an exec), and of every process at each
 * PROBES_FULL_SCAN_EVERY-th scan, for what loads libraries without the
 * dynamic loader.
 */
static void probes_scan(struct probes *p)
{
	struct discovery_item it;
	struct discovery d;

	if (discovery_open(&d, p->opts.comms, p->opts.n_comms) != 0) {
		log_warn("opendir /proc");
		return;
	}
	p->scan++;
	discovery_filter(&d, scan_wanted, p);
	while (discovery_next(&d, &it))
		probes_found(p, &it);
	discovery_close(&d);
	proc_seen_sweep(p->seen, p->scan);
	/* Files a live process maps are in use; the others can go after a while. */
	for (size_t i = 0; i < p->n_libs; i++)
		if (proc_seen_mappers(p->seen, p->libs[i].dev, p->libs[i].ino) > 0)
			p->libs[i].seen_scan = p->scan;
	probe_attach_idle(p);
}

/*
 * Watched processes that are gone without an exit record (ring buffer
 * full).  At each full scan, also those whose pid is a zombie's or
 * another process's now: their start time tells (a read of /proc/PID/stat
 * each, where the other scans send a null signal).
 */
static void probes_sweep(struct probes *p)
{
	int full = p->scan % PROBES_FULL_SCAN_EVERY == 0;
	uint32_t cursor = 0, pid;

	while (agg_proc_next(p->agg, &cursor, &pid)) {
		uint64_t row_start = 0, now_start = 0;
		int gone;

		if (full)
			gone = !proc_live_start(pid, &now_start);
		else
			gone = kill((pid_t)pid, 0) != 0 && errno == ESRCH;
		if (!gone && full && agg_proc_start_time(p->agg, pid, &row_start) == 0 &&
		    row_start && !ZW_SAME_START(row_start, now_start)) {
			/*
			 * Another process's pid now: whatever the kernel keeps
			 * under it (its filter entry, its slots) is that
			 * process's, the slots' owners checked by their start.
			 */
			log_debug("pid %u: another process now; its row goes", pid);
			gpu_ident_forget(p->ident, pid);
			if (p->py)
				pyprocs_forget(p->py, pid);
			decode_proc_gone(&p->dec, pid);
			continue;
		}
		if (!gone)
			continue;
		/* No such pid, or a zombie's: past its exit, nobody else's. */
		probes_forget(p, pid, 0);
		decode_proc_gone(&p->dec, pid);
	}
}

/*
 * Probes the libraries of the given kinds that pid maps (0: this process).
 * A file that cannot be probed is logged with why it mattered, or only
 * for debugging when why is NULL; one gone meanwhile is not.
 */
static void probe_maps_of(struct probes *p, uint32_t pid, unsigned int kinds, int pinned,
			  const char *why)
{
	struct discovery_item it;
	struct discovery d;
	int err;

	if (discovery_open_pid(&d, pid, kinds) != 0)
		return;		/* gone */
	while (discovery_next(&d, &it)) {
		err = probe_attach_lib(p, it.path, it.kind, pinned);
		if (err == -ENOENT || err >= 0)
			continue;
		if (why)
			log_warnx("%s: %s: %s", it.path, why, strerror(-err));
		else
			log_debug("cannot probe %s of pid %u: %s", it.path, pid, strerror(-err));
	}
	discovery_close(&d);
}

/*
 * pthread_barrier_wait in every libc pid maps (decode_ops.libc_probe;
 * pid 0 is this process, whose libc most processes share).
 */
static void probes_libc(void *ctx, uint32_t pid)
{
	probe_maps_of(ctx, pid, PROBE_LIB_LIBC, 1, "cannot probe it for barrier waits");
}

/*
 * decode_ops.lib_loaded: pid's loader reported a change to its libraries.
 * Remembered once; its maps are read after the ring is drained, when the
 * loader has mapped what it reported.
 */
static void probes_lib_loaded(void *ctx, uint32_t pid)
{
	struct probes *p = ctx;

	if (pid == (uint32_t)getpid())
		return;
	for (size_t i = 0; i < p->n_loading; i++)
		if (p->loading[i] == pid)
			return;
	if (p->n_loading < PROBES_MAX_LOADING)
		p->loading[p->n_loading++] = pid;
	else
		p->loading_overflow = 1;
}

/*
 * The processes that just loaded libraries, read as a scan reads each:
 * what they map is probed, and one that maps CUDA or NCCL now is watched.
 */
static void probes_loaded(struct probes *p)
{
	struct discovery_item it;
	struct discovery d;

	if (p->loading_overflow) {
		p->next_scan_ns = 0;
		p->loading_overflow = 0;
	}
	for (size_t i = 0; i < p->n_loading; i++) {
		/*
		 * Remembered from now with what it maps: a child that loads
		 * before the next scan would else take its parent's files there.
		 */
		proc_seen_mark(p->seen, p->loading[i], p->scan, 0, 1);
		if (discovery_open_one(&d, p->loading[i], p->opts.comms, p->opts.n_comms) == 0)
			while (discovery_next(&d, &it))
				probes_found(p, &it);
		discovery_close(&d);
	}
	p->n_loading = 0;
}

/* The loader the collector maps, the node's: processes started from now on report loads. */
static void probes_loader(struct probes *p)
{
	probe_maps_of(p, 0, PROBE_LIB_LOADER, 1,
		      "not probed: libraries a process loads are found at the next /proc scan only");
}

static void watch_named_pids(struct probes *p)
{
	for (size_t i = 0; i < p->opts.n_pids; i++) {
		uint32_t pid = p->opts.pids[i], tgid = 0;
		uint64_t start_ns = 0;
		char comm[32] = "";
		int err;

		/* The kernel follows processes: a thread stands for its own. */
		if (proc_tgid(pid, &tgid) == 0 && tgid != pid) {
			log_warnx("--pid %u is a thread of process %u: watching the process", pid,
				  tgid);
			pid = tgid;
		}
		err = proc_comm(pid, comm, sizeof(comm));
		if (err < 0 && err != -EIO) {
			log_warnx("--pid %u: no such process", pid);
			continue;
		}
		if (proc_start_time(pid, &start_ns) != 0)
			start_ns = 0;
		if (!probes_watch(p, pid, 0, SHM_WATCH_PID, comm, start_ns))
			log_warnx("--pid %u: the process has exited", pid);
	}
}

struct descendants_pass {
	struct probes *p;
	int added;
};

static void descendant_found(void *ctx, const struct discovery_item *it)
{
	struct descendants_pass *pass = ctx;
	uint32_t cur = 0;

	/*
	 * Known from an earlier pass.  One the kernel followed since is in
	 * its filter but not yet in the set (its record waits in the ring,
	 * or was lost): watched here all the same.
	 */
	if (bpf_map_lookup_elem(pass->p->watched_fd, &it->pid, &cur) == 0 &&
	    (cur & SHM_WATCH_DESCENDANT) && agg_proc_is_watched(pass->p->agg, it->pid))
		return;
	probes_found(pass->p, it);
	/* A zombie, or one gone meanwhile, is not watched: no cause for another pass. */
	if (agg_proc_is_watched(pass->p->agg, it->pid))
		pass->added++;
}

/*
 * The watched processes' children that were there before the collector
 * (a job's DataLoader workers, torchrun's ranks under --pid); the kernel
 * follows the forks from now on.  A child that forked between the read
 * of the process tree and its own watch is found by the next pass: passes
 * repeat until one finds nobody new.
 */
static void watch_descendants(struct probes *p)
{
	struct descendants_pass pass = { .p = p };
	uint32_t cursor, pid, *roots = NULL, *grown;
	size_t n, cap = 0;
	int total = 0, found = 0, round;

	for (round = 0; round < PROBES_DESCENDANT_PASSES; round++) {
		cursor = 0;
		n = 0;
		while (agg_proc_next(p->agg, &cursor, &pid)) {
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				grown = realloc(roots, cap * sizeof(*roots));
				if (!grown)
					break;
				roots = grown;
			}
			roots[n++] = pid;
		}
		pass.added = 0;
		found = n ? discovery_descendants(roots, n, descendant_found, &pass) : 0;
		total += pass.added;
		if (found <= 0 || pass.added == 0)
			break;
	}
	if (found < 0)
		log_warnx("the watched processes' children could not be listed: %s",
			  strerror(-found));
	else if (round == PROBES_DESCENDANT_PASSES)
		log_warnx("the watched processes still forked after %d passes over the process "
			  "tree: a child forked during the last may not be watched",
			  PROBES_DESCENDANT_PASSES);
	if (total > 0)
		log_info("%d children of watched processes, there before the collector, watched",
			 total);
	free(roots);
}

/* The node's own CUDA/NCCL libraries, probed before any process loads them. */
static void syslib_found(void *ctx, const char *path, unsigned int kind)
{
	struct probes *p = ctx;
	struct probe_syslib *s;

	if (p->n_syslibs >= PROBES_MAX_SYSLIBS || strlen(path) >= sizeof(s->path)) {
		log_info("%s: not probed at start (more than %d libraries, or a long path)", path,
			 PROBES_MAX_SYSLIBS);
		return;
	}
	s = &p->syslibs[p->n_syslibs++];
	memcpy(s->path, path, strlen(path) + 1);
	s->kind = kind;
}

/*
 * Each driver probed at start (the node's, --lib's) asked, unprivileged,
 * whether its cuGetProcAddress answers are the probed symbols.
 */
static void check_coverage(struct probes *p)
{
	uint64_t checked = 0, bypassed = 0, seen[PROBES_MAX_SYSLIBS][2];
	size_t n_seen = 0, k;
	struct coverage_result r;
	const char *path;
	struct stat st;

	for (size_t i = 0; i < p->n_syslibs + p->opts.n_libs; i++) {
		if (i < p->n_syslibs) {
			if (!(p->syslibs[i].kind & PROBE_LIB_CUDA))
				continue;
			path = p->syslibs[i].path;
		} else {
			path = p->opts.libs[i - p->n_syslibs];
			if (!(discovery_lib_kind(path) & PROBE_LIB_CUDA))
				continue;
		}
		/* The loader's cache names one file several ways (libcuda.so, .so.1, ...). */
		if (stat(path, &st) != 0)
			continue;
		for (k = 0; k < n_seen; k++)
			if (seen[k][0] == (uint64_t)st.st_dev && seen[k][1] == (uint64_t)st.st_ino)
				break;
		if (k < n_seen || n_seen == PROBES_MAX_SYSLIBS)
			continue;
		seen[n_seen][0] = (uint64_t)st.st_dev;
		seen[n_seen++][1] = (uint64_t)st.st_ino;
		if (coverage_check(path, &r) != 0)
			continue;
		checked += r.checked;
		bypassed += r.differ;
	}
	agg_set_coverage(p->agg, checked, bypassed);
}

/* One step of probing the node's libraries. */
static void syslibs_step(struct probes *p)
{
	if (p->next_syslib < p->n_syslibs) {
		const struct probe_syslib *s = &p->syslibs[p->next_syslib++];
		/* Kept: probed so that a process that loads them later is seen from its first call. */
		int err = probe_attach_lib(p, s->path, s->kind, 1);

		if (err < 0 && err != -ENOENT)
			log_info("%s: not probed at start: %s", s->path, strerror(-err));
	}
}

/* --lib: a library with an unusual name is probed for every GPU symbol. */
static int attach_named_libs(struct probes *p)
{
	for (size_t i = 0; i < p->opts.n_libs; i++) {
		const char *lib = p->opts.libs[i];
		unsigned int kind = discovery_lib_kind(lib) & PROBE_LIB_GPU;
		int err = probe_attach_lib(p, lib, kind ? kind : PROBE_LIB_GPU, 1);

		if (err < 0) {
			log_error("--lib %s: %s", lib, strerror(-err));
			return err;
		}
	}
	return 0;
}

static int libc_links(const struct probes *p)
{
	for (size_t i = 0; i < p->n_libs; i++)
		if (p->libs[i].kind == PROBE_LIB_LIBC && p->libs[i].attached)
			return 1;
	return 0;
}

int probes_start(struct probes **out, struct agg *agg, const struct probes_opts *opts)
{
	struct probes *p = NULL;
	struct decode_ops ops;
	int err, multi_at;

	*out = NULL;
	err = probe_choose_uprobe_links(opts, &multi_at);
	if (err)
		return err;
	err = probe_priv_check(multi_at < 0);
	if (err)
		return err;
	libbpf_set_print(libbpf_log);
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->agg = agg;
	p->coll_known_fd = -1;
	/* Which of several concurrent NCCL splits a child is: what the process was handed. */
	agg_set_user_reader(agg, proc_mem_u64, NULL);
	p->opts = *opts;
	p->uprobe_multi_at = multi_at;
	if (p->opts.discovery_interval_ms == 0)
		p->opts.discovery_interval_ms = 1000;
	if ((unsigned long long)sysconf(_SC_CLK_TCK) != 1000000000ull / ZW_START_TICK_NS)
		log_warnx("clock ticks are not 1/%llu s: start times from BPF and /proc differ",
			  1000000000ull / ZW_START_TICK_NS);
	p->ident = gpu_ident_new(opts->gpus, opts->n_gpus);
	p->seen = proc_seen_new();
	if (!p->ident || !p->seen) {
		err = -ENOMEM;
		goto cleanup;
	}
	ops = (struct decode_ops){ .proc_exit = probes_forget, .libc_probe = probes_libc,
				   .lib_loaded = probes_lib_loaded,
				   .gpu_of = probes_gpu_of, .proc_reset = probes_reset,
				   .py_where = probes_py_where, .from_start = probes_from_start, .ctx = p };
	err = decode_init(&p->dec, agg, &ops);
	if (err)
		goto cleanup;
	p->links = calloc(PROBES_MAX_LINKS, sizeof(*p->links));
	p->ncpu = libbpf_num_possible_cpus();
	p->drop_vals = p->ncpu > 0 ? calloc((size_t)p->ncpu, sizeof(*p->drop_vals)) : NULL;
	if (!p->links || !p->drop_vals) {
		err = -ENOMEM;
		goto cleanup;
	}

	/* 1. open, share maps, load */
	err = probe_objects_load(p);
	if (err)
		goto cleanup;
	err = python_start(p);
	if (err)
		goto cleanup;
	/* 2. tracepoints: the watched set follows forks and exits from now on */
	err = probe_attach_static(p);
	if (err)
		goto cleanup;
	/* 3. our own libc, the system's; then libraries named by hand */
	probes_libc(p, 0);
	probes_loader(p);
	if (!libc_links(p))
		log_warnx("no libc with pthread_barrier_wait found: barrier waits are not measured");
	/*
	 * The node's own libraries: found now, probed one per poll from the
	 * first (NCCL alone is 200 MB).  Its drivers and --lib's are checked
	 * now, while the collector may still make a child of nobody.
	 */
	if (!p->opts.no_node_libs)
		log_info("%zu CUDA/NCCL library paths found on the node (loader cache, driver "
			 "directories)", syslibs_scan(NULL, NULL, syslib_found, p));
	check_coverage(p);
	err = attach_named_libs(p);
	if (err)
		goto cleanup;
	/* 4. processes named by hand, whatever maps a library already, and their children */
	watch_named_pids(p);
	probes_scan(p);
	watch_descendants(p);
	if (p->py)
		pyprocs_scan(p->py, now_mono_ns());
	p->next_scan_ns = now_mono_ns() + p->opts.discovery_interval_ms * NSEC_PER_MSEC;
	log_info("BPF probes loaded: %zu objects, %llu libraries, %llu uprobes", p->n_obj,
		 (unsigned long long)p->gpu_libs, (unsigned long long)p->gpu_links);
	*out = p;
	return 0;

cleanup:
	probes_stop(p);
	return err;
}

/* Events the programs could not deliver (per-CPU counters, summed). */
static void report_drops(struct probes *p)
{
	uint64_t total = 0;

	for (uint32_t slot = 0; slot < ZW_DROP_SLOTS; slot++) {
		if (bpf_map_lookup_elem(p->drops_fd, &slot, p->drop_vals) != 0)
			continue;
		for (int c = 0; c < p->ncpu; c++)
			total += p->drop_vals[c];
	}
	if (total > p->drops_reported) {
		agg_count_dropped(p->agg, total - p->drops_reported);
		p->drops_reported = total;
	}
}

/* How long the loop may sleep: not past the next /proc scan, nor a library still to attach. */
static int poll_timeout(const struct probes *p, int timeout_ms)
{
	uint64_t now = now_mono_ns();
	uint64_t scan_ms = p->next_scan_ns > now ?
			   (p->next_scan_ns - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC : 0;

	if ((uint64_t)timeout_ms > scan_ms)
		timeout_ms = (int)scan_ms;
	if (p->next_syslib < p->n_syslibs && timeout_ms > PROBES_STEP_MS)
		timeout_ms = PROBES_STEP_MS;
	return timeout_ms;
}

/* What the stream tracking now knows of a process's collectives, for the scheduler probe. */
static void tell_sched(void *ctx, uint32_t pid, const struct zs_coll_known *k)
{
	const struct probes *p = ctx;

	/* Refused only when the map is full of processes alive: the probe then guesses. */
	bpf_map_update_elem(p->coll_known_fd, &pid, k, BPF_ANY);
}

int probes_poll(struct probes *p, int timeout_ms)
{
	uint64_t now, events0 = p->dec.events;
	int err;

	/*
	 * Programs do not wake us for each event (it would cost more than the
	 * probe): the buffer is drained before each publish, and earlier when
	 * a record asks (an exit, a library loaded) or the buffer fills
	 * (bpf/watch.h).
	 */
	pyread_next_batch();
	err = ring_buffer__poll(p->rb, poll_timeout(p, timeout_ms));
	if (err < 0 && err != -EINTR)
		return err;
	err = ring_buffer__consume(p->rb);
	if (err < 0 && err != -EINTR)
		return err;
	if (p->coll_known_fd >= 0)
		nccltrack_known(decode_state(&p->dec, PROBE_OBJ_NCCL), tell_sched, p);
	probes_loaded(p);
	syslibs_step(p);
	now = now_mono_ns();
	if (now >= p->next_scan_ns) {
		probes_scan(p);
		probes_sweep(p);
		if (p->py)
			pyprocs_scan(p->py, now);
		p->next_scan_ns = now + p->opts.discovery_interval_ms * NSEC_PER_MSEC;
	}
	agg_set_probes(p->agg, p->gpu_links, p->gpu_libs, p->refused);
	agg_set_parser_restarts(p->agg, parser_restarts());
	return (int)(p->dec.events - events0);
}

void probes_sync(struct probes *p)
{
	uint64_t now = now_mono_ns();
	int err;

	slot_hist_read(p->launch_slots, p->agg, now);
	slot_hist_read(p->sched_slots, p->agg, now);
	/* After the slots: a state that ended since is counted there, not open. */
	err = open_states_read(p->open_states, p->agg);
	if (err < 0)
		log_debug("reading the open thread states: %s", strerror(-err));
	report_drops(p);
}

void probes_stop(struct probes *p)
{
	if (!p)
		return;
	if (p->n_obj == PROBE_OBJ_COUNT)
		sched_report_counts(p);
	probe_attach_destroy(p);
	pyprocs_free(p->py);
	probe_objects_destroy(p);
	decode_destroy(&p->dec);
	free(p->links);
	free(p->drop_vals);
	gpu_ident_free(p->ident);
	proc_seen_free(p->seen);
	free(p);
}

int probes_uprobes_as_perf(const struct probes *p)
{
	return p->uprobe_multi_at < 0;
}
