/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * explain_verdict.h.  The rules: a blocked state that takes at least
 * EV_BOUND of the wall time names the bottleneck (the largest one when
 * several do): input waits make the job data-bound, collective waits
 * communication-bound, lock waits lock contention, sleeps sleeping;
 * waiting for a CPU (EV_RUNQ_BOUND or more) is CPU contention.  When no
 * wait stands out, the time is on the CPU: feeding the GPU or waiting on
 * it in short waits, GPU-bound (with the memory evidence when allocations
 * fail or a GPU is (nearly) full), for a process that does GPU work; for
 * one that does none (a CPU training loop), CPU-bound.  Before all of
 * these, a rank that the other ranks of its job wait for in collectives
 * (ev_stragglers) is the straggler: whatever it waits on itself, speeding
 * it up speeds up the whole job.
 */
#include <stdio.h>
#include <string.h>

#include "exporter/explain/explain_verdict.h"

#define EV_BOUND		0.15
#define EV_RUNQ_BOUND		0.10
#define EV_MEMORY_FULL		0.95
#define EV_STRAGGLER_RATIO	3.0	/* the others wait this many times more */

const char *ev_share_name(enum ev_share s)
{
	static const char *const names[EV_SHARE_COUNT] = {
		"input", "gpu", "collective", "lock", "sleep", "run queue", "other",
		"on CPU or short waits",
	};
	return (unsigned int)s < EV_SHARE_COUNT ? names[s] : "?";
}

const char *ev_verdict_name(enum ev_verdict v)
{
	static const char *const names[EV_VERDICT_COUNT] = {
		"data-bound", "GPU-bound", "communication-bound", "CPU contention",
		"lock contention", "sleeping", "CPU-bound", "straggler",
	};
	return (unsigned int)v < EV_VERDICT_COUNT ? names[v] : "?";
}

static const char *const advice[EV_VERDICT_COUNT] = {
	"feed the GPU faster: more DataLoader workers (num_workers), prefetch_factor, "
	"pin_memory and persistent_workers, or faster storage and decoding",
	"the GPU is the limit: profile the kernels (torch.profiler, Nsight Systems), "
	"use mixed precision or a larger batch if memory allows",
	"look at why the slowest rank is late (its input, GPU, clocks), and overlap "
	"communication with compute (DDP bucket_cap_mb, gradient accumulation)",
	"give the trainer its own cores: fewer DataLoader workers or OMP_NUM_THREADS, "
	"CPU pinning, or move other work off the node",
	"shorten or remove the lock the top site waits on (a queue, a shared object, "
	"logging), or move that work off the training thread",
	"the process sleeps on purpose at the top site (a polling loop, a rate limit, "
	"a retry back-off): shorten the sleep or wait on the event itself",
	"the training step's own CPU work is the limit: profile it (torch.profiler, "
	"py-spy), give it more threads (torch.set_num_threads) or move it to a GPU",
	"this rank sets the pace of the whole job: compare it with the others (its GPU's "
	"clocks, throttling and other processes on it, its share of the work such as "
	"uneven batches or sequence lengths, its input pipeline, its node's CPUs) and "
	"work on its largest share; the other ranks speed up with it",
};

static const char memory_advice[] =
	"GPU memory is the limit: reduce the batch size, use activation checkpointing, "
	"or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation";

static enum ev_verdict straggler(const struct ev_process *p, char *evidence, size_t ev_len,
				 const char **recommendation)
{
	enum ev_share top = EV_INPUT;

	for (int s = 0; s < EV_SHARE_COUNT; s++)
		if (p->share[s] > p->share[top])
			top = (enum ev_share)s;
	snprintf(evidence, ev_len, "the other %u rank%s wait%s for this rank in collectives "
		 "(%.0f%% of their wall time; %.0f%% here); its own largest share: %s %.0f%%",
		 p->waited_by, p->waited_by == 1 ? "" : "s", p->waited_by == 1 ? "s" : "",
		 p->waiting_share * 100.0, p->share[EV_COLLECTIVE] * 100.0, ev_share_name(top),
		 p->share[top] * 100.0);
	*recommendation = advice[EV_STRAGGLER];
	return EV_STRAGGLER;
}

