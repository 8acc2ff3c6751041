// SPDX-License-Identifier: BSD-2-Clause
/*
 * A CUDA/NCCL workload driven by its arguments, for the probe tests: it
 * dlopens the libraries it is told to (fake or real), then runs the ops in
 * order, and prints what it did so tests know the ground truth.  Once done
 * it prints "DONE" and waits for its stdin to close, so the test can read
 * the collector's figures while the process still lives.  No privilege.
 *
 *   lib:PATH            dlopen PATH (RTLD_NOW | RTLD_GLOBAL)
 *   wait                print "WAIT", then block until a line on stdin
 *   dev:N               cudaSetDevice(N)
 *   ctxdev:N            cuDevicePrimaryCtxRetain(N) + cuCtxSetCurrent
 *   malloc:B  cumalloc:B  async:B   cudaMalloc / cuMemAlloc_v2 / cuMemAllocAsync
 *   vmm:DEV:B           cuMemCreate on device DEV
 *   free                frees the newest live allocation with its own free call
 *   memspin:B           print "SPINNING", then cudaMalloc and cudaFree B bytes
 *                       back to back until a line on stdin, and print
 *                       "SPUN <pairs>" (probes attached meanwhile)
 *   badfree             cuMemFree_v2 of a pointer the driver rejects
 *   launch:N:NS  rtlaunch:N:NS  exlaunch:N:NS  ptsz:N:NS  cooplaunch:N:NS
 *                       N launches of NS ns (cuLaunchKernel, cudaLaunchKernel,
 *                       cuLaunchKernelEx, cuLaunchKernel_ptsz,
 *                       cuLaunchCooperativeKernel)
 *   graph:N:NS  rtgraph:N:NS   cuGraphLaunch / cudaGraphLaunch
 *   nccl:OP:COUNT:DTYPE:N      N calls of OP (allreduce, allgather,
 *                       reducescatter, broadcast, bcast, reduce, send, recv,
 *                       alltoall, gather, scatter) on the current stream
 *   stream:S            NCCL calls from now on go to stream S (default 0)
 *   group  groupend     ncclGroupStart / ncclGroupEnd
 *   sync:NS             cudaStreamSynchronize on a stream that takes NS ns
 *   cusync:NS           cuStreamSynchronize, the same
 *   record:E            cudaEventRecord(E, current stream)
 *   waitev:S:E          cudaStreamWaitEvent(S, E, 0)
 *   evsync:E  evquery:E cudaEventSynchronize (sleeps E ns) / cudaEventQuery
 *   squery:S            cudaStreamQuery of stream S (the fake's work is done)
 *   devsync             cudaDeviceSynchronize (the fake driver spins
 *                       FAKE_SYNC_SPIN_NS in it)
 *   capture:S  endcapture:S  cudaStreamBeginCapture / cudaStreamEndCapture
 *   onthread:OP[+OP...] runs the OPs in turn on a new thread and joins it, then
 *                       "JOINED <ns>": the join's time less its run-queue wait
 *   commrank:NRANKS:RANK  commconfig:NRANKS:RANK  commall:N
 *                       (uniqueId: 128 bytes of 0x5a)
 *   commid:NRANKS:RANK:B  ncclCommInitRank with 128 bytes of B
 *   scalable:NRANKS:RANK  ncclCommInitRankScalable, commIds[0] 128 bytes of 0x5a
 *   split:COLOR:KEY  shrink   ncclCommSplit / ncclCommShrink of the current
 *                       communicator; the child becomes current
 *   splitnb:COLOR:KEY   ncclCommSplit with a non-blocking config; waits (5 s at
 *                       most) for NCCL to set the child, which becomes current
 *   splitnb2:C1:C2:KEY  two such splits of the current communicator back to back,
 *                       both in flight at once; once both are set, 2 all-reduces
 *                       (8 floats) on the first child and 3 on the second, which
 *                       becomes current
 *   finalize  destroy  abort  ncclCommFinalize / ncclCommDestroy / ncclCommAbort
 *                       of the current communicator; each communicator made
 *                       prints "COMM <handle>"
 *   sleep:MS            usleep, then "SLEPT <MS> <ns>": the time it slept, less
 *                       the run-queue wait the kernel counted in it
 *   fork:MS             fork: the child prints "CHILD <pid>" and goes on with the
 *                       ops that follow; the parent stays MS ms, then exits (no DONE)
 *   exit                exit at once (no DONE)
 *   exec ARGS...        replace itself with ARGS (a path, then its arguments),
 *                       keeping stdin and stdout
 *
 * Before DONE it prints, for what it timed itself around each call,
 * "Q <series> <count> <p50 ns> <p99 ns>" for the series launch, graph and
 * nccl_<op> and sync: an upper bound of what a probe inside the call can measure;
 * and since_sync (see SYNC_TIMED).
 */
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fakes/fake_cuda.h"
#include "tests/workloads/thread_schedstat.h"

