/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What Zernel's NCCL profiler plugin (nccl-profiler/) hands the collector
 * for each collective it saw run on the GPU: the argument of the empty
 * function zernel_nccl_gpu_span, which the collector's uprobe reads
 * (collector/probes/nccl/nccl.bpf.c).  Fixed-width types, explicit padding, size pinned.
 */
#ifndef ZERNEL_BPF_NCCL_GPU_SPAN_H
#define ZERNEL_BPF_NCCL_GPU_SPAN_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define ZERNEL_NCCL_GPU_SPAN_FN	"zernel_nccl_gpu_span"

struct zernel_nccl_gpu_span {
	__u64 comm_hash;	/* the commId NCCL gave the plugin: the communicator's commHash */
	__u64 seq;		/* NCCL's sequence number of the collective, per operation */
	__u64 gpu_ns;		/* first channel's start to last channel's end, GPU clock */
	__u64 count;		/* elements */
	__s32 rank;
	__s32 nranks;
	__u32 op;		/* enum shm_nccl_op_kind; SHM_NCCL_OP_COUNT: another */
	__u32 channels;		/* channels that ran it */
};

_Static_assert(sizeof(struct zernel_nccl_gpu_span) == 48, "zernel_nccl_gpu_span is 48 bytes");

#endif /* ZERNEL_BPF_NCCL_GPU_SPAN_H */
