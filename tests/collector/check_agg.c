/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Aggregation against ground truth: each test feeds known events, publishes
 * into a real segment and reads it back through shm_reader (which also
 * validates every row), then compares with what it fed.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/agg/agg.h"
#include "collector/agg/agg_stall.h"
#include "collector/agg/nccl_hash.h"
#include "collector/agg/hist.h"
#include "collector/agg/latency.h"
#include "common/util.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/collector/tu_agg.h"
#include "tests/support/testutil.h"

#define S	NSEC_PER_SEC

static struct tu_agg fx;

static void fx_open(uint32_t procs, uint32_t gpu_mem, uint32_t gpus, uint32_t comms)
{
	tu_agg_open(&fx, (struct shm_capacity){ .procs = procs, .gpu_mem = gpu_mem,
						.gpus = gpus, .nccl_comms = comms },
		    SHM_MODE_SIMULATE);
}

static void setup(void)
{
	fx_open(16, 32, 4, 8);
}

static void teardown(void)
{
	tu_agg_close(&fx);
}

/* Publishes now and takes a validated snapshot. */
static const struct shm_header_fields *publish_and_read(void)
{
	return tu_agg_publish(&fx, "unit");
}

static const struct shm_gpu_mem *find_mem(uint32_t pid, uint32_t gpu)
{
	return tu_agg_mem(&fx, pid, gpu);
}

static const struct shm_proc *find_proc(uint32_t pid)
{
	return tu_agg_proc(&fx, pid);
}

static const struct shm_gpu *find_gpu(uint32_t id)
{
	return tu_agg_gpu(&fx, id);
}

/* ncclCommInitRank of (pid, handle), its uniqueId made from the handle. */
static int comm_init(uint32_t pid, int32_t rank, int32_t nranks, uint32_t gpu, uint64_t handle)
{
	uint8_t id[NCCL_HASH_ID_BYTES] = { 0 };
	struct agg_comm_made m = {
		.origin = SHM_NCCL_ORIGIN_INIT_RANK, .handle = handle, .rank = rank,
		.nranks = nranks, .gpu = gpu, .id = id,
	};

	memcpy(id, &handle, sizeof(handle));
	return agg_nccl_comm_made(fx.a, pid, &m);
}

START_TEST(memory_current_and_peak_are_exact)
{
	const struct shm_gpu_mem *m;

	ck_assert_int_eq(agg_proc_watch(fx.a, 4242, 1, SHM_WATCH_CUDA, "train", 7), 0);
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 4242, 0, 100 << 20), 0);
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 4242, 0, 50 << 20), 0);
	ck_assert_int_eq(agg_gpu_free(fx.a, 4242, 0, 120 << 20), 0);
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 4242, 1, 7), 0);
	publish_and_read();

	m = find_mem(4242, 0);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->used_bytes, 30u << 20);
	ck_assert_uint_eq(m->peak_bytes, 150u << 20);
	ck_assert_uint_eq(m->alloc_calls, 2);
	ck_assert_uint_eq(m->free_calls, 1);
	ck_assert_uint_eq(m->failed_calls, 0);
	m = find_mem(4242, 1);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->used_bytes, 7);
	ck_assert_uint_eq(m->peak_bytes, 7);
}
END_TEST

START_TEST(frees_never_take_memory_below_zero)
{
	const struct shm_gpu_mem *m;

	agg_proc_watch(fx.a, 10, 1, SHM_WATCH_CUDA, "t", 1);
	agg_gpu_alloc(fx.a, 10, 2, 1000);
	agg_gpu_free(fx.a, 10, 2, 5000);
	agg_gpu_free(fx.a, 10, 2, 1);
	publish_and_read();
	m = find_mem(10, 2);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->used_bytes, 0);
	ck_assert_uint_eq(m->peak_bytes, 1000);
	ck_assert_uint_eq(m->free_calls, 2);
	/* No process holds memory on GPU 2 any more. */
	ck_assert_ptr_nonnull(find_gpu(2));
	ck_assert_uint_eq(find_gpu(2)->used_bytes, 0);
	ck_assert_uint_eq(find_gpu(2)->processes, 0);
}
END_TEST

START_TEST(failed_allocations_are_counted_not_added)
{
	const struct shm_gpu_mem *m;

	agg_proc_watch(fx.a, 11, 1, SHM_WATCH_CUDA, "t", 1);
	agg_gpu_alloc(fx.a, 11, 0, 64);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(agg_gpu_alloc_failed(fx.a, 11, 0), 0);
	publish_and_read();
	m = find_mem(11, 0);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->failed_calls, 3);
	ck_assert_uint_eq(m->alloc_calls, 1);
	ck_assert_uint_eq(m->used_bytes, 64);
}
END_TEST