#define MAX_LIVE 4096

enum alloc_kind { K_RT, K_DRV, K_ASYNC, K_VMM };

struct live {
	uint64_t addr;
	enum alloc_kind kind;
};

static struct live live[MAX_LIVE];
static int n_live;

static void *sym(const char *name)
{
	void *f = dlsym(RTLD_DEFAULT, name);

	if (!f) {
		fprintf(stderr, "zw_cuda: no symbol %s\n", name);
		exit(2);
	}
	return f;
}

/* Each call site looks its symbol up once. */
#define CALL(type, name, ...) ({				\
	static void *fn_;					\
	if (!fn_)						\
		fn_ = sym(name);				\
	((type)fn_)(__VA_ARGS__);				\
})

typedef int (*fn_i)(int);
typedef int (*fn_pp_sz)(void *, size_t);
typedef int (*fn_pp_sz_s)(void *, size_t, void *);
typedef int (*fn_u64)(uint64_t);
typedef int (*fn_u64_s)(uint64_t, void *);
typedef int (*fn_create)(uint64_t *, size_t, const struct fake_mem_prop *, unsigned long long);
typedef int (*fn_ctx_retain)(void **, int);
typedef int (*fn_p)(void *);
typedef int (*fn_launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			 unsigned, void *, void **, void **);
typedef int (*fn_cooplaunch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
			     unsigned, unsigned, void *, void **);
typedef int (*fn_rtlaunch)(const void *, struct fake_dim3, struct fake_dim3, void **, size_t,
			   void *);
typedef int (*fn_exlaunch)(const struct fake_launch_config *, void *, void **, void **);
typedef int (*fn_pp)(void *, void *);
typedef int (*fn_coll7)(const void *, void *, size_t, int, int, void *, void *);
typedef int (*fn_coll6)(const void *, void *, size_t, int, void *, void *);
typedef int (*fn_coll8)(const void *, void *, size_t, int, int, int, void *, void *);
typedef int (*fn_p2p)(void *, size_t, int, int, void *, void *);
typedef int (*fn_init_rank)(void **, int, struct fake_nccl_id, int);
typedef int (*fn_init_cfg)(void **, int, struct fake_nccl_id, int, void *);
typedef int (*fn_init_all)(void **, int, const int *);
typedef int (*fn_void)(void);
typedef int (*fn_scalable)(void **, int, int, int, struct fake_nccl_id *, void *);
typedef int (*fn_split)(void *, int, int, void **, void *);
typedef int (*fn_shrink)(void *, int *, int, void **, void *, int);
typedef int (*fn_wait_event)(void *, void *, unsigned int);
typedef int (*fn_capture)(void *, int);

static void *comm;	/* the last communicator made, for collectives */
static void *last_comm;	/* the one last printed */
static void *stream;	/* where NCCL calls go */

/* Durations the workload measured around its own calls. */
#define MAX_TIMED	100000

struct timed {
	char name[32];
	uint64_t *ns;
	size_t n;
};

static struct timed timed[16];
static size_t n_series;

