/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The NCCL family's records: calls, communicators and their ends, groups,
 * collectives' GPU time, and the CUDA synchronisations and stream orders
 * its stream tracking completes collectives by.
 * Part of the probe ABI (bpf/probe_abi.h, which numbers every record
 * type and includes this): BPF code and the collector read it through
 * that header.
 */
#ifndef ZERNEL_NCCL_RECORDS_H
#define ZERNEL_NCCL_RECORDS_H

#include "bpf/probe_abi.h"

/* Flags of an NCCL call (zev_nccl_call.flags): why its bytes are 0. */
#define ZN_CALL_BAD_DTYPE	(1u << 0)	/* datatype nccl.h does not know */
#define ZN_CALL_BAD_COUNT	(1u << 1)	/* count above INT64_MAX: a negative int */

/*
 * One NCCL call: its host-side duration, and what the wait needs: the
 * communicator (the ncclComm_t, joined to its identity by the collector),
 * the stream it was queued on and the thread's device.  ret 0 or 7
 * (ncclInProgress, a non-blocking communicator) means queued.
 */
struct zev_nccl_call {
	struct zev_hdr hdr;
	__u32 op;		/* enum shm_nccl_op_kind */
	__s32 ret;		/* ncclResult_t */
	__u64 bytes;		/* count x datatype size; 0 when flagged */
	__u64 ns;		/* entry to return */
	__u64 comm;		/* the ncclComm_t */
	__u64 stream;		/* the cudaStream_t (0: the legacy default stream) */
	__s32 dev;		/* the thread's current device */
	__u32 flags;		/* ZN_CALL_* */
};

/*
 * A collective is done: from its call to the end of the next synchronisation.
 * Only the simulator sends it; the probes send the synchronisations
 * (zev_cuda_sync) and the collector pairs them with the calls.
 */
struct zev_nccl_wait {
	struct zev_hdr hdr;
	__u32 op;		/* enum shm_nccl_op_kind */
	__u32 pad;
	__u64 ns;
};

#define ZN_ID_BYTES		128	/* NCCL_UNIQUE_ID_BYTES */

/*
 * A communicator call returned (or, SHM_NCCL_ORIGIN_SPLIT with comm 0, a split
 * that created nothing here: NCCL_SPLIT_NOCOLOR still counts as a split of
 * the parent).  id_ok: the 128 bytes of the ncclUniqueId were read at
 * entry; 0 when the stack or commIds could not be read.
 */
struct zev_nccl_comm {
	struct zev_hdr hdr;
	__u32 gpu;		/* ZEV_GPU_UNKNOWN when not known */
	__s32 rank;		/* -1: not known yet (a split child) */
	__s32 nranks;		/* -1: not known yet */
	__u32 origin;		/* enum shm_nccl_origin */
	__u64 comm;		/* the ncclComm_t, as NCCL's handle */
	__u64 parent;		/* split, shrink: the parent's ncclComm_t */
	__u64 out;		/* split, shrink: the ncclComm_t * NCCL sets to the child */
	__s32 color;		/* split: its colour */
	__s32 ret;		/* ncclResult_t */
	__u32 id_ok;
	__u32 pad;
	__u8 id[ZN_ID_BYTES];	/* ncclUniqueId.internal */
};

/*
 * NCCL's own view of a communicator's size and rank, from commAlloc (an
 * internal symbol of libnccl's .symtab): how a split child learns them.
 */
struct zev_nccl_alloc {
	struct zev_hdr hdr;
	__u64 comm;
	__u64 parent;		/* a split or shrink child's parent; 0: none */
	__s32 rank;
	__s32 nranks;
};

/* How a communicator's end came (zev_nccl_end). */
enum zn_end_kind {
	ZN_END_FINALIZE = 0,	/* ncclCommFinalize: its operations flushed; the handle lives on */
	ZN_END_DESTROY,		/* ncclCommDestroy: the handle is freed */
	ZN_END_ABORT,		/* ncclCommAbort: the handle is freed, its operations abandoned */
	ZN_END_KIND_COUNT
};

