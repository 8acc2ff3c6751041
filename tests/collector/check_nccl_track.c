/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NCCL waits that follow streams, through the decoder with the records the
 * probes send: which host-blocking call ends which collective's wait, by
 * how much, per op and per (communicator, rank); communicator identity
 * (NCCL's commHash, splits, commAlloc's rank); and the bounds, each loss
 * counted with its reason.  Times are exact: the records carry them.
 * Unprivileged.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "bpf/probe_abi.h"
#include "collector/agg/agg.h"
#include "collector/agg/nccl_hash.h"
#include "collector/probes/nccl/nccl_track.h"
#include "collector/probes/decode.h"
#include "common/util.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

#define MS		1000000ull
#define PID		40
#define COMM		0x7000ull	/* the ncclComm_t */
#define NCCL_STREAM	0x5100ull
#define COMPUTE_STREAM	0x5200ull
#define END_EVENT	0xe100ull

static struct {
	char name[64];
	struct shm_writer w;
	struct agg *a;
	struct decode d;
	struct shm_reader r;
	struct shm_snapshot snap;
	uint64_t t0;
	uint8_t id[ZN_ID_BYTES];
} fx;

static void setup(void)
{
	struct shm_writer_opts wo;
	struct agg_opts ao;

	memset(&fx, 0, sizeof(fx));
	memset(&ao, 0, sizeof(ao));
	shm_capacity_default(&ao.cap);
	ao.window_ns = 600 * NSEC_PER_SEC;
	fx.a = agg_new(&ao);
	ck_assert_ptr_nonnull(fx.a);
	ck_assert_int_eq(decode_init(&fx.d, fx.a, NULL), 0);
	tu_unique_shm_name(fx.name, sizeof(fx.name));
	tu_shm_opts(&wo, fx.name, ao.cap);
	wo.window_ns = ao.window_ns;	/* one window, as the collector gives both */
	ck_assert_int_eq(shm_writer_create(&fx.w, &wo), 0);
	shm_reader_init(&fx.r, fx.name);
	fx.t0 = now_mono_ns();
	for (size_t i = 0; i < sizeof(fx.id); i++)
		fx.id[i] = (uint8_t)(i * 7 + 1);
}

static void teardown(void)
{
	shm_snapshot_free(&fx.snap);
	shm_reader_close(&fx.r);
	shm_writer_close(&fx.w, 1);
	decode_destroy(&fx.d);
	agg_free(fx.a);
}

/* Publishes as if at t0 + at_ms. */
static const struct shm_header_fields *publish_at(uint64_t at_ms)
{
	enum shm_read_status st;
	char why[256] = "";

	agg_publish(fx.a, &fx.w, fx.t0 + at_ms * MS, now_real_ns(), NULL);
	st = shm_reader_snapshot(&fx.r, &fx.snap, why, sizeof(why));
	ck_assert_msg(st == SHM_READ_OK, "snapshot: %s: %s", shm_read_status_name(st), why);
	return fx.snap.hdr;
}

static struct zev_hdr hdr(uint32_t type, uint32_t pid, uint32_t tid, uint64_t at_us)
{
	return (struct zev_hdr){ .type = type, .pid = pid, .tid = tid,
				 .ts_ns = fx.t0 + at_us * 1000ull };
}

#define FEED(rec) ck_assert_int_eq(decode_event(&fx.d, &(rec), sizeof(rec)), 0)

static void watch(uint32_t pid)
{
	struct zev_watch w = { .hdr = hdr(ZEV_WATCH, pid, pid, 0), .reasons = SHM_WATCH_NCCL,
			       .ppid = 1, .start_ns = ZW_START_TICK_NS };

	memcpy(w.comm, "rank", 4);
	FEED(w);
}

/* ncclCommInitRank(comm, nranks, fx.id, rank) returned at at_us. */
static void init_rank(uint32_t pid, uint64_t comm, int32_t rank, int32_t nranks, uint64_t at_us)
{
	struct zev_nccl_comm c = { .hdr = hdr(ZEV_NCCL_COMM, pid, pid, at_us), .gpu = 0,
				   .rank = rank, .nranks = nranks,
				   .origin = SHM_NCCL_ORIGIN_INIT_RANK, .comm = comm, .id_ok = 1 };

	memcpy(c.id, fx.id, sizeof(c.id));
	FEED(c);
}

/* A call of op on comm and stream, from at_us to at_us + 10 us, on thread tid. */
static void call(uint32_t tid, uint32_t op, uint64_t comm, uint64_t stream, uint64_t bytes,
		 int32_t ret, uint64_t at_us)
{
	struct zev_nccl_call c = { .hdr = hdr(ZEV_NCCL_CALL, PID, tid, at_us + 10), .op = op,
				   .ret = ret, .bytes = bytes, .ns = 10000, .comm = comm,
				   .stream = stream, .dev = 0 };

	FEED(c);
}

static void sync_rec(uint32_t tid, uint32_t kind, uint64_t handle, int32_t dev, uint64_t at_us)
{
	struct zev_cuda_sync s = { .hdr = hdr(ZEV_CUDA_SYNC, PID, tid, at_us), .kind = kind,
				   .dev = dev, .handle = handle };

	FEED(s);
}

static void order(uint32_t tid, uint32_t kind, uint64_t a, uint64_t b, uint64_t at_us)
{
	struct zev_cuda_order o = { .hdr = hdr(ZEV_CUDA_ORDER, PID, tid, at_us), .kind = kind,
				    .dev = 0, .a = a, .b = b };

	FEED(o);
}

static void group(uint32_t tid, uint32_t end, uint64_t at_us)
{
	struct zev_nccl_group g = { .hdr = hdr(ZEV_NCCL_GROUP, PID, tid, at_us), .end = end };

	FEED(g);
}

/* ncclCommFinalize, Destroy or Abort (how) of comm, entered in_us before at_us, returned ret. */
static void comm_end_after(uint32_t how, uint64_t comm, int32_t ret, uint64_t at_us,
			   uint64_t in_us)
{
	struct zev_nccl_end e = { .hdr = hdr(ZEV_NCCL_END, PID, PID, at_us), .comm = comm,
				  .ret = ret, .how = how, .ns = in_us * 1000ull };

	FEED(e);
}

