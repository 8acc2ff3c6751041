/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The process slots the probes keep in the kernel (bpf/slot_hist_abi.h):
 * the launch probe's launch histograms, the scheduler probe's run-queue
 * and futex histograms and switch counters.  Read from user space before
 * each publish: the per-CPU values of each process's slot are summed and
 * what they gained goes to the aggregation as one batch, so the summary
 * windows of those families move in steps of the publish cadence.  A
 * process that is gone has its last samples handed over and its slot
 * zeroed and queued again.  Root-only (BPF maps).
 */
#ifndef ZERNEL_SLOT_HIST_H
#define ZERNEL_SLOT_HIST_H

#include <stdint.h>

#include "collector/agg/agg.h"
#include "shm/shm_consts.h"

struct bpf_object;
struct slot_hist;

/* Which maps of an object hold the slots, and what their histograms are. */
struct slot_hist_spec {
	const char *what;		/* for messages */
	const char *hist_map, *slots_map, *free_map;
	/*
	 * struct zs_sums per slot; NULL: none.  With them, a switch is one
	 * event (zernel_events_total), as its record would be; without, a
	 * histogram sample is.
	 */
	const char *sums_map;
	enum shm_family families[2];	/* LH_FAMILIES, by histogram index */
};

/* Of the launch probe (cuda_trace/cuda_trace.bpf.c) and the scheduler's (sched/sched.bpf.c). */
extern const struct slot_hist_spec slot_hist_launches;
extern const struct slot_hist_spec slot_hist_sched;

/*
 * Process slots for ncpu CPUs within the kernel memory budget
 * (LH_MEM_BUDGET), at most wanted (0: none, every sample an event).
 */
uint32_t slot_hist_slots(int ncpu, uint32_t wanted);
/* The entries of a slot map for slots (a map has at least one). */
#define SLOT_HIST_MAP_SLOTS(slots)	((slots) ? (slots) : 1u)

/*
 * Takes the maps spec names in the loaded object (sized for slots) and
 * queues every slot as free.  NULL with errno set.
 */
struct slot_hist *slot_hist_new(struct bpf_object *obj, const struct slot_hist_spec *spec,
				uint32_t slots, int ncpu);
void slot_hist_free(struct slot_hist *lh);

/* Hands what every slot gained to agg. */
void slot_hist_read(struct slot_hist *lh, struct agg *agg, uint64_t now_ns);
/* Hands what tgid's slot gained to agg now (its row is about to change hands). */
void slot_hist_read_pid(struct slot_hist *lh, struct agg *agg, uint32_t tgid,
			uint64_t now_ns);
/*
 * tgid is gone: its last samples go to agg (which still knows it), its
 * slot is freed.  start_ns: its start_boottime; the slot is left alone
 * when it is another process's (a later one under the same pid); 0: any.
 */
void slot_hist_release(struct slot_hist *lh, struct agg *agg, uint32_t tgid,
		       uint64_t start_ns);

#endif /* ZERNEL_SLOT_HIST_H */