static struct timed *series(const char *name)
{
	for (size_t i = 0; i < n_series; i++)
		if (!strcmp(timed[i].name, name))
			return &timed[i];
	if (n_series == sizeof(timed) / sizeof(timed[0]))
		exit(2);
	snprintf(timed[n_series].name, sizeof(timed[n_series].name), "%s", name);
	timed[n_series].ns = calloc(MAX_TIMED, sizeof(uint64_t));
	if (!timed[n_series].ns)
		exit(2);
	return &timed[n_series++];
}

static void note(const char *name, uint64_t t0)
{
	uint64_t d = fake_now_ns() - t0;
	struct timed *t = series(name);

	if (t->n < MAX_TIMED)
		t->ns[t->n++] = d;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank, as the collector's histogram defines quantiles. */
static uint64_t rank(const struct timed *t, double q)
{
	size_t r = (size_t)(q * (double)t->n + 0.999999);

	return t->ns[(r ? r : 1) - 1];
}

static void print_series(void)
{
	for (size_t i = 0; i < n_series; i++) {
		struct timed *t = &timed[i];

		qsort(t->ns, t->n, sizeof(uint64_t), cmp_u64);
		printf("Q %s %zu %llu %llu\n", t->name, t->n,
		       (unsigned long long)rank(t, 0.5), (unsigned long long)rank(t, 0.99));
	}
}

#define TIMED(name, expr) do { uint64_t t0_ = fake_now_ns(); r |= (expr); note(name, t0_); } while (0)

/*
 * A synchronisation's series, and "since_sync": from the end of the last
 * synchronisation (or the start) to the end of this one, the most any
 * collective it covers can have waited, descheduling included.
 */
static uint64_t last_sync_end;

#define SYNC_TIMED(expr) do {						\
	TIMED("sync", expr);						\
	note("since_sync", last_sync_end);				\
	last_sync_end = fake_now_ns();					\
} while (0)

static void remember(uint64_t addr, enum alloc_kind k)
{
	if (n_live < MAX_LIVE)
		live[n_live++] = (struct live){ addr, k };
}

static int do_free(void)
{
	struct live l;

	if (n_live == 0)
		return -1;
	l = live[--n_live];
	switch (l.kind) {
	case K_RT: return CALL(fn_p, "cudaFree", (void *)(uintptr_t)l.addr);
	case K_DRV: return CALL(fn_u64, "cuMemFree_v2", l.addr);
	case K_ASYNC: return CALL(fn_u64_s, "cuMemFreeAsync", l.addr, NULL);
	case K_VMM: return CALL(fn_u64, "cuMemRelease", l.addr);
	}
	return -1;
}

static int nccl(const char *op, size_t count, int dt)
{
	void *buf = NULL;

	if (!strcmp(op, "allreduce"))
		return CALL(fn_coll7, "ncclAllReduce", buf, buf, count, dt, 0, comm, stream);
	if (!strcmp(op, "allgather"))
		return CALL(fn_coll6, "ncclAllGather", buf, buf, count, dt, comm, stream);
	if (!strcmp(op, "reducescatter"))
		return CALL(fn_coll7, "ncclReduceScatter", buf, buf, count, dt, 0, comm, stream);
	if (!strcmp(op, "broadcast"))
		return CALL(fn_coll7, "ncclBroadcast", buf, buf, count, dt, 0, comm, stream);
	if (!strcmp(op, "bcast"))
		return CALL(fn_p2p, "ncclBcast", buf, count, dt, 0, comm, stream);
	if (!strcmp(op, "reduce"))
		return CALL(fn_coll8, "ncclReduce", buf, buf, count, dt, 0, 0, comm, stream);
	if (!strcmp(op, "send"))
		return CALL(fn_p2p, "ncclSend", buf, count, dt, 0, comm, stream);
	if (!strcmp(op, "recv"))
		return CALL(fn_p2p, "ncclRecv", buf, count, dt, 0, comm, stream);
	if (!strcmp(op, "alltoall"))
		return CALL(fn_coll6, "ncclAlltoAll", buf, buf, count, dt, comm, stream);
	if (!strcmp(op, "gather"))
		return CALL(fn_coll7, "ncclGather", buf, buf, count, dt, 0, comm, stream);
	if (!strcmp(op, "scatter"))
		return CALL(fn_coll7, "ncclScatter", buf, buf, count, dt, 0, comm, stream);
	fprintf(stderr, "zw_cuda: unknown nccl op %s\n", op);
	exit(2);
}