START_TEST(events_of_unwatched_pids_are_ignored)
{
	const struct shm_header_fields *h;

	ck_assert_int_eq(agg_gpu_alloc(fx.a, 99, 0, 100), -ENOENT);
	ck_assert_int_eq(agg_gpu_free(fx.a, 99, 0, 100), -ENOENT);
	ck_assert_int_eq(agg_gpu_alloc_failed(fx.a, 99, 0), -ENOENT);
	ck_assert_int_eq(agg_latency(fx.a, 99, SHM_FAMILY_CUDA_LAUNCH, 1, 1), -ENOENT);
	ck_assert_int_eq(agg_offcpu(fx.a, 99, 5, 1), -ENOENT);
	ck_assert_int_eq(agg_migrations(fx.a, 99, 1), -ENOENT);
	ck_assert_int_eq(comm_init(99, 0, 2, 0, 1), -ENOENT);
	ck_assert_int_eq(agg_proc_is_watched(fx.a, 99), 0);
	agg_proc_watch(fx.a, 5, 1, SHM_WATCH_PID, "x", 1);
	ck_assert_int_eq(agg_latency(fx.a, 5, SHM_FAMILY_COUNT, 1, 1), -EINVAL);
	h = publish_and_read();
	ck_assert_uint_eq(h->table[SHM_TABLE_PROCS].count, 1);
	ck_assert_uint_eq(h->table[SHM_TABLE_GPU_MEM].count, 0);
	ck_assert_uint_eq(h->node[SHM_FAMILY_CUDA_LAUNCH].count, 0);
}
END_TEST

START_TEST(process_fields_and_reasons_accumulate)
{
	const struct shm_proc *p;

	ck_assert_int_eq(agg_proc_watch(fx.a, 300, 299, SHM_WATCH_CUDA, "python3", 123), 0);
	ck_assert_int_eq(agg_proc_watch(fx.a, 300, 0, SHM_WATCH_NCCL, NULL, 0), 0);
	ck_assert_int_eq(agg_proc_watch(fx.a, 301, 300, SHM_WATCH_DESCENDANT,
					"a_name_longer_than_fifteen", 124), 0);
	agg_offcpu(fx.a, 300, 1000, 1);
	agg_offcpu(fx.a, 300, 500, 1);
	agg_offcpu(fx.a, 300, 7000, 0);
	agg_migrations(fx.a, 300, 1);
	agg_migrations(fx.a, 300, 1);
	agg_migrations(fx.a, 300, 1);
	publish_and_read();

	p = find_proc(300);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->ppid, 299);
	ck_assert_uint_eq(p->watch_reason, SHM_WATCH_CUDA | SHM_WATCH_NCCL);
	ck_assert_uint_eq(p->start_time_ns, 123);
	ck_assert_str_eq(p->comm, "python3");
	ck_assert_uint_eq(p->offcpu_preempted_ns, 1500);
	ck_assert_uint_eq(p->involuntary_switches, 2);
	ck_assert_uint_eq(p->offcpu_blocked_ns, 7000);
	ck_assert_uint_eq(p->voluntary_switches, 1);
	ck_assert_uint_eq(p->migrations, 3);
	ck_assert_uint_eq(p->reserved0, 0);
	p = find_proc(301);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(memcmp(p->comm, "a_name_longer_t", 16), 0);
	ck_assert_uint_eq(p->ppid, 300);
}
END_TEST

START_TEST(a_reused_pid_starts_afresh)
{
	const struct shm_proc *p;

	agg_proc_watch(fx.a, 77, 1, SHM_WATCH_CUDA, "old", 1000);
	agg_gpu_alloc(fx.a, 77, 0, 4096);
	agg_latency(fx.a, 77, SHM_FAMILY_CUDA_LAUNCH, now_mono_ns(), 5000);
	agg_proc_watch(fx.a, 77, 1, SHM_WATCH_COMM, "new", 2000);
	publish_and_read();
	p = find_proc(77);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p->comm, "new");
	ck_assert_uint_eq(p->watch_reason, SHM_WATCH_COMM);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_LAUNCH].count, 0);
	ck_assert_ptr_null(find_mem(77, 0));
	ck_assert_uint_eq(fx.snap.hdr->stats.processes_evicted, 1);
}
END_TEST