static void comm_end(uint32_t how, uint64_t comm, int32_t ret, uint64_t at_us)
{
	comm_end_after(how, comm, ret, at_us, 0);
}

/* The row of pid's communicator with rank (by_size 0) or size (1) v; NULL when none. */
static const struct shm_nccl_comm *find_row(uint32_t pid, int by_size, int32_t v)
{
	uint32_t n;
	const struct shm_nccl_comm *c = shm_snapshot_nccl_comms(&fx.snap, &n);

	for (uint32_t i = 0; i < n; i++)
		if (c[i].pid == pid && (by_size ? c[i].nranks : c[i].rank) == v)
			return &c[i];
	return NULL;
}

static const struct shm_nccl_comm *find_comm(uint32_t pid, int32_t rank)
{
	return find_row(pid, 0, rank);
}

static const struct shm_nccl_comm *find_comm_sized(uint32_t pid, int32_t nranks)
{
	return find_row(pid, 1, nranks);
}

static const struct shm_nccl_op *op_row(uint32_t op)
{
	uint32_t n;

	return &shm_snapshot_nccl_ops(&fx.snap, &n)[op];
}

/*
 * PyTorch DDP: the autograd thread queues the all-reduce on the NCCL
 * stream and records its end event there; the main thread makes its
 * compute stream wait on the event and later synchronises the compute
 * stream.  The wait ends there, on another thread and another stream.
 */
START_TEST(ddp_wait_ends_through_an_event_on_another_thread)
{
	const struct shm_nccl_comm *c;

	watch(PID);
	init_rank(PID, COMM, 1, 2, 1);
	call(PID + 1, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4096, 0, 1000);
	order(PID + 1, ZN_ORDER_RECORD, END_EVENT, NCCL_STREAM, 1020);
	order(PID, ZN_ORDER_WAIT, COMPUTE_STREAM, END_EVENT, 2000);
	/* The autograd thread never synchronises; the NCCL stream is not synchronised. */
	sync_rec(PID + 1, ZN_SYNC_STREAM, 0x9999, 0, 3000);
	publish_at(4);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, 0);
	ck_assert_uint_eq(find_comm(PID, 1)->pending, 1);

	sync_rec(PID, ZN_SYNC_STREAM, COMPUTE_STREAM, 0, 9000);
	publish_at(10);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, 1);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.sum_ns, 8000 * 1000ull);
	c = find_comm(PID, 1);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->comm_id, nccl_hash_unique_id(fx.id));
	ck_assert_int_eq(c->nranks, 2);
	ck_assert_uint_eq(c->calls, 1);
	ck_assert_uint_eq(c->bytes, 4096);
	ck_assert_uint_eq(c->pending, 0);
	ck_assert_uint_eq(c->stalled_ns, 0);
	ck_assert_uint_eq(c->wait.count, 1);
	ck_assert_uint_eq(c->wait.sum_ns, 8000 * 1000ull);
}
END_TEST

/*
 * The watchdog's query of the end event completes the collective before
 * it; an event recorded before a collective does not cover it; a failed
 * call is an error and queues nothing; ncclInProgress queues.
 */
START_TEST(event_query_covers_what_came_before_the_record_only)
{
	watch(PID);
	init_rank(PID, COMM, 0, 2, 1);
	order(PID, ZN_ORDER_RECORD, 0xe0, NCCL_STREAM, 500);		/* nothing yet */
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 8, 0, 1000);
	order(PID, ZN_ORDER_RECORD, END_EVENT, NCCL_STREAM, 1100);
	call(PID, SHM_NCCL_BROADCAST, COMM, NCCL_STREAM, 8, 7 /* ncclInProgress */, 1200);
	call(PID, SHM_NCCL_BROADCAST, COMM, NCCL_STREAM, 8, 4 /* invalid argument */, 1300);
	sync_rec(PID + 5, ZN_SYNC_EVENT_QUERY, 0xe0, 0, 1500);		/* covers nothing */
	sync_rec(PID + 5, ZN_SYNC_EVENT_QUERY, END_EVENT, 0, 5000);	/* the watchdog */
	publish_at(6);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, 1);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.sum_ns, 4000 * 1000ull);
	ck_assert_uint_eq(op_row(SHM_NCCL_BROADCAST)->calls, 2);
	ck_assert_uint_eq(op_row(SHM_NCCL_BROADCAST)->errors, 1);
	ck_assert_uint_eq(op_row(SHM_NCCL_BROADCAST)->wait.count, 0);
	ck_assert_uint_eq(find_comm(PID, 0)->pending, 1);
	/* Pending since 1.2 ms, nothing completed since 5 ms: stalled 1 ms at 6 ms. */
	ck_assert_uint_eq(find_comm(PID, 0)->stalled_ns, 1 * MS);
	publish_at(9);
	ck_assert_uint_eq(find_comm(PID, 0)->stalled_ns, 4 * MS);
	/* The event synchronised: everything before its record, across a device sync of another device. */
	sync_rec(PID, ZN_SYNC_DEVICE, 0, 1, 9500);
	publish_at(10);
	ck_assert_uint_eq(op_row(SHM_NCCL_BROADCAST)->wait.count, 0);
	sync_rec(PID, ZN_SYNC_DEVICE, 0, 0, 10000);
	publish_at(11);
	ck_assert_uint_eq(op_row(SHM_NCCL_BROADCAST)->wait.count, 1);
	ck_assert_uint_eq(op_row(SHM_NCCL_BROADCAST)->wait.sum_ns, 8800 * 1000ull);
	ck_assert_uint_eq(find_comm(PID, 0)->stalled_ns, 0);
	ck_assert_uint_eq(find_comm(PID, 0)->calls, 2);
}
END_TEST

/*
 * all_to_all across 16 ranks: 16 sends and 16 receives in one group.
 * Their time starts at the ncclGroupEnd that launches them; all 32 are
 * waited for, with their bytes.
 */
