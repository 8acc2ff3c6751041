// SPDX-License-Identifier: BSD-2-Clause
/*
 * The profiler plugin host of the fake NCCL, written against NCCL 2.28.9's
 * own plugin headers (tests/fakes/nccl_profiler_2.28.9/), doing what NCCL
 * 2.28 does (src/plugin/profiler.cc):
 *   - at the first communicator, dlopen $NCCL_PROFILER_PLUGIN and look up
 *     ncclProfiler_v5, else ncclProfiler_v4 (only v4 with
 *     $FAKE_NCCL_PROFILER_VERSION=4, as NCCL 2.27 does); without one, nothing;
 *   - init per communicator with its commHash, size and rank, taking the
 *     plugin's activation mask;
 *   - per collective: a ncclProfileColl event started and stopped around
 *     its launch (seqNumber counted per operation), then, on another thread
 *     as NCCL's proxy reports the kernel's channels while the host goes on,
 *     one ncclProfileKernelCh event per channel whose parent is the
 *     collective's handle, started with the channel's GPU start time and
 *     ended by recordEventState(ncclProfilerKernelChStop) with its end;
 *   - finalize at the communicator's end, once its proxy work is done.
 * The GPU: each collective takes $FAKE_NCCL_GPU_NS ns (default 0: no
 * kernel channel events), on $FAKE_NCCL_CHANNELS channels (default 2) whose
 * starts and ends are staggered by 1 us inside that span, on a clock of its
 * own (CLOCK_MONOTONIC plus a day, as a GPU's globaltimer is no host
 * clock).  Version 4 gets the same events through its own descriptor.
 * Test code.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "profiler.h"
#include "tests/fakes/fake_nccl_profiler.h"

#define GPU_CLOCK_OFFSET_NS	(86400ull * 1000000000ull)
#define STAGGER_NS		1000ull
#define FUNCS			16

struct fake_prof_comm {
	void *context;
	int mask;
	int rank;
	uint64_t seq[FUNCS];
	int in_flight;		/* proxy threads still reporting */
};

