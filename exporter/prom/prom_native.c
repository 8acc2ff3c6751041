/* SPDX-License-Identifier: BSD-2-Clause */
/* Native buckets from log-linear ones (see prom_native.h). */
#include <errno.h>
#include <stdint.h>

#include "exporter/prom/prom_native.h"
#include "exporter/prom/prom_proto.h"
#include "shm/shm_hist.h"

/* The native bucket of log-linear bucket i > 0: the one holding its midpoint. */
static int32_t native_of(size_t i)
{
	double mid_ns = (double)hist_bucket_lower(i) + (double)(hist_bucket_width(i) - 1) / 2;

	return (int32_t)prom_proto_native_index(mid_ns / 1e9);
}

int prom_native_of(const uint64_t *fine, uint64_t count, struct prom_native_hist *h)
{
	uint64_t sum = fine[0];

	h->zero_count = fine[0];
	h->n = 0;
	/* Midpoints grow with i: a bucket joins the last native one or starts the next. */
	for (size_t i = 1; i < HIST_BUCKETS; i++) {
		int32_t k;

		if (!fine[i])
			continue;
		if (__builtin_add_overflow(sum, fine[i], &sum))
			return -EINVAL;
		k = native_of(i);
		if (h->n && h->index[h->n - 1] == k) {
			h->counts[h->n - 1] += fine[i];
			continue;
		}
		h->index[h->n] = k;
		h->counts[h->n++] = fine[i];
	}
	return sum == count ? 0 : -EINVAL;
}
