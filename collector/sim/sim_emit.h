/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The records the simulator sends, one function per kind: the record the
 * BPF programs send for the same event (bpf/probe_abi.h), handed to the
 * decoder.  A simulated process has one thread (tid = pid).  Unprivileged.
 */
#ifndef ZERNEL_SIM_EMIT_H
#define ZERNEL_SIM_EMIT_H

#include <stdint.h>

#include "shm/shm_consts.h"

struct decode;

struct sim_emit {
	struct decode *dec;
	uint64_t sent;			/* records handed over */
};

void sim_emit_watch(struct sim_emit *e, uint64_t now, uint32_t pid, uint32_t ppid,
		    uint32_t reasons, const char *comm, uint64_t start_ns);
/* ncclCommInitRank of rank/nranks from the 128-byte uniqueId id, handle comm. */
void sim_emit_nccl_comm(struct sim_emit *e, uint64_t now, uint32_t pid, uint32_t gpu,
			int32_t rank, int32_t nranks, uint64_t comm, const uint8_t *id);
void sim_emit_latency(struct sim_emit *e, uint64_t now, uint32_t pid, enum shm_family f,
		      uint64_t ns);
/* A switch back onto the CPU after ns off it, preempted or blocked. */
/* A training thread back on a CPU after ns preempted, or blocked in state. */
void sim_emit_offcpu(struct sim_emit *e, uint64_t now, uint32_t pid, uint64_t ns,
		     int involuntary, enum shm_thread_state state);
/* A training thread's time on a CPU: ns its own, gpu_ns spinning in CUDA syncs. */
void sim_emit_oncpu(struct sim_emit *e, uint64_t now, uint32_t pid, uint64_t ns,
		    uint64_t gpu_ns);
void sim_emit_migrate(struct sim_emit *e, uint64_t now, uint32_t pid);
/*
 * A successful NCCL call of call_ns on communicator comm and stream, that
 * began wait_ns before now, then the synchronisation of its stream that
 * returns at now: two records, as the probes send them.
 */
void sim_emit_nccl(struct sim_emit *e, uint64_t now, uint32_t pid, enum shm_nccl_op_kind op,
		   uint64_t bytes, uint64_t call_ns, uint64_t wait_ns, uint64_t comm,
		   uint64_t stream);
/* A collective's gpu_ns on the GPU, as Zernel's NCCL profiler plugin hands it over. */
void sim_emit_nccl_gpu(struct sim_emit *e, uint64_t now, uint32_t pid, uint64_t comm_hash,
		       int32_t rank, int32_t nranks, enum shm_nccl_op_kind op, uint64_t gpu_ns);
/* Device memory at addr (a pointer: ZMEM_SPACE_PTR). */
void sim_emit_alloc(struct sim_emit *e, uint64_t now, uint32_t pid, uint32_t gpu,
		    uint64_t addr, uint64_t bytes);
void sim_emit_free(struct sim_emit *e, uint64_t now, uint32_t pid, uint64_t addr);
/* An allocation of bytes that failed for want of memory. */
void sim_emit_alloc_failed(struct sim_emit *e, uint64_t now, uint32_t pid, uint32_t gpu,
			   uint64_t bytes);

/* A Python stall of ns in state at one of sim_sites.h's sites. */
void sim_emit_py_stall(struct sim_emit *e, uint64_t now, uint32_t pid, uint32_t state,
		       uint64_t ns, uint32_t site);

#endif /* ZERNEL_SIM_EMIT_H */