START_TEST(all_to_all_of_16_ranks_is_one_group_launched_at_group_end)
{
	const struct shm_nccl_comm *c;

	watch(PID);
	init_rank(PID, COMM, 3, 16, 1);
	group(PID, 0, 100);
	group(PID, 0, 101);	/* nested: the outermost end launches */
	for (int peer = 0; peer < 16; peer++) {
		call(PID, SHM_NCCL_SEND, COMM, NCCL_STREAM, 1024, 0, 200 + 40 * (uint64_t)peer);
		call(PID, SHM_NCCL_RECV, COMM, NCCL_STREAM, 1024, 0, 220 + 40 * (uint64_t)peer);
	}
	group(PID, 1, 900);
	/* Another thread's group end launches nothing of this one's. */
	group(PID + 1, 0, 950);
	group(PID + 1, 1, 960);
	/* The inner end launched nothing: a synchronisation has nothing to cover yet. */
	sync_rec(PID, ZN_SYNC_STREAM, NCCL_STREAM, 0, 1800);
	publish_at(2);
	ck_assert_uint_eq(op_row(SHM_NCCL_SEND)->wait.count, 0);
	ck_assert_uint_eq(op_row(SHM_NCCL_RECV)->wait.count, 0);
	ck_assert_uint_eq(op_row(SHM_NCCL_SEND)->bytes, 16 * 1024);

	group(PID, 1, 1850);
	sync_rec(PID, ZN_SYNC_STREAM, NCCL_STREAM, 0, 2000);
	publish_at(3);
	ck_assert_uint_eq(op_row(SHM_NCCL_SEND)->wait.count, 16);
	ck_assert_uint_eq(op_row(SHM_NCCL_RECV)->wait.count, 16);
	/* Every wait runs from the outermost group end at 1850 us. */
	ck_assert_uint_eq(op_row(SHM_NCCL_SEND)->wait.sum_ns, 16 * 150 * 1000ull);
	ck_assert_uint_eq(op_row(SHM_NCCL_RECV)->wait.sum_ns, 16 * 150 * 1000ull);
	c = find_comm(PID, 3);
	ck_assert_uint_eq(c->calls, 32);
	ck_assert_uint_eq(c->wait.count, 32);
	ck_assert_uint_eq(c->pending, 0);
	ck_assert_uint_eq(fx.snap.hdr->stats.nccl_pending_dropped, 0);
	ck_assert_uint_eq(fx.snap.hdr->stats.nccl_state_evicted, 0);
}
END_TEST

/* A collective queued during stream capture runs at graph launches: counted, never waited for. */
START_TEST(captured_collective_is_counted_not_waited_for)
{
	watch(PID);
	init_rank(PID, COMM, 0, 2, 1);
	order(PID, ZN_ORDER_CAPTURE_BEGIN, NCCL_STREAM, 0, 100);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 64, 0, 200);
	order(PID, ZN_ORDER_CAPTURE_END, NCCL_STREAM, 0, 300);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 64, 0, 400);
	sync_rec(PID, ZN_SYNC_STREAM, NCCL_STREAM, 0, 1400);
	publish_at(2);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->calls, 2);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, 1);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.sum_ns, 1000 * 1000ull);
	ck_assert_uint_eq(fx.snap.hdr->stats.nccl_captured, 1);
	ck_assert_uint_eq(find_comm(PID, 0)->calls, 1);
}
END_TEST

/*
 * CUDA graph capture as ProcessGroupNCCL meets it: the capture begins on
 * the compute stream, and NCCL's stream joins it by waiting on an event
 * recorded there, queues the all-reduce, and is joined back.  The
 * collective is captured (counted, never waited for), and once the
 * capture ends NCCL's stream is an ordinary stream again.
 */
START_TEST(a_stream_that_waits_on_a_captured_event_joins_the_capture)
{
	watch(PID);
	init_rank(PID, COMM, 0, 2, 1);
	order(PID, ZN_ORDER_CAPTURE_BEGIN, COMPUTE_STREAM, 0, 100);
	order(PID, ZN_ORDER_RECORD, 0xe501, COMPUTE_STREAM, 110);
	order(PID, ZN_ORDER_WAIT, NCCL_STREAM, 0xe501, 120);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 64, 0, 200);
	order(PID, ZN_ORDER_RECORD, 0xe502, NCCL_STREAM, 300);
	order(PID, ZN_ORDER_WAIT, COMPUTE_STREAM, 0xe502, 310);
	order(PID, ZN_ORDER_CAPTURE_END, COMPUTE_STREAM, 0, 400);
	publish_at(1);
	ck_assert_uint_eq(fx.snap.hdr->stats.nccl_captured, 1);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 0);
	ck_assert_uint_eq(find_comm(PID, 0)->pending, 0);
	/* After the capture: queued and waited for as usual. */
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 64, 0, 500);
	sync_rec(PID, ZN_SYNC_STREAM, NCCL_STREAM, 0, 1500);
	publish_at(2);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->calls, 2);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, 1);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.sum_ns, 1000 * 1000ull);
	ck_assert_uint_eq(fx.snap.hdr->stats.nccl_captured, 1);
}
END_TEST

/*
 * Millions of calls with no synchronisation cannot grow the state: a
 * stream keeps NT_MAX_PENDING, the rest are given up and counted; a
 * synchronisation still ends the ones kept.
 */
START_TEST(calls_without_sync_are_bounded_and_counted)
{
	const uint64_t n = NT_MAX_PENDING + 904;
	const struct shm_header_fields *h;

	watch(PID);
	init_rank(PID, COMM, 0, 2, 1);
	for (uint64_t i = 0; i < n; i++)
		call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4, 0, 100 + i);
	h = publish_at(10);
	ck_assert_uint_eq(h->stats.nccl_pending_dropped, 904);
	ck_assert_uint_eq(find_comm(PID, 0)->pending, NT_MAX_PENDING);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), NT_MAX_PENDING);
	sync_rec(PID, ZN_SYNC_STREAM, NCCL_STREAM, 0, 20000);
	h = publish_at(21);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, NT_MAX_PENDING);
	ck_assert_uint_eq(find_comm(PID, 0)->pending, 0);
	ck_assert_uint_eq(find_comm(PID, 0)->calls, n);

}
END_TEST

/*
 * A job hung in a collective: nothing covers it, and it stays pending and
 * stalled an hour on, through the decoder's expiry of unused state; its
 * communicator's abort (what a watchdog does to a hung one) gives it up,
 * counted, and ends the stall.
 */
