/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Native histograms as fine as the collector's log-linear buckets allow:
 * the workload histograms' (struct shm_workload_latency) and NCCL's per
 * op (struct shm_nccl_op).  The text exposition has no room for them; the
 * render hands them with each histogram series (prom_write.h), and the
 * protobuf encoder (prom_proto.h) converts them here.
 *
 * The conversion, at schema PROM_PROTO_SCHEMA (6: bucket k is
 * (2^((k-1)/64), 2^(k/64)] seconds, 1.09% wide): the samples of each
 * log-linear bucket [lo, lo + w) go to the native bucket that holds its
 * midpoint, those of value 0 to the zero bucket.  A log-linear bucket is
 * at most 1/32 of its lower edge wide (exact below 64 ns), so its midpoint
 * is within 1/64 of any sample in it, and the mapping keeps the samples'
 * order.  histogram_quantile finds the native bucket holding the sample
 * of the quantile's rank and answers inside it: within
 * 2^(1/64) * (1 + 1/64) - 1 = 2.7% of that sample (PROM_NATIVE_REL_ERROR),
 * for samples up to 2^37 ns (137 s): the last log-linear bucket holds
 * every longer one, as the summaries' histograms do.
 *
 * Unprivileged, on the render path: no allocation.
 */
#ifndef ZERNEL_PROM_NATIVE_H
#define ZERNEL_PROM_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#include "shm/shm_consts.h"

#define PROM_NATIVE_REL_ERROR	0.0267

/* A series' native buckets. */
struct prom_native_hist {
	uint64_t zero_count;		/* samples of 0 ns */
	uint32_t n;			/* native buckets with samples, by increasing index */
	int32_t index[HIST_BUCKETS];
	uint64_t counts[HIST_BUCKETS];
};

/*
 * The native buckets of count samples in the log-linear buckets fine
 * (HIST_BUCKETS).  Returns 0, or -EINVAL when fine does not add up to
 * count (the series then keeps the native buckets of its classic ones).
 */
int prom_native_of(const uint64_t *fine, uint64_t count, struct prom_native_hist *h);

#endif /* ZERNEL_PROM_NATIVE_H */
