/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The launch histograms the launch probe keeps in the kernel
 * (bpf/launch_hist.h), read from user space: every LAUNCH_HIST_READ_NS the
 * per-CPU values of each process's slot are summed and what they gained
 * goes to the aggregation as one batch, so the launch summary window moves
 * in steps of that cadence.  A process that is gone has its last launches
 * handed over and its slot zeroed and queued again.  Root-only (BPF maps).
 */
#ifndef ZERNEL_LAUNCH_HIST_H
#define ZERNEL_LAUNCH_HIST_H

#include <stdint.h>

#include "collector/agg.h"

struct bpf_object;
struct launch_hist;

#define LAUNCH_HIST_READ_NS	(100ull * 1000000ull)

/* Process slots for ncpu CPUs within the kernel memory budget (LH_MEM_BUDGET). */
uint32_t launch_hist_slots(int ncpu);

/*
 * Takes the maps of the loaded launch object (zt_hist, zt_slots, zt_free,
 * sized for slots) and queues every slot as free.  NULL with errno set.
 */
struct launch_hist *launch_hist_new(struct bpf_object *obj, uint32_t slots, int ncpu);
void launch_hist_free(struct launch_hist *lh);

/* Hands what every slot gained to agg, when LAUNCH_HIST_READ_NS have passed. */
void launch_hist_poll(struct launch_hist *lh, struct agg *agg, uint64_t now_ns);
/*
 * tgid is gone: its last launches go to agg (which still knows it), its
 * slot is freed.  start_ns: its start_boottime; the slot is left alone
 * when it is another process's (a later one under the same pid); 0: any.
 */
void launch_hist_release(struct launch_hist *lh, struct agg *agg, uint32_t tgid,
			 uint64_t start_ns);

#endif /* ZERNEL_LAUNCH_HIST_H */