START_TEST(a_hung_collective_stays_pending_until_its_communicator_ends)
{
	const uint64_t hour_us = 3600ull * 1000000ull;
	const struct shm_header_fields *h;

	watch(PID);
	init_rank(PID, COMM, 0, 2, 1);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4, 0, 100);
	/*
	 * An hour of other events on the fake clock, published each minute:
	 * the decoder's expiry of unused state runs on them.
	 */
	for (uint64_t at = 1000000; at <= hour_us; at += 60 * 1000000ull) {
		order(PID, ZN_ORDER_RECORD, 0xe900 + at / 1000000, 0x5900, at);
		publish_at(at / 1000);
	}
	h = publish_at(hour_us / 1000 + 100);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 1);
	ck_assert_uint_eq(find_comm(PID, 0)->pending, 1);
	ck_assert_uint_ge(find_comm(PID, 0)->stalled_ns, hour_us * 1000ull);
	ck_assert_uint_eq(h->stats.nccl_pending_ended, 0);
	ck_assert_uint_eq(h->stats.nccl_pending_dropped, 0);
	/* Its stream's state was kept: a synchronisation still ends the wait. */
	sync_rec(PID, ZN_SYNC_STREAM, NCCL_STREAM, 0, hour_us + 200000);
	h = publish_at(hour_us / 1000 + 300);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 0);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, 1);

	/* Hung again, then aborted: given up, counted, no wait sample, no stall. */
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4, 0, hour_us + 400000);
	comm_end(ZN_END_ABORT, COMM, 0, 2 * hour_us);
	h = publish_at(2 * hour_us / 1000 + 1);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 0);
	ck_assert_uint_eq(h->stats.nccl_pending_ended, 1);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, 1);
	ck_assert_uint_eq(find_comm(PID, 0)->pending, 0);
	ck_assert_uint_eq(find_comm(PID, 0)->stalled_ns, 0);
}
END_TEST

/* n calls of op on comm, each synchronised 1 ms after it, from at_us on. */
static uint64_t calls_synced(uint64_t comm, uint32_t n, uint64_t at_us)
{
	for (uint32_t i = 0; i < n; i++, at_us += 2000) {
		call(PID, SHM_NCCL_ALL_REDUCE, comm, NCCL_STREAM, 8, 0, at_us);
		sync_rec(PID, ZN_SYNC_STREAM, NCCL_STREAM, 0, at_us + 1000);
	}
	return at_us;
}

/*
 * 30 all-reduces on a 2-rank communicator, destroyed; 50 on a 4-rank one
 * that the allocator placed at the same handle: two rows, each with its
 * own calls, size and splits; the ended one is published for
 * AGG_NCCL_END_GRACE_NS more, then goes.
 */
START_TEST(a_communicator_made_on_a_destroyed_ones_handle_is_a_new_row)
{
	struct zev_nccl_comm sp = { .hdr = hdr(ZEV_NCCL_COMM, PID, PID, 0), .gpu = 0,
				    .rank = -1, .nranks = -1, .origin = SHM_NCCL_ORIGIN_SPLIT,
				    .parent = COMM, .comm = 0x8000, .color = 3 };
	const struct shm_nccl_comm *old, *now;
	uint64_t at, first_id, second_id, t_end;
	uint32_t n;

	watch(PID);
	init_rank(PID, COMM, 0, 2, 1);
	first_id = nccl_hash_unique_id(fx.id);
	sp.hdr = hdr(ZEV_NCCL_COMM, PID, PID, 5);
	FEED(sp);				/* the first communicator's split */
	at = calls_synced(COMM, 30, 100);
	comm_end(ZN_END_DESTROY, COMM, 0, at);
	t_end = at;
	fx.id[0] ^= 0xff;			/* the new communicator's own uniqueId */
	second_id = nccl_hash_unique_id(fx.id);
	init_rank(PID, COMM, 0, 4, at + 100);
	sp.hdr = hdr(ZEV_NCCL_COMM, PID, PID, at + 200);
	sp.comm = 0x8800;
	FEED(sp);				/* its first split */
	at = calls_synced(COMM, 50, at + 1000);
	publish_at(at / 1000 + 1);
	old = find_comm_sized(PID, 2);
	now = find_comm_sized(PID, 4);
	ck_assert_ptr_nonnull(old);
	ck_assert_ptr_nonnull(now);
	ck_assert_uint_eq(old->comm_id, first_id);
	ck_assert_uint_eq(old->calls, 30);
	ck_assert_uint_eq(old->wait.count, 30);
	ck_assert_uint_eq(now->comm_id, second_id);
	ck_assert_uint_eq(now->calls, 50);
	ck_assert_uint_eq(now->wait.count, 50);
	/* The new communicator's first split is its split 1, not the old one's second. */
	shm_snapshot_nccl_comms(&fx.snap, &n);
	ck_assert_uint_eq(n, 4);
	{
		const struct shm_nccl_comm *c = shm_snapshot_nccl_comms(&fx.snap, &n);
		int children = 0;

		for (uint32_t i = 0; i < n; i++) {
			if (c[i].parent_id == first_id) {
				ck_assert_uint_eq(c[i].comm_id, nccl_hash_child(first_id, 1, 3));
				children++;
			} else if (c[i].parent_id == second_id) {
				ck_assert_uint_eq(c[i].comm_id, nccl_hash_child(second_id, 1, 3));
				children++;
			}
		}
		ck_assert_int_eq(children, 2);
	}
	/* Past the grace period the ended row is gone; the live ones stay. */
	publish_at(t_end / 1000 + AGG_NCCL_END_GRACE_NS / MS + 1);
	ck_assert_ptr_null(find_comm_sized(PID, 2));
	ck_assert_ptr_nonnull(find_comm_sized(PID, 4));
	ck_assert_uint_eq(find_comm_sized(PID, 4)->calls, 50);
}
END_TEST

/*
 * A successful ncclCommFinalize flushed the communicator's operations:
 * what was pending completes at its return, untimed (the return says
 * nothing of when they finished).  A non-blocking one's (ncclInProgress)
 * has not yet, and an abort gives them up.
 */
