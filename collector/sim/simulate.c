/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --simulate: a synthetic data-parallel training job.  It sends the records
 * the BPF probes send (bpf/probe_abi.h, made by sim_emit.c) to the same
 * decoder, so they take the production path to the aggregation: watch
 * records for its processes, allocations at addresses of its own that
 * frees name again, latency, NCCL and scheduler records.  Unprivileged.
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
 * Device totals are not events: the caller sets them (sim_gpu_total).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg/agg.h"
#include "collector/agg/agg_stall.h"
#include "collector/agg/nccl_hash.h"
#include "collector/probes/decode.h"
#include "collector/sim/sim_emit.h"
#include "collector/sim/sim_ident.h"
#include "collector/sim/sim_sites.h"
#include "collector/sim/simulate.h"
#include "common/util.h"

#define SIM_SAMPLE_BUDGET	100000.0	/* latency samples a second, whole job */
#define SIM_LAUNCHES_PER_STEP	300.0
#define SIM_WORKER_BG_RATE	10.0		/* futex + runq samples a second */
#define SIM_MAX_DT_NS		(1000ull * NSEC_PER_MSEC)
#define SIM_MAX_STEPS_PER_TICK	20
#define SIM_MAX_BLOCKS		1024		/* allocator segments per trainer */
#define SIM_ALLREDUCE_BUCKETS	4
#define SIM_ALLREDUCE_BYTES	(25ull << 20)
#define SIM_VA_BASE		0x7f0000000000ull	/* device addresses handed out */
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
	uint64_t used;			/* what this process holds, as allocated */
	uint64_t block[SIM_MAX_BLOCKS];	/* sizes of live segments, a stack */
	uint64_t addr[SIM_MAX_BLOCKS];	/* and their addresses */
	uint32_t n_blocks;
	uint64_t next_addr;		/* addresses are never reused */
};

/* The probe's default threshold (--stall-threshold-ms). */
#define SIM_STALL_THRESHOLD_NS	2000000ull

struct sim_worker {
	uint32_t pid;
	uint32_t trainer;
	double bg_carry;		/* fractional background events */
};

