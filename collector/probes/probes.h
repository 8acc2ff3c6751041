/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The real event source of zernel-collector: loads the BPF programs, finds
 * CUDA/NCCL libraries as processes map them, attaches uprobes and
 * tracepoints, and feeds the ring buffer's records to the decoder
 * (collector/probes/decode.h).  Runs as root (or with the capabilities
 * docs/security.md lists); --simulate never calls it.
 */
#ifndef ZERNEL_PROBES_H
#define ZERNEL_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include "collector/agg/agg.h"
#include "collector/gpu/gpu_map.h"

/* When a watched thread's Python frames are read. */
enum frames_walk {
	FRAMES_WALK_AUTO = 0,	/* after a stall where the kernel can, else at every switch */
	FRAMES_WALK_STALL,	/* after a stall, as the thread returns to user space */
	FRAMES_WALK_SWITCH,	/* at every switch away */
};

/* How a library's uprobes are attached. */
enum uprobe_links {
	UPROBE_LINKS_AUTO = 0,	/* multi where the kernel has it, else perf */
	UPROBE_LINKS_MULTI,	/* one uprobe_multi link per program and library (Linux 6.6+) */
	UPROBE_LINKS_PERF,	/* one perf event per probe */
};

/* Where a woken thread's time on the run queue comes from. */
enum runq_source {
	RUNQ_SOURCE_AUTO = 0,	/* sched_info where the kernel keeps it, else wakeup */
	RUNQ_SOURCE_SCHED_INFO,	/* the task's sched_info, read as it gets the CPU */
	RUNQ_SOURCE_WAKEUP,	/* programs on sched_wakeup(_new) note the wakeup */
};

struct probes_opts {
	const uint32_t *pids;		/* --pid, repeatable */
	size_t n_pids;
	const char *const *comms;	/* --comm, repeatable */
	size_t n_comms;
	const char *const *libs;	/* --lib PATH, repeatable */
	size_t n_libs;
	uint32_t discovery_interval_ms;	/* /proc scan period */
	uint32_t stall_threshold_ms;	/* 0: default (2) */
	uint32_t stall_rate;		/* 0: default (50) */
	int no_python_frames;
	enum frames_walk frames_walk;
	enum uprobe_links uprobe_links;
	enum runq_source runq_source;
	/* The node's GPUs as NVML lists them (NULL, 0: none): CUDA ordinals map onto them. */
	const struct gpu_node *gpus;
	size_t n_gpus;
	int all_threads;		/* every thread is a training thread */
	int no_node_libs;		/* the node's libraries only when a process maps them */
	uint32_t dataloader_gap_us;	/* input blocks closer than this: one wait */
	/*
	 * In-kernel process slots per probe (collector/probes/slot_hist.h);
	 * UINT32_MAX: by the budget.
	 */
	uint32_t process_slots;
	/* Called between two uprobe attaches once running (may be NULL): publishing. */
	void (*between_attaches)(void *ctx);
	void *between_ctx;
};

struct probes;

/*
 * Checks privileges and kernel support (saying exactly what is missing),
 * loads and attaches everything.  Returns 0 or -errno after logging why.
 */
int probes_start(struct probes **out, struct agg *agg, const struct probes_opts *opts);

/*
 * Waits up to timeout_ms for events and feeds them to the aggregation;
 * also runs library discovery and process eviction when they are due.
 * Returns the number of events handled, or -errno on a fatal error.
 */
int probes_poll(struct probes *p, int timeout_ms);

/*
 * Hands the aggregation what the kernel keeps rather than sends (the
 * process slots' histograms and counters, lost events): before a publish.
 */
void probes_sync(struct probes *p);

void probes_stop(struct probes *p);

/* 1 when the uprobes are perf events, 0 when they are uprobe_multi links. */
int probes_uprobes_as_perf(const struct probes *p);

#endif /* ZERNEL_PROBES_H */
