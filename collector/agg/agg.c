/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Aggregation state of zernel-collector (see agg.h).  Runs in the privileged
 * collector, fed by the probes or the simulator.  Every table is allocated
 * once at its segment capacity, so memory depends on the capacities alone,
 * never on the number of events.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg/agg_impl.h"
#include "collector/agg/hist.h"
#include "common/util.h"

struct agg *agg_new(const struct agg_opts *opts)
{
	struct agg *a;
	const struct shm_capacity *cap = &opts->cap;

	if (cap->procs == 0 || cap->procs > SHM_LIMIT_PROCS ||
	    cap->gpu_mem == 0 || cap->gpu_mem > SHM_LIMIT_GPU_MEM ||
	    cap->gpus == 0 || cap->gpus > SHM_LIMIT_GPUS ||
	    cap->nccl_comms == 0 || cap->nccl_comms > SHM_LIMIT_NCCL_COMMS) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->opts = *opts;
	if (a->opts.window_ns == 0)
		a->opts.window_ns = LATENCY_DEFAULT_WINDOW_NS;

	if (keyindex_init(&a->proc_idx, cap->procs, 0) < 0 ||
	    keyindex_init(&a->mem_idx, cap->gpu_mem, 0) < 0)
		goto fail;
	a->procs = calloc(cap->procs, sizeof(*a->procs));
	a->mem = calloc(cap->gpu_mem, sizeof(*a->mem));
	a->gpus = calloc(cap->gpus, sizeof(*a->gpus));
	a->stage_procs = calloc(cap->procs, sizeof(*a->stage_procs));
	a->stage_ids = calloc(cap->procs, sizeof(*a->stage_ids));
	a->stage_mem = calloc(cap->gpu_mem, sizeof(*a->stage_mem));
	a->stage_gpus = calloc(cap->gpus, sizeof(*a->stage_gpus));
	a->stalls = agg_stalls_new(cap->procs);
	a->trace = agg_trace_new();
	/* Large (61 KiB a row), but untouched rows take no memory. */
	a->workloads = calloc(SHM_WORKLOADS, sizeof(*a->workloads));
	a->wl_empty_since = calloc(SHM_WORKLOADS, sizeof(*a->wl_empty_since));
	if (!a->procs || !a->mem || !a->gpus || !a->workloads || !a->wl_empty_since ||
	    !a->stage_procs || !a->stage_ids || !a->stage_mem || !a->stage_gpus ||
	    !a->stalls || !a->trace || agg_nccl_init(a) < 0)
		goto fail;

	for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
		latency_init(&a->node[f], a->opts.window_ns);
	for (unsigned int op = 0; op < SHM_NCCL_OP_COUNT; op++) {
		latency_init(&a->nccl[op].duration, a->opts.window_ns);
		latency_init(&a->nccl[op].wait, a->opts.window_ns);
	}
	a->series_ready = 1;
	return a;
fail:
	agg_free(a);
	errno = ENOMEM;
	return NULL;
}

static void proc_release(struct agg_proc *p)
{
	for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
		latency_destroy(&p->lat[f]);
	memset(p, 0, sizeof(*p));
}

void agg_free(struct agg *a)
{
	if (!a)
		return;
	if (a->procs && a->proc_idx.live)
		for (uint32_t s = 0; s < keyindex_top(&a->proc_idx); s++)
			if (keyindex_live(&a->proc_idx, s))
				proc_release(&a->procs[s]);
	if (a->series_ready) {
		for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
			latency_destroy(&a->node[f]);
		for (unsigned int op = 0; op < SHM_NCCL_OP_COUNT; op++) {
			latency_destroy(&a->nccl[op].duration);
			latency_destroy(&a->nccl[op].wait);
		}
	}
	agg_nccl_destroy(a);
	keyindex_destroy(&a->proc_idx);
	keyindex_destroy(&a->mem_idx);
	free(a->procs);
	free(a->mem);
	free(a->gpus);
	free(a->stage_procs);
	free(a->stage_ids);
	free(a->stage_mem);
	free(a->stage_gpus);
	free(a->workloads);
	free(a->wl_empty_since);
	agg_stalls_free(a->stalls);
	agg_trace_free(a->trace);
	free(a);
}

/* ---------------------------------------------------------------------- */
/* Processes */

static struct agg_proc *proc_get(const struct agg *a, uint32_t pid)
{
	int32_t s = keyindex_find(&a->proc_idx, pid, 0);

