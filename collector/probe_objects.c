/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The BPF objects of the loader (probe_loader.h), one row each: how to
 * open its skeleton, what to set before load, how to load and destroy it.
 * The first object owns the maps every object shares (bpf/watch.h); the
 * others reuse its descriptors before they load, so there is one watched
 * set, one ring buffer, one loss counter and one device table.  Root.
 */
#include <errno.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "bpf/cuda_trace.skel.h"
#include "bpf/gpu_mem.skel.h"
#include "bpf/launch_hist.h"
#include "bpf/nccl.skel.h"
#include "bpf/probe_abi.h"
#include "bpf/sched.skel.h"
#include "bpf/watch.skel.h"
#include "collector/launch_hist.h"
#include "collector/probe_loader.h"
#include "common/log.h"
#include "common/util.h"

/* The skeleton's functions behind the object table's untyped ones. */
#define SKELETON(name)								\
static void *name##_open(struct bpf_object **obj)				\
{										\
	struct name##_bpf *s = name##_bpf__open();				\
										\
	if (s)									\
		*obj = s->obj;							\
	return s;								\
}										\
static int name##_load(void *s)							\
{										\
	return name##_bpf__load(s);						\
}										\
static void name##_destroy(void *s)						\
{										\
	name##_bpf__destroy(s);							\
}

SKELETON(watch)
SKELETON(gpu_mem)
SKELETON(cuda_trace)
SKELETON(nccl)
SKELETON(sched)

/* --comm names, matched by the kernel at exec. */
static int watch_configure(void *skel, struct probes *p)
{
	struct watch_bpf *s = skel;
	size_t n = p->opts.n_comms;

	if (n > ZW_MAX_COMMS) {
		log_warnx("only the first %d --comm names are matched at exec", ZW_MAX_COMMS);
		n = ZW_MAX_COMMS;
	}
	for (size_t i = 0; i < n; i++)
		strncpy((char *)s->rodata->comms[i], p->opts.comms[i], SHM_COMM_LEN - 1);
	s->rodata->n_comms = (__u32)n;
	return 0;
}

/* The per-CPU launch histograms, sized within their memory budget. */
static int cuda_trace_configure(void *skel, struct probes *p)
{
	struct cuda_trace_bpf *s = skel;

	p->lh_slots = launch_hist_slots(p->ncpu);
	bpf_map__set_max_entries(s->maps.zt_hist, p->lh_slots * LH_FAMILIES);
	bpf_map__set_max_entries(s->maps.zt_slots, p->lh_slots);
	bpf_map__set_max_entries(s->maps.zt_free, p->lh_slots);
	return 0;
}

#define OBJECT(name, configure) \
	{ #name, name##_open, configure, name##_load, name##_destroy }

const struct probe_object probe_objects[PROBE_OBJ_COUNT] = {
	[PROBE_OBJ_WATCH]	= OBJECT(watch, watch_configure),
	[PROBE_OBJ_GPU_MEM]	= OBJECT(gpu_mem, NULL),
	[PROBE_OBJ_CUDA_TRACE]	= OBJECT(cuda_trace, cuda_trace_configure),
	[PROBE_OBJ_NCCL]	= OBJECT(nccl, NULL),
	[PROBE_OBJ_SCHED]	= OBJECT(sched, sched_configure),
};

/* The maps of bpf/watch.h, and the value each must hold for the collector. */
static const struct {
	const char *name;
	uint32_t value_size;
} shared_maps[] = {
	{ "zw_watched", sizeof(uint32_t) },	/* SHM_WATCH_* */
	{ "zw_events", 0 },
	{ "zw_drops", sizeof(uint64_t) },
	{ "zw_curdev", sizeof(struct zw_thread_gpu) },
};

enum { SHARED_WATCHED, SHARED_EVENTS, SHARED_DROPS };

int probe_objects_load(struct probes *p)
{
	int shared_fd[ARRAY_SIZE(shared_maps)];
	int err = 0;

	for (size_t i = 0; i < PROBE_OBJ_COUNT; i++) {
		const struct probe_object *o = &probe_objects[i];

		p->skel[i] = o->open(&p->obj[i]);
		if (!p->skel[i]) {
			err = -errno;
			log_error("cannot open the %s BPF object: %s", o->name, strerror(errno));
			return err;
		}
		p->n_obj = i + 1;
		for (size_t k = 0; i > 0 && k < ARRAY_SIZE(shared_maps); k++) {
			struct bpf_map *map = bpf_object__find_map_by_name(p->obj[i], shared_maps[k].name);

			if (map && (err = bpf_map__reuse_fd(map, shared_fd[k])) != 0) {
				log_error("%s: cannot share map %s: %s", o->name,
					  shared_maps[k].name, strerror(-err));
				return err;
			}
		}
		if (o->configure && (err = o->configure(p->skel[i], p)) != 0)
			return err;
		err = o->load(p->skel[i]);
		if (err) {
			log_error("cannot load the %s BPF programs: %s (see ZERNEL_LOG=debug)",
				  o->name, strerror(-err));
			return err;
		}
		for (size_t k = 0; i == 0 && k < ARRAY_SIZE(shared_maps); k++) {
			struct bpf_map *map = bpf_object__find_map_by_name(p->obj[i], shared_maps[k].name);

			if (!map || (shared_maps[k].value_size &&
				     bpf_map__value_size(map) != shared_maps[k].value_size)) {
				log_error("%s lacks the shared map %s, or it has another layout",
					  o->name, shared_maps[k].name);
				return -EINVAL;
			}
			shared_fd[k] = bpf_map__fd(map);
		}
	}
	p->watched_fd = shared_fd[SHARED_WATCHED];
	p->drops_fd = shared_fd[SHARED_DROPS];
	p->lh = launch_hist_new(p->obj[PROBE_OBJ_CUDA_TRACE], p->lh_slots, p->ncpu);
	if (!p->lh) {
		err = -errno;
		log_error("cannot set up the launch histograms: %s", strerror(errno));
		return err;
	}
	p->rb = ring_buffer__new(shared_fd[SHARED_EVENTS], decode_ringbuf, &p->dec, NULL);
	if (!p->rb) {
		err = -errno;
		log_error("cannot open the BPF ring buffer: %s", strerror(errno));
	}
	return err;
}

void probe_objects_destroy(struct probes *p)
{
	ring_buffer__free(p->rb);
	p->rb = NULL;
	launch_hist_free(p->lh);
	p->lh = NULL;
	for (size_t i = p->n_obj; i > 0; i--)
		probe_objects[i - 1].destroy(p->skel[i - 1]);
	p->n_obj = 0;
}
