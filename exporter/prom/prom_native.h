/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Native histograms as fine as the collector's log-linear buckets allow:
 * the workload histograms' (struct shm_workload_latency) and NCCL's per
 * op (struct shm_nccl_op).  The text exposition has no room for them, so
 * the render (prom.h) keeps them here, in the order it writes the series,
 * and the protobuf transcoder (prom_proto.h) takes each series' native
 * buckets from here when the text's series matches one, by family, labels
 * and count.
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
 * Unprivileged, on the render path: memory is one entry a histogram
 * series that has log-linear buckets, each as many buckets as it fills.
 */
#ifndef ZERNEL_PROM_NATIVE_H
#define ZERNEL_PROM_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#define PROM_NATIVE_REL_ERROR	0.0267

struct prom_native_hist {
	char *name;			/* the family's name */
	char *labels;			/* the series' labels as the text writes them, le aside */
	uint64_t count;
	uint64_t zero_count;		/* samples of 0 ns */
	uint32_t n;			/* native buckets with samples, by increasing index */
	int32_t *index;
	uint64_t *counts;
};

struct prom_natives {
	struct prom_native_hist *h;
	size_t n, cap;
};

/*
 * Adds the series name{labels} of count samples in the log-linear buckets
 * fine (HIST_BUCKETS).  Returns 0 (nothing added when fine does not add
 * up to count: that series keeps the native buckets of its classic ones)
 * or -ENOMEM.
 */
int prom_natives_add(struct prom_natives *s, const char *name, const char *labels,
		     uint64_t count, const uint64_t *fine);

/*
 * The entry for the series name{labels} (texts not terminated), looked for
 * from *cursor on, which moves past it; NULL when there is none.
 */
const struct prom_native_hist *prom_natives_find(const struct prom_natives *s, size_t *cursor,
						 const char *name, size_t name_len,
						 const char *labels, size_t labels_len);

void prom_natives_free(struct prom_natives *s);

#endif /* ZERNEL_PROM_NATIVE_H */
