/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The BPF loader of zernel-collector: checks privileges, loads the probe
 * modules (sharing the watched set, ring buffer and loss counter of the
 * first), attaches their tracepoints, then uprobes on every CUDA/NCCL
 * library found, and turns ring-buffer events into agg_* calls.  Root.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "collector/probe_module.h"
#include "collector/probe_sched.h"
#include "bpf/probe_abi.h"
#include "common/log.h"
#include "common/util.h"

/* Load order matters: the first module owns the shared maps. */
static const struct probe_module *const probe_modules[] = {
	&probe_watch_module,
	&probe_gpu_mem_module,
	&probe_cuda_trace_module,
	&probe_nccl_module,
	&probe_dataload_module,
	&probe_dist_module,
	&probe_sched_module,
};

#define PROBES_DRAIN_MS	50

static const char *const shared_maps[] = {
	"zw_watched", "zw_events", "zw_drops", "zw_curdev",
};

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];

	/* libbpf's own messages are details: our callers log what failed. */
	if (level == LIBBPF_DEBUG && log_level_get() > LOG_LEVEL_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_debug("libbpf: %s", line);
	return 0;
}

void probes_watch(struct probes *p, uint32_t pid, uint32_t ppid, uint32_t reason,
		  const char *comm, uint64_t start_ns)
{
	uint32_t cur = 0;

	bpf_map_lookup_elem(p->watched_fd, &pid, &cur);
	if ((cur & reason) != reason) {
		cur |= reason;
		if (bpf_map_update_elem(p->watched_fd, &pid, &cur, BPF_ANY) != 0)
			agg_count_dropped(p->agg, 1);
	}
	/* A full table is counted by the aggregation. */
	agg_proc_watch(p->agg, pid, ppid, reason, comm, start_ns);
}

/* The kernel's side of a process that is gone (decode_ops.proc_exit). */
static void probes_forget(void *ctx, uint32_t pid)
{
	struct probes *p = ctx;

	bpf_map_delete_elem(p->watched_fd, &pid);
	for (size_t i = 0; i < p->n_mod; i++)
		if (p->mod[i].mod->proc_exit)
			p->mod[i].mod->proc_exit(p->mod[i].skel, p, pid);
}

void probes_unwatch(struct probes *p, uint32_t pid)
{
	probes_forget(p, pid);
	decode_proc_gone(&p->dec, pid);
}

/* decode_ops.libc_probe */
static void probes_libc(void *ctx, uint32_t pid)
{
	(void)ctx;
	probe_dist_libc(pid);
}

static int load_modules(struct probes *p)
{
	int shared_fd[ARRAY_SIZE(shared_maps)];
	int err = 0;

	for (size_t i = 0; i < ARRAY_SIZE(probe_modules); i++) {
		const struct probe_module *m = probe_modules[i];
		struct probe_loaded *l = &p->mod[p->n_mod];

		l->mod = m;
		err = m->open(&l->skel, &l->obj, &p->opts);
		if (err) {
			log_error("cannot open the %s BPF object: %s", m->name, strerror(-err));
			return err;
		}
		p->n_mod++;
		for (size_t k = 0; i > 0 && k < ARRAY_SIZE(shared_maps); k++) {
			struct bpf_map *map = bpf_object__find_map_by_name(l->obj, shared_maps[k]);

			if (map && (err = bpf_map__reuse_fd(map, shared_fd[k])) != 0) {
				log_error("%s: cannot share map %s: %s", m->name,
					  shared_maps[k], strerror(-err));
				return err;
			}
		}
		err = m->load(l->skel);
		if (err) {
			log_error("cannot load the %s BPF programs: %s (see ZERNEL_LOG=debug)",
				  m->name, strerror(-err));
			return err;
		}
		for (size_t k = 0; i == 0 && k < ARRAY_SIZE(shared_maps); k++) {
			struct bpf_map *map = bpf_object__find_map_by_name(l->obj, shared_maps[k]);

			if (!map) {
				log_error("%s lacks the shared map %s", m->name, shared_maps[k]);
				return -EINVAL;
			}
			shared_fd[k] = bpf_map__fd(map);
		}
	}
	p->watched_fd = shared_fd[0];
	p->drops_fd = shared_fd[2];
	p->rb = ring_buffer__new(shared_fd[1], decode_ringbuf, &p->dec, NULL);
	if (!p->rb) {
		err = -errno;
		log_error("cannot open the BPF ring buffer: %s", strerror(errno));
	}
	return err;
}

