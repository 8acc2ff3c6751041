// SPDX-License-Identifier: BSD-2-Clause
/*
 * Zernel's NCCL profiler plugin: GPU-side time of each collective, which
 * the host cannot see.  NCCL loads it when NCCL_PROFILER_PLUGIN names it
 * (NCCL 2.27 and later: interfaces v4 and v5); the plugin asks for NCCL's
 * collective events and their kernel-channel events, whose start and end
 * NCCL reads from the GPU's own clock (globaltimer) as each channel of the
 * collective's kernel runs.  Once a collective's host event has stopped
 * and every channel it was given has ended, the span from its first
 * channel's start to its last channel's end is handed to the empty
 * function zernel_nccl_gpu_span, where zernel-collector's uprobe reads it.
 * No socket, no file, no thread: a call the collector may or may not be
 * probing costs a few nanoseconds.
 *
 * Events live in a ring per communicator, never freed while the
 * communicator lives, so a handle NCCL holds stays valid memory; a
 * channel's handle is its collective's address with the low bit set.  A
 * slot whose launch is still open is not reused (that collective goes
 * untimed); one whose channels are still awaited a whole ring later is
 * taken as lost and reused.
 * Callbacks come from the launching thread and NCCL's proxy thread:
 * what they share is updated atomically.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/nccl_gpu_span.h"
#include "nccl-profiler/profiler_abi.h"
#include "shm/shm_consts.h"

#define EXPORT		__attribute__((visibility("default")))
/* Collectives in flight per communicator, at most. */
#define ZP_RING		1024u
#define ZP_CHANNEL_BIT	1u

struct zp_comm;

struct zp_coll {
	struct zp_comm *comm;
	struct zernel_nccl_gpu_span span;
	uint64_t first_start;	/* min over its channels, GPU clock */
	uint64_t last_end;	/* max over its channels */
	uint32_t left;		/* channels expected + its host event, still open */
	uint32_t seen;		/* channels that started */
	uint32_t launched;	/* its host event stopped */
};

struct zp_comm {
	uint64_t hash;
	int rank, nranks;
	uint32_t next;
	struct zp_coll ring[ZP_RING];
};

/* The collector's uprobe reads *span here; the call itself does nothing. */
EXPORT void zernel_nccl_gpu_span(const struct zernel_nccl_gpu_span *span);
EXPORT __attribute__((noinline)) void zernel_nccl_gpu_span(const struct zernel_nccl_gpu_span *span)
{
	__asm__ volatile("" : : "r"(span) : "memory");
}

static uint32_t op_of(const char *func)
{
	static const char *const names[SHM_NCCL_OP_COUNT] = {
		[SHM_NCCL_ALL_REDUCE] = "AllReduce", [SHM_NCCL_ALL_GATHER] = "AllGather",
		[SHM_NCCL_REDUCE_SCATTER] = "ReduceScatter", [SHM_NCCL_BROADCAST] = "Broadcast",
		[SHM_NCCL_REDUCE] = "Reduce", [SHM_NCCL_SEND] = "Send", [SHM_NCCL_RECV] = "Recv",
		[SHM_NCCL_ALL_TO_ALL] = "AlltoAll", [SHM_NCCL_GATHER] = "Gather",
		[SHM_NCCL_SCATTER] = "Scatter",
	};

	for (uint32_t op = 0; func && op < SHM_NCCL_OP_COUNT; op++)
		if (strcmp(func, names[op]) == 0)
			return op;
	return SHM_NCCL_OP_COUNT;
}

static zp_result_t comm_init(void **context, int *mask, uint64_t hash, int nranks, int rank)
{
	struct zp_comm *c = calloc(1, sizeof(*c));

	*context = c;
	if (!c)
		return ZP_INTERNAL_ERROR;
	c->hash = hash;
	c->rank = rank;
	c->nranks = nranks;
	*mask = ZP_EVENT_COLL | ZP_EVENT_KERNEL_CH;
	return ZP_SUCCESS;
}

static zp_result_t init_v5(void **context, uint64_t comm_id, int *mask, const char *name,
			   int nodes, int nranks, int rank, zp_logger_t log)
{
	(void)name; (void)nodes; (void)log;
	return comm_init(context, mask, comm_id, nranks, rank);
}

static zp_result_t init_v4(void **context, int *mask, const char *name, uint64_t comm_hash,
			   int nodes, int nranks, int rank, zp_logger_t log)
{
	(void)name; (void)nodes; (void)log;
	return comm_init(context, mask, comm_hash, nranks, rank);
}

