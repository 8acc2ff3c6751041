/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The BPF objects of the loader (probe_loader.h), one a probe family
 * (families.c), loaded in the families' order.
 * The first object that declares a shared map (bpf/watch.h's, in every
 * object; bpf/pystack_walk.h's) owns it; the others reuse its descriptor
 * before they load, so there is one watched set, one ring buffer, one
 * loss counter, one device table and one set of Python threads.  Root.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include <bpf/libbpf.h>

#include "bpf/probe_abi.h"
#include "bpf/pystack.h"
#include "bpf/slot_hist_abi.h"
#include "collector/probes/probe_family.h"
#include "collector/probes/probe_loader.h"
#include "collector/probes/sched/open_states.h"
#include "collector/probes/slot_hist.h"
#include "collector/probes/uprobe_multi.h"
#include "common/log.h"
#include "common/util.h"

/*
 * The maps more than one object declares, and the value size the
 * collector expects of each (0: not read here).  The first object loaded
 * that declares one creates it; the later ones reuse its descriptor.
 */
static const struct {
	const char *name;
	uint32_t value_size;
} shared_maps[] = {
	/* bpf/watch.h, in every object */
	{ "zw_watched", sizeof(uint32_t) },	/* SHM_WATCH_* */
	{ "zw_watched_bits", sizeof(uint64_t) },
	{ "zw_events", 0 },
	{ "zw_drops", sizeof(uint64_t) },
	{ "zw_curdev", sizeof(struct zw_thread_gpu) },
	{ "zw_libc_seen", sizeof(uint8_t) },
	/* bpf/pool_users.h: the memory probe and the synchronisations */
	{ "zm_pool_users", sizeof(uint8_t) },
	/* bpf/pystack_walk.h: the scheduler's switch program and the sync probes */
	{ "zp_procs", sizeof(struct zp_proc) },
	{ "zp_loaders", sizeof(struct zp_loader) },
	{ "zp_threads", 0 },
	{ "zp_pending", 0 },
	{ "zp_walk_cost", sizeof(uint64_t) },
	/* bpf/coll_seen.h: the scheduler probe and the sync probes */
	{ "zs_coll_seen", 0 },
	{ "zs_coll_known", sizeof(struct zs_coll_known) },
};

enum { SHARED_WATCHED, SHARED_WATCHED_BITS, SHARED_EVENTS, SHARED_DROPS };

/* Object i's copy of each shared map: reused, or (after its load) the one to share. */
static int share_maps(struct probes *p, size_t i, int *shared_fd, int loaded)
{
	const char *name = probe_families[i]->object.name;

	for (size_t k = 0; k < ARRAY_SIZE(shared_maps); k++) {
		struct bpf_map *map = bpf_object__find_map_by_name(p->obj[i], shared_maps[k].name);
		int err;

		if (!map)
			continue;
		if (!loaded && shared_fd[k] >= 0) {
			err = bpf_map__reuse_fd(map, shared_fd[k]);
			if (err) {
				log_error("%s: cannot share map %s: %s", name,
					  shared_maps[k].name, strerror(-err));
				return err;
			}
		} else if (loaded && shared_fd[k] < 0) {
			if (shared_maps[k].value_size &&
			    bpf_map__value_size(map) != shared_maps[k].value_size) {
				log_error("%s: the shared map %s has another layout", name,
					  shared_maps[k].name);
				return -EINVAL;
			}
			shared_fd[k] = bpf_map__fd(map);
		}
	}
	return 0;
}

/* An array of one bit per tgid (bpf/watch.h), mapped for the collector's updates. */
static int map_bits(int fd, uint64_t **bits)
{
	void *m = mmap(NULL, ZW_WATCHED_WORDS * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, 0);

	if (m == MAP_FAILED)
		return -errno;
	*bits = m;
	return 0;
}

int probe_choose_uprobe_links(const struct probes_opts *o, int *multi_at)
{
	int at = uprobe_multi_attach_type();

	*multi_at = -1;
	if (o->uprobe_links == UPROBE_LINKS_PERF) {
		log_info("uprobes attach as one perf event each (--uprobe-links perf)");
		return 0;
	}
	if (at < 0) {
		if (o->uprobe_links == UPROBE_LINKS_MULTI) {
			log_error("--uprobe-links multi: this kernel has no uprobe_multi links "
				  "(Linux 6.6 and later)");
			return -ENOTSUP;
		}
		log_info("uprobes attach as one perf event each: this kernel has no "
			 "uprobe_multi links");
		return 0;
	}
	*multi_at = at;
	log_info("uprobes attach as uprobe_multi links, one per program and library");
	return 0;
}

/* Uprobe programs load for the attach type their links will have. */
static void set_uprobe_attach_type(struct probes *p, struct bpf_object *obj)
{
	struct bpf_program *prog;

	if (p->uprobe_multi_at < 0)
		return;
	bpf_object__for_each_program(prog, obj) {
		const char *sec = bpf_program__section_name(prog);

		if (strcmp(sec, "uprobe") == 0 || strcmp(sec, "uretprobe") == 0)
			bpf_program__set_expected_attach_type(prog,
				(enum bpf_attach_type)p->uprobe_multi_at);
	}
}

/*
 * Object i opened, its shared maps reused, configured and loaded.  Logs
 * what failed but the load itself, which *refused says.
 */
static int load_object(struct probes *p, size_t i, int *shared_fd, int *refused)
{
	const struct probe_object *o = &probe_families[i]->object;
	int err;

	*refused = 0;
	p->skel[i] = o->open(&p->obj[i]);
	if (!p->skel[i]) {
		err = -errno;
		log_error("cannot open the %s BPF object: %s", o->name, strerror(errno));
		return err;
	}
	p->n_obj = i + 1;
	err = share_maps(p, i, shared_fd, 0);
	if (err)
		return err;
	if (o->configure && (err = o->configure(p->skel[i], p)) != 0)
		return err;
	set_uprobe_attach_type(p, p->obj[i]);
	err = o->load(p->skel[i]);
	if (err) {
		*refused = 1;
		return err;
	}
	return share_maps(p, i, shared_fd, 1);
}

int probe_objects_load(struct probes *p)
{
	int shared_fd[ARRAY_SIZE(shared_maps)];
	int err = 0;

	for (size_t k = 0; k < ARRAY_SIZE(shared_maps); k++)
		shared_fd[k] = -1;
	for (size_t i = 0; i < PROBE_OBJ_COUNT; i++) {
		const struct probe_object *o = &probe_families[i]->object;
		int refused;

		err = load_object(p, i, shared_fd, &refused);
		/* A load the kernel refused, tried once more the other way the object has. */
		if (refused && o->fallback && o->fallback(p, err) == 0) {
			o->destroy(p->skel[i]);
			p->skel[i] = NULL;
			p->obj[i] = NULL;
			p->n_obj = i;
			err = load_object(p, i, shared_fd, &refused);
		}
		if (refused)
			log_error("cannot load the %s BPF programs: %s (see ZERNEL_LOG=debug)",
				  o->name, strerror(-err));
		if (err)
			return err;
	}
	for (size_t k = 0; k <= SHARED_DROPS; k++) {
		if (shared_fd[k] < 0) {
			log_error("no BPF object declares the map %s", shared_maps[k].name);
			return -EINVAL;
		}
	}
	p->watched_fd = shared_fd[SHARED_WATCHED];
	p->drops_fd = shared_fd[SHARED_DROPS];
	err = map_bits(shared_fd[SHARED_WATCHED_BITS], &p->watched_bits);
	if (err) {
		log_error("cannot map the watched set's bits: %s", strerror(-err));
		return err;
	}
	err = map_bits(bpf_map__fd(bpf_object__find_map_by_name(p->obj[PROBE_OBJ_WATCH],
								 "zw_fresh_bits")),
		       &p->fresh_bits);
	if (!err)
		err = map_bits(bpf_map__fd(bpf_object__find_map_by_name(p->obj[PROBE_OBJ_WATCH],
									 "zw_forked_bits")),
			       &p->forked_bits);
	if (err) {
		log_error("cannot map the new processes' bits: %s", strerror(-err));
		return err;
	}
	p->launch_slots = slot_hist_new(p->obj[PROBE_OBJ_CUDA_TRACE], &slot_hist_launches,
					p->lh_slots, p->ncpu);
	p->sched_slots = slot_hist_new(p->obj[PROBE_OBJ_SCHED], &slot_hist_sched, p->lh_slots,
				       p->ncpu);
	if (!p->launch_slots || !p->sched_slots) {
		err = -errno;
		log_error("cannot set up the in-kernel process slots: %s", strerror(errno));
		return err;
	}
	p->open_states = open_states_new(p->obj[PROBE_OBJ_SCHED]);
	if (!p->open_states && errno != ENOENT)
		log_warn("cannot open the threads' open states (task iterator): %s; a state "
			 "counts only once it ends", strerror(errno));
	p->coll_known_fd = bpf_map__fd(bpf_object__find_map_by_name(p->obj[PROBE_OBJ_SCHED],
								    "zs_coll_known"));
	p->rb = ring_buffer__new(shared_fd[SHARED_EVENTS], decode_ringbuf, &p->dec, NULL);
	if (!p->rb) {
		err = -errno;
		log_error("cannot open the BPF ring buffer: %s", strerror(errno));
	}
	return err;
}

void probe_objects_destroy(struct probes *p)
{
	if (p->watched_bits)
		munmap(p->watched_bits, ZW_WATCHED_WORDS * sizeof(uint64_t));
	if (p->fresh_bits)
		munmap(p->fresh_bits, ZW_WATCHED_WORDS * sizeof(uint64_t));
	if (p->forked_bits)
		munmap(p->forked_bits, ZW_WATCHED_WORDS * sizeof(uint64_t));
	p->watched_bits = NULL;
	p->fresh_bits = NULL;
	p->forked_bits = NULL;
	ring_buffer__free(p->rb);
	p->rb = NULL;
	slot_hist_free(p->launch_slots);
	slot_hist_free(p->sched_slots);
	open_states_free(p->open_states);
	p->open_states = NULL;
	p->launch_slots = NULL;
	p->sched_slots = NULL;
	for (size_t i = p->n_obj; i > 0; i--)
		probe_families[i - 1]->object.destroy(p->skel[i - 1]);
	p->n_obj = 0;
}
