/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A validated private copy of the segment, and its rows: what the readers
 * hand over (shm_reader.h) and what the catalog, the encoders and the
 * feed look at.  Pure accessors; a program that only formats snapshots
 * (the CLI, through the catalog) links this and not the reader.
 */
#ifndef ZERNEL_SHM_SNAPSHOT_H
#define ZERNEL_SHM_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "shm/shm_layout.h"

enum shm_read_status {
	SHM_READ_OK = 0,	/* fresh, consistent, valid */
	SHM_READ_STALE,		/* valid copy, but heartbeat older than the limit */
	SHM_READ_BUSY,		/* no clean copy within the retry bound (writer died mid-write?) */
	SHM_READ_MISSING,	/* no segment under that name */
	SHM_READ_INVALID,	/* present but fails validation; see reason */
};

const char *shm_read_status_name(enum shm_read_status st);

/* A private, validated copy of the segment. */
struct shm_snapshot {
	void *buf;			/* owned; grows to fit, reused across reads */
	size_t cap;
	size_t size;			/* bytes copied */
	const struct shm_header_fields *hdr;	/* inside buf */
	uint64_t published_ns;		/* the heartbeat on the reader's CLOCK_MONOTONIC; 0: none */
	uint64_t age_ns;		/* monotonic now - published_ns at read time */
};

/*
 * Short name of a table ("procs", "gpu_mem", ...): what the validator's
 * messages and the exporter's table label call it; NULL when out of range.
 */
const char *shm_table_name(uint32_t table);

/* Frees a snapshot's copy; the struct may be used again. */
void shm_snapshot_free(struct shm_snapshot *snap);

/* Rows of a table in a validated snapshot; *n receives the count. */
const void *shm_snapshot_rows(const struct shm_snapshot *s, enum shm_table_id id, uint32_t *n);
const struct shm_proc *shm_snapshot_procs(const struct shm_snapshot *s, uint32_t *n);
const struct shm_gpu_mem *shm_snapshot_gpu_mem(const struct shm_snapshot *s, uint32_t *n);
const struct shm_gpu *shm_snapshot_gpus(const struct shm_snapshot *s, uint32_t *n);
const struct shm_nccl_op *shm_snapshot_nccl_ops(const struct shm_snapshot *s, uint32_t *n);
const struct shm_nccl_comm *shm_snapshot_nccl_comms(const struct shm_snapshot *s, uint32_t *n);
/* Row i describes procs row i when the pids agree. */
const struct shm_identity *shm_snapshot_identity(const struct shm_snapshot *s, uint32_t *n);

#endif /* ZERNEL_SHM_SNAPSHOT_H */
