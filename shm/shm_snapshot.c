/* SPDX-License-Identifier: BSD-2-Clause */
/* A snapshot's rows; see shm_snapshot.h. */
#include <stdlib.h>
#include <string.h>

#include "shm/shm_snapshot.h"

const char *shm_read_status_name(enum shm_read_status st)
{
	switch (st) {
	case SHM_READ_OK:	return "ok";
	case SHM_READ_STALE:	return "stale";
	case SHM_READ_BUSY:	return "busy";
	case SHM_READ_MISSING:	return "missing";
	case SHM_READ_INVALID:	return "invalid";
	}
	return "unknown";
}

static const char *const table_names[SHM_TABLE_COUNT] = {
	"procs", "gpu_mem", "gpus", "nccl_ops", "nccl_comms", "identity",
	"py_procs", "stall_sites", "proc_recent", "trace", "workloads",
};

const char *shm_table_name(uint32_t table)
{
	return table < SHM_TABLE_COUNT ? table_names[table] : NULL;
}

void shm_snapshot_free(struct shm_snapshot *snap)
{
	if (!snap)
		return;
	free(snap->buf);
	memset(snap, 0, sizeof(*snap));
}

const void *shm_snapshot_rows(const struct shm_snapshot *s, enum shm_table_id id, uint32_t *n)
{
	if (!s || !s->hdr) {
		if (n)
			*n = 0;
		return NULL;
	}
	if (n)
		*n = s->hdr->table[id].count;
	return (const char *)s->buf + s->hdr->table[id].offset;
}

const struct shm_proc *shm_snapshot_procs(const struct shm_snapshot *s, uint32_t *n)
{
	return shm_snapshot_rows(s, SHM_TABLE_PROCS, n);
}

const struct shm_gpu_mem *shm_snapshot_gpu_mem(const struct shm_snapshot *s, uint32_t *n)
{
	return shm_snapshot_rows(s, SHM_TABLE_GPU_MEM, n);
}

const struct shm_gpu *shm_snapshot_gpus(const struct shm_snapshot *s, uint32_t *n)
{
	return shm_snapshot_rows(s, SHM_TABLE_GPUS, n);
}

const struct shm_nccl_op *shm_snapshot_nccl_ops(const struct shm_snapshot *s, uint32_t *n)
{
	return shm_snapshot_rows(s, SHM_TABLE_NCCL_OPS, n);
}

const struct shm_identity *shm_snapshot_identity(const struct shm_snapshot *s, uint32_t *n)
{
	return shm_snapshot_rows(s, SHM_TABLE_IDENTITY, n);
}

const struct shm_nccl_comm *shm_snapshot_nccl_comms(const struct shm_snapshot *s, uint32_t *n)
{
	return shm_snapshot_rows(s, SHM_TABLE_NCCL_COMMS, n);
}
