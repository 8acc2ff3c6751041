/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exporter's one reader of the segment (exporter/segment_hub.h): its
 * threads share one copy of each publish, a copy a thread holds stays as
 * it was however many publishes come after it, and threads reading while
 * the collector publishes each see whole publishes in order, with one
 * copy made per publish seen, not one per thread.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "exporter/source.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

#define ROWS	4

static struct {
	char name[64];
	struct shm_writer w;
} fx;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A publish whose process rows carry its number (pids stamp * 8 + row). */
static void publish(uint32_t stamp)
{
	struct shm_proc *p;

	shm_writer_begin(&fx.w);
	p = shm_writer_table(&fx.w, SHM_TABLE_PROCS);
	memset(p, 0, ROWS * sizeof(*p));
	for (int i = 0; i < ROWS; i++) {
		p[i].pid = stamp * 8 + (uint32_t)i;
		p[i].ppid = 1;
		p[i].watch_reason = SHM_WATCH_SIMULATED;
		snprintf(p[i].comm, SHM_COMM_LEN, "trainer");
	}
	fx.w.base->h.table[SHM_TABLE_PROCS].count = ROWS;
	fx.w.base->h.heartbeat_mono_ns = mono_ns();
	fx.w.base->h.heartbeat_real_ns = (uint64_t)time(NULL) * 1000000000ull;
	shm_writer_end(&fx.w);
}

/* The stamp of a snapshot, from its rows; 0 when they disagree. */
static uint32_t stamp_of(const struct shm_snapshot *snap)
{
	uint32_t n;
	const struct shm_proc *p = shm_snapshot_procs(snap, &n);

	ck_assert_uint_eq(n, ROWS);
	for (uint32_t i = 1; i < n; i++)
		if (p[i].pid != p[0].pid + i)
			return 0;
	return p[0].pid / 8;
}

static uint64_t copies(const struct source *s)
{
	struct hub_counts n;

	segment_hub_counts(s->hub, &n);
	return n.copies;
}

static unsigned int buffers(const struct source *s)
{
	struct hub_counts n;

	segment_hub_counts(s->hub, &n);
	return n.buffers;
}

static void setup(void)
{
	struct shm_writer_opts o;

	memset(&fx, 0, sizeof(fx));
	tu_unique_shm_name(fx.name, sizeof(fx.name));
	tu_shm_opts(&o, fx.name, (struct shm_capacity){ 8, 8, 4, 4 });
	ck_assert_int_eq(shm_writer_create(&fx.w, &o), 0);
}

static void teardown(void)
{
	shm_writer_close(&fx.w, 1);
}

START_TEST(threads_share_one_copy_of_each_publish)
{
	struct source a, b;
	const struct shm_snapshot *held;

	publish(100);
	source_init(&a, fx.name);
	source_init(&b, fx.name);
	ck_assert_ptr_eq(a.hub, b.hub);
	ck_assert_msg(source_refresh(&a) == SHM_READ_OK, "%s", a.reason);
	ck_assert_int_eq(source_refresh(&b), SHM_READ_OK);
	ck_assert_ptr_eq(source_fresh(&a), source_fresh(&b));
	ck_assert_uint_eq(copies(&a), 1);
	/* Nothing published since: the same copy again, no new one. */
	ck_assert(source_current(&a));
	ck_assert_int_eq(source_refresh(&a), SHM_READ_OK);
	ck_assert_ptr_eq(source_fresh(&a), source_fresh(&b));
	ck_assert_uint_eq(copies(&a), 1);

	/* a keeps its copy while b follows two publishes. */
	held = source_fresh(&a);
	publish(200);
	ck_assert(!source_current(&a));
	ck_assert_int_eq(source_refresh(&b), SHM_READ_OK);
	ck_assert_uint_eq(stamp_of(source_fresh(&b)), 200);
	publish(300);
	ck_assert_int_eq(source_refresh(&b), SHM_READ_OK);
	ck_assert_uint_eq(stamp_of(source_fresh(&b)), 300);
	ck_assert_uint_eq(copies(&a), 3);
	ck_assert_ptr_eq(source_fresh(&a), held);
	ck_assert_uint_eq(stamp_of(held), 100);
	ck_assert_uint_eq(held->hdr->table[SHM_TABLE_PROCS].count, ROWS);

	ck_assert_int_eq(source_refresh(&a), SHM_READ_OK);
	ck_assert_ptr_eq(source_fresh(&a), source_fresh(&b));
	ck_assert_uint_eq(copies(&a), 3);
	source_close(&a);
	/* The hub lives on with b, its copy with it. */
	ck_assert_uint_eq(stamp_of(source_fresh(&b)), 300);
	source_close(&b);
}
END_TEST

/*
 * Threads looking in step share one copy; threads looking in turn hold a
 * different publish each.  The hub keeps as many buffers either way (a
 * copy each and the reader's next), so the exporter's memory does not
 * follow its threads' pace.
 */
