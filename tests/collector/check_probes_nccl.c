/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NCCL through the real probes, against the fake libnccl and libcudart:
 * calls, bytes (count x datatype size) and errors per op exactly, call
 * durations and waits within their bounds; communicators named by NCCL's
 * commHash of the uniqueId read from the stack, with rank and size; waits
 * that follow streams and events across threads (DDP), groups (all_to_all
 * of 16 ranks), CUDA graph capture, splits, and bad arguments counted.
 * Needs root (BPF).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg/hist.h"
#include "collector/agg/nccl_hash.h"
#include "tests/support/testutil.h"
#include "tests/collector/tu_probes.h"

#define CALL_NS		300000ull	/* each fake NCCL call */
#define SYNC_NS		3000000ull	/* each fake synchronisation */

struct op_want {
	uint32_t op;
	const char *series;
	uint64_t calls, bytes, errors, waits;
};

static const struct op_want want[] = {
	{ SHM_NCCL_ALL_REDUCE, "nccl_allreduce", 6, 1000 * 4 * 5, 1, 5 },
	{ SHM_NCCL_ALL_GATHER, "nccl_allgather", 3, 10 * 8 * 3, 0, 3 },
	{ SHM_NCCL_REDUCE_SCATTER, "nccl_reducescatter", 2, 7 * 2 * 2, 0, 2 },
	{ SHM_NCCL_BROADCAST, "nccl_broadcast", 4, 100 * 1 * 4, 0, 4 },
	{ SHM_NCCL_REDUCE, "nccl_reduce", 1, 3 * 8 * 1, 0, 1 },
	{ SHM_NCCL_SEND, "nccl_send", 2, 5 * 2 * 2, 0, 2 },
	{ SHM_NCCL_RECV, "nccl_recv", 3, 9 * 4 * 3, 0, 3 },
	{ SHM_NCCL_ALL_TO_ALL, "nccl_alltoall", 2, 6 * 8 * 2, 0, 2 },
	{ SHM_NCCL_GATHER, "nccl_gather", 1, 11 * 2 * 1, 0, 1 },
	{ SHM_NCCL_SCATTER, "nccl_scatter", 2, 13 * 4 * 2, 0, 2 },
};

static int all_in(const struct tp_collector *c)
{
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct shm_nccl_op *o = tp_nccl_op(c, want[i].op);

		if (!o || o->calls < want[i].calls || o->wait.count < want[i].waits)
			return 0;
	}
	return 1;
}

