/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --simulate: a synthetic data-parallel training job fed to the aggregation
 * through the same agg_* calls as the BPF probes.  Unprivileged.
 *
 * The job: one trainer per GPU (comm "pt_main_thread", one NCCL rank each,
 * world size = trainers), the remaining processes are DataLoader workers
 * forked by the trainers (ppid = trainer, "pt_data_worker").  Pids start
 * above SIM_PID_BASE so they do not collide with the node's own processes.
 * Each trainer runs a step loop; scenario.c says what a step looks like at
 * a given moment.  Time is the real monotonic clock.
 *
 * CPU is bounded: events are drawn per step and per tick, and kernel
 * launches and workers' background activity are thinned so that the whole
 * job stays under SIM_SAMPLE_BUDGET samples a second whatever --processes
 * says.  The PRNG is seeded, so a run is reproducible given its timing.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/simulate.h"
#include "common/util.h"

#define SIM_SAMPLE_BUDGET	100000.0	/* latency samples a second, whole job */
#define SIM_LAUNCHES_PER_STEP	300.0
#define SIM_WORKER_BG_RATE	10.0		/* futex + runq samples a second */
#define SIM_MAX_DT_NS		(1000ull * NSEC_PER_MSEC)
#define SIM_MAX_STEPS_PER_TICK	20
#define SIM_MAX_BLOCKS		1024		/* allocator segments per trainer */
#define SIM_ALLREDUCE_BUCKETS	4
#define SIM_ALLREDUCE_BYTES	(25ull << 20)
#define MIB			(1ull << 20)

struct sim_trainer {
	uint32_t pid;
	uint32_t gpu;
	uint64_t total;			/* device memory */
	double plateau;			/* fraction of total */
	double phase;
	uint64_t step_ns;		/* length of the step in progress */
	uint64_t into_step_ns;
	uint64_t steps;
	uint32_t first_worker;		/* index into workers[] */
	uint32_t n_workers;
	uint64_t used;			/* what this process holds, as fed to agg */
	uint64_t block[SIM_MAX_BLOCKS];	/* sizes of live segments, a stack */
	uint32_t n_blocks;
};

struct sim_worker {
	uint32_t pid;
	uint32_t trainer;
	double bg_carry;		/* fractional background events */
};

struct sim {
	struct agg *agg;
	struct sim_opts opts;
	uint64_t start_ns;
	uint64_t last_ns;
	uint64_t rng;
	double launch_scale;		/* share of launches actually sampled */
	double bg_scale;
	struct sim_trainer *trainers;
	uint32_t n_trainers;
	struct sim_worker *workers;
	uint32_t n_workers;
	uint64_t events;		/* agg calls since the last tick returned */
};

/* ---------------------------------------------------------------------- */
/* Randomness: splitmix64, and the distributions built on it. */

