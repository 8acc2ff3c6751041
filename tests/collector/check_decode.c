/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The decoder against ground truth: each test feeds probe records (the
 * ones bpf/probe_abi.h defines, as the BPF programs and the simulator make
 * them), publishes into a real segment and reads it back through
 * shm_reader.  Also: records of the wrong size or an unknown type are
 * refused, and the source's hooks run when they should.  Unprivileged.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "bpf/probe_abi.h"
#include "collector/agg/agg.h"
#include "collector/agg/nccl_hash.h"
#include "collector/probes/decode.h"
#include "common/util.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

static struct {
	char name[64];
	struct shm_writer w;
	struct agg *a;
	struct decode d;
	struct shm_reader r;
	struct shm_snapshot snap;
	/* What the hooks saw. */
	uint32_t exited, libc, reset;
	int watched_at_exit;
} fx;

static void hook_exit(void *ctx, uint32_t pid, uint64_t start_ns)
{
	(void)ctx;
	(void)start_ns;
	fx.exited = pid;
	/* The source flushes first: the aggregation still knows the process. */
	fx.watched_at_exit = agg_proc_is_watched(fx.a, pid);
}

static void hook_reset(void *ctx, uint32_t pid)
{
	(void)ctx;
	fx.reset = pid;
}

static void hook_libc(void *ctx, uint32_t pid)
{
	(void)ctx;
	fx.libc = pid;
}

static void setup(void)
{
	struct decode_ops ops = { .proc_exit = hook_exit, .libc_probe = hook_libc,
				  .proc_reset = hook_reset };
	struct shm_writer_opts wo;
	struct agg_opts ao;

	memset(&fx, 0, sizeof(fx));
	memset(&ao, 0, sizeof(ao));
	shm_capacity_default(&ao.cap);
	ao.window_ns = 60 * NSEC_PER_SEC;
	fx.a = agg_new(&ao);
	ck_assert_ptr_nonnull(fx.a);
	ck_assert_int_eq(decode_init(&fx.d, fx.a, &ops), 0);
	tu_unique_shm_name(fx.name, sizeof(fx.name));
	tu_shm_opts(&wo, fx.name, ao.cap);
	ck_assert_int_eq(shm_writer_create(&fx.w, &wo), 0);
	shm_reader_init(&fx.r, fx.name);
}

static void teardown(void)
{
	shm_snapshot_free(&fx.snap);
	shm_reader_close(&fx.r);
	shm_writer_close(&fx.w, 1);
	decode_destroy(&fx.d);
	agg_free(fx.a);
}

static const struct shm_header_fields *publish_and_read(void)
{
	enum shm_read_status st;
	char why[256] = "";

	agg_publish(fx.a, &fx.w, now_mono_ns(), now_real_ns(), NULL);
	st = shm_reader_snapshot(&fx.r, &fx.snap, why, sizeof(why));
	ck_assert_msg(st == SHM_READ_OK, "snapshot: %s: %s", shm_read_status_name(st), why);
	return fx.snap.hdr;
}

static const struct shm_proc *find_proc(uint32_t pid)
{
	uint32_t n;
	const struct shm_proc *p = shm_snapshot_procs(&fx.snap, &n);

	for (uint32_t i = 0; i < n; i++)
		if (p[i].pid == pid)
			return &p[i];
	return NULL;
}

static const struct shm_gpu_mem *find_mem(uint32_t pid, uint32_t gpu)
{
	uint32_t n;
	const struct shm_gpu_mem *m = shm_snapshot_gpu_mem(&fx.snap, &n);

	for (uint32_t i = 0; i < n; i++)
		if (m[i].pid == pid && m[i].gpu_id == gpu)
			return &m[i];
	return NULL;
}

static struct zev_hdr hdr(uint32_t type, uint32_t pid)
{
	return (struct zev_hdr){ .type = type, .pid = pid, .tid = pid, .ts_ns = now_mono_ns() };
}

