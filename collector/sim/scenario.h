/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the simulated training job looks like at a given moment: the
 * distributions its events are drawn from, and the GPU memory it aims for,
 * for each --scenario.  Pure functions of the scenario and the time since
 * the collector started; simulate.c turns them into events.
 */
#ifndef ZERNEL_SCENARIO_H
#define ZERNEL_SCENARIO_H

#include <stdint.h>

enum sim_scenario {
	SIM_STEADY = 0,
	SIM_OOM,
	SIM_STRAGGLER,
	SIM_DATALOADER_STALL,
	SIM_SCENARIO_COUNT
};

/* "steady", "oom", "straggler", "dataloader-stall"; NULL when out of range. */
const char *sim_scenario_name(enum sim_scenario s);
/* Returns 0 and sets *out, or -EINVAL for an unknown name. */
int sim_scenario_parse(const char *name, enum sim_scenario *out);

/* When each scenario's trouble starts, and how long oom holds (ns). */
#define SCN_ONSET_NS		(3ull * 1000000000ull)
#define SCN_SLOW_RANK		1	/* the straggler scenario's slow rank */
#define SCN_OOM_CLIMB_NS	(5ull * 1000000000ull)	/* 95% is crossed before onset + climb */
#define SCN_OOM_HOLD_NS		(60ull * 1000000000ull)
#define SCN_OOM_RELEASE_NS	(5ull * 1000000000ull)
#define SCN_OOM_PEAK		0.97	/* fraction of the device total */
#define SCN_WARMUP_TAU_NS	(800ull * 1000000ull)

/* A log-normal distribution: median and shape (sigma of the log). */
struct scn_dist {
	double median_ns;
	double sigma;
};

/* One moment of the job; every distribution is in nanoseconds. */
struct scn_params {
	double step_compute_ns;		/* forward + backward + optimizer */
	struct scn_dist launch;		/* cuLaunchKernel, host side */
	double launch_tail_p;		/* chance of a slow launch (queue full) */
	struct scn_dist launch_tail;
	struct scn_dist graph_launch;
	struct scn_dist batch_wait;	/* trainer waiting for the next batch */
	double batch_stall_p;		/* chance of an occasional stall */
	struct scn_dist batch_stall;
	struct scn_dist worker_read;	/* DataLoader worker reading samples */
	struct scn_dist allreduce_call;	/* ncclAllReduce host-side duration */
	struct scn_dist allreduce_wait;	/* until the stream synchronises */
	long slow_rank;			/* the rank the others wait for; -1: none */
	struct scn_dist slow_rank_wait;	/* its own all_reduce waits */
	struct scn_dist other_call;	/* other collectives */
	struct scn_dist other_wait;
	struct scn_dist futex;
	struct scn_dist barrier;
	struct scn_dist runq;
};

void scn_params_at(enum sim_scenario s, uint64_t t_ns, struct scn_params *p);

/*
 * GPU memory a trainer's caching allocator aims for at t_ns, as a fraction
 * of the device total, given its plateau fraction and a phase that keeps
 * trainers from fluctuating in step.  oom_gpu is non-zero for the one GPU
 * the oom scenario fills.
 */
double scn_memory_target(enum sim_scenario s, int oom_gpu, uint64_t t_ns,
			 double plateau, double phase);

#endif /* ZERNEL_SCENARIO_H */