START_TEST(buffers_are_one_per_thread_and_one_whatever_their_looks)
{
	struct source s[3];
	uint32_t stamps[3];

	publish(1);
	for (int i = 0; i < 3; i++)
		source_init(&s[i], fx.name);
	ck_assert_int_eq(source_refresh(&s[0]), SHM_READ_OK);
	ck_assert_uint_eq(buffers(&s[0]), 4);
	for (uint32_t k = 2; k <= 20; k++) {
		publish(k);
		for (int i = 0; i < 3; i++) {
			ck_assert_int_eq(source_refresh(&s[i]), SHM_READ_OK);
			ck_assert_uint_eq(stamp_of(source_fresh(&s[i])), k);
		}
		ck_assert_uint_eq(buffers(&s[0]), 4);
	}
	for (uint32_t k = 21; k <= 40; k++) {
		publish(k);
		ck_assert_int_eq(source_refresh(&s[k % 3]), SHM_READ_OK);
		ck_assert_uint_eq(buffers(&s[0]), 4);
	}
	for (int i = 0; i < 3; i++)
		stamps[i] = stamp_of(source_fresh(&s[i]));
	/* Each holds the last publish it looked at: 39, 40 and 38. */
	ck_assert_uint_eq(stamps[0], 39);
	ck_assert_uint_eq(stamps[1], 40);
	ck_assert_uint_eq(stamps[2], 38);
	ck_assert_uint_eq(copies(&s[0]), 40);
	for (int i = 0; i < 3; i++)
		source_close(&s[i]);
}
END_TEST

START_TEST(a_missing_segment_is_said_by_every_thread)
{
	struct source a;

	source_init(&a, "/zernel-no-such-segment-here");
	ck_assert_int_eq(source_refresh(&a), SHM_READ_MISSING);
	ck_assert_ptr_null(source_fresh(&a));
	ck_assert(!source_current(&a));
	ck_assert_ptr_nonnull(strstr(a.reason, "missing"));
	source_close(&a);
}
END_TEST

#define READERS		4
#define PUBLISHES	300

static atomic_int done;
/* The publishes any reader saw. */
static atomic_uchar seen[PUBLISHES + 1];

struct reader_result {
	uint32_t looks, last, torn, backwards;
};

static void *read_loop(void *arg)
{
	struct reader_result *r = arg;
	struct source s;

	source_init(&s, fx.name);
	while (!atomic_load(&done)) {
		const struct shm_snapshot *snap;
		uint32_t stamp;

		if (source_refresh(&s) != SHM_READ_OK || !(snap = source_fresh(&s)))
			continue;
		stamp = stamp_of(snap);
		r->looks++;
		r->torn += stamp == 0;
		r->backwards += stamp && stamp < r->last;
		if (stamp) {
			r->last = stamp;
			if (stamp <= PUBLISHES)
				atomic_store(&seen[stamp], 1);
		}
	}
	source_close(&s);
	return NULL;
}

START_TEST(threads_read_whole_publishes_in_order_while_the_writer_publishes)
{
	struct reader_result res[READERS];
	pthread_t t[READERS];
	struct source keep;
	uint64_t made, distinct = 0;

	memset(res, 0, sizeof(res));
	for (int k = 0; k <= PUBLISHES; k++)
		atomic_store(&seen[k], 0);
	publish(1);
	/* Holds the hub across the readers' comings and goings, to count its copies. */
	source_init(&keep, fx.name);
	atomic_store(&done, 0);
	for (int i = 0; i < READERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, read_loop, &res[i]), 0);
	for (uint32_t k = 2; k <= PUBLISHES; k++) {
		publish(k);
		tu_sleep_ms(1);
	}
	atomic_store(&done, 1);
	for (int i = 0; i < READERS; i++)
		pthread_join(t[i], NULL);
	made = copies(&keep);
	for (int i = 0; i < READERS; i++) {
		ck_assert_msg(res[i].torn == 0 && res[i].backwards == 0,
			      "reader %d: %u torn, %u backwards in %u looks", i, res[i].torn,
			      res[i].backwards, res[i].looks);
		ck_assert_uint_gt(res[i].looks, 0);
	}
	for (int k = 0; k <= PUBLISHES; k++)
		distinct += atomic_load(&seen[k]);
	/*
	 * One copy per publish seen, whichever thread saw it first: a copy
	 * goes to the thread that made it, which counts it unless the
	 * collector looked stale to it then (a publish or two on a busy
	 * machine).
	 */
	ck_assert_uint_ge(made, distinct);
	ck_assert_uint_le(made, distinct + 2);
	/* Buffers for the most threads at once (the readers and keep) and one. */
	ck_assert_uint_eq(buffers(&keep), READERS + 2);
	fprintf(stderr, "segment_hub: %d readers, %d publishes, %llu seen, %llu copies, "
		"looks %u %u %u %u\n", READERS, PUBLISHES, (unsigned long long)distinct,
		(unsigned long long)made, res[0].looks, res[1].looks, res[2].looks,
		res[3].looks);
	source_close(&keep);
}
END_TEST

Suite *segment_hub_suite(void);
Suite *segment_hub_suite(void)
{
	Suite *s = suite_create("segment_hub");
	TCase *tc = tcase_create("shared");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, threads_share_one_copy_of_each_publish);
	tcase_add_test(tc, buffers_are_one_per_thread_and_one_whatever_their_looks);
	tcase_add_test(tc, a_missing_segment_is_said_by_every_thread);
	tcase_add_test(tc, threads_read_whole_publishes_in_order_while_the_writer_publishes);
	suite_add_tcase(s, tc);
	return s;
}
