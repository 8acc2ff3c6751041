/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Latency series: exact Prometheus buckets (le inclusive), cumulative fields
 * that only grow, and the sliding summary window checked against the exact
 * samples it should cover, including clocks that step back or jump ahead.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg/hist.h"
#include "collector/agg/latency.h"

#define SEC		1000000000ull
#define WINDOW		(60 * SEC)
#define SLOT		(WINDOW / LATENCY_WINDOW_SLOTS)

static const uint64_t bounds[SHM_LAT_FINITE_BUCKETS] = SHM_LAT_BOUNDS_NS_INIT;

static uint64_t rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_normal(uint64_t *state)
{
	double u1 = ((rng_next(state) >> 11) + 1) * (1.0 / 9007199254740992.0);
	double u2 = (rng_next(state) >> 11) * (1.0 / 9007199254740992.0);

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* The bucket a Prometheus `le` reading gives: first bound >= v. */
static unsigned int linear_bucket_of(uint64_t v)
{
	unsigned int i = 0;

	while (i < SHM_LAT_FINITE_BUCKETS && v > bounds[i])
		i++;
	return i;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double rel_error(uint64_t got, uint64_t exact)
{
	double diff = got > exact ? (double)(got - exact) : (double)(exact - got);

	return exact ? diff / (double)exact : (got ? INFINITY : 0.0);
}

static uint64_t bucket_total(const struct shm_latency *o)
{
	uint64_t t = 0;

	for (unsigned int i = 0; i < SHM_LAT_BUCKETS; i++)
		t += o->bucket[i];
	return t;
}

START_TEST(bucket_of_at_and_around_every_bound)
{
	uint64_t state = 11;

	for (unsigned int i = 0; i < SHM_LAT_FINITE_BUCKETS; i++) {
		uint64_t b = bounds[i];

		if (i > 0)
			ck_assert_uint_gt(b, bounds[i - 1] + 1);
		ck_assert_uint_eq(latency_bucket_of(b), i);		/* le is inclusive */
		ck_assert_uint_eq(latency_bucket_of(b - 1), i);
		ck_assert_uint_eq(latency_bucket_of(b + 1), i + 1);
	}
	ck_assert_uint_eq(latency_bucket_of(0), 0);
	ck_assert_uint_eq(latency_bucket_of(UINT64_MAX), SHM_LAT_FINITE_BUCKETS);
	for (unsigned int k = 0; k < 100000; k++) {
		uint64_t v = rng_next(&state) >> (rng_next(&state) % 64);

		if (latency_bucket_of(v) != linear_bucket_of(v))
			ck_abort_msg("%llu: bucket %u, expected %u", (unsigned long long)v,
				     latency_bucket_of(v), linear_bucket_of(v));
	}
}
END_TEST

START_TEST(init_defaults_and_tiny_windows)
{
	struct latency_series s;
	struct shm_latency o;

	latency_init(&s, 0);
	ck_assert_uint_eq(s.window_ns, LATENCY_DEFAULT_WINDOW_NS);
	ck_assert_ptr_null(s.window);
	latency_export(&s, 123, &o);
	ck_assert_uint_eq(o.count, 0);
	ck_assert_uint_eq(o.window_count, 0);
	ck_assert_uint_eq(o.window_p99_ns, 0);
	ck_assert_uint_eq(bucket_total(&o), 0);

	/* 1 ns cannot be cut into sub-windows: it becomes one ns per slot. */
	latency_init(&s, 1);
	ck_assert_uint_eq(s.window_ns, LATENCY_WINDOW_SLOTS);
	for (uint64_t t = 0; t <= 100; t++)
		ck_assert_int_eq(latency_record(&s, t, 1000 + t), 0);
	latency_export(&s, 100, &o);
	ck_assert_uint_eq(o.count, 101);
	ck_assert_uint_eq(o.window_count, LATENCY_WINDOW_SLOTS);
	ck_assert_uint_eq(o.window_max_ns, 1100);
	latency_destroy(&s);
	ck_assert_ptr_null(s.window);
	ck_assert_uint_eq(s.count, 0);
	latency_destroy(&s);				/* twice is harmless */

	latency_export(NULL, 0, &o);			/* bad input: zeros */
	ck_assert_uint_eq(o.count, 0);
	ck_assert_int_eq(latency_record(NULL, 0, 1), -EINVAL);
	latency_destroy(NULL);
}
END_TEST

/* The exact edges of the window as documented in collector/agg/latency.c. */
START_TEST(window_edges_and_idle_release)
{
	struct latency_series s;
	struct shm_latency o;

	latency_init(&s, WINDOW);
	ck_assert_int_eq(latency_record(&s, 6 * SLOT - 1, 1000), 0);	/* sub-window 5 */
	ck_assert_ptr_nonnull(s.window);

	latency_export(&s, 6 * SLOT, &o);		/* window 1..6 */
	ck_assert_uint_eq(o.window_count, 1);
	ck_assert_uint_eq(o.window_max_ns, 1000);
	ck_assert_uint_eq(o.window_p50_ns, 1000);
	latency_export(&s, 11 * SLOT - 1, &o);		/* window 5..10 */
	ck_assert_uint_eq(o.window_count, 1);
	ck_assert_uint_eq(o.window_p99_ns, 1000);

	latency_export(&s, 11 * SLOT, &o);		/* window 6..11 */
	ck_assert_uint_eq(o.window_count, 0);
	ck_assert_uint_eq(o.window_p50_ns, 0);
	ck_assert_uint_eq(o.window_p90_ns, 0);
	ck_assert_uint_eq(o.window_p99_ns, 0);
	ck_assert_uint_eq(o.window_max_ns, 0);
	ck_assert_uint_eq(o.count, 1);			/* cumulative keeps it */
	ck_assert_uint_eq(o.sum_ns, 1000);
	ck_assert_uint_eq(o.bucket[latency_bucket_of(1000)], 1);
	ck_assert_ptr_null(s.window);			/* idle: memory given back */
	latency_destroy(&s);
}
END_TEST

START_TEST(old_samples_stop_affecting_window_quantiles)
{
	struct latency_series s;
	struct shm_latency o;

	latency_init(&s, WINDOW);
	for (unsigned int i = 0; i < 1000; i++)
		latency_record(&s, 1 * SEC + i, 1000000 + i);		/* ~1 ms */
	latency_export(&s, 30 * SEC, &o);
	ck_assert_uint_eq(o.window_count, 1000);
	ck_assert_double_le(rel_error(o.window_p50_ns, 1000499), HIST_MAX_REL_ERROR);

	for (unsigned int i = 0; i < 1000; i++)
		latency_record(&s, 65 * SEC + i, 10000 + i);		/* ~10 us */
	latency_export(&s, 65 * SEC, &o);
	ck_assert_uint_eq(o.window_count, 1000);
	ck_assert_uint_eq(o.window_max_ns, 10999);
	ck_assert_double_le(rel_error(o.window_p50_ns, 10499), HIST_MAX_REL_ERROR);
	ck_assert_double_le(rel_error(o.window_p99_ns, 10989), HIST_MAX_REL_ERROR);
	ck_assert_uint_eq(o.count, 2000);
	ck_assert_uint_eq(bucket_total(&o), 2000);
	ck_assert_uint_eq(o.bucket[latency_bucket_of(1000000)] +
			  o.bucket[latency_bucket_of(1000999)], 1000);
	latency_destroy(&s);
}
END_TEST

START_TEST(clock_going_back_counts_in_the_open_sub_window)
{
	struct latency_series s;
	struct shm_latency o;

	latency_init(&s, WINDOW);
	latency_record(&s, 100 * SEC, 500);		/* sub-window 10 */
	ck_assert_int_eq(latency_record(&s, 50 * SEC, 7000), 0);
	latency_export(&s, 50 * SEC, &o);
	ck_assert_uint_eq(o.window_count, 2);
	ck_assert_uint_eq(o.window_max_ns, 7000);
	latency_export(&s, 150 * SEC, &o);		/* window 10..15 */
	ck_assert_uint_eq(o.window_count, 2);
	latency_export(&s, 160 * SEC, &o);		/* window 11..16 */
	ck_assert_uint_eq(o.window_count, 0);
	ck_assert_uint_eq(o.count, 2);
	latency_destroy(&s);
}
END_TEST

START_TEST(long_jumps_forward_empty_the_window)
{
	struct latency_series s;
	struct shm_latency o;

	latency_init(&s, WINDOW);
	latency_record(&s, 1 * SEC, 100);
	latency_record(&s, 2 * SEC, 200);
	latency_export(&s, UINT64_MAX, &o);
	ck_assert_uint_eq(o.window_count, 0);
	ck_assert_uint_eq(o.count, 2);
	ck_assert_ptr_null(s.window);

	ck_assert_int_eq(latency_record(&s, UINT64_MAX - 1, 300), 0);
	ck_assert_int_eq(latency_record(&s, 0, 400), 0);	/* far back: open one */
	latency_export(&s, UINT64_MAX, &o);
	ck_assert_uint_eq(o.window_count, 2);
	ck_assert_uint_eq(o.window_max_ns, 400);
	ck_assert_uint_eq(o.count, 4);
	ck_assert_uint_eq(o.sum_ns, 1000);

	latency_destroy(&s);

	/* A jump while samples wait in the open sub-window: kept or dropped. */
	latency_init(&s, WINDOW);
	latency_record(&s, 1 * SEC, 100);		/* sub-window 0 */
	latency_record(&s, 1 * SEC + 5 * SLOT, 200);	/* 5: 0 still inside */
	latency_export(&s, 1 * SEC + 5 * SLOT, &o);
	ck_assert_uint_eq(o.window_count, 2);
	latency_record(&s, 1 * SEC + 11 * SLOT, 300);	/* 11: 5 is out */
	latency_export(&s, 1 * SEC + 11 * SLOT, &o);
	ck_assert_uint_eq(o.window_count, 1);
	ck_assert_uint_eq(o.window_max_ns, 300);
	ck_assert_uint_eq(o.count, 3);
	latency_destroy(&s);
}
END_TEST

/*
 * A long stream whose median drifts with time, exported every 1000 samples
 * and compared with the exact samples the window should hold.
 */
START_TEST(window_quantiles_match_the_exact_window)
{
	const unsigned int n = 100000;
	uint64_t *t = malloc(n * sizeof(*t)), *v = malloc(n * sizeof(*v));
	uint64_t *win = malloc(n * sizeof(*win));
	uint64_t truth[SHM_LAT_BUCKETS] = { 0 };
	uint64_t state = 0x1a7e, now = 0, sum = 0;
	struct shm_latency o, prev;
	struct latency_series s;
	unsigned int exports = 0;

	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(v);
	ck_assert_ptr_nonnull(win);
	memset(&prev, 0, sizeof(prev));
	latency_init(&s, WINDOW);
	for (unsigned int i = 0; i < n; i++) {
		/* ~3 ms apart on average, with idle gaps of up to 70 s. */
		now += rng_next(&state) % (6 * 1000000);
		if (rng_next(&state) % 20000 == 0)
			now += rng_next(&state) % (70 * SEC);
		t[i] = now;
		v[i] = (uint64_t)llround(10000.0 * (1.0 + (double)(now / SEC) / 30.0) *
					 exp(0.8 * rng_normal(&state)));
		ck_assert_int_eq(latency_record(&s, t[i], v[i]), 0);
		sum += v[i];
		truth[linear_bucket_of(v[i])]++;

		if ((i + 1) % 1000 != 0)
			continue;
		/* Sometimes export a little later than the last sample. */
		if (rng_next(&state) % 2)
			now += rng_next(&state) % (15 * SEC);
		latency_export(&s, now, &o);
		exports++;

		/* Cumulative: exact, and never decreasing. */
		ck_assert_uint_eq(o.count, i + 1);
		ck_assert_uint_eq(o.sum_ns, sum);
		ck_assert_uint_eq(bucket_total(&o), o.count);
		ck_assert_int_eq(memcmp(o.bucket, truth, sizeof(truth)), 0);
		ck_assert_uint_ge(o.count, prev.count);
		ck_assert_uint_ge(o.sum_ns, prev.sum_ns);
		for (unsigned int b = 0; b < SHM_LAT_BUCKETS; b++)
			ck_assert_uint_ge(o.bucket[b], prev.bucket[b]);
		prev = o;

		/* The window: sub-windows now/SLOT - 5 .. now/SLOT. */
		uint64_t first = now / SLOT >= LATENCY_WINDOW_SLOTS - 1 ?
				 now / SLOT - (LATENCY_WINDOW_SLOTS - 1) : 0;
		unsigned int m = 0;

		for (unsigned int j = 0; j <= i; j++)
			if (t[j] / SLOT >= first)
				win[m++] = v[j];
		ck_assert_uint_eq(o.window_count, m);
		if (m == 0) {
			ck_assert_uint_eq(o.window_p50_ns, 0);
			ck_assert_uint_eq(o.window_max_ns, 0);
			continue;
		}
		qsort(win, m, sizeof(*win), cmp_u64);
		ck_assert_uint_eq(o.window_max_ns, win[m - 1]);
		ck_assert_double_le(rel_error(o.window_p50_ns, win[(m + 1) / 2 - 1]),
				    HIST_MAX_REL_ERROR);
		ck_assert_double_le(rel_error(o.window_p90_ns, win[(9 * (uint64_t)m + 9) / 10 - 1]),
				    HIST_MAX_REL_ERROR);
		ck_assert_double_le(rel_error(o.window_p99_ns, win[(99 * (uint64_t)m + 99) / 100 - 1]),
				    HIST_MAX_REL_ERROR);
		ck_assert_uint_le(o.window_p50_ns, o.window_p90_ns);
		ck_assert_uint_le(o.window_p90_ns, o.window_p99_ns);
		ck_assert_uint_le(o.window_p99_ns, o.window_max_ns);
	}
	ck_assert_uint_eq(exports, n / 1000);
	latency_destroy(&s);
	free(t);
	free(v);
	free(win);
}
END_TEST

/* A batch as an in-kernel histogram would hand it over. */
struct batch {
	uint64_t hist[HIST_BUCKETS];
	uint64_t prom[SHM_LAT_BUCKETS];
	uint64_t count, sum, max;
};

static void batch_add(struct batch *b, uint64_t v)
{
	b->hist[hist_bucket_index(v)]++;
	b->prom[latency_bucket_of(v)]++;
	b->count++;
	b->sum += v;
	if (v > b->max)
		b->max = v;
}

static int batch_flush(struct latency_series *s, uint64_t now, struct batch *b)
{
	int err = latency_record_batch(s, now, b->hist, b->prom, b->count, b->sum, b->max);

	memset(b, 0, sizeof(*b));
	return err;
}

/*
 * The same samples recorded one by one and in batches (one per read of a
 * 100 ms cadence; both stamped with the read's time, the granularity a
 * batch has): the cumulative fields are identical, and so are the window's
 * count, maximum and quantiles, since every batch holds a sample below
 * 64 ns (an exact bucket, so the batch's lower edge is its true minimum).
 */
START_TEST(batches_equal_samples_recorded_one_by_one)
{
	const uint64_t cadence = 100000000ull;
	struct latency_series one, many;
	struct shm_latency a, b;
	struct batch *bt = calloc(1, sizeof(*bt));
	uint64_t state = 0xba7c4, now = 0, at;

	ck_assert_ptr_nonnull(bt);
	latency_init(&one, WINDOW);
	latency_init(&many, WINDOW);
	for (unsigned int r = 0; r < 3000; r++) {
		unsigned int n = (unsigned int)(rng_next(&state) % 200);

		/* ~100 ms reads, with idle gaps of up to 70 s now and then. */
		now += cadence;
		if (rng_next(&state) % 300 == 0)
			now += rng_next(&state) % (70 * SEC);
		for (unsigned int i = 0; i < n; i++) {
			uint64_t v = (uint64_t)llround(3000.0 * exp(1.5 * rng_normal(&state)));

			if (i == 0)
				v = rng_next(&state) % 64;
			batch_add(bt, v);
			ck_assert_int_eq(latency_record(&one, now, v), 0);
		}
		ck_assert_int_eq(batch_flush(&many, now, bt), 0);

		at = now + rng_next(&state) % cadence;
		latency_export(&one, at, &a);
		latency_export(&many, at, &b);
		ck_assert_uint_eq(b.count, a.count);
		ck_assert_uint_eq(b.sum_ns, a.sum_ns);
		ck_assert_int_eq(memcmp(b.bucket, a.bucket, sizeof(a.bucket)), 0);
		ck_assert_uint_eq(bucket_total(&b), b.count);
		ck_assert_uint_eq(b.window_count, a.window_count);
		ck_assert_uint_eq(b.window_max_ns, a.window_max_ns);
		ck_assert_uint_eq(b.window_p50_ns, a.window_p50_ns);
		ck_assert_uint_eq(b.window_p90_ns, a.window_p90_ns);
		ck_assert_uint_eq(b.window_p99_ns, a.window_p99_ns);
	}
	ck_assert_uint_gt(a.count, 100000);
	latency_destroy(&one);
	latency_destroy(&many);
	free(bt);
}
END_TEST

/*
 * Without the exact minimum, and with a maximum that is not the batch's
 * (an in-kernel all-time maximum), the quantiles still keep the bound
 * against the exact samples and the maximum stays within the top bucket.
 */
START_TEST(batch_quantiles_keep_the_bound_without_exact_extremes)
{
	struct latency_series s;
	struct shm_latency o;
	struct batch *bt = calloc(1, sizeof(*bt));
	uint64_t state = 0x5eed, v[5000], top;

	ck_assert_ptr_nonnull(bt);
	latency_init(&s, WINDOW);
	for (unsigned int i = 0; i < 5000; i++) {
		v[i] = 1000 + rng_next(&state) % 100000;
		batch_add(bt, v[i]);
	}
	qsort(v, 5000, sizeof(v[0]), cmp_u64);
	top = hist_bucket_index(v[4999]);
	bt->max = 10 * v[4999];		/* an older, larger maximum */
	ck_assert_int_eq(batch_flush(&s, SEC, bt), 0);
	latency_export(&s, SEC, &o);
	ck_assert_uint_eq(o.count, 5000);
	ck_assert_uint_eq(o.window_count, 5000);
	ck_assert_uint_ge(o.window_max_ns, v[4999]);
	ck_assert_uint_lt(o.window_max_ns, hist_bucket_lower(top) + hist_bucket_width(top));
	ck_assert_double_le(rel_error(o.window_p50_ns, v[2499]), HIST_MAX_REL_ERROR);
	ck_assert_double_le(rel_error(o.window_p90_ns, v[4499]), HIST_MAX_REL_ERROR);
	ck_assert_double_le(rel_error(o.window_p99_ns, v[4949]), HIST_MAX_REL_ERROR);

	/* Counts that do not add up are refused whole. */
	batch_add(bt, 500);
	bt->count = 2;
	ck_assert_int_eq(batch_flush(&s, SEC, bt), -EINVAL);
	latency_export(&s, SEC, &o);
	ck_assert_uint_eq(o.count, 5000);
	/* An empty batch changes nothing. */
	ck_assert_int_eq(batch_flush(&s, SEC, bt), 0);
	latency_export(&s, SEC, &o);
	ck_assert_uint_eq(o.count, 5000);
	latency_destroy(&s);
	free(bt);
}
END_TEST

Suite *latency_suite(void);
Suite *latency_suite(void)
{
	Suite *s = suite_create("latency");
	TCase *tc = tcase_create("series");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bucket_of_at_and_around_every_bound);
	tcase_add_test(tc, init_defaults_and_tiny_windows);
	tcase_add_test(tc, window_edges_and_idle_release);
	tcase_add_test(tc, old_samples_stop_affecting_window_quantiles);
	tcase_add_test(tc, clock_going_back_counts_in_the_open_sub_window);
	tcase_add_test(tc, long_jumps_forward_empty_the_window);
	tcase_add_test(tc, window_quantiles_match_the_exact_window);
	tcase_add_test(tc, batches_equal_samples_recorded_one_by_one);
	tcase_add_test(tc, batch_quantiles_keep_the_bound_without_exact_extremes);
	suite_add_tcase(s, tc);
	return s;
}