static void lower(uint64_t *at, uint64_t v)
{
	uint64_t was = __atomic_load_n(at, __ATOMIC_RELAXED);

	while (v < was && !__atomic_compare_exchange_n(at, &was, v, 1, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

static void raise_to(uint64_t *at, uint64_t v)
{
	uint64_t was = __atomic_load_n(at, __ATOMIC_RELAXED);

	while (v > was && !__atomic_compare_exchange_n(at, &was, v, 1, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

/* One of the collective's open parts ended: the last one hands its span over. */
static void coll_part_done(struct zp_coll *e)
{
	uint64_t first, last;

	if (__atomic_sub_fetch(&e->left, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	first = __atomic_load_n(&e->first_start, __ATOMIC_RELAXED);
	last = __atomic_load_n(&e->last_end, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&e->seen, __ATOMIC_RELAXED) || last < first)
		return;		/* no channel reported: nothing ran that NCCL timed */
	e->span.gpu_ns = last - first;
	zernel_nccl_gpu_span(&e->span);
}

static void start_coll(struct zp_comm *c, void **handle, const struct zp_event_descr *d)
{
	struct zp_coll *e = &c->ring[__atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED) % ZP_RING];

	if (__atomic_load_n(&e->left, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&e->launched, __ATOMIC_ACQUIRE))
		return;		/* a ring of launches in flight: this one goes untimed */
	memset(e, 0, sizeof(*e));
	e->comm = c;
	e->span = (struct zernel_nccl_gpu_span){
		.comm_hash = c->hash, .seq = d->coll.seq, .count = d->coll.count,
		.rank = c->rank, .nranks = c->nranks, .op = op_of(d->coll.func),
		.channels = d->coll.channels,
	};
	e->first_start = UINT64_MAX;
	__atomic_store_n(&e->left, (uint32_t)d->coll.channels + 1, __ATOMIC_RELEASE);
	*handle = e;
}

static zp_result_t start_event(void *context, void **handle, uint64_t type,
			       const struct zp_event_descr *d)
{
	struct zp_coll *parent = d->parent;

	*handle = NULL;
	if (!context)
		return ZP_SUCCESS;
	if (type == ZP_EVENT_COLL) {
		start_coll(context, handle, d);
	} else if (type == ZP_EVENT_KERNEL_CH && parent && !((uintptr_t)parent & ZP_CHANNEL_BIT)) {
		lower(&parent->first_start, d->kernel_ch.ptimer);
		__atomic_add_fetch(&parent->seen, 1, __ATOMIC_RELAXED);
		*handle = (void *)((uintptr_t)parent | ZP_CHANNEL_BIT);
	}
	return ZP_SUCCESS;
}

static zp_result_t start_v5(void *context, void **handle, struct zp_event_descr *d)
{
	return start_event(context, handle, d->type, d);
}

/* Version 4 describes the type in one byte, the rest at the same offsets. */
static zp_result_t start_v4(void *context, void **handle, struct zp_event_descr *d)
{
	return start_event(context, handle, *(const uint8_t *)&d->type, d);
}

static struct zp_coll *coll_of(void *handle)
{
	return (struct zp_coll *)((uintptr_t)handle & ~(uintptr_t)ZP_CHANNEL_BIT);
}

static zp_result_t stop_event(void *handle)
{
	if (!handle)
		return ZP_SUCCESS;
	if (!((uintptr_t)handle & ZP_CHANNEL_BIT))
		__atomic_store_n(&coll_of(handle)->launched, 1, __ATOMIC_RELEASE);
	coll_part_done(coll_of(handle));
	return ZP_SUCCESS;
}

static zp_result_t record_state(void *handle, int state, union zp_state_args *args)
{
	if (handle && ((uintptr_t)handle & ZP_CHANNEL_BIT) && state == ZP_STATE_KERNEL_CH_STOP &&
	    args)
		raise_to(&coll_of(handle)->last_end, args->kernel_ch.ptimer);
	return ZP_SUCCESS;
}

static zp_result_t finalize(void *context)
{
	free(context);
	return ZP_SUCCESS;
}

EXPORT const struct zp_profiler_v5 ncclProfiler_v5 = {
	.name = "Zernel", .init = init_v5, .start_event = start_v5, .stop_event = stop_event,
	.record_event_state = record_state, .finalize = finalize,
};

EXPORT const struct zp_profiler_v4 ncclProfiler_v4 = {
	.name = "Zernel", .init = init_v4, .start_event = start_v4, .stop_event = stop_event,
	.record_event_state = record_state, .finalize = finalize,
};
