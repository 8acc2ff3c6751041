/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Publishing the aggregation into the segment: rows are staged outside the
 * seqlock (quantiles computed, reserved fields zeroed), then copied in one
 * go between shm_writer_begin and shm_writer_end, so readers retry rarely.
 */
#include <string.h>

#include "collector/agg/agg_impl.h"
#include "common/util.h"

/* The identity row of a process: all unknown until it was read. */
static void stage_identity(struct shm_identity *r, const struct agg_proc *p)
{
	if (p->id_set_ns) {
		*r = p->id;
		return;
	}
	memset(r, 0, sizeof(*r));
	r->pid = p->pid;
	r->rank = r->local_rank = r->world_size = r->group_rank = -1;
}

static uint32_t stage_procs(struct agg *a, uint64_t now_ns)
{
	uint32_t n = 0;

	for (uint32_t s = 0; s < keyindex_top(&a->proc_idx); s++) {
		struct agg_proc *p = &a->procs[s];
		struct shm_proc *r = &a->stage_procs[n];

		if (!keyindex_live(&a->proc_idx, s))
			continue;
		memset(r, 0, sizeof(*r));
		r->pid = p->pid;
		r->ppid = p->ppid;
		r->watch_reason = p->watch_reason;
		r->start_time_ns = p->start_time_ns;
		memcpy(r->comm, p->comm, sizeof(r->comm));
		for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
			latency_export(&p->lat[f], now_ns, &r->lat[f]);
		r->offcpu_preempted_ns = p->offcpu_preempted_ns;
		r->offcpu_blocked_ns = p->offcpu_blocked_ns;
		r->involuntary_switches = p->involuntary_switches;
		r->voluntary_switches = p->voluntary_switches;
		r->migrations = p->migrations;
		stage_identity(&a->stage_ids[n], p);
		agg_proc_show_states(p);
		memcpy(r->thread_state_ns, p->shown_state_ns, sizeof(r->thread_state_ns));
		n++;
	}
	return n;
}

static uint32_t stage_mem_and_gpus(struct agg *a)
{
	uint32_t n = 0;

	for (uint32_t g = 0; g < a->n_gpus; g++) {
		a->stage_gpus[g] = a->gpus[g];
		/* The driver's figure when it was read, else the rows' sum below. */
		if (a->gpus[g].used_source != SHM_USED_DRIVER)
			a->stage_gpus[g].used_bytes = 0;
		a->stage_gpus[g].processes = 0;
	}
	for (uint32_t s = 0; s < keyindex_top(&a->mem_idx); s++) {
		const struct shm_gpu_mem *m = &a->mem[s];

		if (!keyindex_live(&a->mem_idx, s))
			continue;
		a->stage_mem[n] = *m;
		if (m->gpu_id & AGG_GPU_UNMAPPED) {
			a->stage_mem[n++].gpu_id = SHM_GPU_UNKNOWN;
			continue;	/* on no GPU we could name */
		}
		n++;
		for (uint32_t g = 0; g < a->n_gpus; g++) {
			struct shm_gpu *sg = &a->stage_gpus[g];

			if (sg->gpu_id != m->gpu_id)
				continue;
			if (sg->used_source != SHM_USED_DRIVER)
				sg->used_bytes += m->used_bytes;
			if (m->used_bytes || m->driver_used_bytes)
				sg->processes++;
			break;
		}
	}
	return n;
}

static void stage_nccl(struct agg *a, uint64_t now_ns)
{
	for (unsigned int op = 0; op < SHM_NCCL_OP_COUNT; op++) {
		struct shm_nccl_op *r = &a->stage_nccl[op];

		memset(r, 0, sizeof(*r));
		r->op = op;
		r->calls = a->nccl[op].calls;
		r->bytes = a->nccl[op].bytes;
		r->errors = a->nccl[op].errors;
		latency_export(&a->nccl[op].duration, now_ns, &r->duration);
		latency_export(&a->nccl[op].wait, now_ns, &r->wait);
		memcpy(r->duration_fine, a->nccl[op].duration_fine, sizeof(r->duration_fine));
		memcpy(r->wait_fine, a->nccl[op].wait_fine, sizeof(r->wait_fine));
	}
}

