/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The seqlock under load: one writer process publishing thousands of times
 * faster than the collector does, and several reader processes over a real
 * segment.  Every publish stamps one counter value into every row of every
 * table, so a torn snapshot shows as rows that disagree (copies taken
 * without the seqlock do show them).  Also: a writer killed mid-publish.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

#define TORTURE_READERS		3
#define TORTURE_SECONDS		3
/*
 * Distinct publishes each reader must see.  On a machine busy with other
 * work a reader may get few windows in TORTURE_SECONDS: it goes on, and
 * the writer with it, until it has seen them (TORTURE_LIMIT_SECONDS at
 * most), so progress is checked, not the machine's speed.
 */
#define TORTURE_DISTINCT	100
#define TORTURE_LIMIT_SECONDS	20	/* within the test case's 30 s */

static void torture_opts(struct shm_writer_opts *o, const char *name)
{
	tu_shm_opts(o, name, (struct shm_capacity){ 64, 128, 8, 16 });
}

static void stamp_latency(struct shm_latency *l, uint64_t k)
{
	memset(l, 0, sizeof(*l));
	l->count = k;
	l->sum_ns = k;
	l->bucket[k % SHM_LAT_BUCKETS] = k;
	l->window_count = k;
	l->window_p50_ns = l->window_p90_ns = l->window_p99_ns = l->window_max_ns = k;
}

/* Every row of every table, in full, carries k. */
static void publish_k(struct shm_writer *w, uint64_t k)
{
	struct shm_header_fields *h = &w->base->h;
	struct shm_proc *p = shm_writer_table(w, SHM_TABLE_PROCS);
	struct shm_gpu_mem *m = shm_writer_table(w, SHM_TABLE_GPU_MEM);
	struct shm_gpu *g = shm_writer_table(w, SHM_TABLE_GPUS);
	struct shm_nccl_op *ops = shm_writer_table(w, SHM_TABLE_NCCL_OPS);
	struct shm_nccl_comm *c = shm_writer_table(w, SHM_TABLE_NCCL_COMMS);

	shm_writer_begin(w);
	h->stats.publishes = k;
	for (uint32_t i = 0; i < h->table[SHM_TABLE_PROCS].capacity; i++) {
		p[i].pid = (uint32_t)(k + i);	/* one row per pid, as the validator wants */
		p[i].start_time_ns = k;
		for (uint32_t f = 0; f < SHM_FAMILY_COUNT; f++)
			stamp_latency(&p[i].lat[f], k);
		p[i].migrations = k;
	}
	h->table[SHM_TABLE_PROCS].count = h->table[SHM_TABLE_PROCS].capacity;
	for (uint32_t i = 0; i < h->table[SHM_TABLE_GPU_MEM].capacity; i++) {
		m[i].pid = i;
		m[i].used_bytes = m[i].peak_bytes = m[i].alloc_calls = k;
		m[i].failed_calls = k;
	}
	h->table[SHM_TABLE_GPU_MEM].count = h->table[SHM_TABLE_GPU_MEM].capacity;
	for (uint32_t i = 0; i < h->table[SHM_TABLE_GPUS].capacity; i++) {
		g[i].gpu_id = i;
		g[i].total_bytes = g[i].used_bytes = k;
	}
	h->table[SHM_TABLE_GPUS].count = h->table[SHM_TABLE_GPUS].capacity;
	for (uint32_t i = 0; i < SHM_NCCL_OP_COUNT; i++) {
		ops[i].calls = ops[i].bytes = k;
		stamp_latency(&ops[i].duration, k);
		stamp_latency(&ops[i].wait, k);
	}
	for (uint32_t i = 0; i < h->table[SHM_TABLE_NCCL_COMMS].capacity; i++) {
		c[i].pid = i;
		c[i].comm_id = k;
	}
	h->table[SHM_TABLE_NCCL_COMMS].count = h->table[SHM_TABLE_NCCL_COMMS].capacity;
	for (uint32_t f = 0; f < SHM_FAMILY_COUNT; f++)
		stamp_latency(&h->node[f], k);
	h->heartbeat_mono_ns = now_mono_ns();
	h->stats.last_publish_duration_ns = k;
	shm_writer_end(w);
}

