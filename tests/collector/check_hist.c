/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Log-linear histogram: bucket geometry over the whole range, the stated
 * quantile error bound against exact sorted samples on several
 * distributions, nearest-rank semantics, merging and clamping.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/agg/hist.h"

#define N_SAMPLES	100000u
#define LAST_BUCKET	(HIST_BUCKETS - 1u)

/* splitmix64: deterministic, good enough for test data. */
static uint64_t rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1]. */
static double rng_unit(uint64_t *state)
{
	return ((rng_next(state) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

static double rng_normal(uint64_t *state)
{
	double u1 = rng_unit(state), u2 = rng_unit(state);

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static uint64_t lognormal_ns(uint64_t *state, double median_ns, double sigma)
{
	return (uint64_t)llround(median_ns * exp(sigma * rng_normal(state)));
}

enum dist { DIST_UNIFORM, DIST_LOGNORMAL, DIST_BIMODAL, DIST_HEAVY_TAIL, DIST_LOG_UNIFORM, DIST_COUNT };

static const char *const dist_names[DIST_COUNT] = {
	"uniform", "log-normal", "bimodal", "heavy tail", "log-uniform 100ns-100s",
};

static uint64_t dist_sample(enum dist d, uint64_t *state)
{
	switch (d) {
	case DIST_UNIFORM:		/* 100 ns .. 10 ms */
		return 100 + rng_next(state) % 10000000u;
	case DIST_LOGNORMAL:		/* median 50 us, wide */
		return lognormal_ns(state, 50e3, 1.0);
	case DIST_BIMODAL:		/* fast launches plus slow stalls */
		if (rng_next(state) % 10 < 8)
			return lognormal_ns(state, 20e3, 0.2);
		return lognormal_ns(state, 5e6, 0.3);
	case DIST_HEAVY_TAIL:		/* Pareto, xm = 1 us, alpha = 1.1 */
		return (uint64_t)(1000.0 / pow(rng_unit(state), 1.0 / 1.1));
	case DIST_LOG_UNIFORM:		/* 100 ns .. 100 s, every octave */
		return (uint64_t)(100.0 * pow(1e9, 1.0 - rng_unit(state)));
	default:
		return 0;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank of num/den among n samples, in exact integer arithmetic. */
static uint64_t exact_rank(uint64_t num, uint64_t den, uint64_t n)
{
	uint64_t r = (num * n + den - 1) / den;

	return r < 1 ? 1 : r;
}

static double rel_error(uint64_t got, uint64_t exact)
{
	double diff = got > exact ? (double)(got - exact) : (double)(exact - got);

	return exact ? diff / (double)exact : (got ? INFINITY : 0.0);
}

START_TEST(bucket_geometry_is_contiguous_over_the_whole_range)
{
	ck_assert_uint_eq(hist_bucket_lower(0), 0);
	for (size_t i = 0; i < HIST_BUCKETS; i++) {
		uint64_t lo = hist_bucket_lower(i), w = hist_bucket_width(i);

		ck_assert_uint_ge(w, 1);
		ck_assert_uint_eq(hist_bucket_index(lo), i);
		ck_assert_uint_eq(hist_bucket_index(lo + w - 1), i);
		if (i + 1 < HIST_BUCKETS)
			ck_assert_uint_eq(hist_bucket_lower(i + 1), lo + w);
		if (i < HIST_LINEAR_LIMIT)
			ck_assert_uint_eq(w, 1);
		else	/* the relative width behind the error bound */
			ck_assert_uint_le(w * (1u << HIST_SUB_BITS), lo);
	}
	ck_assert_uint_eq(hist_bucket_lower(LAST_BUCKET) + hist_bucket_width(LAST_BUCKET),
			  HIST_MAX_VALUE + 1);
	/* The range covers 100 ns to 100 s at least. */
	ck_assert_uint_ge(HIST_MAX_VALUE, 100000000000ull);
	/* Past the end: an empty bucket, not garbage. */
	ck_assert_uint_eq(hist_bucket_width(HIST_BUCKETS), 0);
	ck_assert_uint_eq(hist_bucket_lower(HIST_BUCKETS), HIST_MAX_VALUE + 1);
	ck_assert_uint_eq(hist_bucket_width((size_t)-1), 0);
}
END_TEST

START_TEST(bucket_index_exhaustive_for_small_values)
{
	size_t prev = 0;

	for (uint64_t v = 0; v < (1u << 22); v++) {
		size_t i = hist_bucket_index(v);
		uint64_t lo = hist_bucket_lower(i);

		if (i >= HIST_BUCKETS)
			ck_abort_msg("index %zu out of range for %llu", i, (unsigned long long)v);
		if (v < lo || v >= lo + hist_bucket_width(i))
			ck_abort_msg("value %llu outside bucket %zu", (unsigned long long)v, i);
		/* Monotone, one bucket at a time. */
		if (i != prev && i != prev + 1)
			ck_abort_msg("index jumps from %zu to %zu at %llu", prev, i,
				     (unsigned long long)v);
		prev = i;
	}
}
END_TEST

START_TEST(bucket_index_sampled_for_large_values)
{
	uint64_t state = 42;

	for (unsigned int k = 0; k < 1000000u; k++) {
		/* Every bit length equally likely, up to and past the range. */
		uint64_t a = rng_next(&state) >> (rng_next(&state) % 64);
		uint64_t b = rng_next(&state) >> (rng_next(&state) % 64);
		uint64_t lo_v = a < b ? a : b, hi_v = a < b ? b : a;
		size_t i = hist_bucket_index(a);

		/* Plain checks in hot loops: each ck_assert costs a write(2). */
		if (hist_bucket_index(lo_v) > hist_bucket_index(hi_v))
			ck_abort_msg("index not monotone between %llu and %llu",
				     (unsigned long long)lo_v, (unsigned long long)hi_v);
		if (a > HIST_MAX_VALUE) {
			if (i != LAST_BUCKET)
				ck_abort_msg("%llu above the range not in the last bucket",
					     (unsigned long long)a);
			continue;
		}
		if (a < hist_bucket_lower(i) || a >= hist_bucket_lower(i) + hist_bucket_width(i))
			ck_abort_msg("value %llu outside bucket %zu", (unsigned long long)a, i);
	}
	ck_assert_uint_eq(hist_bucket_index(HIST_MAX_VALUE), LAST_BUCKET);
	ck_assert_uint_eq(hist_bucket_index(HIST_MAX_VALUE + 1), LAST_BUCKET);
	ck_assert_uint_eq(hist_bucket_index(UINT64_MAX), LAST_BUCKET);
}
END_TEST

START_TEST(empty_histogram_reports_zero)
{
	struct hist h;

	hist_reset(&h);
	ck_assert_uint_eq(h.count, 0);
	ck_assert_uint_eq(h.min, UINT64_MAX);
	ck_assert_uint_eq(h.max, 0);
	ck_assert_uint_eq(hist_quantile(&h, 0.0), 0);
	ck_assert_uint_eq(hist_quantile(&h, 0.5), 0);
	ck_assert_uint_eq(hist_quantile(&h, 1.0), 0);
}
END_TEST

START_TEST(values_above_range_are_clamped_and_counted)
{
	struct hist h;

	hist_reset(&h);
	hist_record(&h, HIST_MAX_VALUE);
	ck_assert_uint_eq(h.clamped, 0);
	hist_record(&h, HIST_MAX_VALUE + 1);
	hist_record(&h, UINT64_MAX);
	ck_assert_uint_eq(h.count, 3);
	ck_assert_uint_eq(h.clamped, 2);
	ck_assert_uint_eq(h.bucket[LAST_BUCKET], 3);
	ck_assert_uint_eq(h.min, HIST_MAX_VALUE);
	ck_assert_uint_eq(h.max, UINT64_MAX);
	ck_assert_uint_eq(h.sum, UINT64_MAX);	/* saturated, not wrapped */
	/* Reported from the last bucket, never below what was seen. */
	ck_assert_uint_eq(hist_quantile(&h, 1.0), HIST_MAX_VALUE);
	ck_assert_uint_eq(hist_quantile(&h, 0.0), HIST_MAX_VALUE);
}
END_TEST

START_TEST(record_n_equals_n_records)
{
	struct hist a, b;
	uint64_t state = 7;

	hist_reset(&a);
	hist_reset(&b);
	for (unsigned int k = 0; k < 1000; k++) {
		uint64_t v = rng_next(&state) >> (rng_next(&state) % 64);
		uint64_t n = rng_next(&state) % 5;

		hist_record_n(&a, v, n);
		for (uint64_t j = 0; j < n; j++)
			hist_record(&b, v);
	}
	ck_assert_int_eq(memcmp(&a, &b, sizeof(a)), 0);
	hist_reset(&a);
	hist_record_n(&a, UINT64_MAX / 2, 3);
	ck_assert_uint_eq(a.sum, UINT64_MAX);
	ck_assert_uint_eq(a.count, 3);
}
END_TEST

START_TEST(quantile_q0_q1_and_out_of_range_q)
{
	struct hist h;

	hist_reset(&h);
	hist_record(&h, 12345);
	/* A single value: clamping to [min, max] makes it exact. */
	ck_assert_uint_eq(hist_quantile(&h, 0.0), 12345);
	ck_assert_uint_eq(hist_quantile(&h, 1.0), 12345);

	hist_record(&h, 1000);
	hist_record(&h, 50);
	ck_assert_uint_eq(hist_quantile(&h, 0.0), 50);		/* exact below 64 */
	ck_assert_double_le(rel_error(hist_quantile(&h, 1.0), 12345), HIST_MAX_REL_ERROR);
	ck_assert_uint_le(hist_quantile(&h, 1.0), 12345);
	ck_assert_uint_eq(hist_quantile(&h, -1.0), hist_quantile(&h, 0.0));
	ck_assert_uint_eq(hist_quantile(&h, NAN), hist_quantile(&h, 0.0));
	ck_assert_uint_eq(hist_quantile(&h, 7.0), hist_quantile(&h, 1.0));
	ck_assert_uint_eq(hist_quantile(&h, INFINITY), hist_quantile(&h, 1.0));
}
END_TEST

START_TEST(quantile_is_nearest_rank_exactly_below_64)
{
	uint64_t vals[50];
	struct hist h;
	uint64_t state = 3;

	/* 0..49 shuffled: values below 64 are exact, so ranks show plainly. */
	for (unsigned int i = 0; i < 50; i++)
		vals[i] = i;
	for (unsigned int i = 49; i > 0; i--) {
		unsigned int j = (unsigned int)(rng_next(&state) % (i + 1));
		uint64_t t = vals[i];

		vals[i] = vals[j];
		vals[j] = t;
	}
	hist_reset(&h);
	for (unsigned int i = 0; i < 50; i++)
		hist_record(&h, vals[i]);
	/* k = 14, 28, 56: q * 50 lands a rounding error above an integer. */
	for (uint64_t k = 0; k <= 100; k++)
		ck_assert_uint_eq(hist_quantile(&h, (double)k / 100.0),
				  exact_rank(k, 100, 50) - 1);
}
END_TEST

/* Every bucket's extremes: the bound holds, and it is attained. */
START_TEST(error_bound_holds_and_is_tight_per_bucket)
{
	double worst = 0.0;
	struct hist h;

	for (size_t i = 0; i < HIST_BUCKETS; i++) {
		uint64_t lo = hist_bucket_lower(i), hi = lo + hist_bucket_width(i) - 1;
		double e0, e1;

		hist_reset(&h);
		hist_record(&h, lo);
		hist_record(&h, hi);
		e0 = rel_error(hist_quantile(&h, 0.0), lo);
		e1 = rel_error(hist_quantile(&h, 1.0), hi);
		ck_assert_double_le(e0, HIST_MAX_REL_ERROR);
		ck_assert_double_le(e1, HIST_MAX_REL_ERROR);
		worst = fmax(worst, fmax(e0, e1));
	}
	ck_assert_double_eq(worst, HIST_MAX_REL_ERROR);
}
END_TEST

START_TEST(quantiles_match_exact_sorted_values)
{
	static const uint64_t extra[][2] = { { 9999, 10000 }, { 99999, 100000 } };
	enum dist d = (enum dist)_i;
	uint64_t *vals = malloc(N_SAMPLES * sizeof(*vals));
	uint64_t state = 0x5eed0000u + (uint64_t)d, sum = 0, prev = 0;
	double worst = 0.0;
	struct hist h;

	ck_assert_ptr_nonnull(vals);
	hist_reset(&h);
	for (unsigned int i = 0; i < N_SAMPLES; i++) {
		vals[i] = dist_sample(d, &state);
		sum += vals[i];
		hist_record(&h, vals[i]);
	}
	qsort(vals, N_SAMPLES, sizeof(*vals), cmp_u64);
	ck_assert_uint_eq(h.count, N_SAMPLES);
	ck_assert_uint_eq(h.sum, sum);
	ck_assert_uint_eq(h.min, vals[0]);
	ck_assert_uint_eq(h.max, vals[N_SAMPLES - 1]);

	for (uint64_t k = 0; k <= 1000 + 2; k++) {
		uint64_t num = k <= 1000 ? k : extra[k - 1001][0];
		uint64_t den = k <= 1000 ? 1000 : extra[k - 1001][1];
		uint64_t exact = vals[exact_rank(num, den, N_SAMPLES) - 1];
		uint64_t got = hist_quantile(&h, (double)num / (double)den);
		double err = rel_error(got, exact);

		if (exact > HIST_MAX_VALUE)
			continue;	/* outside the range the bound covers */
		if (err > HIST_MAX_REL_ERROR)
			ck_abort_msg("%s q=%llu/%llu: got %llu, exact %llu (error %g)",
				     dist_names[d], (unsigned long long)num,
				     (unsigned long long)den, (unsigned long long)got,
				     (unsigned long long)exact, err);
		worst = fmax(worst, err);
		if (k <= 1000)	/* monotone in q */
			ck_assert_uint_ge(got, prev);
		prev = got;
	}
	fprintf(stderr, "hist: %-24s max relative error %.5f%% (bound %.5f%%)\n",
		dist_names[d], 100.0 * worst, 100.0 * HIST_MAX_REL_ERROR);
	free(vals);
}
END_TEST

START_TEST(merge_equals_recording_everything_into_one)
{
	enum dist d = (enum dist)_i;
	struct hist *part = calloc(4, sizeof(*part)), *all = calloc(1, sizeof(*all));
	uint64_t state = 0xabcd0000u + (uint64_t)d;

	ck_assert_ptr_nonnull(part);
	ck_assert_ptr_nonnull(all);
	for (unsigned int p = 0; p < 4; p++)
		hist_reset(&part[p]);
	hist_reset(all);
	/* Part 3 stays empty: merging nothing must change nothing. */
	for (unsigned int i = 0; i < N_SAMPLES; i++) {
		uint64_t v = dist_sample(d, &state);

		hist_record(&part[rng_next(&state) % 3], v);
		hist_record(all, v);
	}
	hist_record(&part[1], UINT64_MAX);	/* clamped counts merge too */
	hist_record(all, UINT64_MAX);

	hist_merge(&part[3], &part[0]);		/* into an empty one */
	hist_merge(&part[3], &part[1]);
	hist_merge(&part[3], &part[2]);
	ck_assert_int_eq(memcmp(&part[3], all, sizeof(*all)), 0);
	hist_reset(&part[0]);
	hist_merge(all, &part[0]);		/* from an empty one */
	ck_assert_int_eq(memcmp(&part[3], all, sizeof(*all)), 0);
	free(part);
	free(all);
}
END_TEST

Suite *hist_suite(void);
Suite *hist_suite(void)
{
	Suite *s = suite_create("hist");
	TCase *geo = tcase_create("geometry");
	TCase *q = tcase_create("quantiles");

	tcase_set_timeout(geo, 60);
	tcase_add_test(geo, bucket_geometry_is_contiguous_over_the_whole_range);
	tcase_add_test(geo, bucket_index_exhaustive_for_small_values);
	tcase_add_test(geo, bucket_index_sampled_for_large_values);
	tcase_add_test(geo, empty_histogram_reports_zero);
	tcase_add_test(geo, values_above_range_are_clamped_and_counted);
	tcase_add_test(geo, record_n_equals_n_records);
	suite_add_tcase(s, geo);

	tcase_set_timeout(q, 60);
	tcase_add_test(q, quantile_q0_q1_and_out_of_range_q);
	tcase_add_test(q, quantile_is_nearest_rank_exactly_below_64);
	tcase_add_test(q, error_bound_holds_and_is_tight_per_bucket);
	tcase_add_loop_test(q, quantiles_match_exact_sorted_values, 0, DIST_COUNT);
	tcase_add_loop_test(q, merge_equals_recording_everything_into_one, 0, DIST_COUNT);
	suite_add_tcase(s, q);
	return s;
}
