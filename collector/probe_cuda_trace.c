/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CUDA launch module (bpf/cuda_trace.bpf.c): every kernel-launch entry
 * point of the driver and the runtime, per-thread-stream (_ptsz) forms
 * included, and the graph launches in their own series.  Launches are
 * counted in the kernel's histograms (bpf/launch_hist.h); this side reads
 * them every CT_READ_NS and hands the differences to the aggregation, so
 * the summary window moves in steps of that cadence.  Root-only.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/cuda_trace.skel.h"
#include "bpf/launch_hist.h"
#include "collector/keyindex.h"
#include "collector/probe_module.h"
#include "collector/hist.h"
#include "collector/latency.h"
#include "common/log.h"
#include "common/util.h"

#define DRV	PROBE_LIB_CUDA
#define RT	PROBE_LIB_CUDART

#define CT_READ_NS	(100 * NSEC_PER_MSEC)	/* map read cadence */

static const struct probe_uprobe cuda_trace_uprobes[] = {
	{ DRV, "cuLaunchKernel",		"zt_launch", "zt_launch_ret" },
	{ DRV, "cuLaunchKernel_ptsz",		"zt_launch", "zt_launch_ret" },
	{ DRV, "cuLaunchKernelEx",		"zt_launch", "zt_launch_ret" },
	{ DRV, "cuLaunchKernelEx_ptsz",		"zt_launch", "zt_launch_ret" },
	{ RT,  "cudaLaunchKernel",		"zt_launch", "zt_launch_ret" },
	{ RT,  "cudaLaunchKernel_ptsz",		"zt_launch", "zt_launch_ret" },
	{ RT,  "cudaLaunchKernelExC",		"zt_launch", "zt_launch_ret" },
	{ RT,  "cudaLaunchKernelExC_ptsz",	"zt_launch", "zt_launch_ret" },
	{ DRV, "cuGraphLaunch",			"zt_graph", "zt_graph_ret" },
	{ DRV, "cuGraphLaunch_ptsz",		"zt_graph", "zt_graph_ret" },
	{ RT,  "cudaGraphLaunch",		"zt_graph", "zt_graph_ret" },
	{ RT,  "cudaGraphLaunch_ptsz",		"zt_graph", "zt_graph_ret" },
};

struct cuda_trace {
	struct cuda_trace_bpf *skel;
	int hist_fd, slots_fd, free_fd;
	uint32_t slots;
	int ncpu;			/* possible CPUs */
	uint64_t next_read_ns;
	/* What the aggregation has been given per (tgid, family): at most one per histogram. */
	struct keyindex prev_ix;
	struct lh_val *prev;		/* per prev_ix slot */
	struct lh_val *percpu;		/* scratch: ncpu values of one entry */
	struct lh_val cur;		/* scratch: those values summed */
	uint64_t hist[HIST_BUCKETS];	/* scratch: differences */
	uint64_t prom[SHM_LAT_BUCKETS];
	uint32_t gone[64];		/* processes to release after a walk */
};

static uint64_t ct_key(uint32_t tgid, uint32_t family)
{
	return (uint64_t)tgid << 32 | family;
}

/* Reads zt_hist[slot][family], summed over the CPUs, into ct->cur. */
static int ct_load(struct cuda_trace *ct, uint32_t slot, uint32_t family)
{
	uint32_t key = slot * LH_FAMILIES + family;
	struct lh_val *c = &ct->cur;

	if (bpf_map_lookup_elem(ct->hist_fd, &key, ct->percpu) != 0)
		return -errno;
	*c = ct->percpu[0];
	for (int cpu = 1; cpu < ct->ncpu; cpu++) {
		const struct lh_val *v = &ct->percpu[cpu];

		c->sum_ns += v->sum_ns;
		if (v->max_ns > c->max_ns)
			c->max_ns = v->max_ns;
		for (unsigned int i = 0; i < SHM_LAT_BUCKETS; i++)
			c->prom[i] += v->prom[i];
		for (unsigned int i = 0; i < HIST_BUCKETS; i++)
			c->hist[i] += v->hist[i];
	}
	return 0;
}

/*
 * Hands what (tgid, family) gained since the last read (ct->cur holds it
 * now) to the aggregation.  Returns the agg_latency_batch result; on
 * -ENOENT the process is not known yet (its watch event may still be on
 * its way) and the difference stays pending for the next read.
 */