/* Rows that do not carry the header's k: zero for a consistent snapshot. */
static uint64_t count_torn(const struct shm_snapshot *s)
{
	uint64_t k = s->hdr->stats.publishes, torn = 0;
	const struct shm_proc *p;
	const struct shm_gpu_mem *m;
	const struct shm_gpu *g;
	const struct shm_nccl_op *o;
	const struct shm_nccl_comm *c;
	uint32_t n;

	p = shm_snapshot_procs(s, &n);
	for (uint32_t i = 0; i < n; i++)
		torn += p[i].pid != (uint32_t)(k + i) || p[i].start_time_ns != k ||
			p[i].lat[SHM_FAMILY_COUNT - 1].window_max_ns != k ||
			p[i].migrations != k;
	m = shm_snapshot_gpu_mem(s, &n);
	for (uint32_t i = 0; i < n; i++)
		torn += m[i].used_bytes != k || m[i].failed_calls != k;
	g = shm_snapshot_gpus(s, &n);
	for (uint32_t i = 0; i < n; i++)
		torn += g[i].used_bytes != k;
	o = shm_snapshot_nccl_ops(s, &n);
	for (uint32_t i = 0; i < n; i++)
		torn += o[i].calls != k || o[i].wait.count != k;
	c = shm_snapshot_nccl_comms(s, &n);
	for (uint32_t i = 0; i < n; i++)
		torn += c[i].comm_id != k;
	torn += s->hdr->stats.last_publish_duration_ns != k;
	return torn;
}

struct torture_result {
	uint64_t clean;		/* OK snapshots */
	uint64_t torn;		/* OK snapshots with disagreeing rows */
	uint64_t busy;
	uint64_t other;		/* any other status */
	uint64_t backwards;	/* k went down between two snapshots */
	uint64_t distinct;	/* snapshots whose k differed from the last one */
	uint64_t raw_torn;	/* control: unlocked copies that were torn */
	char last_reason[256];
};

/*
 * Control: the same check on a copy taken without the seqlock.  Shows that
 * the checksum detects tears under this load; reported, not asserted, since
 * whether one happens is up to the scheduler.
 */
static uint64_t raw_copy_torn(const char *name, struct shm_snapshot *raw)
{
	struct shm_reader r;
	struct shm_snapshot tmp = { 0 };
	char why[200];
	uint64_t torn = 0;

	shm_reader_init(&r, name);
	if (shm_reader_snapshot(&r, &tmp, why, sizeof(why)) == SHM_READ_OK) {
		memcpy(tmp.buf, r.map, r.map_size);
		if (((struct shm_header_fields *)tmp.buf)->stats.publishes != 0) {
			raw->buf = tmp.buf;
			raw->hdr = tmp.buf;
			torn = count_torn(raw) != 0;
		}
	}
	shm_snapshot_free(&tmp);
	shm_reader_close(&r);
	return torn;
}

static void reader_child(const char *name, uint64_t until_ns, uint64_t limit_ns,
			 struct torture_result *res, uint64_t *readers_left)
{
	struct shm_reader r;
	struct shm_snapshot s = { 0 }, raw = { 0 };
	uint64_t last_k = 0;
	char why[200];
	unsigned int loops = 0;

	shm_reader_init(&r, name);
	for (uint64_t now = now_mono_ns();
	     now < until_ns || (res->distinct < TORTURE_DISTINCT && now < limit_ns);
	     now = now_mono_ns()) {
		enum shm_read_status st = shm_reader_snapshot(&r, &s, why, sizeof(why));

		if (st == SHM_READ_OK) {
			uint64_t k = s.hdr->stats.publishes;

			res->clean++;
			res->torn += count_torn(&s) != 0;
			res->backwards += k < last_k;
			res->distinct += k != last_k;
			last_k = k;
		} else {
			if (st == SHM_READ_BUSY)
				res->busy++;
			else
				res->other++;
			snprintf(res->last_reason, sizeof(res->last_reason), "%s: %.200s",
				 shm_read_status_name(st), why);
		}
		if (++loops % 16 == 0)
			res->raw_torn += raw_copy_torn(name, &raw);
	}
	__atomic_sub_fetch(readers_left, 1, __ATOMIC_SEQ_CST);
	shm_snapshot_free(&s);
	shm_reader_close(&r);
}

