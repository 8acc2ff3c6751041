/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The processes that made a stream-ordered allocation (cudaMallocAsync and
 * the like): set by collector/probes/gpu_mem/gpu_mem.bpf.c at a successful one, read by
 * collector/probes/nccl/nccl.bpf.c, which reports the synchronisations of those processes
 * (and of NCCL's) only, as a memory pool gives memory back at them
 * (collector/probes/gpu_mem/mempool.h).  One map, shared by both objects
 * (collector/probes/probe_objects.c shares it); a reused pid at worst reports
 * synchronisations it need not.
 */
#ifndef ZERNEL_BPF_POOL_USERS_H
#define ZERNEL_BPF_POOL_USERS_H

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ZW_MAX_WATCHED);
	__type(key, __u32);		/* tgid */
	__type(value, __u8);
} zm_pool_users SEC(".maps");

#endif /* ZERNEL_BPF_POOL_USERS_H */