static int ct_feed(struct cuda_trace *ct, struct probes *p, uint32_t tgid, uint32_t family,
		   uint64_t now_ns)
{
	int32_t slot = keyindex_find(&ct->prev_ix, ct_key(tgid, family), 0);
	const struct lh_val *old, *cur = &ct->cur;
	static const struct lh_val zero;
	uint64_t count = 0;
	int err;

	old = slot >= 0 ? &ct->prev[slot] : &zero;
	for (unsigned int i = 0; i < SHM_LAT_BUCKETS; i++) {
		ct->prom[i] = (uint32_t)(cur->prom[i] - old->prom[i]);
		count += ct->prom[i];
	}
	if (count == 0)
		return 0;
	for (size_t i = 0; i < HIST_BUCKETS; i++)
		ct->hist[i] = (uint32_t)(cur->hist[i] - old->hist[i]);
	/*
	 * The all-time maximum is this batch's when it lies in the batch's top
	 * bucket; otherwise latency_record_batch bounds it to that bucket.
	 */
	err = agg_latency_batch(p->agg, tgid, (enum shm_family)family, now_ns, ct->hist,
				ct->prom, count, cur->sum_ns - old->sum_ns, cur->max_ns);
	if (err == -ENOENT || err == -EINVAL)
		return err;
	agg_count_events(p->agg, count);
	if (slot < 0)
		slot = keyindex_insert(&ct->prev_ix, ct_key(tgid, family), 0);
	if (slot < 0)
		return -ENOSPC;
	ct->prev[slot] = *cur;
	return 0;
}

static void ct_feed_slot(struct cuda_trace *ct, struct probes *p, uint32_t tgid, uint32_t slot,
			 uint64_t now_ns)
{
	for (uint32_t f = 0; f < LH_FAMILIES; f++)
		if (ct_load(ct, slot, f) == 0 && ct_feed(ct, p, tgid, f, now_ns) == -ENOSPC)
			log_warnx("launch histograms: more processes than slots");
}

/*
 * A process is gone: its last launches go to the aggregation, then its
 * slot is zeroed and queued again.  Its threads are all gone, so none
 * still holds the slot.
 */
static void ct_release(struct cuda_trace *ct, struct probes *p, uint32_t tgid)
{
	uint32_t slot;

	if (bpf_map_lookup_elem(ct->slots_fd, &tgid, &slot) != 0 || slot >= ct->slots)
		return;
	ct_feed_slot(ct, p, tgid, slot, now_mono_ns());
	bpf_map_delete_elem(ct->slots_fd, &tgid);
	memset(ct->percpu, 0, (size_t)ct->ncpu * sizeof(*ct->percpu));
	for (uint32_t f = 0; f < LH_FAMILIES; f++) {
		uint32_t key = slot * LH_FAMILIES + f;

		bpf_map_update_elem(ct->hist_fd, &key, ct->percpu, BPF_ANY);
		keyindex_remove(&ct->prev_ix, keyindex_find(&ct->prev_ix, ct_key(tgid, f), 0));
	}
	if (bpf_map_update_elem(ct->free_fd, NULL, &slot, BPF_ANY) != 0)
		log_warnx("launch histogram slot %u lost: %s", slot, strerror(errno));
}

/* Every process with a slot; slots of processes gone unseen are released. */
static void ct_read(struct cuda_trace *ct, struct probes *p, uint64_t now_ns)
{
	uint32_t key, next, slot;
	size_t n_gone = 0;
	int first = 1;

	while (bpf_map_get_next_key(ct->slots_fd, first ? NULL : &key, &next) == 0) {
		first = 0;
		key = next;
		if (bpf_map_lookup_elem(ct->slots_fd, &key, &slot) != 0 || slot >= ct->slots)
			continue;
		ct_feed_slot(ct, p, key, slot, now_ns);
		if (!agg_proc_is_watched(p->agg, key) && kill((pid_t)key, 0) != 0 &&
		    errno == ESRCH && n_gone < ARRAY_SIZE(ct->gone))
			ct->gone[n_gone++] = key;
	}
	for (size_t i = 0; i < n_gone; i++)
		ct_release(ct, p, ct->gone[i]);
}

