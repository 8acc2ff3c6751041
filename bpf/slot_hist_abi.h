/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Latencies aggregated in the kernel: collector/probes/cuda_trace/cuda_trace.bpf.c adds each CUDA
 * launch, and collector/probes/sched/sched.bpf.c each run-queue delay and futex wait, to a
 * per-CPU histogram of its process instead of sending an event, and
 * zernel-collector reads the histograms at its poll cadence and hands the
 * differences to the aggregation.  The scheduler probe keeps its switch
 * counters per process slot the same way (struct zs_sums).  Included by
 * BPF code (after vmlinux.h) and by the collector; fixed-width types and
 * explicit padding only.
 *
 * Slots.  A process that launches gets a slot from a queue of free slots
 * (zt_free) the first time, remembered in zt_slots (tgid -> slot) and, per
 * thread, in the task-local call state, so a launch costs no hash lookup.
 * Its histograms are zt_hist[slot * LH_FAMILIES + family].  The collector
 * zeroes the slot and queues it again when the process is gone.  With no
 * free slot, a launch goes out as a ZEV_LATENCY event like every other
 * latency sample: nothing is lost, it only costs more.
 *
 * The value carries both bucket sets the collector keeps: the log-linear
 * buckets of HIST_* (the summary quantiles keep their 1/64 bound) and the
 * Prometheus buckets of SHM_LAT_BOUNDS_NS_INIT (le inclusive), so that the
 * cumulative histogram stays exact; both come from shm/shm_consts.h, as the
 * collector's do.  Counters only grow; the collector sums the CPUs and
 * takes differences, modulo 2^32 for the 32-bit buckets: exact as long as
 * no bucket gets 4 billion launches between two reads.
 */
#ifndef ZERNEL_BPF_SLOT_HIST_ABI_H
#define ZERNEL_BPF_SLOT_HIST_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "shm/shm_consts.h"

/*
 * Families per slot.  The launch probe's are the launch families, 0 and 1,
 * which index the histograms directly (the probe also uses them as its
 * call classes); the scheduler probe's are ZS_HIST_*.
 */
#define LH_FAMILIES		2u
_Static_assert(SHM_FAMILY_CUDA_LAUNCH == 0 && SHM_FAMILY_CUDA_GRAPH_LAUNCH == 1,
	       "the launch families are the first two");
#define ZS_HIST_RUNQ		0u	/* SHM_FAMILY_RUNQ_DELAY */
#define ZS_HIST_FUTEX		1u	/* SHM_FAMILY_FUTEX_WAIT */

/*
 * Slots, set by the collector before load within a memory budget: the
 * per-CPU array takes slots * LH_FAMILIES * CPUs * sizeof(struct lh_val).
 */
#define LH_MAX_SLOTS		512u
#define LH_MIN_SLOTS		16u
#define LH_MEM_BUDGET		(64ull << 20)

struct lh_val {
	__u64 sum_ns;		/* wraps; the collector takes differences */
	__u64 max_ns;		/* all-time maximum on this CPU */
	__u32 prom[SHM_LAT_BUCKETS];
	__u32 busy;		/* BPF only: an update is in progress */
	__u32 hist[HIST_BUCKETS];
};

/*
 * zt_slots' value: the slot and the process it is for.  A pid is reused
 * while the collector has yet to read the last launches of the process
 * that had it and free its slot: the new process must not add to that
 * slot (nor keep it once freed), so it sends its launches as events until
 * the old slot is released.  start_ns is the process's start_boottime.
 */
struct lh_owner {
	__u32 slot;
	__u32 pad;
	__u64 start_ns;
};

/*
 * The scheduler probe's counters of a process slot, what its switch and
 * migration records would carry (struct zev_sched_switch,
 * zev_sched_migrate): the training threads' time per state, off-CPU time,
 * switches by kind and moves to another CPU.  Per CPU, only growing;
 * updated by the sched_switch and sched_migrate_task programs, which run
 * with interrupts off, so plain additions suffice.
 */
enum zs_sum {
	ZS_SUM_STATE = 0,				/* + enum shm_thread_state */
	ZS_SUM_OFF_PREEMPTED = SHM_STATE_COUNT,		/* ns */
	ZS_SUM_OFF_BLOCKED,				/* ns */
	ZS_SUM_INVOLUNTARY,				/* switches */
	ZS_SUM_VOLUNTARY,				/* switches */
	ZS_SUM_MIGRATIONS,				/* moves to another CPU */
	ZS_SUMS
};

struct zs_sums {
	__u64 v[ZS_SUMS];
};

#endif /* ZERNEL_BPF_SLOT_HIST_ABI_H */