START_TEST(eviction_removes_memory_rows_and_comms)
{
	const struct shm_header_fields *h;
	uint32_t n;
	const struct shm_nccl_comm *c;

	agg_proc_watch(fx.a, 1, 0, SHM_WATCH_CUDA, "a", 1);
	agg_proc_watch(fx.a, 2, 0, SHM_WATCH_CUDA, "b", 1);
	agg_gpu_alloc(fx.a, 1, 0, 100);
	agg_gpu_alloc(fx.a, 1, 1, 200);
	agg_gpu_alloc(fx.a, 2, 0, 300);
	ck_assert_int_eq(comm_init(1, 0, 2, 0, 0xaa), 0);
	ck_assert_int_eq(comm_init(2, 1, 2, 0, 0xbb), 0);
	h = publish_and_read();
	ck_assert_uint_eq(h->table[SHM_TABLE_GPU_MEM].count, 3);
	ck_assert_uint_eq(find_gpu(0)->used_bytes, 400);

	agg_proc_exit(fx.a, 1);
	agg_proc_exit(fx.a, 1);		/* twice is harmless */
	ck_assert_int_eq(agg_proc_is_watched(fx.a, 1), 0);
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 1, 0, 1), -ENOENT);
	h = publish_and_read();
	ck_assert_uint_eq(h->table[SHM_TABLE_PROCS].count, 1);
	ck_assert_uint_eq(h->table[SHM_TABLE_GPU_MEM].count, 1);
	ck_assert_ptr_null(find_mem(1, 0));
	ck_assert_ptr_null(find_mem(1, 1));
	ck_assert_uint_eq(find_mem(2, 0)->used_bytes, 300);
	ck_assert_uint_eq(find_gpu(0)->used_bytes, 300);
	ck_assert_uint_eq(find_gpu(0)->processes, 1);
	ck_assert_uint_eq(find_gpu(1)->used_bytes, 0);
	c = shm_snapshot_nccl_comms(&fx.snap, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(c[0].pid, 2);
	ck_assert_int_eq(c[0].rank, 1);
	ck_assert_uint_eq(h->stats.processes_evicted, 1);

	/* The freed slots are reusable, and stale rows left the mapping. */
	{
		const uint8_t *rows = shm_writer_table(&fx.w, SHM_TABLE_GPU_MEM);
		static const uint8_t zero[2 * sizeof(struct shm_gpu_mem)];

		ck_assert_int_eq(memcmp(rows + sizeof(struct shm_gpu_mem), zero, sizeof(zero)), 0);
	}
	ck_assert_int_eq(agg_proc_watch(fx.a, 3, 0, SHM_WATCH_CUDA, "c", 1), 0);
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 3, 1, 9), 0);
	publish_and_read();
	ck_assert_uint_eq(find_mem(3, 1)->used_bytes, 9);
}
END_TEST

START_TEST(full_tables_count_overflows_and_publish_them)
{
	const struct shm_header_fields *h;

	teardown();
	fx_open(4, 3, 2, 2);
	for (uint32_t pid = 1; pid <= 6; pid++)
		ck_assert_int_eq(agg_proc_watch(fx.a, pid, 0, SHM_WATCH_PID, "p", 1),
				 pid <= 4 ? 0 : -ENOSPC);
	ck_assert_int_eq(agg_proc_watch(fx.a, 1, 0, SHM_WATCH_COMM, "p", 1), 0);
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 1, 0, 1), 0);
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 2, 0, 1), 0);
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 3, 1, 1), 0);
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 4, 1, 1), -ENOSPC);
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 1, 0, 1), 0);	/* existing row */
	ck_assert_int_eq(agg_gpu_total(fx.a, 0, 1000, SHM_TOTAL_FLAG), 0);
	ck_assert_int_eq(agg_gpu_total(fx.a, 1, 1000, SHM_TOTAL_FLAG), 0);
	ck_assert_int_eq(agg_gpu_total(fx.a, 2, 1000, SHM_TOTAL_FLAG), -ENOSPC);
	ck_assert_int_eq(agg_gpu_total(fx.a, 0, 1000, 99), -EINVAL);
	ck_assert_int_eq(comm_init(1, 0, 4, 0, 1), 0);
	ck_assert_int_eq(comm_init(2, 1, 4, 0, 2), 0);
	ck_assert_int_eq(comm_init(3, 2, 4, 1, 3), -ENOSPC);
	ck_assert_int_eq(comm_init(1, 0, 4, 0, 1), 0);	/* update */

	h = publish_and_read();
	ck_assert_uint_eq(h->table[SHM_TABLE_PROCS].count, 4);
	ck_assert_uint_eq(h->table[SHM_TABLE_PROCS].overflows, 2);
	ck_assert_uint_eq(h->table[SHM_TABLE_GPU_MEM].count, 3);
	ck_assert_uint_eq(h->table[SHM_TABLE_GPU_MEM].overflows, 1);
	ck_assert_uint_eq(h->table[SHM_TABLE_GPUS].count, 2);
	ck_assert_uint_eq(h->table[SHM_TABLE_GPUS].overflows, 1);
	ck_assert_uint_eq(h->table[SHM_TABLE_NCCL_COMMS].count, 2);
	ck_assert_uint_eq(h->table[SHM_TABLE_NCCL_COMMS].overflows, 1);
	ck_assert_uint_eq(find_mem(1, 0)->used_bytes, 2);
	ck_assert_uint_eq(find_gpu(0)->total_bytes, 1000);
	ck_assert_uint_eq(find_gpu(0)->total_source, SHM_TOTAL_FLAG);
	ck_assert_uint_eq(find_gpu(0)->used_bytes, 3);
	ck_assert_uint_eq(find_gpu(0)->processes, 2);
}
END_TEST

