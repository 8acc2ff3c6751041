/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The events every Zernel BPF program sends to zernel-collector through the
 * shared ring buffer, and the constants both sides must agree on.  Included
 * by BPF code (after vmlinux.h) and by the collector; fixed-width types and
 * explicit padding only.
 */
#ifndef ZERNEL_BPF_EVENTS_H
#define ZERNEL_BPF_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "shm/shm_consts.h"

enum zev_type {
	ZEV_WATCH = 1,		/* arg: SHM_WATCH_* reasons; v0 ppid, v1 start (boot ns) */
	ZEV_EXIT,		/* the process (thread group) is gone */
	ZEV_MEM_ALLOC,		/* arg gpu; v0 ptr or handle, v1 bytes, v2 ZMEM_SPACE_* */
	ZEV_MEM_FREE,		/* v0 ptr or handle, v2 ZMEM_SPACE_* */
	ZEV_MEM_FAIL,		/* arg gpu; v1 bytes asked, v2 the call's return code */
	ZEV_LATENCY,		/* arg enum shm_family; v0 entry-to-return ns */
	ZEV_NCCL_CALL,		/* arg enum shm_nccl_op_kind; v0 bytes, v1 ns, v2 return code */
	ZEV_NCCL_WAIT,		/* arg enum shm_nccl_op_kind; v0 call to end of sync, ns */
	ZEV_NCCL_COMM,		/* arg gpu (or ZEV_GPU_UNKNOWN); v0 comm, v1 rank, v2 nranks */
	ZEV_TYPE_MAX
};

/* Allocation namespaces: device pointers and VMM handles never mix. */
#define ZMEM_SPACE_PTR		0u
#define ZMEM_SPACE_VMM		1u

#define ZEV_GPU_UNKNOWN		0xffffffffu
#define ZEV_COMM_LEN		16

/* One event; 64 bytes, the meaning of arg and v0..v2 depends on type. */
struct zev {
	__u32 type;		/* enum zev_type */
	__u32 pid;		/* thread group id */
	__u32 tid;
	__u32 arg;
	__u64 ts_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 v0;
	__u64 v1;
	__u64 v2;
	char comm[ZEV_COMM_LEN];	/* ZEV_WATCH only */
};

/* Slots of the per-CPU loss counter (zw_drops). */
enum zw_drop_slot {
	ZW_DROP_RINGBUF = 0,	/* ring buffer full: event lost */
	ZW_DROP_WATCHED_FULL,	/* watched-process table full */
	ZW_DROP_STATE_FULL,	/* per-thread call table refused an entry */
	ZW_DROP_PENDING_FULL,	/* too many NCCL calls before one sync */
	ZW_DROP_SLOTS
};

/* --comm names the kernel matches at exec. */
#define ZW_MAX_COMMS		8

#endif /* ZERNEL_BPF_EVENTS_H */
