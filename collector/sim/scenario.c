/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The --simulate scenarios, as distributions over time (see scenario.h).
 * Unprivileged, pure computation.  t is the time since the collector
 * started, on the real monotonic clock, so that windows and alerts see the
 * same timing as they would on a real job.
 *
 *   steady            A data-parallel job in good health.  A step is about
 *                     180 ms of compute: ~300 kernel launches of a few us
 *                     (0.5% take 50-300 us), two CUDA graph launches, a
 *                     batch wait of ~0.3 ms (1% stall for 20-80 ms), four
 *                     25 MiB all_reduce buckets (call ~25 us, done ~3 ms
 *                     later), all_gather / reduce_scatter / send / recv /
 *                     broadcast / reduce now and then, futex waits of tens of
 *                     us, a sub-ms barrier, run-queue delays of a few us.
 *                     GPU memory grows during warm-up (about 3 s) to a
 *                     plateau of 55-75% of the device and wanders by +-2%.
 *   oom               steady, then from 3 s GPU 0's trainer keeps allocating:
 *                     its memory climbs linearly to 97% of the device by 8 s
 *                     (so it is past 95% within 10 s of start), holds there
 *                     for 60 s with failed allocations now and then, and
 *                     falls back to its plateau over 5 s.  Once.
 *   straggler         steady, then from 3 s one rank (rank 1) is slow and
 *                     every other rank waits on it: all_reduce calls take
 *                     ~2 ms instead of ~25 us, the others' waits ~60 ms
 *                     instead of ~3 ms (p99 up far more than 5x), while
 *                     the slow rank, which everyone waits for, waits the
 *                     usual ~3 ms itself; barrier waits ~40 ms.  Stays.
 *   dataloader-stall  steady, then from 3 s storage is slow: workers' reads
 *                     take ~200 ms and the trainers wait ~300 ms for each
 *                     batch (hundreds of ms, every step).  Stays.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "collector/sim/scenario.h"

static const char *const scenario_names[SIM_SCENARIO_COUNT] = {
	"steady", "oom", "straggler", "dataloader-stall",
};

const char *sim_scenario_name(enum sim_scenario s)
{
	return (unsigned int)s < SIM_SCENARIO_COUNT ? scenario_names[s] : NULL;
}

int sim_scenario_parse(const char *name, enum sim_scenario *out)
{
	for (unsigned int i = 0; i < SIM_SCENARIO_COUNT; i++) {
		if (strcmp(name, scenario_names[i]) == 0) {
			*out = (enum sim_scenario)i;
			return 0;
		}
	}
	return -EINVAL;
}

#define US	1000.0
#define MS	1000000.0

static const struct scn_params steady_params = {
	.step_compute_ns = 180 * MS,
	.slow_rank = -1,
	.launch = { 6 * US, 0.35 },
	.launch_tail_p = 0.005,
	.launch_tail = { 120 * US, 0.5 },
	.graph_launch = { 15 * US, 0.3 },
	.batch_wait = { 0.3 * MS, 0.8 },
	.batch_stall_p = 0.01,
	.batch_stall = { 40 * MS, 0.35 },
	.worker_read = { 0.5 * MS, 0.9 },
	.allreduce_call = { 25 * US, 0.3 },
	.allreduce_wait = { 3 * MS, 0.3 },
	.other_call = { 20 * US, 0.3 },
	.other_wait = { 1.5 * MS, 0.4 },
	.futex = { 20 * US, 1.0 },
	.barrier = { 0.5 * MS, 0.6 },
	.runq = { 8 * US, 0.8 },
};

void scn_params_at(enum sim_scenario s, uint64_t t_ns, struct scn_params *p)
{
	*p = steady_params;
	if (t_ns < SCN_ONSET_NS)
		return;
	switch (s) {
	case SIM_STRAGGLER:
		p->allreduce_call = (struct scn_dist){ 2 * MS, 0.5 };
		p->allreduce_wait = (struct scn_dist){ 60 * MS, 0.4 };
		p->slow_rank = SCN_SLOW_RANK;
		p->slow_rank_wait = steady_params.allreduce_wait;
		p->barrier = (struct scn_dist){ 40 * MS, 0.4 };
		break;
	case SIM_DATALOADER_STALL:
		p->batch_wait = (struct scn_dist){ 300 * MS, 0.3 };
		p->batch_stall_p = 0;
		p->worker_read = (struct scn_dist){ 200 * MS, 0.4 };
		break;
	default:
		break;
	}
}

double scn_memory_target(enum sim_scenario s, int oom_gpu, uint64_t t_ns,
			 double plateau, double phase)
{
	double t = (double)t_ns;
	/* The caching allocator fills up over the first iterations... */
	double base = plateau * (1.0 - exp(-t / (double)SCN_WARMUP_TAU_NS));
	/* ...then holds, give or take what activations of odd batches need. */
	double wobble = 0.02 * plateau * sin(2.0 * M_PI * t / 17e9 + phase);
	double climb_end = (double)(SCN_ONSET_NS + SCN_OOM_CLIMB_NS);
	double hold_end = climb_end + (double)SCN_OOM_HOLD_NS;
	double release_end = hold_end + (double)SCN_OOM_RELEASE_NS;
	double steady = base + wobble;

	if (s != SIM_OOM || !oom_gpu || t_ns < SCN_ONSET_NS || t >= release_end)
		return steady;
	if (t < climb_end) {
		double f = (t - (double)SCN_ONSET_NS) / (double)SCN_OOM_CLIMB_NS;

		return steady + f * (SCN_OOM_PEAK - steady);
	}
	if (t < hold_end)
		return SCN_OOM_PEAK + 0.004 * sin(2.0 * M_PI * t / 7e9);
	return SCN_OOM_PEAK - (t - hold_end) / (double)SCN_OOM_RELEASE_NS *
			      (SCN_OOM_PEAK - steady);
}