	return s < 0 ? NULL : &a->procs[s];
}

int agg_proc_watch(struct agg *a, uint32_t pid, uint32_t ppid, uint32_t reason,
		   const char *comm, uint64_t start_time_ns)
{
	struct agg_proc *p = proc_get(a, pid);
	int32_t s;

	if (pid == 0)
		return -EINVAL;
	/* The same pid with another start time is a new process. */
	if (p && start_time_ns && p->start_time_ns &&
	    p->start_time_ns != start_time_ns) {
		agg_proc_exit(a, pid);
		p = NULL;
	}
	if (!p) {
		s = keyindex_insert(&a->proc_idx, pid, 0);
		if (s < 0) {
			a->overflows[SHM_TABLE_PROCS]++;
			return -ENOSPC;
		}
		p = &a->procs[s];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->start_time_ns = start_time_ns;
		for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++)
			latency_init(&p->lat[f], a->opts.window_ns);
		p->workload = -1;	/* a row at its first sample or identity */
	}
	p->watch_reason |= reason & SHM_WATCH_ALL_BITS;
	if (ppid)
		p->ppid = ppid;
	if (!p->start_time_ns)
		p->start_time_ns = start_time_ns;
	if (comm && *comm) {
		memset(p->comm, 0, sizeof(p->comm));
		strncpy(p->comm, comm, sizeof(p->comm) - 1);
	}
	return 0;
}

int agg_proc_is_watched(const struct agg *a, uint32_t pid)
{
	return proc_get(a, pid) != NULL;
}

int agg_proc_start_time(const struct agg *a, uint32_t pid, uint64_t *start_ns)
{
	const struct agg_proc *p = proc_get(a, pid);

	if (!p)
		return -ENOENT;
	*start_ns = p->start_time_ns;
	return 0;
}

int agg_proc_set_identity(struct agg *a, uint32_t pid, const struct shm_identity *id,
			  uint64_t now_ns)
{
	struct agg_proc *p = proc_get(a, pid);

	if (!p)
		return -ENOENT;
	p->id = *id;
	p->id.pid = pid;
	p->id.flags = (id->flags | SHM_ID_F_READ) & SHM_ID_F_ALL_BITS;
	p->id.reserved0 = 0;
	p->id_set_ns = now_ns ? now_ns : 1;
	agg_workload_join(a, p);
	return 0;
}

uint64_t agg_proc_identity_time(const struct agg *a, uint32_t pid)
{
	const struct agg_proc *p = proc_get(a, pid);

	return p ? p->id_set_ns : 0;
}

int agg_proc_identity(const struct agg *a, uint32_t pid, struct shm_identity *out,
		      uint64_t *source)
{
	const struct agg_proc *p = proc_get(a, pid);

	if (!p || !p->id_set_ns)
		return -ENOENT;
	*out = p->id;
	*source = p->id_source;
	return 0;
}

void agg_proc_set_identity_source(struct agg *a, uint32_t pid, uint64_t source)
{
	struct agg_proc *p = proc_get(a, pid);

	if (p)
		p->id_source = source;
}

int agg_proc_next(const struct agg *a, uint32_t *cursor, uint32_t *pid)
{
	/* Slots stay put while they live: evicting one behind us moves none. */
	for (uint32_t s = *cursor; s < keyindex_top(&a->proc_idx); s++) {
		if (keyindex_live(&a->proc_idx, s)) {
			*pid = a->procs[s].pid;
			*cursor = s + 1;
			return 1;
		}
	}
	*cursor = keyindex_top(&a->proc_idx);
	return 0;
}

void agg_proc_exit(struct agg *a, uint32_t pid)
{
	int32_t s = keyindex_find(&a->proc_idx, pid, 0);
	if (s < 0)
		return;
	agg_workload_leave(a, &a->procs[s]);
	proc_release(&a->procs[s]);
	keyindex_remove(&a->proc_idx, s);
	a->stats.processes_evicted++;
	agg_stalls_forget(a->stalls, pid, s);

	/* Exit is rare next to events: a scan of the memory rows is fine. */
	for (uint32_t m = 0; m < keyindex_top(&a->mem_idx); m++)
		if (keyindex_live(&a->mem_idx, m) && a->mem[m].pid == pid)
			keyindex_remove(&a->mem_idx, (int32_t)m);
	agg_nccl_proc_exit(a, pid);
	agg_trace_forget(a->trace, pid);
}