/*
 * ncclCommFinalize, ncclCommDestroy or ncclCommAbort returned ret on comm
 * (the outermost of them: Destroy finalizes through the same entry point).
 */
struct zev_nccl_end {
	struct zev_hdr hdr;
	__u64 comm;
	__s32 ret;
	__u32 how;		/* enum zn_end_kind */
	__u64 ns;		/* inside the call: entered at hdr.ts_ns - ns */
};

/* A collective's time on the GPU, from Zernel's NCCL profiler plugin. */
struct zev_nccl_gpu {
	struct zev_hdr hdr;
	struct zernel_nccl_gpu_span span;
};

/* ncclGroupStart (end 0) or ncclGroupEnd (end 1) was entered. */
struct zev_nccl_group {
	struct zev_hdr hdr;
	__u32 end;
	__u32 pad;
};

/* What a zev_cuda_sync says has finished. */
enum zn_sync_kind {
	ZN_SYNC_STREAM = 0,	/* cudaStreamSynchronize, cuStreamSynchronize: handle = stream */
	ZN_SYNC_EVENT,		/* cudaEventSynchronize, cuEventSynchronize: handle = event */
	ZN_SYNC_EVENT_QUERY,	/* cudaEventQuery, cuEventQuery returned success */
	ZN_SYNC_DEVICE,		/* cudaDeviceSynchronize, cuCtxSynchronize: dev */
	ZN_SYNC_STREAM_QUERY,	/* cudaStreamQuery, cuStreamQuery returned success */
	ZN_SYNC_KIND_COUNT
};

/*
 * A host-blocking CUDA call returned success in a process that uses NCCL,
 * or a stream, event or device synchronisation in one that allocates from
 * memory pools (not from inside an NCCL call, whose own synchronisations
 * are NCCL's).
 */
struct zev_cuda_sync {
	struct zev_hdr hdr;
	__u32 kind;		/* enum zn_sync_kind */
	__s32 dev;		/* the thread's current device */
	__u64 handle;
};

/* What a zev_cuda_order says about two handles. */
enum zn_order_kind {
	ZN_ORDER_RECORD = 0,	/* cudaEventRecord(event = a, stream = b) */
	ZN_ORDER_WAIT,		/* cudaStreamWaitEvent(stream = a, event = b) */
	ZN_ORDER_CAPTURE_BEGIN,	/* cudaStreamBeginCapture(stream = a) */
	ZN_ORDER_CAPTURE_END,	/* cudaStreamEndCapture(stream = a) */
	ZN_ORDER_KIND_COUNT
};

/* An ordering between streams and events, in a process that uses NCCL. */
struct zev_cuda_order {
	struct zev_hdr hdr;
	__u32 kind;		/* enum zn_order_kind */
	__s32 dev;
	__u64 a;
	__u64 b;
};

_Static_assert(sizeof(struct zev_nccl_call) == 72, "zev_nccl_call is 72 bytes");
_Static_assert(sizeof(struct zev_nccl_wait) == 40, "zev_nccl_wait is 40 bytes");
_Static_assert(sizeof(struct zev_nccl_comm) == 208, "zev_nccl_comm is 208 bytes");
_Static_assert(sizeof(struct zev_nccl_alloc) == 48, "zev_nccl_alloc is 48 bytes");
_Static_assert(sizeof(struct zev_nccl_group) == 32, "zev_nccl_group is 32 bytes");
_Static_assert(sizeof(struct zev_nccl_end) == 48, "zev_nccl_end is 48 bytes");
_Static_assert(sizeof(struct zev_nccl_gpu) == 72, "zev_nccl_gpu is 72 bytes");
_Static_assert(sizeof(struct zev_cuda_sync) == 40, "zev_cuda_sync is 40 bytes");
_Static_assert(sizeof(struct zev_cuda_order) == 48, "zev_cuda_order is 48 bytes");

#endif /* ZERNEL_NCCL_RECORDS_H */