/*
 * Two non-blocking splits of comm in flight at once (splitnb2): once NCCL
 * has set both children, 2 all-reduces on the first and 3 on the second,
 * which becomes current.  0, or what failed.
 */
static int split_two(long long c1, long long c2, int key)
{
	struct fake_nccl_config cfg = { sizeof(cfg), 0xcafebeef, 22800, 0 };
	/*
	 * NCCL writes each child here when it is done; kept (leaked) as a
	 * framework keeps its communicators' handles while it uses them.
	 */
	void **kids = calloc(2, sizeof(*kids));
	int r1, r2, r = 0;

	if (!kids)
		return -1;
	r1 = CALL(fn_split, "ncclCommSplit", comm, (int)c1, key, &kids[0], &cfg);
	r2 = CALL(fn_split, "ncclCommSplit", comm, (int)c2, key, &kids[1], &cfg);
	if (r1 != 7 || r2 != 7)
		return r1 != 7 ? r1 : r2;
	for (int i = 0; i < 500 && !(__atomic_load_n(&kids[0], __ATOMIC_ACQUIRE) &&
				     __atomic_load_n(&kids[1], __ATOMIC_ACQUIRE)); i++)
		usleep(10000);
	if (!__atomic_load_n(&kids[0], __ATOMIC_ACQUIRE) ||
	    !__atomic_load_n(&kids[1], __ATOMIC_ACQUIRE))
		return -1;
	comm = kids[0];
	for (int i = 0; i < 2; i++)
		r = r ? r : nccl("allreduce", 8, 7);
	comm = kids[1];
	for (int i = 0; i < 3; i++)
		r = r ? r : nccl("allreduce", 8, 7);
	return r;
}

static void wait_line(void)
{
	char line[64];

	if (!fgets(line, sizeof(line), stdin))
		exit(0);
}

static void run(const char *op);

/*
 * A wait timed by the workload: its wall time less the run-queue wait the
 * kernel counted inside it.  Both are read inside the wait's time at both
 * ends, so a preemption while reading adds to the wall time, never to the
 * subtracted wait: the truth is never short.
 */
struct timed_wait {
	uint64_t t0;
	unsigned long long run_delay0;
};

static struct timed_wait timed_wait_begin(void)
{
	struct timed_wait t;
	unsigned long long slices;

	t.t0 = fake_now_ns();
	thread_schedstat(&t.run_delay0, &slices);
	return t;
}

static uint64_t timed_wait_end(const struct timed_wait *t)
{
	unsigned long long run_delay, slices;

	thread_schedstat(&run_delay, &slices);
	return fake_now_ns() - t->t0 - (run_delay - t->run_delay0);
}

static void *run_thread(void *ops)
{
	char buf[1024], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", (const char *)ops);
	for (char *op = strtok_r(buf, "+", &save); op; op = strtok_r(NULL, "+", &save))
		run(op);
	return NULL;
}