#define FEED(rec) decode_event(&fx.d, &(rec), sizeof(rec))

static void watch(uint32_t pid, uint32_t ppid, uint32_t reasons, const char *comm)
{
	struct zev_watch w = { .hdr = hdr(ZEV_WATCH, pid), .reasons = reasons, .ppid = ppid,
			       .start_ns = 42 * ZW_START_TICK_NS };

	memcpy(w.comm, comm, strnlen(comm, sizeof(w.comm)));
	ck_assert_int_eq(FEED(w), 0);
}

static void alloc(uint32_t pid, uint32_t gpu, uint32_t space, uint64_t addr, uint64_t bytes)
{
	struct zev_mem_alloc a = { .hdr = hdr(ZEV_MEM_ALLOC, pid), .gpu = gpu, .space = space,
				   .addr = addr, .bytes = bytes };

	ck_assert_int_eq(FEED(a), 0);
}

static void release(uint32_t pid, uint32_t space, uint64_t addr)
{
	struct zev_mem_free f = { .hdr = hdr(ZEV_MEM_FREE, pid), .space = space, .addr = addr };

	ck_assert_int_eq(FEED(f), 0);
}

START_TEST(a_watch_record_registers_the_process)
{
	const struct shm_proc *p;

	/* A full 16-byte name, not NUL-terminated in the record. */
	watch(500, 499, SHM_WATCH_CUDA | 0x80000000u, "sixteen_chars_xx");
	publish_and_read();
	p = find_proc(500);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->ppid, 499);
	ck_assert_uint_eq(p->watch_reason, SHM_WATCH_CUDA);
	ck_assert_uint_eq(p->start_time_ns, 42 * ZW_START_TICK_NS);
	ck_assert_int_eq(memcmp(p->comm, "sixteen_chars_x", 15), 0);
	ck_assert_uint_eq(fx.snap.hdr->stats.events_total, 1);
}
END_TEST

START_TEST(frees_subtract_what_was_allocated_at_that_address)
{
	const struct shm_gpu_mem *m;

	watch(10, 1, SHM_WATCH_CUDA, "t");
	alloc(10, 0, ZMEM_SPACE_PTR, 0x7000, 4096);
	alloc(10, 1, ZMEM_SPACE_VMM, 0x7000, 100);	/* same address, a handle */
	alloc(10, 0, ZMEM_SPACE_PTR, 0x9000, 50);
	release(10, ZMEM_SPACE_PTR, 0x7000);
	release(10, ZMEM_SPACE_PTR, 0x7000);		/* twice: the second is unknown */
	release(10, ZMEM_SPACE_PTR, 0xdead);		/* never seen allocated */
	/* Reallocated without its free seen: the old size goes first. */
	alloc(10, 0, ZMEM_SPACE_PTR, 0x9000, 70);
	publish_and_read();
	m = find_mem(10, 0);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->used_bytes, 70);
	ck_assert_uint_eq(m->peak_bytes, 4096 + 50);
	ck_assert_uint_eq(m->alloc_calls, 3);
	ck_assert_uint_eq(m->free_calls, 2);
	m = find_mem(10, 1);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->used_bytes, 100);
}
END_TEST

/*
 * A stream-ordered allocation's free goes back to its pool, which the
 * process still holds from the driver, until a synchronisation gives back
 * what is above the pool's threshold, or a trim what is above the bytes
 * kept; a query is no synchronisation.
 */
