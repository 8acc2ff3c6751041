// SPDX-License-Identifier: BSD-2-Clause
/*
 * A fake NCCL (libnccl.so.2) with the real entry points: each call busy-
 * waits $FAKE_NCCL_NS ns and fails when count == FAKE_NCCL_BAD_COUNT;
 * communicators remember their rank.  Like NCCL 2.28, every communicator
 * goes through an internal commAlloc(comm, parent, nranks, rank) (a local
 * symbol of the real library's .symtab, same mangled name here).  A split
 * child has rank `key` in a communicator as large as its parent; colour
 * NCCL_SPLIT_NOCOLOR (-1) makes none.  ncclCommFinalize flushes (nothing
 * to flush here); ncclCommDestroy and ncclCommAbort free the communicator,
 * so glibc hands its memory, the same handle, to the next one made, as a
 * real allocator may.  A split whose config says blocking 0 returns
 * ncclInProgress with *newcomm NULL, as NCCL 2.28 does, and makes the
 * child later on a thread of its own (NCCL's async job), which calls
 * commAlloc with the parent and then sets *newcomm: 40 ms later for the
 * process's first, third, ... such split, 20 ms for the others, so that
 * of two made back to back the second's child comes first, as NCCL's
 * jobs may.  A communicator made by ncclCommInitRank(Config) or
 * ncclCommInitRankScalable has NCCL's commHash of its uniqueId, and, when
 * NCCL_PROFILER_PLUGIN names a plugin, its collectives are told to it as
 * NCCL 2.28 tells them (fake_nccl_profiler.c).  Test code.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/fakes/fake_cuda.h"
#include "tests/fakes/fake_nccl_profiler.h"

#define EXPORT __attribute__((visibility("default"), noinline))

typedef int ncclResult_t;
#define ncclSuccess		0
#define ncclInvalidArgument	4
#define ncclInProgress		7

struct fake_comm {
	int rank;
	int nranks;
	int dev;
	uint64_t hash;		/* NCCL's commHash; 0 where not computed */
	void *profiler;		/* its profiler plugin context, or NULL */
};
typedef struct fake_comm *ncclComm_t;

static uint64_t call_ns;

__attribute__((constructor)) static void fake_nccl_init(void)
{
	const char *s = getenv("FAKE_NCCL_NS");

	call_ns = s ? strtoull(s, NULL, 10) : 0;
}

/* A collective (func, as NCCL names it) or point-to-point call (func NULL). */
static ncclResult_t fake_call(size_t count, ncclComm_t comm, const char *func)
{
	fake_busy_ns(call_ns);
	if (count == FAKE_NCCL_BAD_COUNT || !comm)
		return ncclInvalidArgument;
	if (func)
		fake_profiler_collective(comm->profiler, func, count);
	return count == FAKE_NCCL_IN_PROGRESS_COUNT ? ncclInProgress : ncclSuccess;
}

/* NCCL's getHash (src/include/bitops.h): eatHash into {1, 1}, then digestHash. */
static uint64_t nccl_get_hash(const void *bytes, size_t size)
{
	uint64_t acc[2] = { 1, 1 }, h;
	const char *p = bytes;

	acc[0] ^= size;
	while (size) {
		size_t n = size < sizeof(uint64_t) ? size : sizeof(uint64_t);
		uint64_t x = 0;

		acc[0] += acc[1];
		acc[1] ^= acc[0];
		acc[0] ^= acc[0] >> 31;
		acc[0] *= 0x9de62bbc8cef3ce3ull;
		acc[1] ^= acc[1] >> 32;
		acc[1] *= 0x485cd6311b599e79ull;
		memcpy(&x, p, n);
		p += n;
		size -= n;
		acc[0] += x;
	}
	h = acc[0];
	h ^= h >> 31;
	h *= 0xbac3bd562846de6bull;
	h += acc[1];
	h ^= h >> 32;
	h *= 0x995a187a14e7b445ull;
	return h;
}

EXPORT ncclResult_t ncclGetUniqueId(struct fake_nccl_id *id)
{
	memset(id, 0x5a, sizeof(*id));
	return ncclSuccess;
}