START_TEST(test_nccl_ops_bytes_durations_waits_comms)
{
	struct tp_collector c;
	struct tp_workload w;
	char zw[512], rt[512], nc[512], lib_rt[600], lib_nccl[600], ns[32];
	uint64_t own[16][3], sync[3], span[3];
	uint32_t ncomms;
	const struct shm_nccl_comm *comms;
	int ok = 0, ranks_seen = 0;
	uint8_t id_5a[NCCL_HASH_ID_BYTES];

	memset(id_5a, 0x5a, sizeof(id_5a));
	if (tu_skip_unless_root("test_nccl_ops_bytes_durations_waits_comms"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	snprintf(lib_rt, sizeof(lib_rt), "lib:%s", tp_fake(rt, sizeof(rt), "libcudart.so"));
	snprintf(lib_nccl, sizeof(lib_nccl), "lib:%s", tp_fake(nc, sizeof(nc), "libnccl.so.2"));
	snprintf(ns, sizeof(ns), "%llu", CALL_NS);
	setenv("FAKE_NCCL_NS", ns, 1);
	{
		/* The collectives go to the stream the synchronisations wait for. */
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), lib_rt, lib_nccl,
			"dev:2", "commrank:8:3", "commconfig:4:1", "commall:4", "stream:3000000",
			"wait", "nccl:allreduce:1000:7:5", "sync:3000000",
			"nccl:allgather:10:4:3", "nccl:reducescatter:7:6:2", "cusync:3000000",
			"nccl:broadcast:100:1:4", "nccl:reduce:3:8:1", "sync:3000000",
			"nccl:send:5:9:2", "nccl:recv:9:2:3", "cusync:3000000",
			"nccl:allreduce:57005:7:1", "sync:3000000",
			"nccl:alltoall:6:4:2", "nccl:gather:11:6:1", "nccl:scatter:13:7:2",
			"sync:3000000",
			NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	/* Its collectives only once the collector has its row in the window. */
	ck_assert_int_eq(tp_workload_expect(&w, "WAIT", 30000), 0);
	for (int i = 0; i < 300 && !(tp_snapshot(&c) == 0 && tp_proc(&c, (uint32_t)w.pid)); i++)
		tu_sleep_ms(50);
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	tp_workload_go(&w);
	/* The workload prints its series in first-use order. */
	ck_assert_int_eq(tp_workload_series(&w, "nccl_allreduce", &own[0][0], &own[0][1], &own[0][2], 30000), 0);
	ck_assert_int_eq(tp_workload_series(&w, "sync", &sync[0], &sync[1], &sync[2], 30000), 0);
	ck_assert_int_eq(tp_workload_series(&w, "since_sync", &span[0], &span[1], &span[2], 30000), 0);
	for (size_t i = 1; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_int_eq(tp_workload_series(&w, want[i].series, &own[i][0], &own[i][1],
						    &own[i][2], 30000), 0);
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 30000), 0);

	for (int i = 0; i < 300 && !ok; i++) {
		tu_sleep_ms(100);
		ok = tp_snapshot(&c) == 0 && all_in(&c);
	}
	ck_assert_msg(ok, "NCCL calls missing after 30 s");
	ck_assert_int_eq(tp_wait_publish(&c), 0);

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct shm_nccl_op *o = tp_nccl_op(&c, want[i].op);
		double lo = (double)CALL_NS * (1.0 - HIST_MAX_REL_ERROR);
		double e = 1.0 + HIST_MAX_REL_ERROR;
		/* At most from the end of the synchronisation before to the end of the next. */
		double wait_hi = (double)span[2] * e;

		ck_assert_uint_eq(own[i][0], want[i].calls);
		ck_assert_uint_eq(o->calls, want[i].calls);
		ck_assert_uint_eq(o->bytes, want[i].bytes);
		ck_assert_uint_eq(o->errors, want[i].errors);
		ck_assert_uint_eq(o->duration.count, want[i].calls);
		ck_assert_uint_eq(o->wait.count, want[i].waits);
		fprintf(stderr, "%s: duration p50 %llu (own %llu), wait p50 %llu (<= %.0f)\n",
			want[i].series, (unsigned long long)o->duration.window_p50_ns,
			(unsigned long long)own[i][1], (unsigned long long)o->wait.window_p50_ns,
			wait_hi);
		/* Duration: floor the injected time, ceiling the caller's own timing. */
		ck_assert(o->duration.window_p50_ns >= lo);
		ck_assert(o->duration.window_p50_ns <= own[i][1] * e);
		ck_assert(o->duration.window_max_ns >= lo);
		/*
		 * Wait: at least the synchronisation that ended it; at most from
		 * the end of the one before (every wait ends at the next one).
		 */
		ck_assert(o->wait.window_p50_ns >= (double)SYNC_NS * (1.0 - HIST_MAX_REL_ERROR));
		ck_assert(o->wait.window_max_ns <= wait_hi);
	}

	/*
	 * The process's time waiting on collectives: each of the 5 segments
	 * waits through its synchronisation, at most from its first call to
	 * the synchronisation's end; collectives pending together count once.
	 */
	{
		uint32_t n;
		const struct shm_proc_recent *r = shm_snapshot_rows(&c.snap, SHM_TABLE_PROC_RECENT, &n);
		uint64_t waited = 0;

		for (uint32_t i = 0; i < n; i++)
			if (r[i].pid == (uint32_t)w.pid)
				waited = r[i].collective_wait_ns;
		fprintf(stderr, "collective wait of the process: %llu ns\n",
			(unsigned long long)waited);
		ck_assert_uint_ge(waited, 5 * SYNC_NS);
		ck_assert_uint_le(waited, (uint64_t)(5 * (double)span[2] * (1.0 + HIST_MAX_REL_ERROR)));
	}

	/*
	 * Communicators: rank 3 of 8 and 1 of 4 on device 2, both from the
	 * uniqueId of 128 bytes 0x5a, read from the stack: NCCL's commHash of
	 * it; InitAll's 0..3 of 4 share one local id.
	 */
	comms = shm_snapshot_nccl_comms(&c.snap, &ncomms);
	for (uint32_t i = 0; i < ncomms; i++) {
		const struct shm_nccl_comm *m = &comms[i];

		if (m->pid != (uint32_t)w.pid)
			continue;
		ck_assert(m->comm_id != 0);
		if (m->origin == SHM_NCCL_ORIGIN_INIT_RANK) {
			ck_assert_uint_eq(m->comm_id, nccl_hash_unique_id(id_5a));
			ck_assert_uint_eq(m->flags, 0);
		} else {
			ck_assert_uint_eq(m->origin, SHM_NCCL_ORIGIN_INIT_ALL);
			ck_assert_uint_eq(m->flags, SHM_NCCL_COMM_LOCAL_ID);
		}
		if (m->nranks == 8) {
			ck_assert_int_eq(m->rank, 3);
			ck_assert_uint_eq(m->gpu_id, 2);
			ranks_seen |= 1 << 8;
		} else if (m->nranks == 4 && m->gpu_id == 2 && m->rank == 1 && !(ranks_seen & (1 << 9))) {
			ranks_seen |= 1 << 9;
		} else {
			ck_assert_int_eq(m->nranks, 4);
			ck_assert_uint_eq(m->gpu_id, (uint32_t)m->rank);
			ranks_seen |= 1 << m->rank;
		}
	}
	ck_assert_msg(ranks_seen == 0x30f, "communicators seen: %#x", ranks_seen);

	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * Starts zw_cuda over the fake runtime and NCCL with ops, and waits for
 * its DONE, keeping what it printed before in out (len bytes) unless NULL.
 */
static void start_nccl_workload_into(struct tp_workload *w, const char *const *ops, char *out,
				     size_t len)
{
	static char zw[512], rt[512], nc[512], lib_rt[600], lib_nccl[600];
	char *argv[64];
	int n = 0;

	snprintf(lib_rt, sizeof(lib_rt), "lib:%s", tp_fake(rt, sizeof(rt), "libcudart.so"));
	snprintf(lib_nccl, sizeof(lib_nccl), "lib:%s", tp_fake(nc, sizeof(nc), "libnccl.so.2"));
	setenv("FAKE_NCCL_NS", "0", 1);
	argv[n++] = (char *)tp_zw_cuda(zw, sizeof(zw));
	argv[n++] = lib_rt;
	argv[n++] = lib_nccl;
	for (; *ops && n < 63; ops++)
		argv[n++] = (char *)*ops;
	argv[n] = NULL;
	ck_assert_int_eq(tp_workload_start(w, argv), 0);
	if (out)
		ck_assert_int_eq(tp_workload_collect(w, "DONE", out, len, 30000), 0);
	else
		ck_assert_int_eq(tp_workload_expect(w, "DONE", 30000), 0);
}

static void start_nccl_workload(struct tp_workload *w, const char *const *ops)
{
	start_nccl_workload_into(w, ops, NULL, 0);
}

/* The row of pid's communicator with rank (by_size 0) or size (1) v, in the last snapshot. */
static const struct shm_nccl_comm *comm_row(const struct tp_collector *c, uint32_t pid,
					    int by_size, int32_t v)
{
	uint32_t n;
	const struct shm_nccl_comm *m = shm_snapshot_nccl_comms(&c->snap, &n);

	for (uint32_t i = 0; i < n; i++)
		if (m[i].pid == pid && (by_size ? m[i].nranks : m[i].rank) == v)
			return &m[i];
	return NULL;
}

static const struct shm_nccl_comm *comm_of(const struct tp_collector *c, uint32_t pid,
					   int32_t rank)
{
	return comm_row(c, pid, 0, rank);
}

/* Waits until the row of (pid, rank) has seen `waits` waits. */
static const struct shm_nccl_comm *wait_comm(struct tp_collector *c, uint32_t pid, int32_t rank,
					     uint64_t waits)
{
	const struct shm_nccl_comm *m = NULL;

	for (int i = 0; i < 300; i++) {
		tu_sleep_ms(100);
		if (tp_snapshot(c) == 0 && (m = comm_of(c, pid, rank)) != NULL &&
		    m->wait.count >= waits)
			break;
	}
	ck_assert_int_eq(tp_wait_publish(c), 0);
	return comm_of(c, pid, rank);
}

static void assert_nothing_lost(const struct tp_collector *c)
{
	const struct shm_stats *st = &c->snap.hdr->stats;

	ck_assert_uint_eq(st->nccl_pending_dropped, 0);
	ck_assert_uint_eq(st->nccl_pending_ended, 0);
	ck_assert_uint_eq(st->nccl_state_evicted, 0);
	ck_assert_uint_eq(st->nccl_unknown_comm, 0);
	ck_assert_uint_eq(st->nccl_id_unreadable, 0);
}

/*
 * PyTorch DDP's pattern: the all-reduce is queued, and its end event
 * recorded on the NCCL stream, by one thread (autograd's); another thread
 * makes the compute stream wait on the event and synchronises it 20 ms
 * later; the watchdog thread queries the next one's event 10 ms later.
 * Neither issuing thread ever synchronises.
 */
START_TEST(test_ddp_waits_follow_events_across_threads)
{
	static const char *const ops[] = {
		"commrank:2:1", "stream:5000",
		"onthread:nccl:allreduce:1024:7:1", "onthread:record:77",
		"waitev:6000:77", "sleep:20", "sync:6000",
		"onthread:nccl:allreduce:1024:7:1", "onthread:record:78",
		"sleep:10", "onthread:evquery:78", NULL,
	};
	const struct shm_nccl_comm *m;
	const struct shm_nccl_op *o;
	struct tp_collector c;
	struct tp_workload w;
	uint8_t id[NCCL_HASH_ID_BYTES];

	if (tu_skip_unless_root("test_ddp_waits_follow_events_across_threads"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	start_nccl_workload(&w, ops);
	m = wait_comm(&c, (uint32_t)w.pid, 1, 2);
	ck_assert_ptr_nonnull(m);
	memset(id, 0x5a, sizeof(id));
	ck_assert_uint_eq(m->comm_id, nccl_hash_unique_id(id));
	ck_assert_int_eq(m->nranks, 2);
	ck_assert_uint_eq(m->calls, 2);
	ck_assert_uint_eq(m->bytes, 2 * 1024 * 4);
	ck_assert_uint_eq(m->wait.count, 2);
	ck_assert_uint_eq(m->pending, 0);
	fprintf(stderr, "ddp: waits p50 %llu max %llu ns\n",
		(unsigned long long)m->wait.window_p50_ns,
		(unsigned long long)m->wait.window_max_ns);
	/* One waited 20 ms of sleep and more, the other 10 ms and more. */
	ck_assert(m->wait.window_max_ns >= 20 * 1000000ull * (1.0 - HIST_MAX_REL_ERROR));
	ck_assert(m->wait.window_p50_ns >= 10 * 1000000ull * (1.0 - HIST_MAX_REL_ERROR));
	ck_assert(m->wait.sum_ns >= 30 * 1000000ull);
	o = tp_nccl_op(&c, SHM_NCCL_ALL_REDUCE);
	ck_assert_uint_eq(o->wait.count, 2);
	assert_nothing_lost(&c);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * all_to_all across 16 ranks, as PyTorch issues it: one group of 16 sends
 * and 16 receives, then a synchronisation.  Every call is waited for, none
 * is lost.
 */
START_TEST(test_all_to_all_of_16_ranks_loses_nothing)
{
	static const char *const ops[] = {
		"commrank:16:5", "stream:2000000", "group",
		"nccl:send:256:7:16", "nccl:recv:256:7:16", "groupend", "sync:2000000",
		"group", "nccl:send:256:7:16", "nccl:recv:256:7:16", "groupend", "sync:2000000",
		NULL,
	};
	const struct shm_nccl_comm *m;
	struct tp_collector c;
	struct tp_workload w;

	if (tu_skip_unless_root("test_all_to_all_of_16_ranks_loses_nothing"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	start_nccl_workload(&w, ops);
	m = wait_comm(&c, (uint32_t)w.pid, 5, 64);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->calls, 64);
	ck_assert_uint_eq(m->bytes, 64 * 256 * 4);
	ck_assert_uint_eq(m->wait.count, 64);
	ck_assert_uint_eq(m->pending, 0);
	/* From the group's end to the 2 ms synchronisation's return. */
	ck_assert(m->wait.window_p50_ns >= 2000000ull * (1.0 - HIST_MAX_REL_ERROR));
	ck_assert_uint_eq(tp_nccl_op(&c, SHM_NCCL_SEND)->wait.count, 32);
	ck_assert_uint_eq(tp_nccl_op(&c, SHM_NCCL_RECV)->wait.count, 32);
	ck_assert_uint_eq(c.snap.hdr->stats.events_dropped, 0);
	assert_nothing_lost(&c);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * A collective captured into a CUDA graph is counted, not waited for (its
 * replays make no NCCL call); splits and shrinks get NCCL's child hash and
 * commAlloc's rank; ncclInProgress is queued, not an error; an unknown
 * datatype and a negative count are counted with no bytes.
 */
START_TEST(test_captured_split_in_progress_and_bad_arguments)
{
	static const char *const ops[] = {
		"commrank:4:1", "stream:1000",
		"capture:1000", "nccl:allreduce:64:7:1", "endcapture:1000", "sync:1000",
		"nccl:allreduce:48879:7:1", "sync:1000",
		"nccl:allreduce:10:99:1", "nccl:allreduce:18446744073709551615:7:1", "sync:1000",
		"split:-1:0", "split:5:2", "nccl:bcast:8:0:1", "sync:1000", "shrink",
		"scalable:4:3", NULL,
	};
	const struct shm_nccl_comm *m;
	const struct shm_nccl_op *o;
	struct tp_collector c;
	struct tp_workload w;
	uint8_t id[NCCL_HASH_ID_BYTES];
	uint64_t parent, child;

	if (tu_skip_unless_root("test_captured_split_in_progress_and_bad_arguments"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	start_nccl_workload(&w, ops);
	m = wait_comm(&c, (uint32_t)w.pid, 1, 3);
	memset(id, 0x5a, sizeof(id));
	parent = nccl_hash_unique_id(id);
	child = nccl_hash_child(parent, 2, 5);
	for (int i = 0; i < 300 && !(comm_of(&c, (uint32_t)w.pid, 3) &&
				    comm_of(&c, (uint32_t)w.pid, 2)); i++) {
		tu_sleep_ms(100);
		tp_snapshot(&c);
	}
	/* The parent: captured once, in progress once, two bad calls: 3 waits. */
	m = comm_of(&c, (uint32_t)w.pid, 1);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->comm_id, parent);
	ck_assert_uint_eq(m->calls, 3);
	ck_assert_uint_eq(m->wait.count, 3);
	o = tp_nccl_op(&c, SHM_NCCL_ALL_REDUCE);
	ck_assert_uint_eq(o->calls, 4);
	ck_assert_uint_eq(o->errors, 0);
	ck_assert_uint_eq(o->bytes, 64 * 4 + 48879 * 4);
	ck_assert_uint_eq(c.snap.hdr->stats.nccl_captured, 1);
	ck_assert_uint_eq(c.snap.hdr->stats.nccl_bad_args, 2);
	/* Split 2 of the parent (the first had no colour), colour 5, key 2: rank 2 of 4. */
	m = comm_of(&c, (uint32_t)w.pid, 2);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->origin, SHM_NCCL_ORIGIN_SPLIT);
	ck_assert_uint_eq(m->comm_id, child);
	ck_assert_uint_eq(m->parent_id, parent);
	ck_assert_int_eq(m->nranks, 4);
	ck_assert_uint_eq(m->wait.count, 1);
	/* Shrunk from the child; the scalable init hashes commIds[0]. */
	m = comm_of(&c, (uint32_t)w.pid, 3);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->origin, SHM_NCCL_ORIGIN_SCALABLE);
	ck_assert_uint_eq(m->comm_id, parent);
	{
		uint32_t n;
		const struct shm_nccl_comm *all = shm_snapshot_nccl_comms(&c.snap, &n);
		int shrunk = 0;

		for (uint32_t i = 0; i < n; i++)
			if (all[i].pid == (uint32_t)w.pid && all[i].origin == SHM_NCCL_ORIGIN_SHRINK) {
				ck_assert_uint_eq(all[i].comm_id, nccl_hash_child(child, 0, 0));
				ck_assert_uint_eq(all[i].parent_id, child);
				shrunk++;
			}
		ck_assert_int_eq(shrunk, 1);
	}
	assert_nothing_lost(&c);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * A communicator's life: 30 all-reduces on a 2-rank communicator and a
 * synchronisation, then one more before its finalize and one before its
 * destroy (each flushed by it); a 4-rank one made next at the handle the
 * allocator gave back, 50 all-reduces that a cudaStreamQuery finds done,
 * one more left pending, then aborted.  Two rows, each with its own
 * calls, size and commHash; only the aborted call is given up, not left
 * stalled.
 */
START_TEST(test_communicators_that_end_and_reuse_a_handle)
{
	static const char *const ops[] = {
		"commrank:2:0", "stream:5000", "nccl:allreduce:1024:7:30", "sync:5000",
		"nccl:allreduce:1024:7:1", "finalize", "nccl:allreduce:1024:7:1", "destroy",
		"commid:4:1:7", "nccl:allreduce:1024:7:50", "squery:5000",
		"nccl:allreduce:1024:7:1", "abort", NULL,
	};
	const struct shm_nccl_comm *first, *second;
	struct tp_collector c;
	struct tp_workload w;
	uint8_t id[NCCL_HASH_ID_BYTES];
	char out[8192], *line, h1[32] = "", h2[32] = "";
	const struct shm_stats *st;

	if (tu_skip_unless_root("test_communicators_that_end_and_reuse_a_handle"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	start_nccl_workload_into(&w, ops, out, sizeof(out));
	line = strstr(out, "COMM ");
	ck_assert_ptr_nonnull(line);
	sscanf(line, "COMM %31s", h1);
	line = strstr(line + 1, "COMM ");
	ck_assert_ptr_nonnull(line);
	sscanf(line, "COMM %31s", h2);
	/* The scenario needs the handle reused: glibc gives the freed chunk back. */
	ck_assert_msg(strcmp(h1, h2) == 0, "handles %s and %s: not reused", h1, h2);
	/* The abort comes after the last wait: both, in one snapshot. */
	for (int i = 0; i < 300; i++) {
		second = wait_comm(&c, (uint32_t)w.pid, 1, 50);
		if (second && c.snap.hdr->stats.nccl_pending_ended >= 1)
			break;
	}
	first = comm_row(&c, (uint32_t)w.pid, 1, 2);
	second = comm_row(&c, (uint32_t)w.pid, 1, 4);
	ck_assert_ptr_nonnull(first);
	ck_assert_ptr_nonnull(second);
	memset(id, 0x5a, sizeof(id));
	ck_assert_uint_eq(first->comm_id, nccl_hash_unique_id(id));
	ck_assert_int_eq(first->rank, 0);
	/* The two calls its finalize and destroy flushed are done, untimed. */
	ck_assert_uint_eq(first->calls, 32);
	ck_assert_uint_eq(first->wait.count, 30);
	memset(id, 7, sizeof(id));
	ck_assert_uint_eq(second->comm_id, nccl_hash_unique_id(id));
	ck_assert_int_eq(second->rank, 1);
	ck_assert_uint_eq(second->calls, 51);
	/* Ended by the query that found their stream done. */
	ck_assert_uint_eq(second->wait.count, 50);
	ck_assert_uint_eq(tp_nccl_op(&c, SHM_NCCL_ALL_REDUCE)->wait.count, 80);
	ck_assert_uint_eq(second->pending, 0);
	ck_assert_uint_eq(second->stalled_ns, 0);
	st = &c.snap.hdr->stats;
	fprintf(stderr, "communicators on one handle (%s): calls %llu and %llu, %llu given up "
		"with the abort\n", h1, (unsigned long long)first->calls,
		(unsigned long long)second->calls, (unsigned long long)st->nccl_pending_ended);
	ck_assert_uint_eq(st->nccl_pending_ended, 1);
	ck_assert_uint_eq(st->nccl_unknown_comm, 0);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * A non-blocking split (TORCH_NCCL_USE_COMM_NONBLOCKING=1): ncclCommSplit
 * returns ncclInProgress with no child yet; NCCL's async job makes it on
 * another thread 20 ms later.  Its collectives are on a known
 * communicator with NCCL's child hash.
 */
START_TEST(test_non_blocking_split_child_is_known)
{
	static const char *const ops[] = {
		"commrank:4:1", "stream:1000", "splitnb:5:2", "nccl:allreduce:8:7:3", "sync:1000",
		NULL,
	};
	const struct shm_nccl_comm *m;
	struct tp_collector c;
	struct tp_workload w;
	uint8_t id[NCCL_HASH_ID_BYTES];

	if (tu_skip_unless_root("test_non_blocking_split_child_is_known"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	start_nccl_workload(&w, ops);
	m = wait_comm(&c, (uint32_t)w.pid, 2, 3);
	ck_assert_ptr_nonnull(m);
	memset(id, 0x5a, sizeof(id));
	ck_assert_uint_eq(m->comm_id, nccl_hash_child(nccl_hash_unique_id(id), 1, 5));
	ck_assert_uint_eq(m->parent_id, nccl_hash_unique_id(id));
	ck_assert_int_eq(m->nranks, 4);
	ck_assert_uint_eq(m->calls, 3);
	ck_assert_uint_eq(m->wait.count, 3);
	assert_nothing_lost(&c);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/* pid's communicators in the last snapshot, on stderr. */
/*
 * GPU-side collective time from Zernel's NCCL profiler plugin: two ranks
 * of one communicator, NCCL told to load the plugin, each collective
 * taking 20 ms on rank 0's GPU and 5 ms on rank 1's (the fake NCCL's
 * kernel-channel events, reported from a proxy thread of their own while
 * the host goes on, which the plugin turns into one span each).  Rank 0's
 * NCCL uses the plugin's interface v5 (NCCL 2.28), rank 1's v4 (2.27).
 * Each rank's row has every collective's GPU time, exactly, and nothing
 * is counted on an unknown communicator.
 */
#define GPU_SPANS	6

START_TEST(test_gpu_time_per_rank_from_the_profiler_plugin)
{
	static const char *const ops[2][16] = {
		{ "commrank:2:0", "stream:5000", "nccl:allreduce:1024:7:1", "nccl:allreduce:1024:7:1",
		  "nccl:allreduce:1024:7:1", "nccl:allreduce:1024:7:1", "nccl:bcast:1024:7:1",
		  "nccl:bcast:1024:7:1", "sync:0", "nccl:send:64:7:1", NULL },
		{ "commrank:2:1", "stream:5000", "nccl:allreduce:1024:7:1", "nccl:allreduce:1024:7:1",
		  "nccl:allreduce:1024:7:1", "nccl:allreduce:1024:7:1", "nccl:bcast:1024:7:1",
		  "nccl:bcast:1024:7:1", "sync:0", "nccl:send:64:7:1", NULL },
	};
	static const uint64_t gpu_ns[2] = { 20000000, 5000000 };
	char plugin[512], rt[512], drv[512], nc[512], ns[32];
	const char *extra[] = {
		"--lib", tp_fake(rt, sizeof(rt), "libcudart.so"),
		"--lib", tp_fake(drv, sizeof(drv), "libcuda.so.1"),
		"--lib", tp_fake(nc, sizeof(nc), "libnccl.so.2"),
		"--lib", tu_build_path(plugin, sizeof(plugin), "libzernel-nccl-profiler.so"),
		NULL,
	};
	const struct shm_nccl_comm *m = NULL;
	struct tp_collector c;
	struct tp_workload w[2];
	int ok = 0;

	if (tu_skip_unless_root("test_gpu_time_per_rank_from_the_profiler_plugin"))
		return;
	ck_assert_msg(tp_collector_start(&c, extra, 4) == 0, "collector did not start, see %s",
		      c.log);
	setenv("NCCL_PROFILER_PLUGIN", plugin, 1);
	for (int r = 0; r < 2; r++) {
		snprintf(ns, sizeof(ns), "%llu", (unsigned long long)gpu_ns[r]);
		setenv("FAKE_NCCL_GPU_NS", ns, 1);
		setenv("FAKE_NCCL_PROFILER_VERSION", r ? "4" : "5", 1);
		start_nccl_workload(&w[r], ops[r]);
	}
	unsetenv("FAKE_NCCL_GPU_NS");
	unsetenv("FAKE_NCCL_PROFILER_VERSION");
	unsetenv("NCCL_PROFILER_PLUGIN");
	for (int i = 0; i < 300 && !ok; i++) {
		tu_sleep_ms(100);
		ok = tp_snapshot(&c) == 0;
		for (int r = 0; r < 2 && ok; r++)
			ok = (m = comm_of(&c, (uint32_t)w[r].pid, r)) != NULL &&
			     m->gpu.count >= GPU_SPANS;
	}
	ck_assert_msg(ok, "the GPU spans did not all arrive (see %s)", c.log);
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	for (int r = 0; r < 2; r++) {
		m = comm_of(&c, (uint32_t)w[r].pid, r);
		ck_assert_ptr_nonnull(m);
		fprintf(stderr, "rank %d: %llu GPU spans, sum %llu ns, p50 %llu ns\n", r,
			(unsigned long long)m->gpu.count, (unsigned long long)m->gpu.sum_ns,
			(unsigned long long)m->gpu.window_p50_ns);
		/* Collectives only: the send is point-to-point, which the plugin leaves out. */
		ck_assert_uint_eq(m->gpu.count, GPU_SPANS);
		ck_assert_uint_eq(m->gpu.sum_ns, GPU_SPANS * gpu_ns[r]);
		ck_assert(m->gpu.window_p50_ns >= gpu_ns[r] * (1.0 - HIST_MAX_REL_ERROR) &&
			  m->gpu.window_p50_ns <= gpu_ns[r] * (1.0 + HIST_MAX_REL_ERROR));
		ck_assert_uint_eq(m->calls, GPU_SPANS + 1);
	}
	assert_nothing_lost(&c);
	for (int r = 0; r < 2; r++)
		tp_workload_finish(&w[r]);
	tp_collector_stop(&c);
}
END_TEST

static void print_comms(const struct tp_collector *c, uint32_t pid)
{
	uint32_t n;
	const struct shm_nccl_comm *m = shm_snapshot_nccl_comms(&c->snap, &n);

	for (uint32_t i = 0; i < n; i++)
		if (m[i].pid == pid)
			fprintf(stderr, "comm %#llx (parent %#llx): rank %d of %d, %llu calls, "
				"flags %#x\n", (unsigned long long)m[i].comm_id,
				(unsigned long long)m[i].parent_id, m[i].rank, m[i].nranks,
				(unsigned long long)m[i].calls, m[i].flags);
	fprintf(stderr, "calls on unknown communicators: %llu\n",
		(unsigned long long)c->snap.hdr->stats.nccl_unknown_comm);
}

/* pid's communicator of NCCL's id comm_id in the last snapshot, or NULL. */
static const struct shm_nccl_comm *comm_by_id(const struct tp_collector *c, uint32_t pid,
					      uint64_t comm_id)
{
	uint32_t n;
	const struct shm_nccl_comm *m = shm_snapshot_nccl_comms(&c->snap, &n);

	for (uint32_t i = 0; i < n; i++)
		if (m[i].pid == pid && m[i].comm_id == comm_id)
			return &m[i];
	return NULL;
}

/*
 * Two non-blocking splits of one communicator in flight at once: the fake
 * NCCL's async jobs make the second's child 20 ms after its call and the
 * first's 40 ms after, so the children reach commAlloc in the other
 * order.  Each is still its own split's (NCCL's hash of its split count
 * and colour), with its own calls: 2 on colour 5's, 3 on colour 6's.
 */
START_TEST(test_concurrent_non_blocking_splits_are_told_apart)
{
	static const char *const ops[] = {
		"commrank:4:1", "stream:1000", "splitnb2:5:6:2", "sync:1000", NULL,
	};
	const struct shm_nccl_comm *first = NULL, *second = NULL;
	uint64_t parent, first_id, second_id;
	uint8_t id[NCCL_HASH_ID_BYTES];
	struct tp_collector c;
	struct tp_workload w;

	if (tu_skip_unless_root("test_concurrent_non_blocking_splits_are_told_apart"))
		return;
	memset(id, 0x5a, sizeof(id));
	parent = nccl_hash_unique_id(id);
	first_id = nccl_hash_child(parent, 1, 5);
	second_id = nccl_hash_child(parent, 2, 6);
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	start_nccl_workload(&w, ops);
	for (int i = 0; i < 300; i++) {
		tu_sleep_ms(100);
		if (tp_snapshot(&c) == 0 && (first = comm_by_id(&c, (uint32_t)w.pid, first_id)) &&
		    (second = comm_by_id(&c, (uint32_t)w.pid, second_id)) &&
		    first->calls + second->calls >= 5)
			break;
	}
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	first = comm_by_id(&c, (uint32_t)w.pid, first_id);
	second = comm_by_id(&c, (uint32_t)w.pid, second_id);
	print_comms(&c, (uint32_t)w.pid);
	ck_assert_msg(first && second, "no row of NCCL's id for each child (see %s)", c.log);
	ck_assert_uint_eq(first->parent_id, parent);
	ck_assert_uint_eq(second->parent_id, parent);
	ck_assert_uint_eq(first->calls, 2);
	ck_assert_uint_eq(second->calls, 3);
	assert_nothing_lost(&c);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

Suite *probes_nccl_suite(void);
Suite *probes_nccl_suite(void)
{
	Suite *s = suite_create("probes_nccl");
	TCase *tc = tcase_create("root");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_nccl_ops_bytes_durations_waits_comms);
	tcase_add_test(tc, test_ddp_waits_follow_events_across_threads);
	tcase_add_test(tc, test_all_to_all_of_16_ranks_loses_nothing);
	tcase_add_test(tc, test_captured_split_in_progress_and_bad_arguments);
	tcase_add_test(tc, test_communicators_that_end_and_reuse_a_handle);
	tcase_add_test(tc, test_non_blocking_split_child_is_known);
	tcase_add_test(tc, test_concurrent_non_blocking_splits_are_told_apart);
	tcase_add_test(tc, test_gpu_time_per_rank_from_the_profiler_plugin);
	suite_add_tcase(s, tc);
	return s;
}