START_TEST(a_pool_keeps_what_is_freed_into_it_until_a_sync_or_trim)
{
	struct zev_mem_alloc a = { .hdr = hdr(ZEV_MEM_ALLOC, 12), .gpu = 0,
				   .space = ZMEM_SPACE_PTR, .addr = 0x5000, .bytes = 3000,
				   .pooled = 1 };
	struct zev_cuda_sync sync = { .hdr = hdr(ZEV_CUDA_SYNC, 12), .kind = ZN_SYNC_STREAM };
	struct zev_cuda_sync query = { .hdr = hdr(ZEV_CUDA_SYNC, 12),
				       .kind = ZN_SYNC_EVENT_QUERY };
	struct zev_mem_pool named = { .hdr = hdr(ZEV_MEM_POOL, 12), .op = ZMEM_POOL_DEFAULT,
				      .pool = 0xb0b };
	struct zev_mem_pool keep_all = { .hdr = hdr(ZEV_MEM_POOL, 12),
					 .op = ZMEM_POOL_THRESHOLD, .pool = 0xb0b,
					 .bytes = UINT64_MAX };
	struct zev_mem_pool trim = { .hdr = hdr(ZEV_MEM_POOL, 12), .op = ZMEM_POOL_TRIM,
				     .pool = 0xb0b, .bytes = 1000 };
	const struct shm_gpu_mem *m;

	watch(12, 1, SHM_WATCH_CUDA, "t");
	ck_assert_int_eq(FEED(a), 0);
	a.addr = 0x9000;
	a.bytes = 2000;
	ck_assert_int_eq(FEED(a), 0);
	alloc(12, 0, ZMEM_SPACE_PTR, 0xc000, 100);	/* not pooled */
	release(12, ZMEM_SPACE_PTR, 0x5000);
	release(12, ZMEM_SPACE_PTR, 0xc000);
	ck_assert_int_eq(FEED(query), 0);
	publish_and_read();
	m = find_mem(12, 0);
	ck_assert_uint_eq(m->used_bytes, 5000);
	ck_assert_uint_eq(m->free_calls, 2);
	ck_assert_int_eq(FEED(sync), 0);
	publish_and_read();
	ck_assert_uint_eq(find_mem(12, 0)->used_bytes, 2000);
	/* Named and told to keep everything: a sync gives nothing back. */
	ck_assert_int_eq(FEED(named), 0);
	ck_assert_int_eq(FEED(keep_all), 0);
	a.addr = 0x5000;
	a.bytes = 4000;
	a.pool = 0xb0b;
	ck_assert_int_eq(FEED(a), 0);
	release(12, ZMEM_SPACE_PTR, 0x5000);
	ck_assert_int_eq(FEED(sync), 0);
	publish_and_read();
	m = find_mem(12, 0);
	ck_assert_uint_eq(m->used_bytes, 6000);
	ck_assert_uint_eq(m->peak_bytes, 6000);
	ck_assert_int_eq(FEED(trim), 0);
	publish_and_read();
	m = find_mem(12, 0);
	ck_assert_uint_eq(m->used_bytes, 2000);	/* in use: more than the 1000 kept */
	ck_assert_uint_eq(m->alloc_calls, 4);
	ck_assert_uint_eq(m->free_calls, 3);
	/* An address handed out again, its free unseen: back to the pool first, then reused. */
	a.addr = 0x7000;
	a.bytes = 500;
	ck_assert_int_eq(FEED(a), 0);
	ck_assert_int_eq(FEED(a), 0);
	publish_and_read();
	ck_assert_uint_eq(find_mem(12, 0)->used_bytes, 2500);
}
END_TEST

/*
 * A GPU span (Zernel's NCCL profiler plugin) of a communicator the process
 * holds no row of is counted on an unknown communicator; one of an unknown
 * operation, a negative rank or a day of GPU time is refused.
 */
