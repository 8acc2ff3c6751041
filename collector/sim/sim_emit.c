/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Probe records made in user space for the simulator (see sim_emit.h):
 * every field as the BPF programs fill it, so the decoder cannot tell the
 * two apart.  Unprivileged.
 */
#include <string.h>

#include "bpf/probe_abi.h"
#include "collector/probes/decode.h"
#include "collector/sim/sim_emit.h"

#define SIM_ENOMEM	2	/* cudaErrorMemoryAllocation */

static struct zev_hdr hdr(uint32_t type, uint32_t pid, uint64_t now)
{
	return (struct zev_hdr){ .type = type, .pid = pid, .tid = pid, .ts_ns = now };
}

static void send(struct sim_emit *e, const void *rec, size_t size)
{
	decode_event(e->dec, rec, size);
	e->sent++;
}

void sim_emit_watch(struct sim_emit *e, uint64_t now, uint32_t pid, uint32_t ppid,
		    uint32_t reasons, const char *comm, uint64_t start_ns)
{
	struct zev_watch r = { .hdr = hdr(ZEV_WATCH, pid, now), .reasons = reasons,
			       .ppid = ppid, .start_ns = start_ns };

	memcpy(r.comm, comm, strnlen(comm, sizeof(r.comm)));
	send(e, &r, sizeof(r));
}

void sim_emit_nccl_comm(struct sim_emit *e, uint64_t now, uint32_t pid, uint32_t gpu,
			int32_t rank, int32_t nranks, uint64_t comm, const uint8_t *id)
{
	struct zev_nccl_comm r = { .hdr = hdr(ZEV_NCCL_COMM, pid, now), .gpu = gpu,
				   .rank = rank, .nranks = nranks, .comm = comm,
				   .origin = SHM_NCCL_ORIGIN_INIT_RANK, .id_ok = 1 };

	memcpy(r.id, id, sizeof(r.id));
	send(e, &r, sizeof(r));
}

void sim_emit_latency(struct sim_emit *e, uint64_t now, uint32_t pid, enum shm_family f,
		      uint64_t ns)
{
	struct zev_latency r = { .hdr = hdr(ZEV_LATENCY, pid, now), .family = f, .ns = ns };

	send(e, &r, sizeof(r));
}

void sim_emit_offcpu(struct sim_emit *e, uint64_t now, uint32_t pid, uint64_t ns,
		     int involuntary, enum shm_thread_state state)
{
	struct zev_sched_switch r = {
		.hdr = hdr(ZEV_SCHED_SWITCH, pid, now),
		.flags = ZS_SW_OFFCPU | ZS_SW_TRAINING,
		.offcpu_ns = ns,
	};

	if (involuntary) {
		r.flags |= ZS_SW_INVOLUNTARY | ZS_SW_RUNQ;
		r.runq_ns = ns;
	} else {
		r.flags |= ZS_SW_BLOCKED;
		r.blocked_state = state;
		r.blocked_ns = ns;
	}
	send(e, &r, sizeof(r));
}

void sim_emit_oncpu(struct sim_emit *e, uint64_t now, uint32_t pid, uint64_t ns,
		    uint64_t gpu_ns)
{
	struct zev_sched_switch r = {
		.hdr = hdr(ZEV_SCHED_SWITCH, pid, now),
		.flags = ZS_SW_ONCPU | ZS_SW_TRAINING,
		.oncpu_ns = ns,
		.gpu_ns = gpu_ns,
	};

	send(e, &r, sizeof(r));
}

void sim_emit_migrate(struct sim_emit *e, uint64_t now, uint32_t pid)
{
	struct zev_sched_migrate r = { .hdr = hdr(ZEV_SCHED_MIGRATE, pid, now) };

	send(e, &r, sizeof(r));
}

void sim_emit_nccl(struct sim_emit *e, uint64_t now, uint32_t pid, enum shm_nccl_op_kind op,
		   uint64_t bytes, uint64_t call_ns, uint64_t wait_ns, uint64_t comm,
		   uint64_t stream)
{
	uint64_t entry = now > wait_ns ? now - wait_ns : 0;
	struct zev_nccl_call c = { .hdr = hdr(ZEV_NCCL_CALL, pid, entry + call_ns), .op = op,
				   .bytes = bytes, .ns = call_ns, .comm = comm,
				   .stream = stream };
	struct zev_cuda_sync y = { .hdr = hdr(ZEV_CUDA_SYNC, pid, now), .kind = ZN_SYNC_STREAM,
				   .handle = stream };

	send(e, &c, sizeof(c));
	send(e, &y, sizeof(y));
}

void sim_emit_nccl_gpu(struct sim_emit *e, uint64_t now, uint32_t pid, uint64_t comm_hash,
		       int32_t rank, int32_t nranks, enum shm_nccl_op_kind op, uint64_t gpu_ns)
{
	struct zev_nccl_gpu r = { .hdr = hdr(ZEV_NCCL_GPU, pid, now),
				  .span = { .comm_hash = comm_hash, .gpu_ns = gpu_ns, .rank = rank,
					    .nranks = nranks, .op = op } };

	send(e, &r, sizeof(r));
}

void sim_emit_alloc(struct sim_emit *e, uint64_t now, uint32_t pid, uint32_t gpu,
		    uint64_t addr, uint64_t bytes)
{
	struct zev_mem_alloc r = { .hdr = hdr(ZEV_MEM_ALLOC, pid, now), .gpu = gpu,
				   .space = ZMEM_SPACE_PTR, .addr = addr, .bytes = bytes };

	send(e, &r, sizeof(r));
}

void sim_emit_free(struct sim_emit *e, uint64_t now, uint32_t pid, uint64_t addr)
{
	struct zev_mem_free r = { .hdr = hdr(ZEV_MEM_FREE, pid, now), .space = ZMEM_SPACE_PTR,
				  .addr = addr };

	send(e, &r, sizeof(r));
}

void sim_emit_alloc_failed(struct sim_emit *e, uint64_t now, uint32_t pid, uint32_t gpu,
			   uint64_t bytes)
{
	struct zev_mem_fail r = { .hdr = hdr(ZEV_MEM_FAIL, pid, now), .gpu = gpu,
				  .ret = SIM_ENOMEM, .bytes = bytes };

	send(e, &r, sizeof(r));
}

void sim_emit_py_stall(struct sim_emit *e, uint64_t now, uint32_t pid, uint32_t state,
		       uint64_t ns, uint32_t site)
{
	struct zev_py_stall r = {
		.hdr = hdr(ZEV_PY_STALL, pid, now),
		.state = state,
		.nframes = 1,
		.ns = ns,
		.native_stack = -1,
	};

	r.frames[0].code = site;
	send(e, &r, sizeof(r));
}