START_TEST(finalize_completes_pending_calls_and_abort_gives_them_up)
{
	const struct shm_header_fields *h;

	watch(PID);
	init_rank(PID, COMM, 0, 2, 1);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4, 0, 100);
	comm_end(ZN_END_FINALIZE, COMM, 7, 2000);	/* in progress: nothing yet */
	h = publish_at(3);
	ck_assert_uint_eq(find_comm(PID, 0)->pending, 1);
	comm_end(ZN_END_FINALIZE, COMM, 0, 5100);
	h = publish_at(6);
	ck_assert_uint_eq(find_comm(PID, 0)->pending, 0);
	ck_assert_uint_eq(find_comm(PID, 0)->stalled_ns, 0);
	ck_assert_uint_eq(find_comm(PID, 0)->wait.count, 0);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, 0);
	ck_assert_uint_eq(h->stats.nccl_pending_ended, 0);
	/* Finalized, the handle still lives until its destroy. */
	ck_assert_uint_eq(find_comm(PID, 0)->calls, 1);

	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4, 0, 7000);
	comm_end(ZN_END_ABORT, COMM, 3, 8000);		/* failed: nothing changes */
	h = publish_at(9);
	ck_assert_uint_eq(find_comm(PID, 0)->pending, 1);
	comm_end(ZN_END_ABORT, COMM, 0, 9000);
	h = publish_at(10);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 0);
	ck_assert_uint_eq(h->stats.nccl_pending_ended, 1);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, 0);
	/* Calls on the aborted handle are on no known communicator. */
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4, 0, 11000);
	h = publish_at(12);
	ck_assert_uint_eq(h->stats.nccl_unknown_comm, 1);
	ck_assert_uint_eq(find_comm(PID, 0)->calls, 2);
}
END_TEST

/*
 * ncclCommDestroy finalizes a communicator not finalized yet, so its
 * return settles what was queued on it, untimed, and with it what its
 * stream ran before (another communicator's call) and what that stream
 * waited on (a third stream, through an event); a later call on the
 * compute stream stays pending.  Calls on a communicator never seen made
 * leave with its abort, and a successful cudaStreamQuery ends a wait as a
 * synchronisation does.
 */
START_TEST(destroy_settles_the_stream_up_to_its_last_call)
{
	const uint64_t other = 0x7100, unknown = 0x7200, side = 0x5300;
	const struct shm_header_fields *h;

	watch(PID);
	init_rank(PID, COMM, 0, 2, 1);
	fx.id[0] ^= 0x55;
	init_rank(PID, other, 1, 2, 2);
	call(PID, SHM_NCCL_ALL_GATHER, other, side, 4, 0, 50);
	order(PID, ZN_ORDER_RECORD, END_EVENT, side, 70);
	order(PID, ZN_ORDER_WAIT, NCCL_STREAM, END_EVENT, 80);
	call(PID, SHM_NCCL_ALL_GATHER, other, NCCL_STREAM, 4, 0, 100);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4, 0, 200);
	call(PID, SHM_NCCL_ALL_REDUCE, other, NCCL_STREAM, 4, 0, 300);
	call(PID, SHM_NCCL_ALL_REDUCE, other, COMPUTE_STREAM, 4, 0, 400);
	comm_end(ZN_END_DESTROY, COMM, 0, 9000);
	h = publish_at(10);
	/* Left: other's all-reduce after COMM's on the stream, and the compute stream's. */
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 2);
	ck_assert_uint_eq(find_comm(PID, 1)->pending, 2);
	ck_assert_uint_eq(find_comm(PID, 1)->calls, 4);
	ck_assert_uint_eq(find_comm(PID, 1)->wait.count, 0);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_GATHER)->wait.count, 0);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, 0);
	ck_assert_uint_eq(h->stats.nccl_pending_ended, 0);
	/* The destroyed communicator's row ended with nothing pending. */
	ck_assert_ptr_null(find_comm_sized(PID, 3));
	ck_assert_uint_eq(find_comm(PID, 0)->pending, 0);
	ck_assert_uint_eq(find_comm(PID, 0)->calls, 1);

	/* A query that finds the stream done ends its wait, timed. */
	sync_rec(PID, ZN_SYNC_STREAM_QUERY, NCCL_STREAM, 0, 10300);
	h = publish_at(11);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 1);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, 1);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.sum_ns, 10000 * 1000ull);

	/* A communicator never seen made: its calls leave with its abort. */
	call(PID, SHM_NCCL_ALL_REDUCE, unknown, side, 4, 0, 12000);
	call(PID, SHM_NCCL_ALL_REDUCE, unknown, side, 4, 0, 12100);
	h = publish_at(13);
	ck_assert_uint_eq(h->stats.nccl_unknown_comm, 2);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 3);
	comm_end(ZN_END_ABORT, unknown, 0, 14000);
	h = publish_at(15);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 1);
	ck_assert_uint_eq(h->stats.nccl_pending_ended, 2);
	ck_assert_uint_eq(find_comm(PID, 1)->pending, 1);
}
END_TEST

/*
 * One thread destroys a communicator; NCCL frees it inside the call, and
 * another thread's ncclCommInitRank gets the same address and returns
 * before the destroy does.  The new communicator is a row of its own from
 * its making (the old one ends there, its pending call given up), and
 * the destroy's late end leaves it alone.
 */
START_TEST(a_handle_reused_before_its_destroy_returned_is_a_new_row)
{
	const struct shm_header_fields *h;

	watch(PID);
	init_rank(PID, COMM, 0, 2, 1);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4, 0, 100);
	fx.id[0] ^= 0x77;
	init_rank(PID, COMM, 0, 4, 5000);	/* the destroy, entered at 4000, still runs */
	comm_end_after(ZN_END_DESTROY, COMM, 0, 6000, 2000);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, COMPUTE_STREAM, 4, 0, 7000);
	sync_rec(PID, ZN_SYNC_STREAM, COMPUTE_STREAM, 0, 8000);
	h = publish_at(9);
	ck_assert_ptr_nonnull(find_comm_sized(PID, 2));
	ck_assert_ptr_nonnull(find_comm_sized(PID, 4));
	ck_assert_uint_eq(find_comm_sized(PID, 2)->calls, 1);
	ck_assert_uint_eq(find_comm_sized(PID, 2)->pending, 0);
	ck_assert_uint_eq(find_comm_sized(PID, 4)->calls, 1);
	ck_assert_uint_eq(find_comm_sized(PID, 4)->wait.count, 1);
	ck_assert_uint_eq(h->stats.nccl_pending_ended, 1);
	ck_assert_uint_eq(h->stats.nccl_unknown_comm, 0);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 0);
	/* Its own destroy, later, ends it. */
	comm_end_after(ZN_END_DESTROY, COMM, 0, 20000, 100);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, COMPUTE_STREAM, 4, 0, 21000);
	h = publish_at(22);
	ck_assert_uint_eq(h->stats.nccl_unknown_comm, 1);
}
END_TEST

