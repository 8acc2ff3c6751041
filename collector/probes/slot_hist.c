/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading the kernel's process slots (see bpf/slot_hist_abi.h): sum the
 * CPUs, take the difference with what the aggregation already has (kept
 * per (tgid, family) in the collector's keyindex for histograms, per slot
 * for the scheduler's counters), hand it over.  Root.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/slot_hist_abi.h"
#include "bpf/probe_abi.h"
#include "collector/agg/hist.h"
#include "collector/agg/keyindex.h"
#include "collector/probes/slot_hist.h"
#include "collector/proc/proc_stat.h"
#include "common/log.h"
#include "common/util.h"

const struct slot_hist_spec slot_hist_launches = {
	.what = "launch histograms",
	.hist_map = "zt_hist", .slots_map = "zt_slots", .free_map = "zt_free",
	.families = { SHM_FAMILY_CUDA_LAUNCH, SHM_FAMILY_CUDA_GRAPH_LAUNCH },
};

const struct slot_hist_spec slot_hist_sched = {
	.what = "scheduler slots",
	.hist_map = "zs_hist", .slots_map = "zs_slots", .free_map = "zs_free",
	.sums_map = "zs_sums",
	.families = { [ZS_HIST_RUNQ] = SHM_FAMILY_RUNQ_DELAY,
		      [ZS_HIST_FUTEX] = SHM_FAMILY_FUTEX_WAIT },
};

_Static_assert(sizeof(((struct slot_hist_spec *)0)->families) ==
	       LH_FAMILIES * sizeof(enum shm_family), "a family for each histogram of a slot");

struct slot_hist {
	const struct slot_hist_spec *spec;
	int hist_fd, slots_fd, free_fd, sums_fd;	/* sums_fd -1: none */
	uint32_t slots;
	int ncpu;			/* possible CPUs */
	/* What the aggregation has been given per (tgid, family): at most one per histogram. */
	struct keyindex prev_ix;
	struct lh_val *prev;		/* per prev_ix slot */
	struct lh_val *percpu;		/* scratch: ncpu values of one entry */
	struct lh_val cur;		/* scratch: those values summed */
	uint64_t hist[HIST_BUCKETS];	/* scratch: differences */
	uint64_t prom[SHM_LAT_BUCKETS];
	uint32_t gone[64];		/* processes to release after a walk */
	/* The scheduler's counters the aggregation has been given, per slot. */
	struct zs_sums *prev_sums;
	struct zs_sums *percpu_sums;	/* scratch: ncpu values of one slot */
};

static uint64_t lh_key(uint32_t tgid, uint32_t family)
{
	return (uint64_t)tgid << 32 | family;
}

/* Reads histogram family of slot, summed over the CPUs, into lh->cur. */
static int lh_load(struct slot_hist *lh, uint32_t slot, uint32_t family)
{
	uint32_t key = slot * LH_FAMILIES + family;
	struct lh_val *c = &lh->cur;

	if (bpf_map_lookup_elem(lh->hist_fd, &key, lh->percpu) != 0)
		return -errno;
	*c = lh->percpu[0];
	for (int cpu = 1; cpu < lh->ncpu; cpu++) {
		const struct lh_val *v = &lh->percpu[cpu];

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
 * Hands what (tgid, family) gained since the last read (lh->cur holds it
 * now) to the aggregation.  Returns the agg_latency_batch result; on
 * -ENOENT the process is not known yet (its watch record may still be on
 * its way) and the difference stays pending for the next read.
 */
static int lh_feed(struct slot_hist *lh, struct agg *agg, uint32_t tgid, uint32_t family,
		   uint64_t now_ns)
{
	int32_t slot = keyindex_find(&lh->prev_ix, lh_key(tgid, family), 0);
	const struct lh_val *old, *cur = &lh->cur;
	static const struct lh_val zero;
	uint64_t count = 0;
	int err;

	old = slot >= 0 ? &lh->prev[slot] : &zero;
	for (unsigned int i = 0; i < SHM_LAT_BUCKETS; i++) {
		lh->prom[i] = (uint32_t)(cur->prom[i] - old->prom[i]);
		count += lh->prom[i];
	}
	if (count == 0)
		return 0;
	for (size_t i = 0; i < HIST_BUCKETS; i++)
		lh->hist[i] = (uint32_t)(cur->hist[i] - old->hist[i]);
	/*
	 * The all-time maximum is this batch's when it lies in the batch's top
	 * bucket; otherwise latency_record_batch bounds it to that bucket.
	 */
	err = agg_latency_batch(agg, tgid, lh->spec->families[family], now_ns, lh->hist, lh->prom,
				count, cur->sum_ns - old->sum_ns, cur->max_ns);
	if (err == -ENOENT || err == -EINVAL)
		return err;
	if (lh->sums_fd < 0)
		agg_count_events(agg, count);
	if (slot < 0)
		slot = keyindex_insert(&lh->prev_ix, lh_key(tgid, family), 0);
	if (slot < 0)
		return -ENOSPC;
	lh->prev[slot] = *cur;
	return 0;
}

/*
 * The scheduler's counters of a slot: what they gained since the last
 * read goes to the aggregation, unless the process is not known yet (its
 * watch record may still be on its way): then it stays pending.
 */
static void lh_feed_sums(struct slot_hist *lh, struct agg *agg, uint32_t tgid, uint32_t slot)
{
	struct zs_sums cur = { 0 }, *old = &lh->prev_sums[slot];
	uint64_t d[ZS_SUMS];
	int changed = 0;

	if (bpf_map_lookup_elem(lh->sums_fd, &slot, lh->percpu_sums) != 0)
		return;
	for (int cpu = 0; cpu < lh->ncpu; cpu++)
		for (unsigned int i = 0; i < ZS_SUMS; i++)
			cur.v[i] += lh->percpu_sums[cpu].v[i];
	for (unsigned int i = 0; i < ZS_SUMS; i++) {
		d[i] = cur.v[i] - old->v[i];
		changed |= d[i] != 0;
	}
	if (!changed || !agg_proc_is_watched(agg, tgid))
		return;
	for (unsigned int s = 0; s < SHM_STATE_COUNT; s++)
		if (d[ZS_SUM_STATE + s])
			agg_thread_state(agg, tgid, (enum shm_thread_state)s, d[ZS_SUM_STATE + s]);
	agg_offcpu_batch(agg, tgid, d[ZS_SUM_OFF_PREEMPTED], d[ZS_SUM_INVOLUNTARY], 1);
	agg_offcpu_batch(agg, tgid, d[ZS_SUM_OFF_BLOCKED], d[ZS_SUM_VOLUNTARY], 0);
	agg_migrations(agg, tgid, d[ZS_SUM_MIGRATIONS]);
	agg_count_events(agg, d[ZS_SUM_INVOLUNTARY] + d[ZS_SUM_VOLUNTARY] + d[ZS_SUM_MIGRATIONS]);
	*old = cur;
}

static void lh_feed_slot(struct slot_hist *lh, struct agg *agg, uint32_t tgid, uint32_t slot,
			 uint64_t now_ns)
{
	for (uint32_t f = 0; f < LH_FAMILIES; f++)
		if (lh_load(lh, slot, f) == 0 && lh_feed(lh, agg, tgid, f, now_ns) == -ENOSPC)
			log_warnx("%s: more processes than slots", lh->spec->what);
	if (lh->sums_fd >= 0)
		lh_feed_sums(lh, agg, tgid, slot);
}

/*
 * Its threads are all gone, so none still holds the slot; a process that
 * reused the pid meanwhile never took it (see struct lh_owner).
 */
void slot_hist_release(struct slot_hist *lh, struct agg *agg, uint32_t tgid,
			 uint64_t start_ns)
{
	struct lh_owner owner;
	uint32_t slot;

	if (!lh || bpf_map_lookup_elem(lh->slots_fd, &tgid, &owner) != 0 ||
	    owner.slot >= lh->slots || (start_ns && owner.start_ns != start_ns))
		return;
	slot = owner.slot;
	lh_feed_slot(lh, agg, tgid, slot, now_mono_ns());
	bpf_map_delete_elem(lh->slots_fd, &tgid);
	memset(lh->percpu, 0, (size_t)lh->ncpu * sizeof(*lh->percpu));
	for (uint32_t f = 0; f < LH_FAMILIES; f++) {
		uint32_t key = slot * LH_FAMILIES + f;

		bpf_map_update_elem(lh->hist_fd, &key, lh->percpu, BPF_ANY);
		keyindex_remove(&lh->prev_ix, keyindex_find(&lh->prev_ix, lh_key(tgid, f), 0));
	}
	if (lh->sums_fd >= 0) {
		memset(lh->percpu_sums, 0, (size_t)lh->ncpu * sizeof(*lh->percpu_sums));
		bpf_map_update_elem(lh->sums_fd, &slot, lh->percpu_sums, BPF_ANY);
		memset(&lh->prev_sums[slot], 0, sizeof(lh->prev_sums[slot]));
	}
	if (bpf_map_update_elem(lh->free_fd, NULL, &slot, BPF_ANY) != 0)
		log_warnx("%s: slot %u lost: %s", lh->spec->what, slot, strerror(errno));
}

/*
 * A process this young may be gone with its exit record still in the ring,
 * and the aggregation may not know it yet: its launches would be fed to
 * nobody.  Its exit record frees its slot; the look at /proc waits.
 */
#define LH_GONE_GRACE_NS	(5 * NSEC_PER_SEC)

/*
 * Whether the slot's process is gone, its exit unseen (the ring was full):
 * no such pid, or the pid is another process now.  Watched under the
 * slot's start time, it is there without a look at /proc.
 */
static int lh_owner_gone(struct agg *agg, uint32_t tgid, const struct lh_owner *owner)
{
	uint64_t start = owner->start_ns / ZW_START_TICK_NS * ZW_START_TICK_NS, now;
	int err;

	if (now_boot_ns() - owner->start_ns < LH_GONE_GRACE_NS)
		return 0;
	if (agg_proc_start_time(agg, tgid, &now) == 0 && now == start)
		return 0;
	err = proc_start_time(tgid, &now);
	if (err)
		return err == -ENOENT || err == -ESRCH;
	return now != start;
}

void slot_hist_read_pid(struct slot_hist *lh, struct agg *agg, uint32_t tgid,
			uint64_t now_ns)
{
	struct lh_owner owner;

	if (lh && bpf_map_lookup_elem(lh->slots_fd, &tgid, &owner) == 0 && owner.slot < lh->slots)
		lh_feed_slot(lh, agg, tgid, owner.slot, now_ns);
}

/* Every process with a slot; slots of processes gone unseen are released. */
void slot_hist_read(struct slot_hist *lh, struct agg *agg, uint64_t now_ns)
{
	struct lh_owner owner;
	uint32_t key, next;
	size_t n_gone = 0;
	int first = 1;

	if (!lh)
		return;
	while (bpf_map_get_next_key(lh->slots_fd, first ? NULL : &key, &next) == 0) {
		first = 0;
		key = next;
		if (bpf_map_lookup_elem(lh->slots_fd, &key, &owner) != 0 || owner.slot >= lh->slots)
			continue;
		lh_feed_slot(lh, agg, key, owner.slot, now_ns);
		if (lh_owner_gone(agg, key, &owner) && n_gone < ARRAY_SIZE(lh->gone))
			lh->gone[n_gone++] = key;
	}
	for (size_t i = 0; i < n_gone; i++)
		slot_hist_release(lh, agg, lh->gone[i], 0);
}

uint32_t slot_hist_slots(int ncpu, uint32_t wanted)
{
	uint64_t slots;

	if (ncpu <= 0)
		return wanted < LH_MIN_SLOTS ? wanted : LH_MIN_SLOTS;
	slots = LH_MEM_BUDGET / ((uint64_t)ncpu * LH_FAMILIES * sizeof(struct lh_val));
	if (slots > LH_MAX_SLOTS)
		slots = LH_MAX_SLOTS;
	if (slots < LH_MIN_SLOTS)
		slots = LH_MIN_SLOTS;
	return (uint32_t)(wanted < slots ? wanted : slots);
}

static int map_fd(const struct slot_hist *lh, struct bpf_object *obj, const char *name,
		  uint32_t value_size)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);

	/* The collector reads these with its own view of the value: pin it. */
	if (!m || bpf_map__value_size(m) != value_size) {
		log_warnx("%s: map %s missing or of another layout", lh->spec->what, name);
		return -EINVAL;
	}
	return bpf_map__fd(m);
}

struct slot_hist *slot_hist_new(struct bpf_object *obj, const struct slot_hist_spec *spec,
				uint32_t slots, int ncpu)
{
	struct slot_hist *lh = calloc(1, sizeof(*lh));
	size_t cpus = (size_t)(ncpu > 0 ? ncpu : 1);
	int err = -ENOMEM;

	if (!lh)
		goto fail;
	lh->spec = spec;
	lh->slots = slots;
	lh->ncpu = ncpu;
	lh->sums_fd = -1;
	lh->percpu = calloc(cpus, sizeof(*lh->percpu));
	lh->prev = calloc((size_t)SLOT_HIST_MAP_SLOTS(slots) * LH_FAMILIES, sizeof(*lh->prev));
	if (!lh->percpu || !lh->prev ||
	    keyindex_init(&lh->prev_ix, SLOT_HIST_MAP_SLOTS(slots) * LH_FAMILIES, 0) < 0)
		goto fail;
	if (spec->sums_map) {
		lh->prev_sums = calloc(SLOT_HIST_MAP_SLOTS(slots), sizeof(*lh->prev_sums));
		lh->percpu_sums = calloc(cpus, sizeof(*lh->percpu_sums));
		if (!lh->prev_sums || !lh->percpu_sums)
			goto fail;
	}
	err = -EINVAL;
	lh->hist_fd = map_fd(lh, obj, spec->hist_map, sizeof(struct lh_val));
	lh->slots_fd = map_fd(lh, obj, spec->slots_map, sizeof(struct lh_owner));
	lh->free_fd = map_fd(lh, obj, spec->free_map, sizeof(uint32_t));
	if (lh->hist_fd < 0 || lh->slots_fd < 0 || lh->free_fd < 0 || ncpu <= 0)
		goto fail;
	if (spec->sums_map) {
		lh->sums_fd = map_fd(lh, obj, spec->sums_map, sizeof(struct zs_sums));
		if (lh->sums_fd < 0)
			goto fail;
	}
	for (uint32_t slot = 0; slot < slots; slot++) {
		if (bpf_map_update_elem(lh->free_fd, NULL, &slot, BPF_ANY) != 0) {
			err = -errno;
			goto fail;
		}
	}
	log_debug("%s: %u process slots", spec->what, slots);
	return lh;
fail:
	slot_hist_free(lh);
	errno = -err;
	return NULL;
}

void slot_hist_free(struct slot_hist *lh)
{
	if (!lh)
		return;
	keyindex_destroy(&lh->prev_ix);
	free(lh->prev_sums);
	free(lh->percpu_sums);
	free(lh->prev);
	free(lh->percpu);
	free(lh);
}