START_TEST(torture_no_torn_snapshots)
{
	struct shm_writer w;
	struct shm_writer_opts o;
	struct torture_result *res;
	pid_t readers[TORTURE_READERS], writer;
	char name[64];
	uint64_t until, limit, clean = 0, raw_torn = 0, published, *readers_left;
	int status;

	tu_unique_shm_name(name, sizeof(name));
	torture_opts(&o, name);
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	publish_k(&w, 1);
	res = mmap(NULL, sizeof(*res) * TORTURE_READERS + 2 * sizeof(uint64_t),
		   PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(res, MAP_FAILED);
	memset(res, 0, sizeof(*res) * TORTURE_READERS + 2 * sizeof(uint64_t));
	readers_left = (uint64_t *)&res[TORTURE_READERS] + 1;
	*readers_left = TORTURE_READERS;
	until = now_mono_ns() + TORTURE_SECONDS * 1000000000ull;
	limit = until + TORTURE_LIMIT_SECONDS * 1000000000ull;

	writer = fork();
	ck_assert_int_ge(writer, 0);
	if (writer == 0) {
		uint64_t k = 1;

		/*
		 * Thousands of times the collector's rate; the short pause
		 * leaves readers windows without the writer ever waiting.
		 */
		while ((now_mono_ns() < until ||
			__atomic_load_n(readers_left, __ATOMIC_SEQ_CST) > 0) &&
		       now_mono_ns() < limit) {
			struct timespec gap = { 0, 20000 };

			publish_k(&w, ++k);
			nanosleep(&gap, NULL);
		}
		*(uint64_t *)&res[TORTURE_READERS] = k;
		_exit(0);
	}
	for (int i = 0; i < TORTURE_READERS; i++) {
		readers[i] = fork();
		ck_assert_int_ge(readers[i], 0);
		if (readers[i] == 0) {
			reader_child(name, until, limit, &res[i], readers_left);
			_exit(0);
		}
	}
	for (int i = 0; i < TORTURE_READERS; i++) {
		ck_assert_int_eq(waitpid(readers[i], &status, 0), readers[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "reader %d died (status 0x%x)", i, status);
	}
	ck_assert_int_eq(waitpid(writer, &status, 0), writer);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	published = *(uint64_t *)&res[TORTURE_READERS];

	for (int i = 0; i < TORTURE_READERS; i++) {
		fprintf(stderr, "shm torture reader %d: %llu clean (%llu distinct), %llu torn, "
			"%llu busy, %llu other, %llu backwards; unlocked control: %llu torn%s%s\n", i,
			(unsigned long long)res[i].clean, (unsigned long long)res[i].distinct,
			(unsigned long long)res[i].torn, (unsigned long long)res[i].busy,
			(unsigned long long)res[i].other, (unsigned long long)res[i].backwards,
			(unsigned long long)res[i].raw_torn,
			res[i].last_reason[0] ? "; last: " : "", res[i].last_reason);
		ck_assert_uint_eq(res[i].torn, 0);
		ck_assert_uint_eq(res[i].backwards, 0);
		ck_assert_uint_eq(res[i].other, 0);
		/* Readers make progress while the writer never pauses. */
		ck_assert_uint_ge(res[i].clean, 100);
		ck_assert_uint_ge(res[i].distinct, TORTURE_DISTINCT);
		clean += res[i].clean;
		raw_torn += res[i].raw_torn;
	}
	/* The checksum does catch tears: unlocked copies under this load do tear. */
	ck_assert_uint_gt(raw_torn, 0);
	fprintf(stderr, "shm torture: %llu publishes in %d s or more, %llu clean snapshots\n",
		(unsigned long long)published, TORTURE_SECONDS, (unsigned long long)clean);
	ck_assert_uint_ge(published, 1000);
	munmap(res, sizeof(*res) * TORTURE_READERS + 2 * sizeof(uint64_t));
	shm_writer_close(&w, 1);
}
END_TEST

/*
 * A writer SIGKILLed between begin and end leaves seq odd forever.  A reader
 * must say BUSY within a bounded time, keep saying so without hanging, and
 * pick up the next collector's segment on its own.
 */
START_TEST(writer_killed_mid_publish_reports_busy_then_recovers)
{
	struct shm_writer w, w2;
	struct shm_writer_opts o;
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	char name[64], why[256], c;
	uint64_t t0, worst = 0, g1;
	int pipefd[2], status;
	pid_t writer;

	tu_unique_shm_name(name, sizeof(name));
	torture_opts(&o, name);
	ck_assert_int_eq(pipe(pipefd), 0);
	writer = fork();
	ck_assert_int_ge(writer, 0);
	if (writer == 0) {
		close(pipefd[0]);
		alarm(20);	/* never outlive a failed test */
		if (shm_writer_create(&w, &o) < 0)
			_exit(1);
		publish_k(&w, 1);
		if (write(pipefd[1], "p", 1) != 1)
			_exit(1);
		tu_sleep_ms(200);
		shm_writer_begin(&w);
		if (write(pipefd[1], "b", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(pipefd[1]);
	ck_assert_int_eq(read(pipefd[0], &c, 1), 1);
	shm_reader_init(&r, name);
	ck_assert_int_eq(shm_reader_snapshot(&r, &s, why, sizeof(why)), SHM_READ_OK);
	g1 = r.generation;
	ck_assert_uint_eq(s.hdr->stats.publishes, 1);
	ck_assert_int_eq(read(pipefd[0], &c, 1), 1);
	ck_assert_int_eq(c, 'b');
	kill(writer, SIGKILL);
	ck_assert_int_eq(waitpid(writer, &status, 0), writer);
	close(pipefd[0]);

	for (int i = 0; i < 5; i++) {
		uint64_t dt;

		t0 = now_mono_ns();
		ck_assert_int_eq(shm_reader_snapshot(&r, &s, why, sizeof(why)), SHM_READ_BUSY);
		dt = now_mono_ns() - t0;
		worst = dt > worst ? dt : worst;
	}
	fprintf(stderr, "shm killed writer: BUSY after at most %.2f ms (%s)\n",
		(double)worst / 1e6, why);
	ck_assert_ptr_nonnull(strstr(why, "no consistent copy after 64 attempts"));
	/*
	 * Bounded by its attempts, which why counts; the time only guards
	 * against a hang (about 35 ms on a quiet machine, and each of the
	 * attempts' sleeps can wake late on a busy one).
	 */
	ck_assert_uint_lt(worst, 2000ull * 1000000ull);
	/* The last good snapshot is still there. */
	ck_assert_uint_eq(s.hdr->stats.publishes, 1);

	/* A smaller retry bound answers sooner: after as many attempts. */
	r.max_retries = 2;
	t0 = now_mono_ns();
	ck_assert_int_eq(shm_reader_snapshot(&r, &s, why, sizeof(why)), SHM_READ_BUSY);
	ck_assert_uint_lt(now_mono_ns() - t0, 1000ull * 1000000ull);
	ck_assert_msg(strstr(why, "no consistent copy after 2 attempts"), "%s", why);
	r.max_retries = 64;

	/* The next collector replaces the dead one's segment. */
	ck_assert_int_eq(shm_writer_create(&w2, &o), 0);
	publish_k(&w2, 7);
	ck_assert_int_eq(shm_reader_snapshot(&r, &s, why, sizeof(why)), SHM_READ_OK);
	ck_assert_uint_ne(r.generation, g1);
	ck_assert_uint_eq(s.hdr->stats.publishes, 7);
	ck_assert_uint_eq(count_torn(&s), 0);
	shm_snapshot_free(&s);
	shm_reader_close(&r);
	shm_writer_close(&w2, 1);
}
END_TEST

Suite *shm_seqlock_suite(void);
Suite *shm_seqlock_suite(void)
{
	Suite *s = suite_create("shm_seqlock");
	TCase *tc = tcase_create("seqlock");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, torture_no_torn_snapshots);
	tcase_add_test(tc, writer_killed_mid_publish_reports_busy_then_recovers);
	suite_add_tcase(s, tc);
	return s;
}