/* The ith of many communicators, each with a uniqueId of its own, made at at_us. */
static uint64_t comm_numbered(uint32_t i, uint64_t at_us)
{
	fx.id[0] = (uint8_t)i;
	fx.id[1] = (uint8_t)(i >> 8);
	init_rank(PID, COMM + 16 * i, 0, 2, at_us);
	return COMM + 16 * i;
}

/*
 * A job that makes and destroys communicators faster than their rows'
 * grace period: a new communicator takes the place of the row that ended
 * first, never refused while ended rows hold the table.
 */
START_TEST(ended_rows_make_room_for_new_communicators)
{
	const struct shm_header_fields *h;
	uint32_t cap = fx.w.base->h.table[SHM_TABLE_NCCL_COMMS].capacity;

	watch(PID);
	for (uint32_t i = 0; i < cap + 10; i++) {
		uint64_t comm = comm_numbered(i, 10 + i);

		call(PID, SHM_NCCL_ALL_REDUCE, comm, NCCL_STREAM, 4, 0, 11 + i);
		comm_end(ZN_END_DESTROY, comm, 0, 12 + i);
	}
	fx.id[0] = 0xee;
	init_rank(PID, 0x9990, 0, 7, 100000);
	h = publish_at(101);
	ck_assert_uint_eq(h->table[SHM_TABLE_NCCL_COMMS].overflows, 0);
	ck_assert_uint_eq(h->table[SHM_TABLE_NCCL_COMMS].count, cap);
	ck_assert_ptr_nonnull(find_comm_sized(PID, 7));
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 0);
}
END_TEST

/* Thousands of communicators and streams: the tables clamp, and say so. */
START_TEST(thousands_of_communicators_and_streams_are_clamped)
{
	const struct shm_header_fields *h;
	uint32_t cap = fx.w.base->h.table[SHM_TABLE_NCCL_COMMS].capacity;

	watch(PID);
	for (uint32_t i = 0; i < cap + 10; i++)
		comm_numbered(i, 1);
	for (uint64_t s = 0; s < NT_MAX_STREAMS + 3; s++)
		call(PID, SHM_NCCL_ALL_REDUCE, COMM, 0x100000 + s, 4, 0, 100);
	h = publish_at(1);
	ck_assert_uint_eq(h->table[SHM_TABLE_NCCL_COMMS].count, cap);
	ck_assert_uint_eq(h->table[SHM_TABLE_NCCL_COMMS].overflows, 10);
	ck_assert_uint_eq(h->stats.nccl_state_evicted, 3);
	ck_assert_uint_eq(h->stats.nccl_pending_dropped, 3);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), NT_MAX_STREAMS);
	ck_assert_uint_eq(find_comm(PID, 0)->pending, NT_MAX_STREAMS);
}
END_TEST

/*
 * ncclCommSplit: NCCL's child hash of (parent hash, the parent's split
 * count, colour), a split without colour still counting; commAlloc says
 * the child's rank and size, before or after the split returns.
 */
START_TEST(split_children_get_nccls_hash_and_commallocs_rank)
{
	struct zev_nccl_comm sp = { .hdr = hdr(ZEV_NCCL_COMM, PID, PID, 10), .gpu = 0,
				    .rank = -1, .nranks = -1, .origin = SHM_NCCL_ORIGIN_SPLIT,
				    .parent = COMM };
	struct zev_nccl_alloc al = { .hdr = hdr(ZEV_NCCL_ALLOC, PID, PID + 9, 9),
				     .comm = 0x8000, .rank = 2, .nranks = 3 };
	uint64_t parent = nccl_hash_unique_id(fx.id);
	uint32_t n;
	const struct shm_nccl_comm *c;

	watch(PID);
	init_rank(PID, COMM, 5, 8, 1);
	FEED(sp);				/* split 1: NCCL_SPLIT_NOCOLOR, nothing here */
	FEED(al);				/* NCCL's async init ran first */
	sp.comm = 0x8000;
	sp.color = 7;
	FEED(sp);				/* split 2 */
	sp.origin = SHM_NCCL_ORIGIN_SHRINK;
	sp.comm = 0x9000;
	FEED(sp);
	al.comm = 0x9000;
	al.rank = 4;
	al.nranks = 7;
	FEED(al);				/* and after */
	publish_at(1);
	c = shm_snapshot_nccl_comms(&fx.snap, &n);
	ck_assert_uint_eq(n, 3);
	c = find_comm(PID, 2);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->comm_id, nccl_hash_child(parent, 2, 7));
	ck_assert_uint_eq(c->parent_id, parent);
	ck_assert_uint_eq(c->origin, SHM_NCCL_ORIGIN_SPLIT);
	ck_assert_int_eq(c->nranks, 3);
	c = find_comm(PID, 4);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->comm_id, nccl_hash_child(parent, 0, 0));
	ck_assert_uint_eq(c->origin, SHM_NCCL_ORIGIN_SHRINK);
	ck_assert_int_eq(c->nranks, 7);
	ck_assert_uint_eq(c->flags, 0);
}
END_TEST

/*
 * Non-blocking splits (TORCH_NCCL_USE_COMM_NONBLOCKING=1): ncclCommSplit
 * returns ncclInProgress with *newcomm still NULL, and NCCL's async job
 * names the child in commAlloc(child, parent, ...), after that return or
 * before it.  Either way the child is bound with NCCL's hash, and its
 * collectives are on a known communicator.
 */