/* The process a family's sample belongs to, or NULL with *err saying why. */
static struct agg_proc *proc_for_family(struct agg *a, uint32_t pid, enum shm_family family,
					int *err)
{
	struct agg_proc *p;

	*err = -EINVAL;
	if ((unsigned int)family >= SHM_FAMILY_COUNT)
		return NULL;
	*err = -ENOENT;
	p = proc_get(a, pid);
	return p;
}

int agg_latency(struct agg *a, uint32_t pid, enum shm_family family,
		uint64_t now_ns, uint64_t value_ns)
{
	struct agg_proc *p;
	int err, err2;

	p = proc_for_family(a, pid, family, &err);
	if (!p)
		return err;
	err = latency_record(&p->lat[family], now_ns, value_ns);
	err2 = latency_record(&a->node[family], now_ns, value_ns);
	agg_workload_record(a, p, family, value_ns);
	return err ? err : err2;
}

int agg_latency_batch(struct agg *a, uint32_t pid, enum shm_family family, uint64_t now_ns,
		      const uint64_t *hist_counts, const uint64_t *prom_counts,
		      uint64_t count, uint64_t sum_ns, uint64_t max_ns)
{
	struct agg_proc *p;
	int err, err2;

	p = proc_for_family(a, pid, family, &err);
	if (!p)
		return err;
	err = latency_record_batch(&p->lat[family], now_ns, hist_counts, prom_counts, count,
				   sum_ns, max_ns);
	if (err == -EINVAL)
		return err;
	err2 = latency_record_batch(&a->node[family], now_ns, hist_counts, prom_counts, count,
				    sum_ns, max_ns);
	agg_workload_record_batch(a, p, family, hist_counts, prom_counts, count, sum_ns, max_ns);
	return err ? err : err2;
}

int agg_thread_state(struct agg *a, uint32_t pid, enum shm_thread_state state, uint64_t ns)
{
	struct agg_proc *p;

	if ((unsigned int)state >= SHM_STATE_COUNT)
		return -EINVAL;
	p = proc_get(a, pid);
	if (!p)
		return -ENOENT;
	p->thread_state_ns[state] += ns;
	return 0;
}

void agg_open_states_clear(struct agg *a)
{
	for (uint32_t s = 0; s < keyindex_top(&a->proc_idx); s++)
		memset(a->procs[s].open_state_ns, 0, sizeof(a->procs[s].open_state_ns));
}

int agg_open_state(struct agg *a, uint32_t pid, const uint64_t ns[SHM_STATE_COUNT])
{
	struct agg_proc *p = proc_get(a, pid);

	if (!p)
		return -ENOENT;
	for (unsigned int st = 0; st < SHM_STATE_COUNT; st++)
		p->open_state_ns[st] += ns[st];
	return 0;
}

void agg_proc_show_states(struct agg_proc *p)
{
	for (unsigned int st = 0; st < SHM_STATE_COUNT; st++) {
		uint64_t v = p->thread_state_ns[st] + p->open_state_ns[st];

		/* A counter: an open stretch shown once stays shown. */
		if (v > p->shown_state_ns[st])
			p->shown_state_ns[st] = v;
	}
}

int agg_offcpu_batch(struct agg *a, uint32_t pid, uint64_t off_ns, uint64_t n, int involuntary)
{
	struct agg_proc *p = proc_get(a, pid);

	if (!p)
		return -ENOENT;
	if (involuntary) {
		p->offcpu_preempted_ns += off_ns;
		p->involuntary_switches += n;
	} else {
		p->offcpu_blocked_ns += off_ns;
		p->voluntary_switches += n;
	}
	return 0;
}

int agg_offcpu(struct agg *a, uint32_t pid, uint64_t off_ns, int involuntary)
{
	return agg_offcpu_batch(a, pid, off_ns, 1, involuntary);
}