/* NCCL's internal commAlloc: the probes learn a communicator's rank and size here. */
__attribute__((noinline, used)) void fake_comm_alloc(struct fake_comm *comm,
						     struct fake_comm *parent, int nranks,
						     int rank) __asm__("_ZL9commAllocP8ncclCommS0_ii");
__attribute__((noinline, used)) void fake_comm_alloc(struct fake_comm *comm,
						     struct fake_comm *parent, int nranks,
						     int rank)
{
	__asm__ volatile("" : : "r"(comm), "r"(parent), "r"(nranks), "r"(rank) : "memory");
}

/* malloc, not calloc: glibc's calloc skips the cache a freed communicator goes to. */
static struct fake_comm *comm_new(void)
{
	struct fake_comm *c = malloc(sizeof(*c));

	if (c)
		memset(c, 0, sizeof(*c));
	return c;
}

/* id: the uniqueId it is made from (NULL: none to hash). */
static ncclResult_t new_comm(ncclComm_t *comm, int nranks, int rank, int dev,
			     const struct fake_nccl_id *id)
{
	struct fake_comm *c;

	if (!comm || nranks < 1 || rank < 0 || rank >= nranks)
		return ncclInvalidArgument;
	c = comm_new();
	if (!c)
		return ncclInvalidArgument;
	c->rank = rank;
	c->nranks = nranks;
	c->dev = dev;
	fake_comm_alloc(c, NULL, nranks, rank);
	if (id) {
		c->hash = nccl_get_hash(id->internal, sizeof(id->internal));
		c->profiler = fake_profiler_comm(c->hash, nranks, rank);
	}
	*comm = c;
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, struct fake_nccl_id id, int rank)
{
	return new_comm(comm, nranks, rank, -1, &id);
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, struct fake_nccl_id id,
					   int rank, void *config)
{
	(void)config;
	return new_comm(comm, nranks, rank, -1, &id);
}

EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	for (int i = 0; i < ndev; i++) {
		ncclResult_t r = new_comm(&comms[i], ndev, i, devlist ? devlist[i] : i, NULL);

		if (r != ncclSuccess)
			return r;
	}
	return ncclSuccess;
}

EXPORT ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, int dt, int op,
				  ncclComm_t comm, CUstream st)
{
	(void)s; (void)r; (void)dt; (void)op; (void)st;
	return fake_call(count, comm, "AllReduce");
}

EXPORT ncclResult_t ncclAllGather(const void *s, void *r, size_t count, int dt, ncclComm_t comm,
				  CUstream st)
{
	(void)s; (void)r; (void)dt; (void)st;
	return fake_call(count, comm, "AllGather");
}

EXPORT ncclResult_t ncclReduceScatter(const void *s, void *r, size_t count, int dt, int op,
				      ncclComm_t comm, CUstream st)
{
	(void)s; (void)r; (void)dt; (void)op; (void)st;
	return fake_call(count, comm, "ReduceScatter");
}

EXPORT ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, int dt, int root,
				  ncclComm_t comm, CUstream st)
{
	(void)s; (void)r; (void)dt; (void)root; (void)st;
	return fake_call(count, comm, "Broadcast");
}

EXPORT ncclResult_t ncclReduce(const void *s, void *r, size_t count, int dt, int op, int root,
			       ncclComm_t comm, CUstream st)
{
	(void)s; (void)r; (void)dt; (void)op; (void)root; (void)st;
	return fake_call(count, comm, "Reduce");
}

EXPORT ncclResult_t ncclSend(const void *s, size_t count, int dt, int peer, ncclComm_t comm,
			     CUstream st)
{
	(void)s; (void)dt; (void)peer; (void)st;
	return fake_call(count, comm, NULL);
}

EXPORT ncclResult_t ncclRecv(void *r, size_t count, int dt, int peer, ncclComm_t comm,
			     CUstream st)
{
	(void)r; (void)dt; (void)peer; (void)st;
	return fake_call(count, comm, NULL);
}

EXPORT ncclResult_t ncclBcast(void *b, size_t count, int dt, int root, ncclComm_t comm, CUstream st)
{
	(void)b; (void)dt; (void)root; (void)st;
	return fake_call(count, comm, "Broadcast");
}