START_TEST(non_blocking_split_children_are_bound_at_commalloc)
{
	struct zev_nccl_comm sp = { .hdr = hdr(ZEV_NCCL_COMM, PID, PID, 10), .gpu = 0,
				    .rank = -1, .nranks = -1, .origin = SHM_NCCL_ORIGIN_SPLIT,
				    .parent = COMM, .comm = 0, .color = 7, .ret = 7 };
	struct zev_nccl_alloc al = { .hdr = hdr(ZEV_NCCL_ALLOC, PID, PID + 9, 20),
				     .comm = 0x8000, .parent = COMM, .rank = 2, .nranks = 3 };
	uint64_t parent = nccl_hash_unique_id(fx.id);
	const struct shm_nccl_comm *c;
	const struct shm_header_fields *h;

	watch(PID);
	init_rank(PID, COMM, 5, 8, 1);
	FEED(sp);				/* split 1 returns first, in progress */
	FEED(al);				/* then its async job allocates the child */
	al.hdr = hdr(ZEV_NCCL_ALLOC, PID, PID + 9, 30);
	al.comm = 0x9000;
	al.rank = 1;
	FEED(al);				/* split 2's job runs before its return */
	sp.hdr = hdr(ZEV_NCCL_COMM, PID, PID, 40);
	sp.color = 9;
	FEED(sp);
	sp.hdr = hdr(ZEV_NCCL_COMM, PID, PID, 50);
	sp.color = -1;
	FEED(sp);				/* split 3: no colour, no child */
	call(PID, SHM_NCCL_ALL_REDUCE, 0x8000, NCCL_STREAM, 4, 0, 100);
	call(PID, SHM_NCCL_ALL_REDUCE, 0x9000, NCCL_STREAM, 4, 0, 200);
	sync_rec(PID, ZN_SYNC_STREAM, NCCL_STREAM, 0, 1000);
	h = publish_at(2);
	c = find_comm(PID, 2);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->comm_id, nccl_hash_child(parent, 1, 7));
	ck_assert_uint_eq(c->parent_id, parent);
	ck_assert_uint_eq(c->origin, SHM_NCCL_ORIGIN_SPLIT);
	ck_assert_int_eq(c->nranks, 3);
	ck_assert_uint_eq(c->calls, 1);
	ck_assert_uint_eq(c->wait.count, 1);
	c = find_comm(PID, 1);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->comm_id, nccl_hash_child(parent, 2, 9));
	ck_assert_uint_eq(c->calls, 1);
	ck_assert_uint_eq(h->stats.nccl_unknown_comm, 0);
	ck_assert_uint_eq(h->stats.nccl_state_evicted, 0);
	/* The parent counted all three splits: its next child's hash says 4. */
	sp.hdr = hdr(ZEV_NCCL_COMM, PID, PID, 2000);
	sp.comm = 0xa000;
	sp.color = 3;
	sp.ret = 0;
	FEED(sp);
	publish_at(3);
	c = find_comm(PID, -1);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->comm_id, nccl_hash_child(parent, 4, 3));
}
END_TEST

/* The words the process holds where its splits' *newcomm lie, as a reader of its memory gives them. */
static struct {
	uint64_t addr, val;
} user_words[2];

static int read_user_word(void *ctx, uint32_t pid, uint64_t addr, uint64_t *val)
{
	(void)ctx;
	(void)pid;
	for (size_t i = 0; i < sizeof(user_words) / sizeof(user_words[0]); i++) {
		if (user_words[i].addr == addr) {
			*val = user_words[i].val;
			return 0;
		}
	}
	return -EFAULT;
}

/*
 * Two non-blocking splits of one parent in flight at once (a group of
 * them, or two new process groups made back to back): NCCL's async jobs
 * run in any order, so the second split's child reaches commAlloc first.
 * Each child is bound at its first call to the split whose *newcomm then
 * holds its handle, and gets that split's hash (its split count and
 * colour), not the first waiting one's.
 */
START_TEST(concurrent_non_blocking_splits_are_bound_by_what_each_was_handed)
{
	struct zev_nccl_comm sp = { .hdr = hdr(ZEV_NCCL_COMM, PID, PID, 10), .gpu = 0,
				    .rank = -1, .nranks = -1, .origin = SHM_NCCL_ORIGIN_SPLIT,
				    .parent = COMM, .comm = 0, .out = 0x7000, .color = 7,
				    .ret = 7 };
	struct zev_nccl_alloc al = { .hdr = hdr(ZEV_NCCL_ALLOC, PID, PID + 9, 30),
				     .comm = 0x9000, .parent = COMM, .rank = 1, .nranks = 2 };
	uint64_t parent = nccl_hash_unique_id(fx.id);
	const struct shm_nccl_comm *c;
	const struct shm_header_fields *h;

	watch(PID);
	init_rank(PID, COMM, 5, 8, 1);
	agg_set_user_reader(fx.a, read_user_word, NULL);
	FEED(sp);				/* split 1 (colour 7) returns, in progress */
	sp.hdr = hdr(ZEV_NCCL_COMM, PID, PID, 20);
	sp.out = 0x7008;
	sp.color = 9;
	FEED(sp);				/* split 2 (colour 9) too */
	FEED(al);				/* split 2's job allocates its child first */
	al.hdr = hdr(ZEV_NCCL_ALLOC, PID, PID + 10, 40);
	al.comm = 0x8000;
	al.rank = 2;
	al.nranks = 3;
	FEED(al);				/* then split 1's */
	/* Both complete: NCCL writes each child where its split was told. */
	user_words[0].addr = 0x7000;
	user_words[0].val = 0x8000;
	user_words[1].addr = 0x7008;
	user_words[1].val = 0x9000;
	call(PID, SHM_NCCL_ALL_REDUCE, 0x9000, NCCL_STREAM, 4, 0, 100);
	call(PID, SHM_NCCL_ALL_REDUCE, 0x8000, NCCL_STREAM, 4, 0, 200);
	call(PID, SHM_NCCL_ALL_REDUCE, 0x8000, NCCL_STREAM, 4, 0, 300);
	sync_rec(PID, ZN_SYNC_STREAM, NCCL_STREAM, 0, 1000);
	h = publish_at(2);
	c = find_comm(PID, 2);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->comm_id, nccl_hash_child(parent, 1, 7));
	ck_assert_int_eq(c->nranks, 3);
	ck_assert_uint_eq(c->calls, 2);
	c = find_comm(PID, 1);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->comm_id, nccl_hash_child(parent, 2, 9));
	ck_assert_int_eq(c->nranks, 2);
	ck_assert_uint_eq(c->calls, 1);
	ck_assert_uint_eq(h->stats.nccl_unknown_comm, 0);
	agg_set_user_reader(fx.a, NULL, NULL);
}
END_TEST