START_TEST(gpu_spans_of_unknown_communicators_are_counted_bad_ones_refused)
{
	struct zev_nccl_gpu ok = { .hdr = hdr(ZEV_NCCL_GPU, 14),
				   .span = { .comm_hash = 0xabc, .gpu_ns = 5000, .rank = 1,
					     .nranks = 2, .op = SHM_NCCL_ALL_REDUCE } };
	struct zev_nccl_gpu bad = ok;
	const struct shm_header_fields *h;

	watch(14, 1, SHM_WATCH_NCCL, "t");
	ck_assert_int_eq(FEED(ok), 0);
	bad.span.op = SHM_NCCL_OP_COUNT + 1;
	ck_assert_int_eq(FEED(bad), -EINVAL);
	bad = ok;
	bad.span.rank = -1;
	ck_assert_int_eq(FEED(bad), -EINVAL);
	bad = ok;
	bad.span.gpu_ns = 25ull * 3600 * 1000000000ull;
	ck_assert_int_eq(FEED(bad), -EINVAL);
	h = publish_and_read();
	ck_assert_uint_eq(h->stats.nccl_unknown_comm, 1);
}
END_TEST

START_TEST(failures_latencies_nccl_and_scheduler_reach_their_rows)
{
	struct zev_mem_fail fail = { .hdr = hdr(ZEV_MEM_FAIL, 20), .gpu = 2, .ret = 2, .bytes = 1 };
	struct zev_latency lat = { .hdr = hdr(ZEV_LATENCY, 20), .family = SHM_FAMILY_FUTEX_WAIT,
				   .ns = 7000 };
	struct zev_nccl_call call = { .hdr = hdr(ZEV_NCCL_CALL, 20), .op = SHM_NCCL_ALL_GATHER,
				      .bytes = 1024, .ns = 30000 };
	struct zev_nccl_call bad_call = { .hdr = hdr(ZEV_NCCL_CALL, 20), .op = SHM_NCCL_ALL_GATHER,
					  .ret = 3, .bytes = 1024, .ns = 10 };
	struct zev_nccl_wait wait = { .hdr = hdr(ZEV_NCCL_WAIT, 20), .op = SHM_NCCL_ALL_GATHER,
				      .ns = 2000000 };
	struct zev_nccl_comm comm = { .hdr = hdr(ZEV_NCCL_COMM, 20), .gpu = ZEV_GPU_UNKNOWN,
				      .rank = 3, .nranks = 8, .comm = 0xabc, .id_ok = 1 };
	struct zev_sched_switch sw = { .hdr = hdr(ZEV_SCHED_SWITCH, 20),
				       .flags = ZS_SW_OFFCPU | ZS_SW_INVOLUNTARY | ZS_SW_RUNQ,
				       .offcpu_ns = 900, .runq_ns = 400 };
	struct zev_sched_switch sw2 = { .hdr = hdr(ZEV_SCHED_SWITCH, 20), .flags = ZS_SW_OFFCPU,
					.offcpu_ns = 5000, .runq_ns = 99 };
	struct zev_sched_migrate mig = { .hdr = hdr(ZEV_SCHED_MIGRATE, 20), .cpu = 1 };
	const struct shm_header_fields *h;
	const struct shm_nccl_op *ops;
	const struct shm_nccl_comm *c;
	const struct shm_proc *p;
	uint32_t n;

	memset(comm.id, 0x5a, sizeof(comm.id));
	watch(20, 1, SHM_WATCH_NCCL, "rank");
	ck_assert_int_eq(FEED(fail), 0);
	ck_assert_int_eq(FEED(lat), 0);
	ck_assert_int_eq(FEED(call), 0);
	ck_assert_int_eq(FEED(bad_call), 0);
	ck_assert_int_eq(FEED(wait), 0);
	ck_assert_int_eq(FEED(comm), 0);
	ck_assert_int_eq(FEED(sw), 0);
	ck_assert_int_eq(FEED(sw2), 0);
	ck_assert_int_eq(FEED(mig), 0);
	h = publish_and_read();

	ck_assert_uint_eq(find_mem(20, 2)->failed_calls, 1);
	ck_assert_uint_eq(find_mem(20, 2)->used_bytes, 0);
	p = find_proc(20);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_FUTEX_WAIT].count, 1);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_FUTEX_WAIT].sum_ns, 7000);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_RUNQ_DELAY].count, 1);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_RUNQ_DELAY].sum_ns, 400);
	ck_assert_uint_eq(p->offcpu_preempted_ns, 900);
	ck_assert_uint_eq(p->involuntary_switches, 1);
	ck_assert_uint_eq(p->offcpu_blocked_ns, 5000);
	ck_assert_uint_eq(p->voluntary_switches, 1);
	ck_assert_uint_eq(p->migrations, 1);
	ops = shm_snapshot_nccl_ops(&fx.snap, &n);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_GATHER].calls, 2);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_GATHER].errors, 1);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_GATHER].bytes, 1024);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_GATHER].duration.count, 2);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_GATHER].wait.sum_ns, 2000000);
	c = shm_snapshot_nccl_comms(&fx.snap, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(c[0].gpu_id, UINT32_MAX);
	ck_assert_int_eq(c[0].rank, 3);
	ck_assert_int_eq(c[0].nranks, 8);
	ck_assert_uint_eq(c[0].comm_id, nccl_hash_unique_id(comm.id));
	ck_assert_uint_eq(c[0].origin, SHM_NCCL_ORIGIN_INIT_RANK);
	ck_assert_uint_eq(c[0].flags, 0);
	/* The call came before its communicator was known: followed, not attributed. */
	ck_assert_uint_eq(h->stats.nccl_unknown_comm, 1);
	ck_assert_uint_eq(h->stats.events_total, 10);
}
END_TEST