/*
 * After exec the pid is a new program in the same slot: its recent row
 * (the difference over the window) starts from nothing, not from the old
 * program's samples, which would make the difference negative.
 */
START_TEST(recent_row_starts_afresh_after_exec)
{
	const struct shm_proc_recent *r;
	uint32_t n;

	ck_assert_int_eq(agg_proc_watch(fx.a, 7, 1, SHM_WATCH_CUDA, "old", 1), 0);
	ck_assert_int_eq(agg_collective_wait(fx.a, 7, 4000000), 0);
	ck_assert_int_eq(agg_thread_state(fx.a, 7, SHM_STATE_RUNQ, 3000000), 0);
	publish_and_read();
	agg_proc_exit(fx.a, 7);
	ck_assert_int_eq(agg_proc_watch(fx.a, 7, 1, SHM_WATCH_CUDA, "new", 1), 0);
	ck_assert_int_eq(agg_collective_wait(fx.a, 7, 1000), 0);
	publish_and_read();

	r = shm_snapshot_rows(&fx.snap, SHM_TABLE_PROC_RECENT, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(r[0].pid, 7);
	ck_assert_uint_eq(r[0].collective_wait_ns, 0);
	ck_assert_uint_eq(r[0].thread_state_ns[SHM_STATE_RUNQ], 0);
}
END_TEST

/*
 * Open states (collector/probes/sched/open_states.h): shown with what has ended while
 * they last, never shown less after, and counted whole once they end.
 */
START_TEST(open_states_show_as_they_last_and_never_go_back)
{
	uint64_t open[SHM_STATE_COUNT] = { 0 };

	ck_assert_int_eq(agg_proc_watch(fx.a, 7, 1, SHM_WATCH_PID, "t", 1), 0);
	ck_assert_int_eq(agg_thread_state(fx.a, 7, SHM_STATE_ONCPU, 1000), 0);
	/* 2 s into an input wait. */
	agg_open_states_clear(fx.a);
	open[SHM_STATE_INPUT] = 2000000000ull;
	ck_assert_int_eq(agg_open_state(fx.a, 7, open), 0);
	ck_assert_int_eq(agg_open_state(fx.a, 8, open), -ENOENT);
	publish_and_read();
	ck_assert_uint_eq(find_proc(7)->thread_state_ns[SHM_STATE_INPUT], 2000000000ull);
	ck_assert_uint_eq(find_proc(7)->thread_state_ns[SHM_STATE_ONCPU], 1000);
	/* Read again with nothing open (woken, not yet back): no step back. */
	agg_open_states_clear(fx.a);
	publish_and_read();
	ck_assert_uint_eq(find_proc(7)->thread_state_ns[SHM_STATE_INPUT], 2000000000ull);
	/* It ended at 2.5 s: counted whole, once. */
	ck_assert_int_eq(agg_thread_state(fx.a, 7, SHM_STATE_INPUT, 2500000000ull), 0);
	publish_and_read();
	ck_assert_uint_eq(find_proc(7)->thread_state_ns[SHM_STATE_INPUT], 2500000000ull);
}
END_TEST

/*
 * An abort and re-init from the same uniqueId makes a new ncclComm_t with
 * the old one's commHash and rank: one series, which goes on counting.
 * Another rank of the same communicator keeps a row of its own.
 */
START_TEST(comm_made_again_continues_its_row)
{
	uint8_t id[NCCL_HASH_ID_BYTES] = { 7, 1, 9 };
	struct agg_comm_made m = {
		.origin = SHM_NCCL_ORIGIN_INIT_RANK, .handle = 0x10, .rank = 1,
		.nranks = 2, .gpu = 0, .id = id,
	};
	const struct shm_nccl_comm *c;
	uint64_t now = now_mono_ns();
	uint32_t n, rank1 = 0;

	ck_assert_int_eq(agg_proc_watch(fx.a, 5, 0, SHM_WATCH_NCCL, "ddp", 1), 0);
	ck_assert_int_eq(agg_nccl_comm_made(fx.a, 5, &m), 0);
	ck_assert_int_eq(agg_nccl_comm_call(fx.a, 5, 0x10, 64, now), 0);
	m.handle = 0x20;
	ck_assert_int_eq(agg_nccl_comm_made(fx.a, 5, &m), 0);
	ck_assert_int_eq(agg_nccl_comm_call(fx.a, 5, 0x20, 32, now + 1000), 0);
	/* The destroyed communicator's handle is no longer known. */
	ck_assert_int_eq(agg_nccl_comm_call(fx.a, 5, 0x10, 8, now + 2000), -ENOENT);
	m.handle = 0x30;
	m.rank = 0;
	ck_assert_int_eq(agg_nccl_comm_made(fx.a, 5, &m), 0);
	publish_and_read();

	c = shm_snapshot_nccl_comms(&fx.snap, &n);
	ck_assert_uint_eq(n, 2);
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_uint_eq(c[i].comm_id, nccl_hash_unique_id(id));
		if (c[i].rank != 1)
			continue;
		rank1++;
		ck_assert_uint_eq(c[i].calls, 2);
		ck_assert_uint_eq(c[i].bytes, 96);
		ck_assert_uint_eq(c[i].pending, 1);
	}
	ck_assert_uint_eq(rank1, 1);
}
END_TEST