static void cuda_trace_poll(void *skel, struct probes *p, uint64_t now_ns)
{
	struct cuda_trace *ct = skel;

	if (now_ns < ct->next_read_ns)
		return;
	ct_read(ct, p, now_ns);
	ct->next_read_ns = now_ns + CT_READ_NS;
}

static void cuda_trace_proc_exit(void *skel, struct probes *p, uint32_t pid)
{
	ct_release(skel, p, pid);
}

static int cuda_trace_open(void **skel, struct bpf_object **obj, const struct probes_opts *opts)
{
	struct cuda_trace *ct = calloc(1, sizeof(*ct));
	uint64_t slots;
	int err;

	(void)opts;
	if (!ct)
		return -ENOMEM;
	ct->hist_fd = ct->slots_fd = ct->free_fd = -1;
	ct->ncpu = libbpf_num_possible_cpus();
	if (ct->ncpu <= 0) {
		err = ct->ncpu < 0 ? ct->ncpu : -EINVAL;
		goto fail;
	}
	ct->percpu = calloc((size_t)ct->ncpu, sizeof(*ct->percpu));
	if (!ct->percpu) {
		err = -ENOMEM;
		goto fail;
	}
	ct->skel = cuda_trace_bpf__open();
	if (!ct->skel) {
		err = -errno;
		goto fail;
	}
	/* The per-CPU histograms within LH_MEM_BUDGET. */
	slots = LH_MEM_BUDGET / ((uint64_t)ct->ncpu * LH_FAMILIES * sizeof(struct lh_val));
	if (slots > LH_MAX_SLOTS)
		slots = LH_MAX_SLOTS;
	if (slots < LH_MIN_SLOTS)
		slots = LH_MIN_SLOTS;
	ct->slots = (uint32_t)slots;
	bpf_map__set_max_entries(ct->skel->maps.zt_hist, ct->slots * LH_FAMILIES);
	bpf_map__set_max_entries(ct->skel->maps.zt_slots, ct->slots);
	bpf_map__set_max_entries(ct->skel->maps.zt_free, ct->slots);
	if (keyindex_init(&ct->prev_ix, ct->slots * LH_FAMILIES, 0) < 0 ||
	    !(ct->prev = calloc((size_t)ct->slots * LH_FAMILIES, sizeof(*ct->prev)))) {
		err = -ENOMEM;
		goto fail;
	}
	*skel = ct;
	*obj = ct->skel->obj;
	return 0;
fail:
	cuda_trace_bpf__destroy(ct->skel);
	keyindex_destroy(&ct->prev_ix);
	free(ct->prev);
	free(ct->percpu);
	free(ct);
	return err;
}

static int cuda_trace_load(void *skel)
{
	struct cuda_trace *ct = skel;
	int err = cuda_trace_bpf__load(ct->skel);

	if (err)
		return err;
	ct->hist_fd = bpf_map__fd(ct->skel->maps.zt_hist);
	ct->slots_fd = bpf_map__fd(ct->skel->maps.zt_slots);
	ct->free_fd = bpf_map__fd(ct->skel->maps.zt_free);
	for (uint32_t slot = 0; slot < ct->slots; slot++)
		if (bpf_map_update_elem(ct->free_fd, NULL, &slot, BPF_ANY) != 0)
			return -errno;
	log_debug("cuda_trace: %u launch histogram slots", ct->slots);
	return 0;
}

static void cuda_trace_destroy(void *skel)
{
	struct cuda_trace *ct = skel;

	if (!ct)
		return;
	keyindex_destroy(&ct->prev_ix);
	free(ct->prev);
	cuda_trace_bpf__destroy(ct->skel);
	free(ct->percpu);
	free(ct);
}

const struct probe_module probe_cuda_trace_module = {
	.name = "cuda_trace",
	.open = cuda_trace_open,
	.load = cuda_trace_load,
	.destroy = cuda_trace_destroy,
	.uprobes = cuda_trace_uprobes,
	.n_uprobes = sizeof(cuda_trace_uprobes) / sizeof(cuda_trace_uprobes[0]),
	.poll = cuda_trace_poll,
	.proc_exit = cuda_trace_proc_exit,
};