struct sim {
	struct sim_emit out;		/* to the decoder */
	struct sim_opts opts;
	uint64_t start_ns;
	uint64_t last_ns;
	uint64_t rng;
	uint64_t rng_seed;		/* the seed: the identities derive from it */
	double launch_scale;		/* share of launches actually sampled */
	double bg_scale;
	struct sim_trainer *trainers;
	uint32_t n_trainers;
	struct sim_worker *workers;
	uint32_t n_workers;
	uint64_t comm_hash;		/* the job's communicator, as NCCL names it */
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
/* What the job does, as the probes would report it (sim_emit.c). */

#define SIM_WORKER_COLLATE_NS	2000000ull	/* a worker's CPU time per batch */
/*
 * Of a trainer's compute, the tenths its thread runs its own code
 * (Python, launching kernels); for the rest it waits for the GPU inside
 * the driver's synchronisations, spinning on its CPU as the driver does
 * while it has CPUs to spare: the gpu state.
 */
#define SIM_HOST_TENTHS		3u

static void lat(struct sim *s, uint32_t pid, enum shm_family f, uint64_t now,
		uint64_t v)
{
	sim_emit_latency(&s->out, now, pid, f, v);
}

/*
 * Back on a CPU after ns blocked in state, or preempted (SHM_STATE_RUNQ:
 * that also records the run-queue delay sample, as a probe's switch does).
 */
static void offcpu(struct sim *s, uint32_t pid, uint64_t ns, enum shm_thread_state state,
		   uint64_t now)
{
	sim_emit_offcpu(&s->out, now, pid, ns, state == SHM_STATE_RUNQ, state);
}

/* The job's one communicator: each trainer's handle to it, and its NCCL stream. */
#define SIM_COMM_HANDLE(i)	(0x55d0c4a00000ULL + ((uint64_t)(i) << 24))
#define SIM_NCCL_STREAM(i)	(0x55d0c5000000ULL + ((uint64_t)(i) << 24))

/* A successful call of bytes that took call_ns, done wait_ns after it began. */
static void nccl_call(struct sim *s, uint32_t pid, enum shm_nccl_op_kind op, uint64_t bytes,
		      uint64_t call_ns, uint64_t wait_ns, uint64_t now)
{
	uint32_t i = 0;

	while (i + 1 < s->n_trainers && s->trainers[i].pid != pid)
		i++;
	sim_emit_nccl(&s->out, now, pid, op, bytes, call_ns, wait_ns, SIM_COMM_HANDLE(i),
		      SIM_NCCL_STREAM(i));
	/*
	 * What NCCL's profiler plugin reports of a collective (point-to-point
	 * calls are not its): the kernel's time on the GPU, most of the wait.
	 */
	if (op <= SHM_NCCL_REDUCE)
		sim_emit_nccl_gpu(&s->out, now, pid, s->comm_hash, (int32_t)i,
				  (int32_t)s->n_trainers, op, wait_ns / 10 * 9);
	/* Waiting for the collective puts the thread to sleep. */
	offcpu(s, pid, wait_ns, SHM_STATE_COLLECTIVE, now);
}

static void nccl(struct sim *s, uint32_t pid, enum shm_nccl_op_kind op,
		 uint64_t bytes, const struct scn_dist *call,
		 const struct scn_dist *wait, uint64_t now)
{
	uint64_t w = draw(s, wait);

	nccl_call(s, pid, op, bytes, draw(s, call), w, now);
}

/* A new segment on top of the allocator's stack, at a fresh address. */
static void mem_alloc(struct sim *s, struct sim_trainer *tr, uint64_t size, uint64_t now)
{
	sim_emit_alloc(&s->out, now, tr->pid, tr->gpu, tr->next_addr, size);
	tr->used += size;
	tr->block[tr->n_blocks] = size;
	tr->addr[tr->n_blocks++] = tr->next_addr;
	tr->next_addr += size;
}

/* Frees the newest segment; the decoder knows its size from its address. */
static void mem_free(struct sim *s, struct sim_trainer *tr, uint64_t now)
{
	tr->n_blocks--;
	sim_emit_free(&s->out, now, tr->pid, tr->addr[tr->n_blocks]);
	tr->used -= tr->block[tr->n_blocks];
}

/* ---------------------------------------------------------------------- */
/* GPU memory: a caching allocator that follows the scenario's target. */

static void memory_follow(struct sim *s, struct sim_trainer *tr, uint64_t t, uint64_t now)
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
			sim_emit_alloc_failed(&s->out, now, tr->pid, tr->gpu, size);
			break;
		}
		mem_alloc(s, tr, size, now);
	}
	while (budget-- > 0 && tr->n_blocks > 0 &&
	       tr->used > target + tr->block[tr->n_blocks - 1])
		mem_free(s, tr, now);
	/* Near the top, the allocator's retries fail now and then. */
	if (frac >= 0.95 && rng_unit(s) < 0.05)
		sim_emit_alloc_failed(&s->out, now, tr->pid, tr->gpu, lo);
}

/* ---------------------------------------------------------------------- */
/* One training step of one trainer, and the batch a worker made for it. */

static void worker_batch(struct sim *s, const struct sim_worker *wk,
			 const struct scn_params *p, uint64_t now)
{
	for (int i = 0; i < 8; i++) {
		uint64_t r = draw(s, &p->worker_read);

		lat(s, wk->pid, SHM_FAMILY_DATALOADER_WAIT, now, r);
		offcpu(s, wk->pid, r, SHM_STATE_INPUT, now);
	}
	/* Decoding and collating the batch (no draw: the job's numbers stay as they were). */
	sim_emit_oncpu(&s->out, now, wk->pid, SIM_WORKER_COLLATE_NS, 0);
	lat(s, wk->pid, SHM_FAMILY_FUTEX_WAIT, now, draw(s, &p->futex));
	lat(s, wk->pid, SHM_FAMILY_RUNQ_DELAY, now, draw(s, &p->runq));
}

/* A trainer's wait long enough for the probe to keep its Python site. */
/*
 * A stall of ns that ends at end: as the probes stamp one, at the switch
 * back to the CPU, so a trace draws it where it happened in its step.
 */
static void py_stall(struct sim *s, const struct sim_trainer *tr, uint32_t state, uint64_t ns,
		     uint32_t site, uint64_t end)
{
	if (ns >= SIM_STALL_THRESHOLD_NS)
		sim_emit_py_stall(&s->out, end, tr->pid, state, ns, site);
}

/*
 * Returns the length of the step: compute plus the waits it could not
 * hide.  The step begins at begin (now, or a little before when a tick
 * ran several): its stalls are laid out in it one after another, the
 * batch first, the barrier and the last gradient bucket's wait last.
 */