static uint64_t rng_next(struct sim *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double rng_unit(struct sim *s)
{
	return ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_normal(struct sim *s)
{
	return sqrt(-2.0 * log(rng_unit(s))) * cos(2.0 * M_PI * rng_unit(s));
}

static uint64_t draw(struct sim *s, const struct scn_dist *d)
{
	double v = d->median_ns * exp(d->sigma * rng_normal(s));

	return v < 1.0 ? 1 : (uint64_t)v;
}

/* expected rounded up or down at random, so that rates hold on average. */
static unsigned int draw_count(struct sim *s, double expected)
{
	double whole = floor(expected);

	return (unsigned int)whole + (rng_unit(s) < expected - whole);
}

/* ---------------------------------------------------------------------- */

static void lat(struct sim *s, uint32_t pid, enum shm_family f, uint64_t now,
		uint64_t v)
{
	agg_latency(s->agg, pid, f, now, v);
	s->events++;
}

static void offcpu(struct sim *s, uint32_t pid, uint64_t ns, int involuntary)
{
	agg_offcpu(s->agg, pid, ns, involuntary);
	s->events++;
}

static void nccl(struct sim *s, uint32_t pid, enum shm_nccl_op_kind op,
		 uint64_t bytes, const struct scn_dist *call,
		 const struct scn_dist *wait, uint64_t now)
{
	uint64_t w = draw(s, wait);

	agg_nccl_call(s->agg, op, bytes, draw(s, call), 0, now);
	agg_nccl_wait(s->agg, op, w, now);
	/* Waiting for the collective puts the thread to sleep. */
	offcpu(s, pid, w, 0);
	s->events += 2;
}

/* ---------------------------------------------------------------------- */
/* GPU memory: a caching allocator that follows the scenario's target. */

static void memory_follow(struct sim *s, struct sim_trainer *tr, uint64_t t)
{
	double frac = scn_memory_target(s->opts.scenario, tr->gpu == 0, t,
					tr->plateau, tr->phase);
	uint64_t target = (uint64_t)(frac * (double)tr->total);
	uint64_t lo = (uint64_t)(tr->plateau * (double)tr->total / 400.0);
	int budget = 64;	/* cudaMalloc calls per tick */

	if (lo < 2 * MIB)
		lo = 2 * MIB;
	while (budget-- > 0 && tr->used < target && tr->n_blocks < SIM_MAX_BLOCKS) {
		/* Segments are 2 MiB multiples, from plateau/400 to /100. */
		uint64_t size = lo + (uint64_t)(rng_unit(s) * 3.0 * (double)lo);

		size = (size + 2 * MIB - 1) & ~(2 * MIB - 1);
		if (tr->used + size > target)
			break;
		if (tr->used + size > tr->total) {
			agg_gpu_alloc_failed(s->agg, tr->pid, tr->gpu);
			s->events++;
			break;
		}
		agg_gpu_alloc(s->agg, tr->pid, tr->gpu, size);
		s->events++;
		tr->used += size;
		tr->block[tr->n_blocks++] = size;
	}
	while (budget-- > 0 && tr->n_blocks > 0 &&
	       tr->used > target + tr->block[tr->n_blocks - 1]) {
		uint64_t size = tr->block[--tr->n_blocks];

		agg_gpu_free(s->agg, tr->pid, tr->gpu, size);
		s->events++;
		tr->used -= size;
	}
	/* Near the top, the allocator's retries fail now and then. */
	if (frac >= 0.95 && rng_unit(s) < 0.05) {
		agg_gpu_alloc_failed(s->agg, tr->pid, tr->gpu);
		s->events++;
	}
}

/* ---------------------------------------------------------------------- */
/* One training step of one trainer, and the batch a worker made for it. */

static void worker_batch(struct sim *s, const struct sim_worker *wk,
			 const struct scn_params *p, uint64_t now)
{
	for (int i = 0; i < 8; i++) {
		uint64_t r = draw(s, &p->worker_read);

		lat(s, wk->pid, SHM_FAMILY_DATALOADER_WAIT, now, r);
		offcpu(s, wk->pid, r, 0);
	}
	lat(s, wk->pid, SHM_FAMILY_FUTEX_WAIT, now, draw(s, &p->futex));
	lat(s, wk->pid, SHM_FAMILY_RUNQ_DELAY, now, draw(s, &p->runq));
}

/* Returns the length of the step: compute plus the waits it could not hide. */
static uint64_t trainer_step(struct sim *s, struct sim_trainer *tr,
			     const struct scn_params *p, uint64_t now)
{
	unsigned int n = draw_count(s, SIM_LAUNCHES_PER_STEP * s->launch_scale);
	uint64_t step = (uint64_t)(p->step_compute_ns * (0.95 + 0.1 * rng_unit(s)));
	uint64_t v, last_wait = 0;

	/* The next batch first: the step cannot start without it. */
	if (rng_unit(s) < p->batch_stall_p)
		v = draw(s, &p->batch_stall);
	else
		v = draw(s, &p->batch_wait);
	lat(s, tr->pid, SHM_FAMILY_DATALOADER_WAIT, now, v);
	offcpu(s, tr->pid, v, 0);
	step += v;
	if (tr->n_workers)
		worker_batch(s, &s->workers[tr->first_worker + tr->steps % tr->n_workers],
			     p, now);

	for (unsigned int i = 0; i < n; i++) {
		if (rng_unit(s) < p->launch_tail_p)
			v = draw(s, &p->launch_tail);
		else
			v = draw(s, &p->launch);
		lat(s, tr->pid, SHM_FAMILY_CUDA_LAUNCH, now, v);
	}
	for (int i = 0; i < 2; i++)
		lat(s, tr->pid, SHM_FAMILY_CUDA_GRAPH_LAUNCH, now, draw(s, &p->graph_launch));

	/* Gradient buckets, the last one smaller. */
	for (int b = 0; b < SIM_ALLREDUCE_BUCKETS; b++) {
		uint64_t bytes = b + 1 < SIM_ALLREDUCE_BUCKETS ? SIM_ALLREDUCE_BYTES
							       : SIM_ALLREDUCE_BYTES / 3;
		uint64_t w = draw(s, &p->allreduce_wait);

		agg_nccl_call(s->agg, SHM_NCCL_ALL_REDUCE, bytes,
			      draw(s, &p->allreduce_call), 0, now);
		agg_nccl_wait(s->agg, SHM_NCCL_ALL_REDUCE, w, now);
		offcpu(s, tr->pid, w, 0);
		s->events += 2;
		last_wait = w;
	}
	step += last_wait;	/* the others overlap with backward */

	if (tr->steps % 5 == 0)
		nccl(s, tr->pid, SHM_NCCL_ALL_GATHER, 8 * MIB, &p->other_call, &p->other_wait, now);
	if (tr->steps % 10 == 0)
		nccl(s, tr->pid, SHM_NCCL_REDUCE_SCATTER, 32 * MIB, &p->other_call,
		     &p->other_wait, now);
	if (tr->steps % 20 == 0) {	/* pipeline stage hand-off */
		nccl(s, tr->pid, SHM_NCCL_SEND, 16 * MIB, &p->other_call, &p->other_wait, now);
		nccl(s, tr->pid, SHM_NCCL_RECV, 16 * MIB, &p->other_call, &p->other_wait, now);
	}
	if (tr->steps % 50 == 0)	/* metrics to rank 0, then its decision back */
		nccl(s, tr->pid, SHM_NCCL_REDUCE, 4096, &p->other_call, &p->other_wait, now);
	if (tr->steps % 100 == 0)
		nccl(s, tr->pid, SHM_NCCL_BROADCAST, tr->steps ? 4096 : 512 * MIB,
		     &p->other_call, &p->other_wait, now);

	for (int i = 0; i < 10; i++) {
		v = draw(s, &p->futex);
		lat(s, tr->pid, SHM_FAMILY_FUTEX_WAIT, now, v);
		offcpu(s, tr->pid, v, 0);
	}
	v = draw(s, &p->barrier);
	lat(s, tr->pid, SHM_FAMILY_BARRIER_WAIT, now, v);
	offcpu(s, tr->pid, v, 0);
	for (int i = 0; i < 5; i++) {
		v = draw(s, &p->runq);
		lat(s, tr->pid, SHM_FAMILY_RUNQ_DELAY, now, v);
		if (i < 2)	/* preempted, then waited this long to run again */
			offcpu(s, tr->pid, v, 1);
	}
	if (rng_unit(s) < 0.3) {
		agg_migration(s->agg, tr->pid);
		s->events++;
	}
	tr->steps++;
	return step;
}

/* A worker's prefetch thread and the Python runtime, between batches. */
static void worker_background(struct sim *s, struct sim_worker *wk,
			      const struct scn_params *p, double dt_s, uint64_t now)
{
	unsigned int n;

	wk->bg_carry += SIM_WORKER_BG_RATE * s->bg_scale * dt_s;
	n = (unsigned int)wk->bg_carry;
	wk->bg_carry -= n;
	for (unsigned int i = 0; i < n; i++) {
		uint64_t v;

		if (rng_unit(s) < 0.5) {
			v = draw(s, &p->futex);
			lat(s, wk->pid, SHM_FAMILY_FUTEX_WAIT, now, v);
			offcpu(s, wk->pid, v, 0);
		} else {
			v = draw(s, &p->runq);
			lat(s, wk->pid, SHM_FAMILY_RUNQ_DELAY, now, v);
			offcpu(s, wk->pid, v, 1);
		}
	}
	if (rng_unit(s) < 0.2 * dt_s) {
		agg_migration(s->agg, wk->pid);
		s->events++;
	}
}

/* ---------------------------------------------------------------------- */

static void sim_register(struct sim *s, uint64_t now)
{
	uint32_t pid = SIM_PID_BASE + 1000 + (uint32_t)(rng_next(s) % 4000);
	uint32_t launcher = pid++;	/* torchrun: not watched itself */

	for (uint32_t g = 0; g < s->opts.gpus; g++) {
		int given = g < s->opts.n_gpu_total;

		agg_gpu_total(s->agg, g, given ? s->opts.gpu_total[g] : SIM_GPU_TOTAL_BYTES,
			      given ? SHM_TOTAL_FLAG : SHM_TOTAL_SIMULATED);
	}
	for (uint32_t i = 0; i < s->n_trainers; i++) {
		struct sim_trainer *tr = &s->trainers[i];

		pid += 1 + (uint32_t)(rng_next(s) % 8);
		tr->pid = pid;
		agg_proc_watch(s->agg, tr->pid, launcher,
			       SHM_WATCH_SIMULATED | SHM_WATCH_CUDA | SHM_WATCH_NCCL,
			       "pt_main_thread", now - 2 * NSEC_PER_SEC);
		agg_nccl_comm(s->agg, tr->pid, (int32_t)i, (int32_t)s->n_trainers,
			      tr->gpu, 0x55d0c4a00000ULL + ((uint64_t)i << 24));
	}
	/* Workers are forked once the trainers have built their DataLoader. */
	for (uint32_t w = 0; w < s->n_workers; w++) {
		struct sim_worker *wk = &s->workers[w];

		pid += 1 + (uint32_t)(rng_next(s) % 3);
		wk->pid = pid;
		agg_proc_watch(s->agg, wk->pid, s->trainers[wk->trainer].pid,
			       SHM_WATCH_SIMULATED | SHM_WATCH_DESCENDANT,
			       "pt_data_worker", now - NSEC_PER_SEC);
	}
}

struct sim *sim_new(struct agg *agg, const struct sim_opts *opts, uint64_t now_ns)
{
	struct sim *s;
	double natural;

	if (!agg || !opts || opts->processes == 0 || opts->gpus == 0 ||
	    (unsigned int)opts->scenario >= SIM_SCENARIO_COUNT) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->agg = agg;
	s->opts = *opts;
	s->start_ns = s->last_ns = now_ns;
	s->rng = opts->seed ? opts->seed : 0x5eed;
	s->n_trainers = opts->processes < opts->gpus ? opts->processes : opts->gpus;
	s->n_workers = opts->processes - s->n_trainers;
	s->trainers = calloc(s->n_trainers, sizeof(*s->trainers));
	s->workers = calloc(s->n_workers ? s->n_workers : 1, sizeof(*s->workers));
	if (!s->trainers || !s->workers) {
		sim_free(s);
		errno = ENOMEM;
		return NULL;
	}

	/* Thin the most frequent samples so that the job fits the budget. */
	natural = s->n_trainers * (SIM_LAUNCHES_PER_STEP + 60.0) * 5.0 +
		  s->n_workers * SIM_WORKER_BG_RATE;
	s->launch_scale = s->bg_scale = natural > SIM_SAMPLE_BUDGET ?
					SIM_SAMPLE_BUDGET / natural : 1.0;

	for (uint32_t i = 0; i < s->n_trainers; i++) {
		struct sim_trainer *tr = &s->trainers[i];

		tr->gpu = i;
		tr->total = i < opts->n_gpu_total ? opts->gpu_total[i] : SIM_GPU_TOTAL_BYTES;
		tr->plateau = 0.55 + 0.2 * rng_unit(s);
		tr->phase = 2.0 * M_PI * rng_unit(s);
		/* Ranks do not start in lockstep. */
		tr->into_step_ns = (uint64_t)(rng_unit(s) * 180.0 * (double)NSEC_PER_MSEC);
		tr->step_ns = 180 * NSEC_PER_MSEC;
	}
	/* Workers are dealt round-robin, and kept contiguous per trainer. */
	for (uint32_t w = 0; w < s->n_workers; w++)
		s->trainers[w % s->n_trainers].n_workers++;
	for (uint32_t w = 0, t = 0; t < s->n_trainers; t++) {
		s->trainers[t].first_worker = w;
		for (uint32_t k = 0; k < s->trainers[t].n_workers; k++)
			s->workers[w++].trainer = t;
	}
	sim_register(s, now_ns);
	return s;
}

uint64_t sim_tick(struct sim *s, uint64_t now_ns)
{
	struct scn_params p;
	uint64_t dt, t, n;

	if (now_ns <= s->last_ns)
		return 0;
	dt = now_ns - s->last_ns;
	s->last_ns = now_ns;
	/* After a stall (suspend, debugger), do not replay the backlog. */
	if (dt > SIM_MAX_DT_NS)
		dt = SIM_MAX_DT_NS;
	t = now_ns - s->start_ns;
	scn_params_at(s->opts.scenario, t, &p);

	for (uint32_t i = 0; i < s->n_trainers; i++) {
		struct sim_trainer *tr = &s->trainers[i];
		int steps = 0;

		tr->into_step_ns += dt;
		while (tr->into_step_ns >= tr->step_ns && steps++ < SIM_MAX_STEPS_PER_TICK) {
			tr->into_step_ns -= tr->step_ns;
			tr->step_ns = trainer_step(s, tr, &p, now_ns);
		}
		if (tr->into_step_ns >= tr->step_ns)
			tr->into_step_ns = 0;
		memory_follow(s, tr, t);
	}
	for (uint32_t w = 0; w < s->n_workers; w++)
		worker_background(s, &s->workers[w], &p, (double)dt / 1e9, now_ns);

	n = s->events;
	s->events = 0;
	agg_count_events(s->agg, n);
	return n;
}

void sim_free(struct sim *s)
{
	if (!s)
		return;
	free(s->trainers);
	free(s->workers);
	free(s);
}
