/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Command line of zernel-collector.  Parsing is strict and privilege-free:
 * every bad flag or value is refused with one line naming it, before the
 * collector touches the kernel or the segment.
 */
#ifndef ZERNEL_COLLECTOR_OPTIONS_H
#define ZERNEL_COLLECTOR_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "collector/identity/kube_pods.h"
#include "collector/probes/probes.h"
#include "collector/sim/simulate.h"
#include "shm/shm_layout.h"

#define OPTS_MAX_PIDS		64u
#define OPTS_MAX_COMMS		64u
#define OPTS_MAX_LIBS		64u

#define OPTS_DEFAULT_INTERVAL_MS	1000u
#define OPTS_MIN_INTERVAL_MS		100u
#define OPTS_MAX_INTERVAL_MS		60000u
#define OPTS_DEFAULT_SCAN_MS		1000u
#define OPTS_DEFAULT_NVML_MS		5000u
#define OPTS_MAX_SCAN_MS		600000u
#define OPTS_DEFAULT_WINDOW_S		60u
#define OPTS_MAX_WINDOW_S		86400u
/* Why 1 ms: docs/probes.md, "DataLoader wait". */
#define OPTS_DEFAULT_DL_GAP_US		1000u
#define OPTS_MAX_DL_GAP_US		1000000u
#define OPTS_MAX_PROCESS_SLOTS		512u		/* LH_MAX_SLOTS */
#define OPTS_PROCESS_SLOTS_AUTO		UINT32_MAX	/* by the kernel memory budget */

struct collector_opts {
	int simulate;
	enum sim_scenario scenario;
	const char *shm_name;
	uint32_t publish_interval_ms;
	uint32_t window_s;
	uint32_t processes;		/* simulated processes */
	uint32_t gpus;			/* simulated GPUs */
	uint32_t max_procs;		/* process table capacity */
	uint32_t pids[OPTS_MAX_PIDS];
	size_t n_pids;
	const char *comms[OPTS_MAX_COMMS];
	size_t n_comms;
	const char *libs[OPTS_MAX_LIBS];
	size_t n_libs;
	uint64_t gpu_total[SHM_LIMIT_GPUS];	/* --gpu-memory-total, per GPU index */
	size_t n_gpu_total;
	uint32_t stall_threshold_ms;	/* Python sites of stalls this long */
	uint32_t stall_rate;		/* stacks a second per process */
	int no_python_frames;
	enum frames_walk frames_walk;	/* --python-frames-walk */
	enum uprobe_links uprobe_links;	/* --uprobe-links */
	enum runq_source runq_source;	/* --runq-source */
	const char *pods_dir;		/* --pods-dir; "" for none */
	const char *containers_dir;	/* --containers-dir; "" for none */
	int all_threads;		/* --all-threads */
	int no_node_libs;		/* --no-node-libs */
	int exit_when_released;		/* --exit-when-released */
	uint32_t scan_interval_ms;	/* --scan-interval */
	uint32_t nvml_interval_ms;	/* --nvml-interval */
	uint32_t dataloader_gap_us;	/* --dataloader-gap-us */
	uint32_t process_slots;		/* --process-slots; OPTS_PROCESS_SLOTS_AUTO */
};

enum opts_result {
	OPTS_RUN = 0,		/* parsed: run the collector */
	OPTS_EXIT_OK,		/* --help or --version printed */
	OPTS_EXIT_USAGE,	/* error printed: exit 2 */
};

/*
 * Parses argv into o.  --help and --version print to out; errors print one
 * line to err.
 */
enum opts_result opts_parse(struct collector_opts *o, int argc, char **argv,
			    FILE *out, FILE *err);

#endif /* ZERNEL_COLLECTOR_OPTIONS_H */