static uint64_t trainer_step(struct sim *s, struct sim_trainer *tr,
			     const struct scn_params *p, uint64_t now, uint64_t begin)
{
	uint64_t batch, barrier, spin;

	unsigned int n = draw_count(s, SIM_LAUNCHES_PER_STEP * s->launch_scale);
	uint64_t step = (uint64_t)(p->step_compute_ns * (0.95 + 0.1 * rng_unit(s)));
	uint64_t v, last_wait = 0;

	/* The next batch first: the step cannot start without it. */
	if (rng_unit(s) < p->batch_stall_p)
		v = draw(s, &p->batch_stall);
	else
		v = draw(s, &p->batch_wait);
	lat(s, tr->pid, SHM_FAMILY_DATALOADER_WAIT, now, v);
	offcpu(s, tr->pid, v, SHM_STATE_INPUT, now);
	py_stall(s, tr, SHM_STALL_INPUT, v, SIM_SITE_NEXT_BATCH, begin + v);
	batch = v;
	spin = step - step * SIM_HOST_TENTHS / 10;
	sim_emit_oncpu(&s->out, now, tr->pid, step - spin, spin);
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
		uint64_t w = draw(s, tr - s->trainers == p->slow_rank ? &p->slow_rank_wait
								    : &p->allreduce_wait);

		nccl_call(s, tr->pid, SHM_NCCL_ALL_REDUCE, bytes, draw(s, &p->allreduce_call), w,
			  now);
		last_wait = w;
	}
	step += last_wait;	/* the others overlap with backward */
	py_stall(s, tr, SHM_STALL_COLLECTIVE, last_wait, SIM_SITE_BACKWARD, begin + step);
	/* The step ends in a stream synchronisation: it waits for the last bucket. */
	lat(s, tr->pid, SHM_FAMILY_CUDA_SYNC, now, last_wait);

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
	if (tr->steps % 5 == 2)	/* expert-parallel token exchange */
		nccl(s, tr->pid, SHM_NCCL_ALL_TO_ALL, 4 * MIB, &p->other_call, &p->other_wait,
		     now);
	if (tr->steps % 10 == 5) {	/* evaluation shards out, results back */
		nccl(s, tr->pid, SHM_NCCL_SCATTER, MIB, &p->other_call, &p->other_wait, now);
		nccl(s, tr->pid, SHM_NCCL_GATHER, 4096, &p->other_call, &p->other_wait, now);
	}

	for (int i = 0; i < 10; i++) {
		v = draw(s, &p->futex);
		lat(s, tr->pid, SHM_FAMILY_FUTEX_WAIT, now, v);
		offcpu(s, tr->pid, v, SHM_STATE_LOCK, now);
	}
	/*
	 * A barrier wait blocks in futex, as pthread_barrier_wait does: the
	 * real collector counts it lock, in its thread's state and at its
	 * Python site alike (collector/probes/sched/sched.bpf.c, why_blocked).
	 */
	v = draw(s, &p->barrier);
	lat(s, tr->pid, SHM_FAMILY_BARRIER_WAIT, now, v);
	offcpu(s, tr->pid, v, SHM_STATE_LOCK, now);
	/* Within the compute, right before the last bucket's wait. */
	barrier = begin + step - last_wait;
	if (barrier < begin + batch + v)
		barrier = begin + batch + v;
	py_stall(s, tr, SHM_STALL_LOCK, v, SIM_SITE_BARRIER, barrier);
	/*
	 * The compute's GPU part: spinning in the step's synchronisation
	 * (loss.item()), on the CPU, as the real collector reports a spinning
	 * sync at its line; it ends where the barrier begins.
	 */
	barrier -= v;
	py_stall(s, tr, SHM_STALL_GPU, spin, SIM_SITE_SYNC,
		 barrier > begin + batch + spin ? barrier : begin + batch + spin);
	for (int i = 0; i < 5; i++) {
		v = draw(s, &p->runq);
		/* Preempted, then waited this long to run again: the sample comes with it. */
		if (i < 2)
			offcpu(s, tr->pid, v, SHM_STATE_RUNQ, now);
		else
			lat(s, tr->pid, SHM_FAMILY_RUNQ_DELAY, now, v);
	}
	if (rng_unit(s) < 0.3)
		sim_emit_migrate(&s->out, now, tr->pid);
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
			offcpu(s, wk->pid, v, SHM_STATE_LOCK, now);
		} else {
			v = draw(s, &p->runq);
			offcpu(s, wk->pid, v, SHM_STATE_RUNQ, now);
		}
	}
	if (rng_unit(s) < 0.2 * dt_s)
		sim_emit_migrate(&s->out, now, wk->pid);
}