int agg_migrations(struct agg *a, uint32_t pid, uint64_t n)
{
	struct agg_proc *p = proc_get(a, pid);

	if (!p)
		return -ENOENT;
	p->migrations += n;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* GPUs and GPU memory */

struct shm_gpu *agg_gpu_row(struct agg *a, uint32_t gpu, int create)
{
	for (uint32_t i = 0; i < a->n_gpus; i++)
		if (a->gpus[i].gpu_id == gpu)
			return &a->gpus[i];
	if (!create)
		return NULL;
	if (a->n_gpus >= a->opts.cap.gpus) {
		a->overflows[SHM_TABLE_GPUS]++;
		return NULL;
	}
	memset(&a->gpus[a->n_gpus], 0, sizeof(a->gpus[0]));
	a->gpus[a->n_gpus].gpu_id = gpu;
	return &a->gpus[a->n_gpus++];
}

struct shm_gpu *agg_gpu_node_row(struct agg *a, uint32_t gpu, int *err)
{
	struct shm_gpu *g = NULL;

	if (gpu & AGG_GPU_UNMAPPED)
		*err = -EINVAL;
	else if (!(g = agg_gpu_row(a, gpu, 1)))
		*err = -ENOSPC;
	return g;
}

struct shm_gpu_mem *agg_mem_find(const struct agg *a, uint32_t pid, uint32_t gpu)
{
	int32_t s = keyindex_find(&a->mem_idx, (uint64_t)pid << 32 | gpu, 0);

	return s < 0 ? NULL : &a->mem[s];
}

struct shm_gpu_mem *agg_mem_insert(struct agg *a, uint32_t pid, uint32_t gpu, int *err)
{
	int32_t s = keyindex_insert(&a->mem_idx, (uint64_t)pid << 32 | gpu, 0);

	if (s < 0) {
		a->overflows[SHM_TABLE_GPU_MEM]++;
		*err = -ENOSPC;
		return NULL;
	}
	memset(&a->mem[s], 0, sizeof(a->mem[s]));
	a->mem[s].pid = pid;
	a->mem[s].gpu_id = gpu;
	/* A device seen through memory is a device of this node. */
	if (!(gpu & AGG_GPU_UNMAPPED))
		agg_gpu_row(a, gpu, 1);
	return &a->mem[s];
}

/*
 * The row the probes' figures go to: made as a new row is, which is also
 * what a row of the driver's figure alone becomes once the probes see the
 * process on that GPU (it keeps the figure).
 */
static struct shm_gpu_mem *mem_get(struct agg *a, uint32_t pid, uint32_t gpu,
				   int *err)
{
	struct shm_gpu_mem *m;

	*err = 0;
	if (!proc_get(a, pid)) {
		*err = -ENOENT;
		return NULL;
	}
	m = agg_mem_find(a, pid, gpu);
	if (m && !(m->flags & SHM_GPU_MEM_F_DRIVER_ROW))
		return m;
	if (!m && !(m = agg_mem_insert(a, pid, gpu, err)))
		return NULL;
	m->cuda_device = gpu & ~AGG_GPU_UNMAPPED;
	m->gpu_map = SHM_GPU_MAP_ORDINAL;
	/* Until the source says otherwise (the simulator sees everything). */
	m->flags = SHM_GPU_MEM_F_FROM_START | (m->flags & SHM_GPU_MEM_F_DRIVER);
	return m;
}

int agg_gpu_mapped(struct agg *a, uint32_t pid, uint32_t gpu, uint32_t cuda_device,
		   uint32_t gpu_map)
{
	int err;
	struct shm_gpu_mem *m;

	if (gpu_map >= SHM_GPU_MAP_COUNT || gpu_map == SHM_GPU_MAP_DRIVER ||
	    shm_gpu_map_resolved(gpu_map) == !!(gpu & AGG_GPU_UNMAPPED))
		return -EINVAL;
	m = mem_get(a, pid, gpu, &err);
	if (!m)
		return err;
	m->cuda_device = cuda_device;
	m->gpu_map = gpu_map;
	return 0;
}

int agg_gpu_has(const struct agg *a, uint32_t pid, uint32_t gpu)
{
	const struct shm_gpu_mem *m = agg_mem_find(a, pid, gpu);

	return m && !(m->flags & SHM_GPU_MEM_F_DRIVER_ROW);
}

int agg_gpu_from_start(struct agg *a, uint32_t pid, uint32_t gpu, int from_start)
{
	int err;
	struct shm_gpu_mem *m = mem_get(a, pid, gpu, &err);

	if (!m)
		return err;
	if (from_start)
		m->flags |= SHM_GPU_MEM_F_FROM_START;
	else
		m->flags &= ~SHM_GPU_MEM_F_FROM_START;
	return 0;
}

int agg_gpu_identity(struct agg *a, uint32_t gpu, const char *uuid, const char *model_name)
{
	int err;
	struct shm_gpu *g = agg_gpu_node_row(a, gpu, &err);

	if (!g)
		return err;
	/* Zero-padded, as the segment's readers check. */
	if (uuid)
		strncpy(g->uuid, uuid, sizeof(g->uuid) - 1);
	if (model_name)
		strncpy(g->model_name, model_name, sizeof(g->model_name) - 1);
	return 0;
}

int agg_gpu_alloc(struct agg *a, uint32_t pid, uint32_t gpu, uint64_t bytes)
{
	int err;
	struct shm_gpu_mem *m = mem_get(a, pid, gpu, &err);

	if (!m)
		return err;
	m->used_bytes = bytes > UINT64_MAX - m->used_bytes ? UINT64_MAX
							   : m->used_bytes + bytes;
	if (m->used_bytes > m->peak_bytes)
		m->peak_bytes = m->used_bytes;
	m->alloc_calls++;
	return 0;
}

/* Takes bytes off the row, never below zero; a free call is counted when call is set. */
static int mem_sub(struct agg *a, uint32_t pid, uint32_t gpu, uint64_t bytes, int call)
{
	int err;
	struct shm_gpu_mem *m = mem_get(a, pid, gpu, &err);

	if (!m)
		return err;
	m->used_bytes = bytes > m->used_bytes ? 0 : m->used_bytes - bytes;
	if (call)
		m->free_calls++;
	return 0;
}

int agg_gpu_free(struct agg *a, uint32_t pid, uint32_t gpu, uint64_t bytes)
{
	return mem_sub(a, pid, gpu, bytes, 1);
}

int agg_gpu_released(struct agg *a, uint32_t pid, uint32_t gpu, uint64_t bytes)
{
	return mem_sub(a, pid, gpu, bytes, 0);
}

int agg_gpu_alloc_failed(struct agg *a, uint32_t pid, uint32_t gpu)
{
	int err;
	struct shm_gpu_mem *m = mem_get(a, pid, gpu, &err);

	if (!m)
		return err;
	m->failed_calls++;
	return 0;
}

int agg_gpu_total(struct agg *a, uint32_t gpu, uint64_t total_bytes, uint32_t source)
{
	struct shm_gpu *g;

	if (source > SHM_TOTAL_MAX_SOURCE)
		return -EINVAL;
	g = agg_gpu_row(a, gpu, 1);
	if (!g)
		return -ENOSPC;
	g->total_bytes = total_bytes;
	g->total_source = total_bytes ? source : SHM_TOTAL_UNKNOWN;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* NCCL */

void agg_nccl_call(struct agg *a, enum shm_nccl_op_kind op, uint64_t bytes,
		   uint64_t duration_ns, int failed, uint64_t now_ns)
{
	struct agg_nccl *n;

	if ((unsigned int)op >= SHM_NCCL_OP_COUNT)
		return;
	n = &a->nccl[op];
	n->calls++;
	if (failed) {
		n->errors++;
	} else {
		n->bytes += bytes;
	}
	/* A failed call still cost its caller this long. */
	latency_record(&n->duration, now_ns, duration_ns);
	n->duration_fine[hist_bucket_index(duration_ns)]++;
}

void agg_nccl_wait(struct agg *a, enum shm_nccl_op_kind op, uint64_t wait_ns,
		   uint64_t now_ns)
{
	if ((unsigned int)op >= SHM_NCCL_OP_COUNT)
		return;
	latency_record(&a->nccl[op].wait, now_ns, wait_ns);
	a->nccl[op].wait_fine[hist_bucket_index(wait_ns)]++;
}

/* ---------------------------------------------------------------------- */
/* Self-telemetry */

void agg_count_events(struct agg *a, uint64_t n)
{
	a->stats.events_total += n;
}

void agg_count_dropped(struct agg *a, uint64_t n)
{
	a->stats.events_dropped += n;
}

void agg_set_coverage(struct agg *a, uint64_t checked, uint64_t bypassed)
{
	a->stats.entry_points_checked = checked;
	a->stats.entry_points_bypassed = bypassed;
}

void agg_set_parser_restarts(struct agg *a, uint64_t restarts)
{
	a->stats.parser_restarts = restarts;
}

void agg_set_user_reader(struct agg *a, int (*read_u64)(void *ctx, uint32_t pid, uint64_t addr,
							 uint64_t *val),
			 void *ctx)
{
	a->read_u64 = read_u64;
	a->read_ctx = ctx;
}

void agg_set_probes(struct agg *a, uint64_t probes_attached, uint64_t libraries_attached,
		    uint64_t refused)
{
	a->stats.probes_refused = refused;
	a->stats.probes_attached = probes_attached;
	a->stats.libraries_attached = libraries_attached;
}