START_TEST(an_exit_asks_the_source_first_then_evicts)
{
	struct zev_exit ex = { .hdr = hdr(ZEV_EXIT, 30) };
	struct zev_libc_probe lp = { .hdr = hdr(ZEV_LIBC_PROBE, 31) };

	watch(30, 1, SHM_WATCH_CUDA, "gone");
	alloc(30, 0, ZMEM_SPACE_PTR, 0x1000, 64);
	ck_assert_int_eq(FEED(ex), 0);
	ck_assert_uint_eq(fx.exited, 30);
	ck_assert_int_eq(fx.watched_at_exit, 1);
	ck_assert_int_eq(agg_proc_is_watched(fx.a, 30), 0);
	/* Its allocation went with it: the same address is new again. */
	watch(30, 1, SHM_WATCH_CUDA, "again");
	alloc(30, 0, ZMEM_SPACE_PTR, 0x1000, 8);
	publish_and_read();
	ck_assert_uint_eq(find_mem(30, 0)->used_bytes, 8);
	ck_assert_uint_eq(find_mem(30, 0)->alloc_calls, 1);
	ck_assert_int_eq(FEED(lp), 0);
	ck_assert_uint_eq(fx.libc, 31);
}
END_TEST

static void watch_at(uint32_t pid, uint64_t start_ns, uint32_t flags)
{
	struct zev_watch w = { .hdr = hdr(ZEV_WATCH, pid), .reasons = SHM_WATCH_CUDA | flags,
			       .ppid = 1, .start_ns = start_ns };

	memcpy(w.comm, "proc", 4);
	ck_assert_int_eq(FEED(w), 0);
}

