/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NCCL through the real probes, against the fake libnccl: calls, bytes
 * (count x datatype size) and errors per op exactly, call durations and
 * waits to the next synchronisation within their bounds, and the
 * communicators' rank and size.  Needs root (BPF).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "collector/hist.h"
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
	uint64_t own[8][3], sync[3];
	uint32_t ncomms;
	const struct shm_nccl_comm *comms;
	int ok = 0, ranks_seen = 0;

	if (tu_skip_unless_root("test_nccl_ops_bytes_durations_waits_comms"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	snprintf(lib_rt, sizeof(lib_rt), "lib:%s", tp_fake(rt, sizeof(rt), "libcudart.so"));
	snprintf(lib_nccl, sizeof(lib_nccl), "lib:%s", tp_fake(nc, sizeof(nc), "libnccl.so.2"));
	snprintf(ns, sizeof(ns), "%llu", CALL_NS);
	setenv("FAKE_NCCL_NS", ns, 1);
	{
		/* At most 8 collectives between synchronisations (see bpf/nccl.bpf.c). */
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), lib_rt, lib_nccl,
			"dev:2", "commrank:8:3", "commconfig:4:1", "commall:4",
			"nccl:allreduce:1000:7:5", "sync:3000000",
			"nccl:allgather:10:4:3", "nccl:reducescatter:7:6:2", "cusync:3000000",
			"nccl:broadcast:100:1:4", "nccl:reduce:3:8:1", "sync:3000000",
			"nccl:send:5:9:2", "nccl:recv:9:2:3", "cusync:3000000",
			"nccl:allreduce:57005:7:1", "sync:3000000",
			NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	/* The workload prints its series in first-use order. */
	ck_assert_int_eq(tp_workload_series(&w, "nccl_allreduce", &own[0][0], &own[0][1], &own[0][2], 30000), 0);
	ck_assert_int_eq(tp_workload_series(&w, "sync", &sync[0], &sync[1], &sync[2], 30000), 0);
	for (size_t i = 1; i < 7; i++)
		ck_assert_int_eq(tp_workload_series(&w, want[i].series, &own[i][0], &own[i][1],
						    &own[i][2], 30000), 0);
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 30000), 0);

	for (int i = 0; i < 50 && !ok; i++) {
		tu_sleep_ms(100);
		ok = tp_snapshot(&c) == 0 && all_in(&c);
	}
	ck_assert_msg(ok, "NCCL calls missing after 5 s");
	ck_assert_int_eq(tp_wait_publish(&c), 0);

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct shm_nccl_op *o = tp_nccl_op(&c, want[i].op);
		double lo = (double)CALL_NS * (1.0 - HIST_MAX_REL_ERROR);
		double e = 1.0 + HIST_MAX_REL_ERROR;
		double wait_hi = ((double)sync[2] + 8.0 * (double)own[i][2]) * e;

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
		/* Wait: at least the synchronisation, at most it plus the calls before it. */
		ck_assert(o->wait.window_p50_ns >= (double)SYNC_NS * (1.0 - HIST_MAX_REL_ERROR));
		ck_assert(o->wait.window_p50_ns <= wait_hi);
	}

	/* Communicators: rank 3 of 8 and 1 of 4 on device 2, InitAll's 0..3 of 4. */
	comms = shm_snapshot_nccl_comms(&c.snap, &ncomms);
	for (uint32_t i = 0; i < ncomms; i++) {
		const struct shm_nccl_comm *m = &comms[i];

		if (m->pid != (uint32_t)w.pid)
			continue;
		ck_assert(m->comm_id != 0);
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
 * A thread keeps at most 8 collectives waiting for a synchronisation: the
 * 9th and 10th cannot be followed and must show up as lost events.
 */
START_TEST(test_lost_events_are_counted)
{
	struct tp_collector c;
	struct tp_workload w;
	char zw[512], nc[512], lib_nccl[600], rt[512], lib_rt[600];
	const struct shm_nccl_op *o;
	uint64_t dropped0;
	int ok = 0;

	if (tu_skip_unless_root("test_lost_events_are_counted"))
		return;
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	dropped0 = c.snap.hdr->stats.events_dropped;
	snprintf(lib_rt, sizeof(lib_rt), "lib:%s", tp_fake(rt, sizeof(rt), "libcudart.so"));
	snprintf(lib_nccl, sizeof(lib_nccl), "lib:%s", tp_fake(nc, sizeof(nc), "libnccl.so.2"));
	setenv("FAKE_NCCL_NS", "0", 1);
	{
		char *argv[] = { (char *)tp_zw_cuda(zw, sizeof(zw)), lib_rt, lib_nccl,
				 "commrank:2:0", "nccl:broadcast:1:0:10", "sync:1000", NULL };

		ck_assert_int_eq(tp_workload_start(&w, argv), 0);
	}
	ck_assert_int_eq(tp_workload_expect(&w, "DONE", 10000), 0);
	for (int i = 0; i < 30 && !ok; i++) {
		tu_sleep_ms(100);
		ok = tp_snapshot(&c) == 0 && (o = tp_nccl_op(&c, SHM_NCCL_BROADCAST)) != NULL &&
		     o->wait.count >= 8 && c.snap.hdr->stats.events_dropped >= dropped0 + 2;
	}
	ck_assert_int_eq(tp_wait_publish(&c), 0);
	o = tp_nccl_op(&c, SHM_NCCL_BROADCAST);
	ck_assert_uint_eq(o->calls, 10);
	ck_assert_uint_eq(o->wait.count, 8);
	ck_assert_uint_eq(c.snap.hdr->stats.events_dropped - dropped0, 2);
	tp_workload_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

Suite *probes_nccl_suite(void);
Suite *probes_nccl_suite(void)
{
	Suite *s = suite_create("probes_nccl");
	TCase *tc = tcase_create("root");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_nccl_ops_bytes_durations_waits_comms);
	tcase_add_test(tc, test_lost_events_are_counted);
	suite_add_tcase(s, tc);
	return s;
}