enum ev_verdict ev_decide(const struct ev_process *p, char *evidence, size_t ev_len,
			  const char **recommendation)
{
	static const struct {
		enum ev_share share;
		enum ev_verdict verdict;
		double bound;
	} rules[] = {
		{ EV_INPUT, EV_DATA_BOUND, EV_BOUND },
		{ EV_COLLECTIVE, EV_COMM_BOUND, EV_BOUND },
		{ EV_LOCK, EV_LOCK_CONTENTION, EV_BOUND },
		{ EV_SLEEP, EV_SLEEPING, EV_BOUND },
		{ EV_RUNQ, EV_CPU_CONTENTION, EV_RUNQ_BOUND },
	};
	int best = -1;

	/* What it waits on itself matters less than the job waiting for it. */
	if (p->waited_by)
		return straggler(p, evidence, ev_len, recommendation);
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (p->share[rules[i].share] >= rules[i].bound &&
		    (best < 0 || p->share[rules[i].share] > p->share[rules[best].share]))
			best = (int)i;
	if (best >= 0) {
		enum ev_verdict v = rules[best].verdict;
		double s = p->share[rules[best].share] * 100.0;

		*recommendation = advice[v];
		switch (v) {
		case EV_DATA_BOUND:
			snprintf(evidence, ev_len, "%.0f%% of the wall time waiting for input "
				 "(the DataLoader's next batch)", s);
			break;
		case EV_COMM_BOUND:
			if (p->straggler_rank >= 0)
				snprintf(evidence, ev_len, "%.0f%% of the wall time waiting in "
					 "collectives; rank %d (pid %u) waits only %.0f%%: it is the "
					 "straggler the others wait for", s, p->straggler_rank,
					 p->straggler_pid, p->straggler_share * 100.0);
			else
				snprintf(evidence, ev_len, "%.0f%% of the wall time waiting in "
					 "collectives", s);
			break;
		case EV_LOCK_CONTENTION:
			snprintf(evidence, ev_len, "%.0f%% of the wall time waiting on locks "
				 "(futex)", s);
			break;
		case EV_SLEEPING:
			snprintf(evidence, ev_len, "%.0f%% of the wall time asleep (the nanosleep "
				 "family: time.sleep)", s);
			break;
		default:
			snprintf(evidence, ev_len, "%.0f%% of the wall time runnable but waiting "
				 "for a CPU; %.0f involuntary switches a second", s,
				 p->involuntary_per_s);
			break;
		}
		return v;
	}
	if (!p->uses_gpu) {
		snprintf(evidence, ev_len, "%.0f%% of the wall time on the CPU or in waits too "
			 "short to count, and no GPU work seen (no kernel launch, collective or "
			 "GPU memory); no wait stands out", p->share[EV_ONCPU] * 100.0);
		*recommendation = advice[EV_CPU_BOUND];
		return EV_CPU_BOUND;
	}
	if (p->failed_allocs || p->gpu_peak_fraction >= EV_MEMORY_FULL) {
		snprintf(evidence, ev_len, "no other wait stands out (%.0f%% waiting for the GPU, "
			 "%.0f%% on CPU or in short waits); %llu GPU allocations failed, GPU %u "
			 "peaked at %.0f%% of its memory", p->share[EV_GPU] * 100.0,
			 p->share[EV_ONCPU] * 100.0, (unsigned long long)p->failed_allocs,
			 p->gpu_peak_id, p->gpu_peak_fraction * 100.0);
		*recommendation = memory_advice;
		return EV_GPU_BOUND;
	}
	snprintf(evidence, ev_len, "%.0f%% of the wall time waiting for the GPU inside CUDA "
		 "calls, %.0f%% on the CPU driving it or in waits too short to count; no other "
		 "wait stands out", p->share[EV_GPU] * 100.0, p->share[EV_ONCPU] * 100.0);
	*recommendation = advice[EV_GPU_BOUND];
	return EV_GPU_BOUND;
}

/*
 * Ranks of one job: of one communicator when NCCL named it, else of one
 * known job.  Two jobs on a node are never compared: the straggler of one
 * says nothing about the other.
 */
static int same_job(const struct ev_process *a, const struct ev_process *b)
{
	if (a->rank < 0 || b->rank < 0 || a->nranks != b->nranks)
		return 0;
	if (a->comm_id || b->comm_id)
		return a->comm_id == b->comm_id;
	return a->job[0] && strncmp(a->job, b->job, sizeof(a->job)) == 0;
}

void ev_stragglers(struct ev_process *const *procs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		procs[i]->straggler_rank = -1;
		procs[i]->waited_by = 0;
		procs[i]->waiting_share = 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct ev_process *low = NULL;
		double others = 0;
		size_t n_others = 0;

		if (procs[i]->rank < 0 || procs[i]->nranks < 2)
			continue;
		for (size_t k = 0; k < n; k++)
			if (same_job(procs[k], procs[i]) &&
			    (!low || procs[k]->share[EV_COLLECTIVE] < low->share[EV_COLLECTIVE]))
				low = procs[k];
		for (size_t k = 0; k < n; k++) {
			if (procs[k] != low && same_job(procs[k], procs[i])) {
				others += procs[k]->share[EV_COLLECTIVE];
				n_others++;
			}
		}
		if (!low || !n_others)
			continue;
		others /= (double)n_others;
		if (others < EV_STRAGGLER_RATIO * low->share[EV_COLLECTIVE] || others < EV_BOUND)
			continue;
		procs[i]->straggler_rank = low->rank;
		procs[i]->straggler_pid = low->pid;
		procs[i]->straggler_share = low->share[EV_COLLECTIVE];
		low->waited_by = (uint32_t)n_others;
		low->waiting_share = others;
	}
}