/* A reused pid (its exit missed) and an exec: the old allocations are nobody's now. */
START_TEST(a_new_process_under_a_known_pid_inherits_nothing)
{
	const struct shm_gpu_mem *m;

	watch_at(900, 10 * ZW_START_TICK_NS, 0);
	alloc(900, 0, ZMEM_SPACE_PTR, 0x1000, 4096);
	/* Same pid, another start time: a new process. */
	watch_at(900, 20 * ZW_START_TICK_NS, 0);
	ck_assert_uint_eq(fx.reset, 900);
	release(900, ZMEM_SPACE_PTR, 0x1000);	/* the old process's pointer */
	alloc(900, 0, ZMEM_SPACE_PTR, 0x2000, 100);
	publish_and_read();
	m = find_mem(900, 0);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->used_bytes, 100);
	ck_assert_uint_eq(m->free_calls, 0);
	ck_assert_uint_eq(m->alloc_calls, 1);
	ck_assert_uint_eq(find_proc(900)->start_time_ns, 20 * ZW_START_TICK_NS);

	/* The same start time again is the same process: nothing resets. */
	fx.reset = 0;
	watch_at(900, 20 * ZW_START_TICK_NS, 0);
	ck_assert_uint_eq(fx.reset, 0);
	/* Exec: a fresh row, still watched. */
	watch_at(900, 20 * ZW_START_TICK_NS, ZEV_WATCH_F_EXEC);
	ck_assert_uint_eq(fx.reset, 900);
	release(900, ZMEM_SPACE_PTR, 0x2000);
	publish_and_read();
	ck_assert_ptr_null(find_mem(900, 0));
	ck_assert_ptr_nonnull(find_proc(900));
	ck_assert_uint_eq(find_proc(900)->watch_reason, SHM_WATCH_CUDA);
}
END_TEST

/*
 * A pid reused, and its new process found in /proc before the old one's
 * exit record was read: that record is not the new process's exit.
 */
START_TEST(an_exit_of_an_earlier_process_under_the_pid_evicts_nothing)
{
	struct zev_exit ex = { .hdr = hdr(ZEV_EXIT, 910), .start_ns = 10 * ZW_START_TICK_NS + 123 };

	watch_at(910, 20 * ZW_START_TICK_NS, 0);
	ck_assert_int_eq(FEED(ex), 0);
	ck_assert_uint_eq(fx.exited, 0);
	ck_assert_int_eq(agg_proc_is_watched(fx.a, 910), 1);
	/* Its own exit, with the kernel's start to the nanosecond. */
	ex.start_ns = 20 * ZW_START_TICK_NS + 4567;
	ck_assert_int_eq(FEED(ex), 0);
	ck_assert_uint_eq(fx.exited, 910);
	ck_assert_int_eq(agg_proc_is_watched(fx.a, 910), 0);
}
END_TEST

/*
 * A training thread's stint on the CPU splits three ways: its own code,
 * spinning inside a CUDA call (gpu), inside an NCCL call (collective); a
 * helper thread's stint counts for nothing.  Its last stint comes with its
 * exit.
 */
START_TEST(time_on_the_cpu_inside_cuda_and_nccl_calls_is_their_state)
{
	struct zev_sched_switch train = { .hdr = hdr(ZEV_SCHED_SWITCH, 30),
					  .flags = ZS_SW_ONCPU | ZS_SW_TRAINING,
					  .oncpu_ns = 1000, .gpu_ns = 7000, .coll_ns = 300 };
	struct zev_sched_switch helper = { .hdr = hdr(ZEV_SCHED_SWITCH, 30), .flags = ZS_SW_ONCPU,
					   .oncpu_ns = 50, .gpu_ns = 60, .coll_ns = 70 };
	struct zev_thread_exit last = { .hdr = hdr(ZEV_THREAD_EXIT, 30),
					.flags = ZS_SW_ONCPU | ZS_SW_TRAINING,
					.oncpu_ns = 4, .gpu_ns = 20000, .coll_ns = 0 };
	const struct shm_proc *p;

	watch(30, 1, SHM_WATCH_CUDA, "trainer");
	ck_assert_int_eq(FEED(train), 0);
	ck_assert_int_eq(FEED(helper), 0);
	ck_assert_int_eq(FEED(last), 0);
	publish_and_read();
	p = find_proc(30);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->thread_state_ns[SHM_STATE_ONCPU], 1004);
	ck_assert_uint_eq(p->thread_state_ns[SHM_STATE_GPU], 27000);
	ck_assert_uint_eq(p->thread_state_ns[SHM_STATE_COLLECTIVE], 300);
	ck_assert_uint_eq(p->thread_state_ns[SHM_STATE_RUNQ], 0);
}
END_TEST

