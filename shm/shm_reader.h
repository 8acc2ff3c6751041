/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reader side of the segment, for unprivileged processes.  It maps the
 * segment O_RDONLY + PROT_READ, copies a consistent snapshot out under the
 * seqlock with bounded retries, and validates the copy before anyone looks
 * at it: every accessor below returns only rows that passed validation.
 */
#ifndef ZERNEL_SHM_READER_H
#define ZERNEL_SHM_READER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shm/shm_clock.h"
#include "shm/shm_layout.h"
#include "shm/shm_snapshot.h"

struct shm_reader {
	char name[256];
	int fd;				/* -1 when not mapped */
	const void *map;		/* PROT_READ mapping */
	uint64_t map_size;		/* file size at map time */
	dev_t dev;
	ino_t ino;
	uint64_t generation;
	unsigned int max_retries;	/* seqlock copy attempts; default 64 */
	int never_sleep;		/* retry without sleeping: a server thread's reader */
	int shares_copies;		/* the caller keeps its old buffers */
	uint64_t stuck_seq;		/* an odd seq already waited out; 0 when none */
	unsigned int stale_intervals;	/* heartbeat older than N intervals is stale; default 3 */
	struct shm_clock clock;		/* the writer's heartbeats on our clock */
	void *scratch;			/* owned: the next copy lands here, so a failed */
	size_t scratch_cap;		/* read leaves the caller's snapshot untouched */
	/*
	 * The copy last handed over, and its header as it was read: while the
	 * segment's header (its seqlock word included) reads the same, the
	 * caller's copy is current and is handed again, neither copied nor
	 * validated again.
	 */
	const void *handed;
	void *handed_header;		/* owned, SHM_HEADER_SIZE bytes */
};

/* Initialises r for name; maps nothing yet. */
void shm_reader_init(struct shm_reader *r, const char *name);

/*
 * Takes a snapshot.  Maps (or remaps after a collector restart: a new inode
 * or generation under the same name) as needed, so a long-running reader
 * recovers on its own.  On SHM_READ_OK and SHM_READ_STALE the snapshot is
 * valid; otherwise it is untouched.  reason receives a one-line explanation
 * for anything but SHM_READ_OK.
 */
enum shm_read_status shm_reader_snapshot(struct shm_reader *r,
					 struct shm_snapshot *snap,
					 char *reason, size_t reason_len);

/*
 * For a thread that answers requests: retries never sleep.  An odd seq is
 * spun on for at most SHM_READER_SPIN_NS (a publish takes far less), once
 * per stuck value: after that a writer stuck mid-publish costs a request
 * one load of seq, and the caller answers "busy" at once.  Torn copies are
 * retried at most SHM_READER_NOSLEEP_RETRIES times.
 */
#define SHM_READER_NOSLEEP_RETRIES	8u
#define SHM_READER_SPIN_NS		5000000ull	/* 5 ms */
void shm_reader_never_sleep(struct shm_reader *r);

/*
 * Copies handed over are the caller's to keep: a new copy leaves the
 * caller's old buffer with the caller (by default it becomes the reader's
 * scratch), for a caller that shares copies between threads and frees
 * each when its last user is done (exporter/segment_hub.c).
 */
void shm_reader_share_copies(struct shm_reader *r);
/* A shared copy's buffer its users are done with: the next copy's, or freed. */
void shm_reader_take_back(struct shm_reader *r, void *buf, size_t cap);

void shm_reader_close(struct shm_reader *r);

/*
 * Validates a private copy of a segment of size bytes: magic, version,
 * header size, total size equal to size, every table in bounds and
 * non-overlapping, entry sizes as compiled, counts within capacity, every
 * row's enums, indices and histogram invariants.  Returns 0 or -EINVAL with
 * reason filled in.  Exposed for tests and fuzzing.
 */
int shm_validate(const void *buf, size_t size, char *reason, size_t reason_len);


#endif /* ZERNEL_SHM_READER_H */