START_TEST(nccl_ops_count_calls_bytes_errors_and_latencies)
{
	const struct shm_nccl_op *ops;
	uint64_t now = now_mono_ns();
	uint32_t n;

	for (int i = 0; i < 10; i++)
		agg_nccl_call(fx.a, SHM_NCCL_ALL_REDUCE, 1000 + (uint64_t)i, 20000, 0, now);
	agg_nccl_call(fx.a, SHM_NCCL_ALL_REDUCE, 555, 30000, 1, now);
	agg_nccl_call(fx.a, SHM_NCCL_RECV, 64, 1000, 0, now);
	agg_nccl_call(fx.a, SHM_NCCL_OP_COUNT, 64, 1000, 0, now);	/* ignored */
	for (int i = 0; i < 4; i++)
		agg_nccl_wait(fx.a, SHM_NCCL_ALL_REDUCE, 3000000, now);
	publish_and_read();

	ops = shm_snapshot_nccl_ops(&fx.snap, &n);
	ck_assert_uint_eq(n, SHM_NCCL_OP_COUNT);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_uint_eq(ops[i].op, i);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_REDUCE].calls, 11);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_REDUCE].errors, 1);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_REDUCE].bytes, 10 * 1000 + 45);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_REDUCE].duration.count, 11);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_REDUCE].duration.sum_ns, 10 * 20000 + 30000);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_REDUCE].wait.count, 4);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_REDUCE].wait.sum_ns, 12000000);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_REDUCE].wait.window_count, 4);
	ck_assert_uint_eq(ops[SHM_NCCL_RECV].calls, 1);
	ck_assert_uint_eq(ops[SHM_NCCL_RECV].bytes, 64);
	ck_assert_uint_eq(ops[SHM_NCCL_BROADCAST].calls, 0);
	ck_assert_uint_eq(ops[SHM_NCCL_BROADCAST].duration.count, 0);
	/* The log-linear buckets of the native histograms hold the same samples. */
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_REDUCE].duration_fine[hist_bucket_index(20000)], 10);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_REDUCE].duration_fine[hist_bucket_index(30000)], 1);
	ck_assert_uint_eq(ops[SHM_NCCL_ALL_REDUCE].wait_fine[hist_bucket_index(3000000)], 4);
	ck_assert_uint_eq(ops[SHM_NCCL_RECV].duration_fine[hist_bucket_index(1000)], 1);
}
END_TEST

START_TEST(latency_counts_sums_and_buckets_are_exact)
{
	static const uint64_t bounds[] = SHM_LAT_BOUNDS_NS_INIT;
	const struct shm_header_fields *h;
	const struct shm_proc *p;
	uint64_t now = now_mono_ns(), sum = 0;

	agg_proc_watch(fx.a, 20, 1, SHM_WATCH_CUDA, "a", 1);
	agg_proc_watch(fx.a, 21, 1, SHM_WATCH_CUDA, "b", 1);
	/* 1..1000 us on pid 20: bucket counts are known exactly. */
	for (uint64_t us = 1; us <= 1000; us++) {
		ck_assert_int_eq(agg_latency(fx.a, 20, SHM_FAMILY_CUDA_LAUNCH, now, us * 1000), 0);
		sum += us * 1000;
	}
	for (int i = 0; i < 5; i++)
		agg_latency(fx.a, 21, SHM_FAMILY_CUDA_LAUNCH, now, 50);
	agg_latency(fx.a, 21, SHM_FAMILY_RUNQ_DELAY, now, 2000);
	h = publish_and_read();

	p = find_proc(20);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_LAUNCH].count, 1000);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_LAUNCH].sum_ns, sum);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_LAUNCH].window_count, 1000);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_LAUNCH].window_max_ns, 1000000);
	/* p50 of 1..1000 us is 500 us, within the histogram's error bound. */
	ck_assert_uint_ge(p->lat[SHM_FAMILY_CUDA_LAUNCH].window_p50_ns, 500000 * 63 / 64);
	ck_assert_uint_le(p->lat[SHM_FAMILY_CUDA_LAUNCH].window_p50_ns, 500000 * 65 / 64);
	for (unsigned int b = 0; b < SHM_LAT_BUCKETS; b++) {
		uint64_t lo = b ? bounds[b - 1] : 0;
		uint64_t hi = b < SHM_LAT_FINITE_BUCKETS ? bounds[b] : UINT64_MAX;
		uint64_t want = 0;

		for (uint64_t us = 1; us <= 1000; us++)
			if (us * 1000 > lo && us * 1000 <= hi)
				want++;
		ck_assert_msg(p->lat[SHM_FAMILY_CUDA_LAUNCH].bucket[b] == want,
			      "bucket %u: %llu, want %llu", b,
			      (unsigned long long)p->lat[SHM_FAMILY_CUDA_LAUNCH].bucket[b],
			      (unsigned long long)want);
	}
	ck_assert_uint_eq(p->lat[SHM_FAMILY_RUNQ_DELAY].count, 0);
	ck_assert_uint_eq(find_proc(21)->lat[SHM_FAMILY_CUDA_LAUNCH].count, 5);
	ck_assert_uint_eq(find_proc(21)->lat[SHM_FAMILY_RUNQ_DELAY].sum_ns, 2000);

	/* Node-wide: every sample of every process. */
	ck_assert_uint_eq(h->node[SHM_FAMILY_CUDA_LAUNCH].count, 1005);
	ck_assert_uint_eq(h->node[SHM_FAMILY_CUDA_LAUNCH].sum_ns, sum + 250);
	ck_assert_uint_eq(h->node[SHM_FAMILY_CUDA_LAUNCH].bucket[0], 5);
	ck_assert_uint_eq(h->node[SHM_FAMILY_RUNQ_DELAY].count, 1);
	ck_assert_uint_eq(h->node[SHM_FAMILY_FUTEX_WAIT].count, 0);
}
END_TEST