static void run(const char *op)
{
	unsigned long long a = 0, b = 0, c = 0;
	char name[32];
	int r = 0;

	if (!strncmp(op, "lib:", 4)) {
		if (!dlopen(op + 4, RTLD_NOW | RTLD_GLOBAL)) {
			fprintf(stderr, "zw_cuda: %s\n", dlerror());
			exit(2);
		}
	} else if (!strcmp(op, "wait")) {
		printf("WAIT\n");
		fflush(stdout);
		wait_line();
	} else if (sscanf(op, "dev:%llu", &a) == 1) {
		r = CALL(fn_i, "cudaSetDevice", (int)a);
	} else if (sscanf(op, "ctxdev:%llu", &a) == 1) {
		void *ctx = NULL;

		r = CALL(fn_ctx_retain, "cuDevicePrimaryCtxRetain", &ctx, (int)a);
		if (r == 0)
			r = CALL(fn_p, "cuCtxSetCurrent", ctx);
	} else if (sscanf(op, "malloc:%llu", &a) == 1) {
		void *p = NULL;

		r = CALL(fn_pp_sz, "cudaMalloc", &p, a);
		if (r == 0)
			remember((uintptr_t)p, K_RT);
	} else if (sscanf(op, "cumalloc:%llu", &a) == 1) {
		uint64_t p = 0;

		r = CALL(fn_pp_sz, "cuMemAlloc_v2", &p, a);
		if (r == 0)
			remember(p, K_DRV);
	} else if (sscanf(op, "async:%llu", &a) == 1) {
		uint64_t p = 0;

		r = CALL(fn_pp_sz_s, "cuMemAllocAsync", &p, a, NULL);
		if (r == 0)
			remember(p, K_ASYNC);
	} else if (sscanf(op, "vmm:%llu:%llu", &a, &b) == 2) {
		struct fake_mem_prop prop = { .type = 1, .location = { 1, (int)a } };
		uint64_t h = 0;

		r = CALL(fn_create, "cuMemCreate", &h, b, &prop, 0);
		if (r == 0)
			remember(h, K_VMM);
	} else if (!strcmp(op, "free")) {
		r = do_free();
	} else if (sscanf(op, "memspin:%llu", &a) == 1) {
		struct pollfd in = { .fd = STDIN_FILENO, .events = POLLIN };
		unsigned long long pairs = 0;

		printf("SPINNING\n");
		fflush(stdout);
		while (r == 0 && poll(&in, 1, 0) == 0) {
			void *p = NULL;

			r = CALL(fn_pp_sz, "cudaMalloc", &p, a);
			if (r == 0)
				r = CALL(fn_p, "cudaFree", p);
			pairs += r == 0;
		}
		wait_line();
		printf("SPUN %llu\n", pairs);
	} else if (!strcmp(op, "badfree")) {
		r = CALL(fn_u64, "cuMemFree_v2", FAKE_BAD_PTR);
	} else if (sscanf(op, "launch:%llu:%llu", &a, &b) == 2) {
		for (unsigned long long i = 0; i < a; i++)
			TIMED("launch", CALL(fn_launch, "cuLaunchKernel", NULL, 1, 1, 1, 1, 1, 1,
					     (unsigned)b, NULL, NULL, NULL));
	} else if (sscanf(op, "ptsz:%llu:%llu", &a, &b) == 2) {
		for (unsigned long long i = 0; i < a; i++)
			TIMED("launch", CALL(fn_launch, "cuLaunchKernel_ptsz", NULL, 1, 1, 1, 1,
					     1, 1, (unsigned)b, NULL, NULL, NULL));
	} else if (sscanf(op, "cooplaunch:%llu:%llu", &a, &b) == 2) {
		for (unsigned long long i = 0; i < a; i++)
			TIMED("launch", CALL(fn_cooplaunch, "cuLaunchCooperativeKernel", NULL, 1,
					     1, 1, 1, 1, 1, (unsigned)b, NULL, NULL));
	} else if (sscanf(op, "rtlaunch:%llu:%llu", &a, &b) == 2) {
		struct fake_dim3 one = { 1, 1, 1 };

		for (unsigned long long i = 0; i < a; i++)
			TIMED("launch", CALL(fn_rtlaunch, "cudaLaunchKernel", (void *)1, one, one,
					     NULL, (size_t)b, NULL));
	} else if (sscanf(op, "exlaunch:%llu:%llu", &a, &b) == 2) {
		struct fake_launch_config cfg = { .shared_mem_bytes = (unsigned)b };

		for (unsigned long long i = 0; i < a; i++)
			TIMED("launch", CALL(fn_exlaunch, "cuLaunchKernelEx", &cfg, NULL, NULL,
					     NULL));
	} else if (sscanf(op, "graph:%llu:%llu", &a, &b) == 2) {
		for (unsigned long long i = 0; i < a; i++)
			TIMED("graph", CALL(fn_pp, "cuGraphLaunch", (void *)(uintptr_t)b, NULL));
	} else if (sscanf(op, "rtgraph:%llu:%llu", &a, &b) == 2) {
		for (unsigned long long i = 0; i < a; i++)
			TIMED("graph", CALL(fn_pp, "cudaGraphLaunch", (void *)(uintptr_t)b, NULL));
	} else if (sscanf(op, "nccl:%31[a-z]:%llu:%llu:%llu", name, &a, &b, &c) == 4) {
		char sname[48];

		snprintf(sname, sizeof(sname), "nccl_%s", name);
		for (unsigned long long i = 0; i < c; i++)
			TIMED(sname, nccl(name, a, (int)b));
	} else if (sscanf(op, "sync:%llu", &a) == 1) {
		SYNC_TIMED(CALL(fn_p, "cudaStreamSynchronize", (void *)(uintptr_t)a));
	} else if (sscanf(op, "cusync:%llu", &a) == 1) {
		SYNC_TIMED(CALL(fn_p, "cuStreamSynchronize", (void *)(uintptr_t)a));
	} else if (sscanf(op, "commrank:%llu:%llu", &a, &b) == 2) {
		struct fake_nccl_id id;

		memset(&id, 0x5a, sizeof(id));
		r = CALL(fn_init_rank, "ncclCommInitRank", &comm, (int)a, id, (int)b);
	} else if (sscanf(op, "commconfig:%llu:%llu", &a, &b) == 2) {
		struct fake_nccl_id id;

		memset(&id, 0x5a, sizeof(id));
		r = CALL(fn_init_cfg, "ncclCommInitRankConfig", &comm, (int)a, id, (int)b, NULL);
	} else if (sscanf(op, "commall:%llu", &a) == 1) {
		void *comms[16];

		if (a > 16)
			a = 16;
		r = CALL(fn_init_all, "ncclCommInitAll", comms, (int)a, NULL);
		if (r == 0)
			comm = comms[0];
	} else if (sscanf(op, "commid:%llu:%llu:%llu", &a, &b, &c) == 3) {
		struct fake_nccl_id id;

		memset(&id, (int)c, sizeof(id));
		r = CALL(fn_init_rank, "ncclCommInitRank", &comm, (int)a, id, (int)b);
	} else if (sscanf(op, "scalable:%llu:%llu", &a, &b) == 2) {
		struct fake_nccl_id ids[2];

		memset(ids, 0x5a, sizeof(ids));
		r = CALL(fn_scalable, "ncclCommInitRankScalable", &comm, (int)a, (int)b, 2, ids,
			 NULL);
	} else if (sscanf(op, "split:%lld:%llu", (long long *)&a, &b) == 2) {
		void *child = NULL;

		r = CALL(fn_split, "ncclCommSplit", comm, (int)(long long)a, (int)b, &child, NULL);
		if (r == 0 && child)
			comm = child;
	} else if (sscanf(op, "splitnb2:%lld:%lld:%llu", (long long *)&a, (long long *)&c,
			  &b) == 3) {
		r = split_two(a, c, (int)b);
	} else if (sscanf(op, "splitnb:%lld:%llu", (long long *)&a, &b) == 2) {
		struct fake_nccl_config cfg = { sizeof(cfg), 0xcafebeef, 22800, 0 };
		/* NCCL writes the child here whenever it is done: kept (leaked) if that is late. */
		void **child = calloc(1, sizeof(*child));
		void *made = NULL;

		r = child ? CALL(fn_split, "ncclCommSplit", comm, (int)(long long)a, (int)b, child,
				 &cfg) : -1;
		for (int i = 0; i < 500 && r == 7 && !__atomic_load_n(child, __ATOMIC_ACQUIRE); i++)
			usleep(10000);
		made = child ? __atomic_load_n(child, __ATOMIC_ACQUIRE) : NULL;
		if (made)
			comm = made;
		if (made || r != 7)
			free(child);
	} else if (!strcmp(op, "shrink")) {
		void *child = NULL;
		int exclude = 0;

		r = CALL(fn_shrink, "ncclCommShrink", comm, &exclude, 1, &child, NULL, 0);
		if (r == 0 && child)
			comm = child;
	} else if (!strcmp(op, "finalize")) {
		r = CALL(fn_p, "ncclCommFinalize", comm);
	} else if (!strcmp(op, "destroy")) {
		r = CALL(fn_p, "ncclCommDestroy", comm);
		comm = NULL;
	} else if (!strcmp(op, "abort")) {
		r = CALL(fn_p, "ncclCommAbort", comm);
		comm = NULL;
	} else if (sscanf(op, "stream:%llu", &a) == 1) {
		stream = (void *)(uintptr_t)a;
		last_sync_end = fake_now_ns();	/* set-up before is no collective's wait */
	} else if (!strcmp(op, "group")) {
		r = CALL(fn_void, "ncclGroupStart");
	} else if (!strcmp(op, "groupend")) {
		r = CALL(fn_void, "ncclGroupEnd");
	} else if (sscanf(op, "record:%llu", &a) == 1) {
		r = CALL(fn_pp, "cudaEventRecord", (void *)(uintptr_t)a, stream);
	} else if (sscanf(op, "waitev:%llu:%llu", &a, &b) == 2) {
		r = CALL(fn_wait_event, "cudaStreamWaitEvent", (void *)(uintptr_t)a,
			 (void *)(uintptr_t)b, 0);
	} else if (sscanf(op, "evsync:%llu", &a) == 1) {
		SYNC_TIMED(CALL(fn_p, "cudaEventSynchronize", (void *)(uintptr_t)a));
	} else if (sscanf(op, "evquery:%llu", &a) == 1) {
		r = CALL(fn_p, "cudaEventQuery", (void *)(uintptr_t)a);
	} else if (sscanf(op, "squery:%llu", &a) == 1) {
		r = CALL(fn_p, "cudaStreamQuery", (void *)(uintptr_t)a);
	} else if (!strcmp(op, "devsync")) {
		SYNC_TIMED(CALL(fn_void, "cudaDeviceSynchronize"));
	} else if (sscanf(op, "capture:%llu", &a) == 1) {
		r = CALL(fn_capture, "cudaStreamBeginCapture", (void *)(uintptr_t)a, 0);
	} else if (sscanf(op, "endcapture:%llu", &a) == 1) {
		void *graph = NULL;

		r = CALL(fn_pp, "cudaStreamEndCapture", (void *)(uintptr_t)a, &graph);
	} else if (!strncmp(op, "onthread:", 9)) {
		struct timed_wait tw;
		pthread_t t;

		if (pthread_create(&t, NULL, run_thread, (void *)(op + 9)) != 0)
			exit(2);
		tw = timed_wait_begin();
		if (pthread_join(t, NULL) != 0)
			exit(2);
		printf("JOINED %llu\n", (unsigned long long)timed_wait_end(&tw));
	} else if (sscanf(op, "sleep:%llu", &a) == 1) {
		struct timed_wait tw = timed_wait_begin();

		usleep((useconds_t)(a * 1000));
		printf("SLEPT %llu %llu\n", a, (unsigned long long)timed_wait_end(&tw));
	} else if (sscanf(op, "fork:%llu", &a) == 1) {
		pid_t child = fork();

		if (child < 0)
			exit(2);
		if (child > 0) {
			usleep((useconds_t)(a * 1000));
			_exit(0);
		}
		printf("CHILD %d\n", (int)getpid());
	} else if (!strcmp(op, "exit")) {
		exit(0);
	} else {
		fprintf(stderr, "zw_cuda: unknown op %s\n", op);
		exit(2);
	}
	if (comm && comm != last_comm)
		printf("COMM %p\n", comm);
	last_comm = comm;
	printf("%s = %d\n", op, r);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	last_sync_end = fake_now_ns();
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "exec") && i + 1 < argc) {
			printf("EXEC\n");
			fflush(stdout);
			execv(argv[i + 1], &argv[i + 1]);
			perror("zw_cuda: exec");
			return 1;
		}
		run(argv[i]);
	}
	print_series();
	printf("DONE\n");
	fflush(stdout);
	/* Stay alive, so the figures can be read, until stdin closes. */
	while (getchar() != EOF)
		;
	return 0;
}
