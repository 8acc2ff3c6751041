/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What each live GPU allocation was: (pid, space, pointer or handle) ->
 * (device, bytes), so that a free subtracts the size allocated at that
 * address on the right device.  Bounded (max_entries, allocated once but
 * touched only as used); entries of a process go when the process is
 * evicted.  Collector-internal, single-threaded.
 */
#ifndef ZERNEL_MEMTRACK_H
#define ZERNEL_MEMTRACK_H

#include <stddef.h>
#include <stdint.h>

struct memtrack;

/* NULL with errno set (EINVAL for 0 or more than 2^32 - 1 entries). */
struct memtrack *memtrack_new(size_t max_entries);
void memtrack_free(struct memtrack *mt);

/* What was allocated: bytes on gpu, from the pool key (collector/probes/gpu_mem/mempool.h) or 0. */
struct memtrack_alloc {
	uint64_t bytes;
	uint64_t pool;
	uint32_t gpu;
};

/*
 * Remembers an allocation.  When the address was already live (its free
 * went unseen), the old one is returned through old and the call returns
 * 1; otherwise 0.  -ENOSPC when the table is full.
 */
int memtrack_add(struct memtrack *mt, uint32_t pid, uint32_t space, uint64_t addr,
		 const struct memtrack_alloc *a, struct memtrack_alloc *old);

/* Forgets an allocation and says what it was; -ENOENT when unknown. */
int memtrack_take(struct memtrack *mt, uint32_t pid, uint32_t space, uint64_t addr,
		  struct memtrack_alloc *a);

/* Forgets every allocation of pid; returns how many. */
size_t memtrack_evict_pid(struct memtrack *mt, uint32_t pid);

size_t memtrack_count(const struct memtrack *mt);

#endif /* ZERNEL_MEMTRACK_H */