EXPORT ncclResult_t ncclAlltoAll(const void *s, void *r, size_t count, int dt, ncclComm_t comm,
				 CUstream st)
{
	(void)s; (void)r; (void)dt; (void)st;
	return fake_call(count, comm, NULL);
}

EXPORT ncclResult_t ncclGather(const void *s, void *r, size_t count, int dt, int root,
			       ncclComm_t comm, CUstream st)
{
	(void)s; (void)r; (void)dt; (void)root; (void)st;
	return fake_call(count, comm, NULL);
}

EXPORT ncclResult_t ncclScatter(const void *s, void *r, size_t count, int dt, int root,
				ncclComm_t comm, CUstream st)
{
	(void)s; (void)r; (void)dt; (void)root; (void)st;
	return fake_call(count, comm, NULL);
}

EXPORT ncclResult_t ncclGroupStart(void)
{
	return ncclSuccess;
}

EXPORT ncclResult_t ncclGroupEnd(void)
{
	fake_busy_ns(call_ns);
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nid,
					     struct fake_nccl_id *ids, void *config)
{
	(void)config;
	if (nid < 1 || !ids)
		return ncclInvalidArgument;
	return new_comm(comm, nranks, rank, -1, &ids[0]);
}

static ncclResult_t child(ncclComm_t parent, int rank, ncclComm_t *newcomm)
{
	struct fake_comm *c;

	if (!parent || !newcomm)
		return ncclInvalidArgument;
	c = comm_new();
	if (!c)
		return ncclInvalidArgument;
	c->rank = rank;
	c->nranks = parent->nranks;
	c->dev = parent->dev;
	fake_comm_alloc(c, parent, c->nranks, rank);
	*newcomm = c;
	return ncclSuccess;
}

struct split_job {
	ncclComm_t parent;
	int rank;
	ncclComm_t *newcomm;
	long delay_ms;
};

static void *split_later(void *arg)
{
	struct split_job *j = arg;
	struct timespec later = { 0, j->delay_ms * 1000000 };
	ncclComm_t c = NULL;

	nanosleep(&later, NULL);
	if (child(j->parent, j->rank, &c) == ncclSuccess)
		__atomic_store_n(j->newcomm, c, __ATOMIC_RELEASE);
	free(j);
	return NULL;
}

/* NCCL's non-blocking split: the child comes later, *newcomm NULL until then. */
static ncclResult_t split_async(ncclComm_t parent, int rank, ncclComm_t *newcomm)
{
	static int splits;
	struct split_job *j = malloc(sizeof(*j));
	pthread_t t;

	if (!parent || !newcomm || !j) {
		free(j);
		return ncclInvalidArgument;
	}
	*newcomm = NULL;
	*j = (struct split_job){ parent, rank, newcomm,
				 __atomic_fetch_add(&splits, 1, __ATOMIC_RELAXED) % 2 ? 20 : 40 };
	if (pthread_create(&t, NULL, split_later, j) != 0) {
		free(j);
		return ncclInvalidArgument;
	}
	pthread_detach(t);
	return ncclInProgress;
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
				  void *config)
{
	const struct fake_nccl_config *cfg = config;

	if (color != -1 && cfg && cfg->blocking == 0)
		return split_async(comm, key, newcomm);
	if (color == -1) {
		if (newcomm)
			*newcomm = NULL;
		return comm ? ncclSuccess : ncclInvalidArgument;
	}
	return child(comm, key, newcomm);
}

EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int nexclude,
				   ncclComm_t *newcomm, void *config, int flags)
{
	(void)exclude; (void)config; (void)flags;
	return child(comm, comm ? comm->rank - (nexclude > 0) : 0, newcomm);
}

EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	return comm ? ncclSuccess : ncclInvalidArgument;
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	if (!comm)
		return ncclInvalidArgument;
	fake_profiler_comm_end(comm->profiler);
	free(comm);
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	if (!comm)
		return ncclInvalidArgument;
	fake_profiler_comm_end(comm->profiler);
	free(comm);
	return ncclSuccess;
}