/*
 * A batch (as read from the in-kernel launch histograms) publishes exactly
 * what recording its samples one by one at the same time publishes, for
 * the process and node-wide; unwatched pids and bad families are refused.
 */
START_TEST(latency_batches_publish_like_single_samples)
{
	static uint64_t hist[HIST_BUCKETS];
	uint64_t prom[SHM_LAT_BUCKETS] = { 0 };
	uint64_t now = now_mono_ns(), sum = 0, max = 0, n = 0;
	const struct shm_header_fields *h;
	const struct shm_latency *x, *y;

	memset(hist, 0, sizeof(hist));
	agg_proc_watch(fx.a, 30, 1, SHM_WATCH_CUDA, "one", 1);
	agg_proc_watch(fx.a, 31, 1, SHM_WATCH_CUDA, "batch", 1);
	for (uint64_t v = 7; v < 3000000; v = v * 5 / 4 + 1) {
		ck_assert_int_eq(agg_latency(fx.a, 30, SHM_FAMILY_CUDA_GRAPH_LAUNCH, now, v), 0);
		hist[hist_bucket_index(v)]++;
		prom[latency_bucket_of(v)]++;
		sum += v;
		max = v;
		n++;
	}
	ck_assert_int_eq(agg_latency_batch(fx.a, 31, SHM_FAMILY_CUDA_GRAPH_LAUNCH, now, hist, prom,
					   n, sum, max), 0);
	ck_assert_int_eq(agg_latency_batch(fx.a, 99, SHM_FAMILY_CUDA_GRAPH_LAUNCH, now, hist, prom,
					   n, sum, max), -ENOENT);
	ck_assert_int_eq(agg_latency_batch(fx.a, 31, SHM_FAMILY_COUNT, now, hist, prom, n, sum,
					   max), -EINVAL);
	ck_assert_int_eq(agg_latency_batch(fx.a, 31, SHM_FAMILY_CUDA_GRAPH_LAUNCH, now, hist, prom,
					   n + 1, sum, max), -EINVAL);
	h = publish_and_read();
	x = &find_proc(30)->lat[SHM_FAMILY_CUDA_GRAPH_LAUNCH];
	y = &find_proc(31)->lat[SHM_FAMILY_CUDA_GRAPH_LAUNCH];
	ck_assert_uint_eq(y->count, n);
	ck_assert_uint_eq(y->count, x->count);
	ck_assert_uint_eq(y->sum_ns, x->sum_ns);
	ck_assert_int_eq(memcmp(y->bucket, x->bucket, sizeof(x->bucket)), 0);
	ck_assert_uint_eq(y->window_count, x->window_count);
	ck_assert_uint_eq(y->window_p50_ns, x->window_p50_ns);
	ck_assert_uint_eq(y->window_p90_ns, x->window_p90_ns);
	ck_assert_uint_eq(y->window_p99_ns, x->window_p99_ns);
	ck_assert_uint_eq(y->window_max_ns, x->window_max_ns);
	ck_assert_uint_eq(h->node[SHM_FAMILY_CUDA_GRAPH_LAUNCH].count, 2 * n);
	ck_assert_uint_eq(h->node[SHM_FAMILY_CUDA_GRAPH_LAUNCH].sum_ns, 2 * sum);
	ck_assert_uint_eq(find_proc(31)->lat[SHM_FAMILY_CUDA_LAUNCH].count, 0);
}
END_TEST

