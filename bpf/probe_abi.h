/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The probe ABI: the records the BPF programs send to zernel-collector
 * through the shared ring buffer, one record type per event kind, and the
 * constants both sides use.  This header numbers every record type and
 * holds what the families share; each family's own records are in its
 * folder (collector/probes/NAME/NAME_records.h, included at the end).
 * Included by BPF code (after vmlinux.h) and by the collector (the
 * families' decoders, which turn records into aggregation calls, and the
 * simulator, which makes the same records); fixed-width types, explicit
 * padding, sizes pinned.
 *
 * Every record starts with struct zev_hdr, whose type names the record
 * that follows; the decoder checks the record's size against its type
 * before it reads a field.  The numbers the segment shares (latency
 * families, watch reasons, NCCL operations) come from shm/shm_consts.h and
 * are used as they are on both sides.
 */
#ifndef ZERNEL_BPF_PROBE_ABI_H
#define ZERNEL_BPF_PROBE_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "bpf/nccl_gpu_span.h"
#include "shm/shm_consts.h"

enum zev_type {
	ZEV_WATCH = 1,		/* struct zev_watch */
	ZEV_EXIT,		/* struct zev_exit */
	ZEV_MEM_ALLOC,		/* struct zev_mem_alloc */
	ZEV_MEM_FREE,		/* struct zev_mem_free */
	ZEV_MEM_FAIL,		/* struct zev_mem_fail */
	ZEV_LATENCY,		/* struct zev_latency */
	ZEV_NCCL_CALL,		/* struct zev_nccl_call */
	ZEV_NCCL_WAIT,		/* struct zev_nccl_wait */
	ZEV_NCCL_COMM,		/* struct zev_nccl_comm */
	ZEV_SCHED_SWITCH,	/* struct zev_sched_switch */
	ZEV_SCHED_MIGRATE,	/* struct zev_sched_migrate */
	ZEV_LIBC_PROBE,		/* struct zev_libc_probe */
	ZEV_PY_STALL,		/* struct zev_py_stall */
	ZEV_NCCL_ALLOC,		/* struct zev_nccl_alloc */
	ZEV_NCCL_GROUP,		/* struct zev_nccl_group */
	ZEV_CUDA_SYNC,		/* struct zev_cuda_sync */
	ZEV_CUDA_ORDER,		/* struct zev_cuda_order */
	ZEV_THREAD_EXIT,	/* struct zev_thread_exit */
	ZEV_LIB_LOADED,		/* struct zev_lib_loaded */
	ZEV_NCCL_END,		/* struct zev_nccl_end */
	ZEV_MEM_POOL,		/* struct zev_mem_pool */
	ZEV_NCCL_GPU,		/* struct zev_nccl_gpu */
	ZEV_TYPE_COUNT
};

struct zev_hdr {
	__u32 type;		/* enum zev_type */
	__u32 pid;		/* thread group id */
	__u32 tid;
	__u32 pad;		/* zero */
	__u64 ts_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
};

/*
 * One latency sample of a family: a launch without a histogram slot (the
 * launch family's), a DataLoader or distributed-sync wait (the
 * scheduler's).
 */
struct zev_latency {
	struct zev_hdr hdr;
	__u32 family;		/* enum shm_family */
	__u32 pad;
	__u64 ns;
};

#define ZEV_GPU_UNKNOWN		0xffffffffu

/*
 * A thread's CUDA device and current context, kept by the probes for the
 * thread's life (bpf/watch.h's zw_curdev); the collector only sizes it.
 */
struct zw_thread_gpu {
	__s32 dev;		/* valid when has_dev */
	__u32 has_dev;
	__u64 ctx;		/* the current CUcontext as last seen; 0: not known */
};

/* Slots of the per-CPU loss counter (zw_drops). */
enum zw_drop_slot {
	ZW_DROP_RINGBUF = 0,	/* ring buffer full: event lost */
	ZW_DROP_WATCHED_FULL,	/* watched-process table full */
	ZW_DROP_STATE_FULL,	/* per-thread call table refused an entry */
	ZW_DROP_SLOTS
};

/* --comm names the kernel matches at exec. */
#define ZW_MAX_COMMS		8

/*
 * The watched set as one bit per tgid (zw_watched_bits in bpf/watch.h),
 * words of 64 bits up to the kernel's PID_MAX_LIMIT on 64-bit machines;
 * the collector maps it to keep it in step with zw_watched.
 */
#define ZW_PID_LIMIT		(1u << 22)
#define ZW_WATCHED_WORDS	(ZW_PID_LIMIT / 64)

_Static_assert(sizeof(struct zev_hdr) == 24, "zev_hdr is 24 bytes");
_Static_assert(sizeof(struct zev_latency) == 40, "zev_latency is 40 bytes");
_Static_assert(sizeof(struct zw_thread_gpu) == 16, "zw_thread_gpu is 16 bytes");

/* Each family's own records. */
#include "collector/probes/watch/watch_records.h"
#include "collector/probes/gpu_mem/gpu_mem_records.h"
#include "collector/probes/nccl/nccl_records.h"
#include "collector/probes/sched/sched_records.h"
#include "collector/probes/pystack/pystack_records.h"

#endif /* ZERNEL_BPF_PROBE_ABI_H */