/* An unreadable uniqueId, a split of an unknown parent: local ids, flagged and counted. */
START_TEST(unreadable_ids_get_local_flagged_ids)
{
	struct zev_nccl_comm c = { .hdr = hdr(ZEV_NCCL_COMM, PID, PID, 10), .gpu = 0, .rank = 0,
				   .nranks = 2, .origin = SHM_NCCL_ORIGIN_INIT_RANK,
				   .comm = 0xa000, .id_ok = 0 };
	struct zev_nccl_comm bad = c;
	const struct shm_header_fields *h;

	watch(PID);
	FEED(c);
	c.origin = SHM_NCCL_ORIGIN_SPLIT;
	c.parent = 0xdead;
	c.comm = 0xb000;
	c.rank = 1;
	FEED(c);
	bad.origin = SHM_NCCL_ORIGIN_COUNT;
	ck_assert_int_eq(decode_event(&fx.d, &bad, sizeof(bad)), -EINVAL);
	h = publish_at(1);
	ck_assert_uint_eq(h->stats.nccl_id_unreadable, 1);
	ck_assert_uint_eq(find_comm(PID, 0)->flags, SHM_NCCL_COMM_LOCAL_ID);
	ck_assert_uint_eq(find_comm(PID, 1)->flags, SHM_NCCL_COMM_LOCAL_ID);
	ck_assert_uint_ne(find_comm(PID, 0)->comm_id, find_comm(PID, 1)->comm_id);
}
END_TEST

/* Gap: from a completion to the next call on the communicator. */
START_TEST(gap_runs_from_a_completion_to_the_next_call)
{
	watch(PID);
	init_rank(PID, COMM, 0, 2, 1);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4, 0, 1000);
	sync_rec(PID, ZN_SYNC_STREAM, NCCL_STREAM, 0, 2000);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4, 0, 7000);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4, 0, 7100);	/* one pending: no gap */
	sync_rec(PID, ZN_SYNC_STREAM, NCCL_STREAM, 0, 8000);
	publish_at(9);
	ck_assert_uint_eq(find_comm(PID, 0)->gap.count, 1);
	ck_assert_uint_eq(find_comm(PID, 0)->gap.sum_ns, 5000 * 1000ull);
	ck_assert_uint_eq(find_comm(PID, 0)->wait.count, 3);
}
END_TEST

/* A process that exits takes its streams, events and groups with it. */
START_TEST(exit_drops_the_processs_wait_state)
{
	struct zev_exit ex = { .hdr = hdr(ZEV_EXIT, PID, PID, 3000) };

	watch(PID);
	init_rank(PID, COMM, 0, 2, 1);
	group(PID, 0, 50);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4, 0, 100);
	order(PID, ZN_ORDER_RECORD, END_EVENT, NCCL_STREAM, 200);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 1);
	FEED(ex);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 0);
	sync_rec(PID, ZN_SYNC_EVENT, END_EVENT, 0, 4000);
	publish_at(5);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, 0);
}
END_TEST

/*
 * A process that runs another program (exec), or a new process found
 * under its pid: the old program's collectives are nobody's to wait for.
 */
START_TEST(exec_drops_the_processs_wait_state)
{
	struct zev_watch exec = { .hdr = hdr(ZEV_WATCH, PID, PID, 3000),
				  .reasons = SHM_WATCH_NCCL | ZEV_WATCH_F_EXEC, .ppid = 1,
				  .start_ns = ZW_START_TICK_NS };

	watch(PID);
	init_rank(PID, COMM, 0, 2, 1);
	call(PID, SHM_NCCL_ALL_REDUCE, COMM, NCCL_STREAM, 4, 0, 100);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 1);
	memcpy(exec.comm, "other", 5);
	FEED(exec);
	ck_assert_uint_eq(nccltrack_pending(decode_state(&fx.d, PROBE_OBJ_NCCL)), 0);
	sync_rec(PID, ZN_SYNC_DEVICE, 0, 0, 4000);
	publish_at(5);
	ck_assert_uint_eq(op_row(SHM_NCCL_ALL_REDUCE)->wait.count, 0);
}
END_TEST

Suite *nccl_track_suite(void);
Suite *nccl_track_suite(void)
{
	Suite *s = suite_create("nccl_track");
	TCase *tc = tcase_create("records");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, ddp_wait_ends_through_an_event_on_another_thread);
	tcase_add_test(tc, event_query_covers_what_came_before_the_record_only);
	tcase_add_test(tc, all_to_all_of_16_ranks_is_one_group_launched_at_group_end);
	tcase_add_test(tc, captured_collective_is_counted_not_waited_for);
	tcase_add_test(tc, a_stream_that_waits_on_a_captured_event_joins_the_capture);
	tcase_add_test(tc, calls_without_sync_are_bounded_and_counted);
	tcase_add_test(tc, a_hung_collective_stays_pending_until_its_communicator_ends);
	tcase_add_test(tc, a_communicator_made_on_a_destroyed_ones_handle_is_a_new_row);
	tcase_add_test(tc, finalize_completes_pending_calls_and_abort_gives_them_up);
	tcase_add_test(tc, destroy_settles_the_stream_up_to_its_last_call);
	tcase_add_test(tc, a_handle_reused_before_its_destroy_returned_is_a_new_row);
	tcase_add_test(tc, ended_rows_make_room_for_new_communicators);
	tcase_add_test(tc, thousands_of_communicators_and_streams_are_clamped);
	tcase_add_test(tc, split_children_get_nccls_hash_and_commallocs_rank);
	tcase_add_test(tc, non_blocking_split_children_are_bound_at_commalloc);
	tcase_add_test(tc, concurrent_non_blocking_splits_are_bound_by_what_each_was_handed);
	tcase_add_test(tc, unreadable_ids_get_local_flagged_ids);
	tcase_add_test(tc, gap_runs_from_a_completion_to_the_next_call);
	tcase_add_test(tc, exit_drops_the_processs_wait_state);
	tcase_add_test(tc, exec_drops_the_processs_wait_state);
	suite_add_tcase(s, tc);
	return s;
}