/* What the proxy thread reports of one collective's kernel. */
struct fake_kernel {
	struct fake_prof_comm *comm;
	void *coll;
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static ncclProfiler_v5_t *v5;
static ncclProfiler_v4_t *v4;
static uint64_t gpu_ns;
static unsigned int channels = 2;

static void load(void)
{
	const char *path = getenv("NCCL_PROFILER_PLUGIN"), *s;
	void *lib;

	if ((s = getenv("FAKE_NCCL_GPU_NS")))
		gpu_ns = strtoull(s, NULL, 10);
	if ((s = getenv("FAKE_NCCL_CHANNELS")))
		channels = (unsigned int)strtoul(s, NULL, 10);
	if (!path || !*path || !(lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
		return;
	s = getenv("FAKE_NCCL_PROFILER_VERSION");
	if (!s || strcmp(s, "4") != 0)
		v5 = dlsym(lib, "ncclProfiler_v5");
	if (!v5)
		v4 = dlsym(lib, "ncclProfiler_v4");
}

static void no_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		   const char *fmt, ...)
{
	(void)level; (void)flags; (void)file; (void)line; (void)fmt;
}

static uint64_t gpu_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return GPU_CLOCK_OFFSET_NS + (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void *fake_profiler_comm(uint64_t comm_hash, int nranks, int rank)
{
	struct fake_prof_comm *c;
	ncclResult_t r = ncclInternalError;

	pthread_once(&once, load);
	if (!v5 && !v4)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->rank = rank;
	if (v5)
		r = v5->init(&c->context, comm_hash, &c->mask, "fake", 1, nranks, rank, no_log);
	else
		r = v4->init(&c->context, &c->mask, "fake", comm_hash, 1, nranks, rank, no_log);
	if (r != ncclSuccess) {
		free(c);
		return NULL;
	}
	return c;
}

static int func_index(const char *func)
{
	int h = 0;

	while (*func)
		h = h * 31 + *func++;
	return (h & 0x7fffffff) % FUNCS;
}

static void start(struct fake_prof_comm *c, void **handle, const ncclProfilerEventDescr_v5_t *d)
{
	ncclProfilerEventDescr_v4_t d4;

	*handle = NULL;
	if (v5) {
		v5->startEvent(c->context, handle, (ncclProfilerEventDescr_v5_t *)d);
		return;
	}
	memset(&d4, 0, sizeof(d4));
	d4.type = (uint8_t)d->type;
	d4.parentObj = d->parentObj;
	d4.rank = d->rank;
	if (d->type == ncclProfileColl) {
		d4.coll.seqNumber = d->coll.seqNumber;
		d4.coll.func = d->coll.func;
		d4.coll.count = d->coll.count;
		d4.coll.datatype = d->coll.datatype;
		d4.coll.nChannels = d->coll.nChannels;
		d4.coll.algo = d->coll.algo;
		d4.coll.proto = d->coll.proto;
	} else {
		d4.kernelCh.channelId = d->kernelCh.channelId;
		d4.kernelCh.pTimer = d->kernelCh.pTimer;
	}
	v4->startEvent(c->context, handle, &d4);
}

static void stop(void *handle)
{
	if (!handle)
		return;
	if (v5)
		v5->stopEvent(handle);
	else
		v4->stopEvent(handle);
}

static void channel_end(void *handle, uint64_t at)
{
	ncclProfilerEventStateArgs_v5_t a5 = { 0 };
	ncclProfilerEventStateArgs_v4_t a4 = { 0 };

	if (!handle)
		return;
	a5.kernelCh.pTimer = at;
	a4.kernelCh.pTimer = at;
	if (v5)
		v5->recordEventState(handle, ncclProfilerKernelChStop, &a5);
	else
		v4->recordEventState(handle, ncclProfilerKernelChStop, &a4);
}

/* NCCL's proxy: the kernel's channels, as they end on the GPU. */
static void *proxy(void *arg)
{
	struct fake_kernel *k = arg;
	ncclProfilerEventDescr_v5_t d;
	uint64_t t0 = gpu_clock();
	void *ch;

	for (unsigned int i = 0; i < channels; i++) {
		memset(&d, 0, sizeof(d));
		d.type = ncclProfileKernelCh;
		d.parentObj = k->coll;
		d.rank = k->comm->rank;
		d.kernelCh.channelId = (uint8_t)i;
		d.kernelCh.pTimer = t0 + i * STAGGER_NS;
		start(k->comm, &ch, &d);
		channel_end(ch, t0 + gpu_ns - i * STAGGER_NS);
		stop(ch);
	}
	__atomic_sub_fetch(&k->comm->in_flight, 1, __ATOMIC_RELEASE);
	free(k);
	return NULL;
}

void fake_profiler_collective(void *comm, const char *func, size_t count)
{
	struct fake_prof_comm *c = comm;
	ncclProfilerEventDescr_v5_t d = { 0 };
	struct fake_kernel *k;
	void *coll = NULL;
	pthread_t t;

	if (!c || !(c->mask & ncclProfileColl))
		return;
	d.type = ncclProfileColl;
	d.rank = c->rank;
	d.coll.seqNumber = c->seq[func_index(func)]++;
	d.coll.func = func;
	d.coll.count = count;
	d.coll.datatype = "ncclFloat32";
	d.coll.nChannels = (uint8_t)channels;
	d.coll.nWarps = 16;
	d.coll.algo = "RING";
	d.coll.proto = "SIMPLE";
	start(c, &coll, &d);
	/* The launch returned: the host's event ends before the kernel runs. */
	stop(coll);
	if (!coll || !gpu_ns || !(c->mask & ncclProfileKernelCh) || !(k = malloc(sizeof(*k))))
		return;
	*k = (struct fake_kernel){ c, coll };
	__atomic_add_fetch(&c->in_flight, 1, __ATOMIC_ACQUIRE);
	if (pthread_create(&t, NULL, proxy, k) != 0) {
		__atomic_sub_fetch(&c->in_flight, 1, __ATOMIC_RELEASE);
		free(k);
		return;
	}
	pthread_detach(t);
}

void fake_profiler_comm_end(void *comm)
{
	struct fake_prof_comm *c = comm;

	if (!c)
		return;
	while (__atomic_load_n(&c->in_flight, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (v5)
		v5->finalize(c->context);
	else
		v4->finalize(c->context);
	free(c);
}