START_TEST(records_of_the_wrong_size_or_type_are_refused)
{
	struct zev_latency lat = { .hdr = hdr(ZEV_LATENCY, 40), .family = SHM_FAMILY_CUDA_LAUNCH,
				   .ns = 5 };
	struct zev_latency odd = { .hdr = hdr(ZEV_LATENCY, 40), .family = SHM_FAMILY_COUNT,
				   .ns = 5 };
	struct zev_mem_free nospace = { .hdr = hdr(ZEV_MEM_FREE, 40), .space = 7 };
	struct zev_mem_pool badop = { .hdr = hdr(ZEV_MEM_POOL, 40), .op = ZMEM_POOL_OP_COUNT };
	struct zev_mem_alloc badpool = { .hdr = hdr(ZEV_MEM_ALLOC, 40), .pooled = 2, .bytes = 9 };
	struct zev_exit unknown = { .hdr = hdr(ZEV_TYPE_COUNT, 40) };
	struct zev_exit zero = { .hdr = hdr(0, 40) };
	const struct shm_header_fields *h;

	watch(40, 1, SHM_WATCH_PID, "p");
	ck_assert_int_eq(decode_event(&fx.d, &lat, sizeof(lat) - 8), -EINVAL);
	ck_assert_int_eq(decode_event(&fx.d, &lat, sizeof(lat)), 0);
	ck_assert_int_eq(decode_event(&fx.d, &lat, sizeof(struct zev_hdr) - 1), -EINVAL);
	ck_assert_int_eq(FEED(unknown), -EINVAL);
	ck_assert_int_eq(FEED(zero), -EINVAL);
	/* Known types with an out-of-range enum: counted, not aggregated. */
	ck_assert_int_eq(FEED(odd), -EINVAL);
	ck_assert_int_eq(FEED(nospace), -EINVAL);
	ck_assert_int_eq(FEED(badop), -EINVAL);
	ck_assert_int_eq(FEED(badpool), -EINVAL);
	/* The allocation record as it was before it named its pool. */
	ck_assert_int_eq(decode_event(&fx.d, &badpool, 48), -EINVAL);
	ck_assert_int_eq(decode_ringbuf(&fx.d, &unknown, sizeof(unknown)), 0);
	h = publish_and_read();
	ck_assert_uint_eq(find_proc(40)->lat[SHM_FAMILY_CUDA_LAUNCH].count, 1);
	ck_assert_uint_eq(h->stats.events_total, 6);
	ck_assert_uint_eq(fx.d.refused, 6);
	ck_assert_ptr_null(find_mem(40, 0));
}
END_TEST

Suite *decode_suite(void);
Suite *decode_suite(void)
{
	Suite *s = suite_create("decode");
	TCase *tc = tcase_create("records");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_watch_record_registers_the_process);
	tcase_add_test(tc, frees_subtract_what_was_allocated_at_that_address);
	tcase_add_test(tc, a_pool_keeps_what_is_freed_into_it_until_a_sync_or_trim);
	tcase_add_test(tc, gpu_spans_of_unknown_communicators_are_counted_bad_ones_refused);
	tcase_add_test(tc, failures_latencies_nccl_and_scheduler_reach_their_rows);
	tcase_add_test(tc, an_exit_asks_the_source_first_then_evicts);
	tcase_add_test(tc, time_on_the_cpu_inside_cuda_and_nccl_calls_is_their_state);
	tcase_add_test(tc, records_of_the_wrong_size_or_type_are_refused);
	tcase_add_test(tc, a_new_process_under_a_known_pid_inherits_nothing);
	tcase_add_test(tc, an_exit_of_an_earlier_process_under_the_pid_evicts_nothing);
	suite_add_tcase(s, tc);
	return s;
}