START_TEST(publish_stamps_heartbeat_stats_and_scenario)
{
	const struct shm_header_fields *h;
	uint64_t before = now_mono_ns();

	agg_count_events(fx.a, 40);
	agg_count_events(fx.a, 2);
	agg_count_dropped(fx.a, 3);
	agg_set_probes(fx.a, 12, 2, 5);
	h = publish_and_read();
	ck_assert_uint_ge(h->heartbeat_mono_ns, before);
	ck_assert_uint_le(h->heartbeat_mono_ns, now_mono_ns());
	ck_assert_uint_gt(h->heartbeat_real_ns, 1600000000ull * S);
	ck_assert_str_eq(h->scenario, "unit");
	ck_assert_uint_eq(h->stats.events_total, 42);
	ck_assert_uint_eq(h->stats.events_dropped, 3);
	ck_assert_uint_eq(h->stats.probes_attached, 12);
	ck_assert_uint_eq(h->stats.probes_refused, 5);
	ck_assert_uint_eq(h->stats.libraries_attached, 2);
	ck_assert_uint_eq(h->stats.publishes, 1);
	ck_assert_uint_eq(h->seq % 2, 0);
	h = publish_and_read();
	ck_assert_uint_eq(h->stats.publishes, 2);
	ck_assert_uint_gt(h->stats.last_publish_duration_ns, 0);
	agg_publish(fx.a, &fx.w, now_mono_ns(), now_real_ns(), NULL);
	ck_assert_uint_eq(fx.w.base->h.scenario[0], 0);
}
END_TEST

/* Memory depends on the capacities, not on how many events arrive. */
/* The whole segment, mapped writable by the test as a stray writer would. */
static void scribble(uint32_t pattern, uint64_t seed)
{
	int fd = shm_open(fx.name, O_RDWR, 0);
	uint8_t *p;

	ck_assert_int_ge(fd, 0);
	p = mmap(NULL, fx.w.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	for (uint64_t i = 0; i < fx.w.size; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = pattern == 0 ? 0 : pattern == 1 ? 0xff : (uint8_t)(seed >> 56);
	}
	munmap(p, fx.w.size);
	close(fd);
}

/*
 * The collector never reads the segment: with every byte of it scribbled
 * (header, seqlock, table descriptors, rows), the next publish still
 * writes where the collector created its tables, and the reader gets the
 * same content as before.
 */
START_TEST(scribbled_segment_heals_at_next_publish)
{
	uint64_t gen;

	ck_assert_int_eq(agg_proc_watch(fx.a, 4242, 1, SHM_WATCH_CUDA, "train", 7), 0);
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 4242, 0, 100 << 20), 0);
	gen = publish_and_read()->generation;
	for (uint32_t round = 0; round < 12; round++) {
		char why[256];
		const struct shm_header_fields *h;

		scribble(round % 3, round + 1);
		ck_assert_int_ne(shm_reader_snapshot(&fx.r, &fx.snap, why, sizeof(why)),
				 SHM_READ_OK);
		ck_assert_int_eq(agg_gpu_alloc(fx.a, 4242, 0, 1), 0);
		h = publish_and_read();
		ck_assert_uint_eq(h->generation, gen);
		ck_assert_uint_eq(h->magic, SHM_MAGIC);
		ck_assert_uint_eq(h->seq % 2, 0);
		ck_assert_uint_eq(find_mem(4242, 0)->used_bytes, (100u << 20) + round + 1);
		ck_assert_str_eq(find_proc(4242)->comm, "train");
		ck_assert_uint_eq(h->table[SHM_TABLE_PROCS].count, 1);
	}
}
END_TEST

/*
 * How often the reader's validator notices a random change to a live row
 * (one 8-byte word of a row in use replaced by a random value, as a stray
 * write would): pinned so that it never gets weaker.  Latency series take
 * most of a row and their buckets must add up to their count, which is
 * what catches most changes; names and pids cannot be judged.
 */
#define ROW_DETECT_TRIALS	4000u
#define ROW_DETECT_MIN_PERMILLE	850u	/* measured on layout 9: 862 */