/* ---------------------------------------------------------------------- */

/*
 * Identity is not a probe record (the collector reads it from /proc): the
 * simulator gives it to the aggregation as ident_scan would.
 */
static void identify(struct sim *s, uint32_t pid, uint32_t rank, uint64_t now)
{
	struct shm_identity id;

	sim_ident_build(s->rng_seed, rank, s->n_trainers, &id);
	agg_proc_set_identity(s->out.dec->agg, pid, &id, now);
}

static void sim_register(struct sim *s, uint64_t now)
{
	uint32_t pid = SIM_PID_BASE + 1000 + (uint32_t)(rng_next(s) % 4000);
	uint32_t launcher = pid++;	/* torchrun: not watched itself */
	uint8_t unique_id[NCCL_HASH_ID_BYTES];

	/* Rank 0's ncclGetUniqueId, handed to every rank: made from the launcher's pid. */
	for (size_t b = 0; b < sizeof(unique_id); b++)
		unique_id[b] = (uint8_t)((launcher * 2654435761u) >> (b % 4 * 8)) ^ (uint8_t)b;
	s->comm_hash = nccl_hash_unique_id(unique_id);

	for (uint32_t i = 0; i < s->n_trainers; i++) {
		struct sim_trainer *tr = &s->trainers[i];

		pid += 1 + (uint32_t)(rng_next(s) % 8);
		tr->pid = pid;
		/* The simulator's own clock gives start times, taken as they are. */
		sim_emit_watch(&s->out, now, tr->pid, launcher,
			       SHM_WATCH_SIMULATED | SHM_WATCH_CUDA | SHM_WATCH_NCCL,
			       "pt_main_thread", now - 2 * NSEC_PER_SEC);
		sim_emit_nccl_comm(&s->out, now, tr->pid, tr->gpu, (int32_t)i,
				   (int32_t)s->n_trainers, SIM_COMM_HANDLE(i), unique_id);
		/* What the loader finds for a real one: Python 3.11, frames read. */
		agg_py_status(s->out.dec->agg, tr->pid, SHM_PY_FRAMES, 3, 11);
		identify(s, tr->pid, i, now);
	}
	/* Workers are forked once the trainers have built their DataLoader. */
	for (uint32_t w = 0; w < s->n_workers; w++) {
		struct sim_worker *wk = &s->workers[w];

		pid += 1 + (uint32_t)(rng_next(s) % 3);
		wk->pid = pid;
		sim_emit_watch(&s->out, now, wk->pid, s->trainers[wk->trainer].pid,
			       SHM_WATCH_SIMULATED | SHM_WATCH_DESCENDANT, "pt_data_worker",
			       now - NSEC_PER_SEC);
		identify(s, wk->pid, wk->trainer, now);
	}
}

uint64_t sim_gpu_total(const struct sim_opts *opts, uint32_t gpu)
{
	return gpu < opts->n_gpu_total ? opts->gpu_total[gpu] : SIM_GPU_TOTAL_BYTES;
}

struct sim *sim_new(struct decode *dec, const struct sim_opts *opts, uint64_t now_ns)
{
	struct sim *s;
	double natural;

	if (!dec || !opts || opts->processes == 0 || opts->gpus == 0 ||
	    (unsigned int)opts->scenario >= SIM_SCENARIO_COUNT) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->out.dec = dec;
	s->opts = *opts;
	s->start_ns = s->last_ns = now_ns;
	s->rng = opts->seed ? opts->seed : 0x5eed;
	s->rng_seed = s->rng;
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
		tr->total = sim_gpu_total(opts, i);
		tr->next_addr = SIM_VA_BASE + ((uint64_t)i << 36);
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
			tr->step_ns = trainer_step(s, tr, &p, now_ns,
						   now_ns - tr->into_step_ns);
		}
		if (tr->into_step_ns >= tr->step_ns)
			tr->into_step_ns = 0;
		memory_follow(s, tr, t, now_ns);
	}
	for (uint32_t w = 0; w < s->n_workers; w++)
		worker_background(s, &s->workers[w], &p, (double)dt / 1e9, now_ns);

	/* The decoder counted them as events, as it does the probes' records. */
	n = s->out.sent;
	s->out.sent = 0;
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
