/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * When an NCCL collective finishes, as far as the host can tell: the
 * decoder hands it every queued NCCL call and every CUDA call that orders
 * or blocks on streams, and it reports each collective's wait to the
 * aggregation.  Collector-internal, single-threaded.
 *
 * The rules (CUDA's stream semantics, not threads):
 *   - a queued collective belongs to its stream (per process; the legacy
 *     default stream, handle 0, per device) at the next position of that
 *     stream; calls between ncclGroupStart and the outermost ncclGroupEnd
 *     of their thread are launched, and their time starts, at that
 *     ncclGroupEnd;
 *   - cudaEventRecord(e, s) remembers s's position in e;
 *     cudaStreamWaitEvent(s2, e) makes s2, from its next position, depend
 *     on s up to e's position;
 *   - a collective completes at the return of the first host-blocking call
 *     in its process that covers it: a synchronise or successful query of
 *     its stream, a synchronise or successful query of an event recorded
 *     on it after the collective, a device or context synchronise of its
 *     device, or
 *     any of these covering a stream that waited on it (chains followed
 *     NT_DEP_DEPTH deep);
 *   - a collective queued while its stream is being captured into a CUDA
 *     graph runs only when the graph is launched, where no NCCL call is
 *     made: it is counted (captured), never waited for.  A stream that
 *     waits on an event recorded inside a capture joins that capture
 *     (ProcessGroupNCCL's stream does) until the capture ends;
 *   - a communicator's end settles its queued collectives: a successful
 *     ncclCommFinalize, or ncclCommDestroy (which finalizes a communicator
 *     not finalized yet), has flushed them, and with them whatever their
 *     streams ordered before them: they complete at its return, with no
 *     wait sample (the return says nothing of when they finished); an
 *     ncclCommAbort, or a destroy still in progress, drops them (given
 *     up, counted).
 *
 * A collective nothing covers stays pending, however long: a hung job
 * stays reported until the collective completes, its communicator ends or
 * its process exits.
 *
 * Bounds: NT_MAX_STREAMS streams and NT_MAX_EVENTS events (beyond them the
 * oldest state is evicted, counted; state unused for NT_IDLE_NS is
 * dropped, but never a stream with collectives pending), NT_MAX_PENDING
 * queued collectives per stream (beyond, the oldest is given up, counted),
 * NT_MAX_THREADS threads inside a group, NT_MAX_PROCS processes told to
 * the scheduler probe.  A process that is gone drops
 * everything it had.
 */
#ifndef ZERNEL_NCCL_TRACK_H
#define ZERNEL_NCCL_TRACK_H

#include <stdint.h>

#include "bpf/probe_abi.h"
#include "collector/agg/agg.h"

#define NT_MAX_STREAMS		4096u
#define NT_MAX_EVENTS		16384u
#define NT_MAX_PENDING		4096u
#define NT_MAX_DEPS		16u
#define NT_DEP_DEPTH		4u
#define NT_MAX_THREADS		1024u
#define NT_MAX_PROCS		4096u
#define NT_IDLE_NS		(600ull * 1000000000ull)

struct nccltrack;

struct nccltrack *nccltrack_new(struct agg *agg);
void nccltrack_free(struct nccltrack *t);

/* A queued call (ret 0 or ncclInProgress), after the decoder counted it. */
void nccltrack_call(struct nccltrack *t, const struct zev_nccl_call *e);
void nccltrack_group(struct nccltrack *t, const struct zev_nccl_group *e);
void nccltrack_sync(struct nccltrack *t, const struct zev_cuda_sync *e);
void nccltrack_order(struct nccltrack *t, const struct zev_cuda_order *e);
/*
 * The communicator comm of pid ended: its queued collectives are known
 * complete at done_ns (a successful ncclCommFinalize's or Destroy's
 * return), or, 0, are given up (ncclCommAbort).
 */
void nccltrack_comm_end(struct nccltrack *t, uint32_t pid, uint64_t comm, uint64_t done_ns);
/* Drops the state of streams and events unused since now_ns - NT_IDLE_NS. */
void nccltrack_expire(struct nccltrack *t, uint64_t now_ns);
void nccltrack_proc_gone(struct nccltrack *t, uint32_t pid);

/* Collectives queued and not yet completed nor given up, all processes. */
uint64_t nccltrack_pending(const struct nccltrack *t);

/*
 * What is known of each process that made NCCL calls, for the scheduler
 * probe (struct zs_coll_known): fn is called for every process whose
 * figure changed since the last call.  A sync another thread of a process
 * enters while its collectives are outstanding counts as the collective
 * state (DDP's main thread waits, through events, for the collectives
 * autograd's thread queued).
 */
typedef void (*nccltrack_known_fn)(void *ctx, uint32_t pid, const struct zs_coll_known *k);
void nccltrack_known(struct nccltrack *t, nccltrack_known_fn fn, void *ctx);

#endif /* ZERNEL_NCCL_TRACK_H */