/* Tracepoint programs attach on their own; uprobes wait for libraries. */
static int attach_tracepoints(struct probes *p)
{
	for (size_t i = 0; i < p->n_mod; i++) {
		struct bpf_program *prog;

		bpf_object__for_each_program(prog, p->mod[i].obj) {
			const char *sec = bpf_program__section_name(prog);
			struct bpf_link *link;

			if (strncmp(sec, "tp", 2) != 0 && strncmp(sec, "raw_tp", 6) != 0)
				continue;
			if (p->n_links >= PROBES_MAX_LINKS)
				return -ENOSPC;
			link = bpf_program__attach(prog);
			if (!link) {
				int err = -errno;

				log_error("cannot attach %s (%s): %s", bpf_program__name(prog),
					  sec, strerror(-err));
				return err;
			}
			p->links[p->n_links++] = link;
		}
	}
	return 0;
}

static void watch_named_pids(struct probes *p)
{
	for (size_t i = 0; i < p->opts.n_pids; i++) {
		uint32_t pid = p->opts.pids[i];
		char path[64], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
		f = fopen(path, "re");
		if (!f) {
			log_warnx("--pid %u: no such process", pid);
			continue;
		}
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
		probes_watch(p, pid, 0, SHM_WATCH_PID, comm, 0);
	}
}

int probes_start(struct probes **out, struct agg *agg, const struct probes_opts *opts)
{
	struct probes *p = NULL;
	struct decode_ops ops;
	int err;

	*out = NULL;
	err = probe_priv_check();
	if (err)
		return err;
	libbpf_set_print(libbpf_log);
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->agg = agg;
	p->opts = *opts;
	if (p->opts.discovery_interval_ms == 0)
		p->opts.discovery_interval_ms = 1000;
	ops = (struct decode_ops){ .proc_exit = probes_forget, .libc_probe = probes_libc, .ctx = p };
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
	err = load_modules(p);
	if (err)
		goto cleanup;
	/* 2. tracepoints: the watched set follows forks and exits from now on */
	err = attach_tracepoints(p);
	if (err)
		goto cleanup;
	/* 3. libraries named by hand, then whatever processes map already */
	for (size_t i = 0; i < opts->n_libs; i++) {
		const char *lib = opts->libs[i];
		unsigned int kind = discovery_lib_kind(lib);

		/* A library with an unusual name is probed for every symbol. */
		err = discovery_attach_lib(p, lib, kind ? kind : PROBE_LIB_ALL);
		if (err < 0) {
			log_error("--lib %s: %s", lib, strerror(-err));
			goto cleanup;
		}
	}
	watch_named_pids(p);
	discovery_scan(p);
	p->next_scan_ns = now_mono_ns() + p->opts.discovery_interval_ms * NSEC_PER_MSEC;
	log_info("BPF probes loaded: %zu modules, %zu libraries, %llu uprobes",
		 p->n_mod, p->n_libs, (unsigned long long)p->n_uprobe_links);
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

int probes_poll(struct probes *p, int timeout_ms)
{
	uint64_t now, events0 = p->dec.events;
	int err;

	/*
	 * Programs do not wake us for each event (it would cost more than the
	 * probe): sleep at most PROBES_DRAIN_MS, then drain.
	 */
	if (timeout_ms > PROBES_DRAIN_MS)
		timeout_ms = PROBES_DRAIN_MS;
	err = ring_buffer__poll(p->rb, timeout_ms);
	if (err < 0 && err != -EINTR)
		return err;
	err = ring_buffer__consume(p->rb);
	if (err < 0 && err != -EINTR)
		return err;
	now = now_mono_ns();
	for (size_t i = 0; i < p->n_mod; i++)
		if (p->mod[i].mod->poll)
			p->mod[i].mod->poll(p->mod[i].skel, p, now);
	if (now >= p->next_scan_ns) {
		discovery_scan(p);
		discovery_sweep(p);
		p->next_scan_ns = now + p->opts.discovery_interval_ms * NSEC_PER_MSEC;
	}
	report_drops(p);
	agg_set_probes(p->agg, p->n_uprobe_links, p->n_libs);
	return (int)(p->dec.events - events0);
}

void probes_stop(struct probes *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_links; i++)
		bpf_link__destroy(p->links[i]);
	ring_buffer__free(p->rb);
	for (size_t i = p->n_mod; i > 0; i--)
		p->mod[i - 1].mod->destroy(p->mod[i - 1].skel);
	decode_destroy(&p->dec);
	free(p->links);
	free(p->drop_vals);
	free(p);
}
