/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writer side of the segment, used by zernel-collector alone.  It creates the
 * segment (root-owned, mode 0644 so the unprivileged exporter can map it
 * read-only), and publishes whole snapshots under the seqlock.
 */
#ifndef ZERNEL_SHM_WRITER_H
#define ZERNEL_SHM_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "shm/shm_layout.h"

struct shm_capacity {
	uint32_t procs;
	uint32_t gpu_mem;
	uint32_t gpus;
	uint32_t nccl_comms;
};

/* Fills in the SHM_DEFAULT_* capacities. */
void shm_capacity_default(struct shm_capacity *cap);

/* Bytes a segment with these capacities occupies. */
uint64_t shm_segment_size(const struct shm_capacity *cap);

/*
 * The writer never reads the shared mapping back: anything there may have
 * been scribbled on (a stray write, a half-done upgrade).  It keeps its own
 * copy of every field fixed at creation and of the seqlock's counter, takes
 * table places from that copy, and rewrites the whole header from it at
 * every publish, so a damaged header heals at the next one.
 */
struct shm_writer {
	char name[256];
	int fd;
	union shm_header *base;		/* the shared mapping: written, never read */
	uint64_t size;
	uint64_t seq;			/* the seqlock's value, kept here */
	struct shm_header_fields fixed;	/* the creation-time fields and table places */
};

struct shm_writer_opts {
	const char *name;		/* "/zernel" */
	struct shm_capacity cap;
	uint32_t mode;			/* SHM_MODE_* */
	uint32_t publish_interval_ms;
	uint64_t window_ns;
};

/*
 * Creates the segment afresh: an old one of the same name (a previous
 * collector's) is unlinked first, so readers see a new inode and a new
 * generation.  Returns 0 or -errno.
 */
int shm_writer_create(struct shm_writer *w, const struct shm_writer_opts *opts);

/*
 * Opens the seqlock: seq becomes odd.  Between begin and end the caller
 * writes rows through shm_writer_table() and the header's published fields.
 */
void shm_writer_begin(struct shm_writer *w);
void shm_writer_end(struct shm_writer *w);

/* Start of a table's rows in the shared mapping (from the writer's own layout). */
void *shm_writer_table(struct shm_writer *w, enum shm_table_id id);

/* A table's place, entry size and capacity as created; NULL when out of range. */
const struct shm_table *shm_writer_layout(const struct shm_writer *w, enum shm_table_id id);

/* Sets a table's published count and overflows (between begin and end). */
void shm_writer_set_count(struct shm_writer *w, enum shm_table_id id, uint32_t count,
			  uint64_t overflows);

/* Unmaps and, when unlink is non-zero, removes the name. */
void shm_writer_close(struct shm_writer *w, int unlink_name);

#endif /* ZERNEL_SHM_WRITER_H */
