/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the catalog derives rather than reads (see cat_derive.h): label
 * texts (a process's sanitised name, the mode, the op), and the few values
 * computed from several rows (a GPU's memory summed over its processes
 * where the driver's figure is not known, the all_reduce row).  Pure functions over a validated snapshot.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "catalog/cat_derive.h"
#include "common/utf8.h"
#include "common/util.h"

/* ---- label values ------------------------------------------------------ */

int cat_text_comm(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	const struct shm_proc *p = row;

	(void)in;
	/* Any local user names a process: valid UTF-8, no control characters. */
	utf8_sanitize(buf, len, p->comm, SHM_COMM_LEN);
	return 0;
}

int cat_text_watch_reason(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	static const char *const names[] = {
		"cuda", "nccl", "descendant", "pid", "comm", "simulated",
	};
	const struct shm_proc *p = row;
	size_t o = 0;

	(void)in;
	buf[0] = '\0';
	for (unsigned int i = 0; i < ARRAY_SIZE(names) && o < len; i++)
		if (p->watch_reason & (1u << i))
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "," : "", names[i]);
	return 0;
}

int cat_text_mode(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	const struct shm_header_fields *h = row;

	(void)in;
	snprintf(buf, len, "%s", h->mode == SHM_MODE_SIMULATE ? "simulate" :
		 h->mode == SHM_MODE_BPF ? "bpf" : "unknown");
	return 0;
}

int cat_text_scenario(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	const struct shm_header_fields *h = row;

	(void)in;
	utf8_sanitize(buf, len, h->scenario, sizeof(h->scenario));
	return 0;
}

int cat_text_table(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	const char *name = shm_table_name((uint32_t)((const struct shm_table *)row -
						     in->snap->hdr->table));

	if (!name)
		return -ENOENT;
	snprintf(buf, len, "%s", name);
	return 0;
}

int cat_text_mem_key(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	const struct shm_gpu_mem *m = row;

	(void)in;
	if (m->gpu_id == SHM_GPU_UNKNOWN)
		snprintf(buf, len, "%" PRIu32 ":cuda%" PRIu32, m->pid, m->cuda_device);
	else
		snprintf(buf, len, "%" PRIu32 ":%" PRIu32, m->pid, m->gpu_id);
	return 0;
}

int cat_text_mem_gpu(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	const struct shm_gpu_mem *m = row;

	(void)in;
	if (m->gpu_id == SHM_GPU_UNKNOWN)
		snprintf(buf, len, "cuda%" PRIu32, m->cuda_device);
	else
		snprintf(buf, len, "%" PRIu32, m->gpu_id);
	return 0;
}

uint64_t cat_mem_from_start(const struct cat_input *in, const void *row)
{
	(void)in;
	return (((const struct shm_gpu_mem *)row)->flags & SHM_GPU_MEM_F_FROM_START) != 0;
}

/* The row of GPU gpu_id in the snapshot, or NULL. */
static const struct shm_gpu *gpu_row(const struct cat_input *in, uint32_t gpu_id)
{
	const struct shm_gpu *g;
	uint32_t n = 0;

	if (gpu_id == SHM_GPU_UNKNOWN || !in || !in->snap)
		return NULL;
	g = shm_snapshot_gpus(in->snap, &n);
	for (uint32_t i = 0; g && i < n; i++)
		if (g[i].gpu_id == gpu_id)
			return &g[i];
	return NULL;
}

int cat_text_gpu_uuid(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	const struct shm_gpu *g = row;

	(void)in;
	utf8_sanitize(buf, len, g->uuid, sizeof(g->uuid));
	return 0;
}

int cat_text_gpu_model(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	const struct shm_gpu *g = row;

	(void)in;
	utf8_sanitize(buf, len, g->model_name, sizeof(g->model_name));
	return 0;
}

int cat_text_mem_uuid(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	const struct shm_gpu *g = gpu_row(in, ((const struct shm_gpu_mem *)row)->gpu_id);

	buf[0] = '\0';
	return g ? cat_text_gpu_uuid(buf, len, in, g) : 0;
}

int cat_text_mem_model(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	const struct shm_gpu *g = gpu_row(in, ((const struct shm_gpu_mem *)row)->gpu_id);

	buf[0] = '\0';
	return g ? cat_text_gpu_model(buf, len, in, g) : 0;
}

int cat_text_gpu_map(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	const char *name = shm_gpu_map_name(((const struct shm_gpu_mem *)row)->gpu_map);

	(void)in;
	snprintf(buf, len, "%s", name ? name : "unknown");
	return 0;
}

int cat_text_gpu_used_source(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	(void)in;
	snprintf(buf, len, "%s", ((const struct shm_gpu *)row)->used_source == SHM_USED_DRIVER ?
		 "driver" : "processes");
	return 0;
}

int cat_text_op(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	const char *name = shm_nccl_op_name(((const struct shm_nccl_op *)row)->op);

	(void)in;
	if (!name)
		return -ENOENT;
	snprintf(buf, len, "%s", name);
	return 0;
}

int cat_text_comm_origin(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	static const char *const names[SHM_NCCL_ORIGIN_COUNT] = {
		"init_rank", "scalable", "init_all", "split", "shrink",
	};
	const struct shm_nccl_comm *c = row;

	(void)in;
	if (c->origin >= SHM_NCCL_ORIGIN_COUNT)
		return -ENOENT;
	snprintf(buf, len, "%s%s", names[c->origin],
		 c->flags & SHM_NCCL_COMM_LOCAL_ID ? ",local" : "");
	return 0;
}

int cat_text_status(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	(void)in;
	snprintf(buf, len, "%s", shm_read_status_name(((const struct cat_status *)row)->status));
	return 0;
}

int cat_text_stale_reason(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	const struct cat_status *st = row;
	const char *r = st->status == SHM_READ_OK || !st->reason ? "" : st->reason;

	(void)in;
	utf8_sanitize(buf, len, r, strlen(r));
	return 0;
}

int cat_text_version(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	(void)in;
	(void)row;
	snprintf(buf, len, "%s", ZERNEL_VERSION);
	return 0;
}

/* ---- derived values ---------------------------------------------------- */

/* GPU memory of the (pid, gpu) rows that match: on one GPU, or of one pid. */
static uint64_t mem_sum(const struct cat_input *in, int by_gpu, uint32_t id)
{
	const struct shm_gpu_mem *m;
	uint64_t sum = 0;
	uint32_t n = 0;

	m = in->snap ? shm_snapshot_gpu_mem(in->snap, &n) : NULL;
	/* O(rows) per row: fine at the bounded sizes (4096 rows, 1024 processes). */
	for (uint32_t i = 0; m && i < n; i++)
		if ((by_gpu ? m[i].gpu_id : m[i].pid) == id)
			sum += m[i].used_bytes;
	return sum;
}

int cat_mem_driver_known(const struct cat_input *in, const void *row)
{
	(void)in;
	return (((const struct shm_gpu_mem *)row)->flags & SHM_GPU_MEM_F_DRIVER) != 0;
}

/*
 * What the OOM rule judges: the driver's used memory where NVML reads it
 * (every process and CUDA context, the collector's blind spots included),
 * else the sum of the processes' rows on the GPU, never a peak.
 */
uint64_t cat_gpu_used_for_oom(const struct cat_input *in, const void *row)
{
	const struct shm_gpu *g = row;

	return g->used_source == SHM_USED_DRIVER ? g->used_bytes : mem_sum(in, 1, g->gpu_id);
}

uint64_t cat_proc_gpu_bytes(const struct cat_input *in, const void *row)
{
	return mem_sum(in, 0, ((const struct shm_proc *)row)->pid);
}

uint64_t cat_procs_truncated(const struct cat_input *in, const void *row)
{
	(void)in;
	return ((const struct shm_header_fields *)row)->table[SHM_TABLE_PROCS].count >
	       cat_objs[CAT_OBJ_PROCS].max_rows;
}

uint64_t cat_proc_stall_sites(const struct cat_input *in, const void *row)
{
	uint32_t pid = ((const struct shm_proc *)row)->pid, n;
	const struct shm_stall_site *site = shm_snapshot_rows(in->snap, SHM_TABLE_STALL_SITES, &n);
	uint64_t mine = 0;

	for (uint32_t i = 0; i < n; i++)
		mine += site[i].pid == pid;
	return mine;
}

uint64_t cat_collector_up(const struct cat_input *in, const void *row)
{
	(void)in;
	return ((const struct cat_status *)row)->status == SHM_READ_OK;
}

const struct shm_latency *cat_allreduce_duration(const struct cat_input *in, const void *row)
{
	const struct shm_nccl_op *o;
	uint32_t n = 0;

	(void)row;
	o = in->snap ? shm_snapshot_nccl_ops(in->snap, &n) : NULL;
	for (uint32_t i = 0; o && i < n; i++)
		if (o[i].op == SHM_NCCL_ALL_REDUCE)
			return &o[i].duration;
	return NULL;
}
