/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The --simulate event source: a synthetic distributed training job that
 * makes the probes' records (bpf/probe_abi.h) and feeds them to the same
 * decoder as the BPF ring buffer.  Needs no root, no BPF and no GPU; see
 * simulate.c for the job and scenario.c for what each scenario does when.
 */
#ifndef ZERNEL_SIMULATE_H
#define ZERNEL_SIMULATE_H

#include <stddef.h>
#include <stdint.h>

#include "collector/sim/scenario.h"

#define SIM_PID_BASE		100000u	/* above the usual pid range of a node */
#define SIM_DEFAULT_PROCESSES	8u
#define SIM_DEFAULT_GPUS	4u
#define SIM_GPU_TOTAL_BYTES	(80ull << 30)	/* an 80 GiB H100 */

struct sim_opts {
	enum sim_scenario scenario;
	uint32_t processes;		/* trainers + DataLoader workers */
	uint32_t gpus;			/* one trainer per GPU */
	const uint64_t *gpu_total;	/* per GPU index, overrides the default */
	size_t n_gpu_total;
	uint64_t seed;
};

struct sim;
struct decode;

/*
 * The memory of simulated device gpu: --gpu-memory-total's value where it
 * gives one, else SIM_GPU_TOTAL_BYTES.  Totals are not events: the caller
 * hands them to the aggregation, before sim_new, as NVML's are.
 */
uint64_t sim_gpu_total(const struct sim_opts *opts, uint32_t gpu);

/*
 * Creates the job and sends the records that make its processes and
 * communicators known, at time now_ns.  NULL with errno set on failure.
 */
struct sim *sim_new(struct decode *dec, const struct sim_opts *opts, uint64_t now_ns);

/*
 * Sends the records of the time elapsed since the previous call.  Returns
 * how many.
 */
uint64_t sim_tick(struct sim *s, uint64_t now_ns);

void sim_free(struct sim *s);

#endif /* ZERNEL_SIMULATE_H */