/*
 * Copies n rows into a table, clamped to the capacity the segment really
 * has, and zeroes the rows the previous publish used beyond n so that the
 * mapping holds no stale process.
 */
static void put_table(struct agg *a, struct shm_writer *w, enum shm_table_id id,
		      const void *rows, uint32_t n, size_t entry_size)
{
	/* Places from the writer's own layout: the segment itself is never read. */
	const struct shm_table *t = shm_writer_layout(w, id);
	uint8_t *dst = shm_writer_table(w, id);
	uint32_t cap, prev = a->published[id];
	uint64_t refused = 0;

	if (!dst || !t || t->entry_size != entry_size)
		return;
	cap = t->capacity;
	if (n > cap) {
		refused = n - cap;
		n = cap;
	}
	memcpy(dst, rows, (size_t)n * entry_size);
	if (prev > cap)
		prev = cap;
	if (prev > n)
		memset(dst + (size_t)n * entry_size, 0, (size_t)(prev - n) * entry_size);
	shm_writer_set_count(w, id, n, a->overflows[id] + refused);
	a->published[id] = n;
}

void agg_publish(struct agg *a, struct shm_writer *w, uint64_t mono_ns,
		 uint64_t real_ns, const char *scenario)
{
	struct shm_header_fields *h = &w->base->h;
	uint64_t t0 = now_mono_ns();
	const struct shm_stall_site *site;
	const struct shm_proc_recent *recent;
	const struct shm_trace_event *trace;
	const struct shm_py_proc *py;
	uint32_t n_procs, n_mem, n_comms, n_py, n_site, n_recent, n_trace, n_wl;

	/* Everything costly (quantiles above all) happens before begin. */
	n_procs = stage_procs(a, mono_ns);
	n_mem = stage_mem_and_gpus(a);
	stage_nccl(a, mono_ns);
	n_comms = agg_nccl_stage(a, mono_ns);
	recent = agg_stalls_recent(a, mono_ns, &n_recent);
	trace = agg_trace_rows(a, &n_trace);
	n_wl = agg_workload_stage(a, mono_ns);
	for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
		latency_export(&a->node[f], mono_ns, &a->stage_node[f]);
	a->stats.publishes++;

	shm_writer_begin(w);
	put_table(a, w, SHM_TABLE_PROCS, a->stage_procs, n_procs, sizeof(struct shm_proc));
	put_table(a, w, SHM_TABLE_IDENTITY, a->stage_ids, n_procs, sizeof(struct shm_identity));
	put_table(a, w, SHM_TABLE_GPU_MEM, a->stage_mem, n_mem, sizeof(struct shm_gpu_mem));
	put_table(a, w, SHM_TABLE_GPUS, a->stage_gpus, a->n_gpus, sizeof(struct shm_gpu));
	put_table(a, w, SHM_TABLE_NCCL_OPS, a->stage_nccl, SHM_NCCL_OP_COUNT,
		  sizeof(struct shm_nccl_op));
	put_table(a, w, SHM_TABLE_NCCL_COMMS, a->stage_comms, n_comms,
		  sizeof(struct shm_nccl_comm));
	agg_stalls_rows(a->stalls, &py, &n_py, &site, &n_site);
	put_table(a, w, SHM_TABLE_PY_PROCS, py, n_py, sizeof(*py));
	put_table(a, w, SHM_TABLE_STALL_SITES, site, n_site, sizeof(*site));
	put_table(a, w, SHM_TABLE_PROC_RECENT, recent, n_recent, sizeof(*recent));
	put_table(a, w, SHM_TABLE_TRACE, trace, n_trace, sizeof(*trace));
	put_table(a, w, SHM_TABLE_WORKLOADS, a->workloads, n_wl, sizeof(*a->workloads));
	memcpy(h->node, a->stage_node, sizeof(h->node));
	h->heartbeat_mono_ns = mono_ns;
	h->heartbeat_real_ns = real_ns;
	memset(h->scenario, 0, sizeof(h->scenario));
	if (scenario)
		strncpy(h->scenario, scenario, sizeof(h->scenario) - 1);
	h->stats = a->stats;
	memset(h->stats.reserved, 0, sizeof(h->stats.reserved));
	shm_writer_end(w);

	a->stats.last_publish_duration_ns = now_mono_ns() - t0;
}