START_TEST(random_changes_to_live_rows_are_detected)
{
	const struct shm_header_fields *h;
	uint64_t seed = 42, *copy;
	size_t words = 0, size;
	unsigned int caught = 0;
	char why[256];

	for (uint32_t pid = 100; pid < 108; pid++) {
		ck_assert_int_eq(agg_proc_watch(fx.a, pid, 1, SHM_WATCH_CUDA, "train", 7), 0);
		for (int f = 0; f < SHM_FAMILY_COUNT; f++)
			for (uint64_t k = 1; k <= 40; k++)
				ck_assert_int_eq(agg_latency(fx.a, pid, (enum shm_family)f,
							     now_mono_ns(), k * k * 997), 0);
		ck_assert_int_eq(agg_gpu_alloc(fx.a, pid, pid % 4, pid << 20), 0);
		ck_assert_int_eq(agg_gpu_free(fx.a, pid, pid % 4, pid << 10), 0);
		ck_assert_int_eq(comm_init(pid, (int32_t)(pid - 100), 8, pid % 4, pid), 0);
	}
	for (int op = 0; op < SHM_NCCL_OP_COUNT; op++)
		for (uint64_t k = 1; k <= 20; k++) {
			agg_nccl_call(fx.a, (enum shm_nccl_op_kind)op, k << 20, k * 5000, 0,
				      now_mono_ns());
			agg_nccl_wait(fx.a, (enum shm_nccl_op_kind)op, k * 9000, now_mono_ns());
		}
	h = publish_and_read();
	size = fx.snap.size;
	for (int t = 0; t < SHM_TABLE_COUNT; t++)
		words += (size_t)h->table[t].count * h->table[t].entry_size / 8;
	copy = aligned_alloc(64, (size + 63) / 64 * 64);
	ck_assert_ptr_nonnull(copy);

	for (unsigned int i = 0; i < ROW_DETECT_TRIALS; i++) {
		size_t w;
		uint64_t x;
		int t;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		w = (size_t)(seed >> 33) % words;
		for (t = 0; t < SHM_TABLE_COUNT; t++) {
			size_t in = (size_t)h->table[t].count * h->table[t].entry_size / 8;

			if (w < in)
				break;
			w -= in;
		}
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		x = seed ^ (seed >> 29);
		memcpy(copy, fx.snap.buf, size);
		w += h->table[t].offset / 8;
		if (copy[w] == x)
			x = ~x;
		copy[w] = x;
		if (shm_validate(copy, size, why, sizeof(why)) < 0)
			caught++;
	}
	free(copy);
	fprintf(stderr, "live rows: %u of %u random word changes caught (%.1f%%)\n", caught,
		ROW_DETECT_TRIALS, 100.0 * caught / ROW_DETECT_TRIALS);
	ck_assert_uint_ge(caught * 1000u, ROW_DETECT_MIN_PERMILLE * ROW_DETECT_TRIALS);
}
END_TEST

START_TEST(memory_does_not_grow_with_events)
{
	struct mallinfo2 before, after;
	uint64_t now = now_mono_ns();

	agg_proc_watch(fx.a, 30, 1, SHM_WATCH_CUDA, "a", 1);
	agg_gpu_alloc(fx.a, 30, 0, 1);
	for (int i = 0; i < 1000; i++)
		agg_latency(fx.a, 30, SHM_FAMILY_CUDA_LAUNCH, now, (uint64_t)i * 997);
	/* Twice: the reader keeps the last good snapshot beside the one it takes. */
	publish_and_read();
	publish_and_read();
	before = mallinfo2();
	for (int i = 0; i < 300000; i++) {
		agg_latency(fx.a, 30, SHM_FAMILY_CUDA_LAUNCH, now, (uint64_t)i * 7919 % 100000000);
		agg_gpu_alloc(fx.a, 30, 0, 4096);
		agg_gpu_free(fx.a, 30, 0, 4096);
		agg_nccl_call(fx.a, SHM_NCCL_ALL_REDUCE, 1, (uint64_t)i, 0, now);
	}
	publish_and_read();
	after = mallinfo2();
	ck_assert_msg(after.uordblks <= before.uordblks + 64 * 1024,
		      "heap grew from %zu to %zu bytes", before.uordblks, after.uordblks);
	ck_assert_uint_eq(find_proc(30)->lat[SHM_FAMILY_CUDA_LAUNCH].count, 301000);
}
END_TEST

Suite *agg_suite(void);
Suite *agg_suite(void)
{
	Suite *s = suite_create("agg");
	TCase *tc = tcase_create("ground_truth");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, memory_current_and_peak_are_exact);
	tcase_add_test(tc, open_states_show_as_they_last_and_never_go_back);
	tcase_add_test(tc, frees_never_take_memory_below_zero);
	tcase_add_test(tc, failed_allocations_are_counted_not_added);
	tcase_add_test(tc, events_of_unwatched_pids_are_ignored);
	tcase_add_test(tc, process_fields_and_reasons_accumulate);
	tcase_add_test(tc, a_reused_pid_starts_afresh);
	tcase_add_test(tc, eviction_removes_memory_rows_and_comms);
	tcase_add_test(tc, full_tables_count_overflows_and_publish_them);
	tcase_add_test(tc, recent_row_starts_afresh_after_exec);
	tcase_add_test(tc, comm_made_again_continues_its_row);
	tcase_add_test(tc, nccl_ops_count_calls_bytes_errors_and_latencies);
	tcase_add_test(tc, latency_counts_sums_and_buckets_are_exact);
	tcase_add_test(tc, latency_batches_publish_like_single_samples);
	tcase_add_test(tc, publish_stamps_heartbeat_stats_and_scenario);
	tcase_add_test(tc, memory_does_not_grow_with_events);
	tcase_add_test(tc, scribbled_segment_heals_at_next_publish);
	tcase_add_test(tc, random_changes_to_live_rows_are_detected);
	suite_add_tcase(s, tc);
	return s;
}
