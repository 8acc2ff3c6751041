/* SPDX-License-Identifier: BSD-2-Clause */
/* The log-linear bucket geometry (see shm_hist.h).  Pure computation. */
#include "shm/shm_hist.h"

#define HIST_SUB_COUNT	(1u << HIST_SUB_BITS)		/* 32 */
#define HIST_SUB_MASK	(HIST_SUB_COUNT - 1u)

/*
 * Below 64 the index is the value.  From 64 up, with e the position of the
 * top bit and shift = e - 5, the value is mantissa << shift plus a remainder
 * lost to the bucket, mantissa in [32, 64): index = shift * 32 + mantissa,
 * which continues the linear part without a gap (e = 6 starts at 64).
 */
size_t hist_bucket_index(uint64_t value)
{
	unsigned int shift;

	if (value < HIST_LINEAR_LIMIT)
		return (size_t)value;
	if (value > HIST_MAX_VALUE)
		return HIST_BUCKETS - 1;
	shift = 63u - (unsigned int)__builtin_clzll(value) - HIST_SUB_BITS;
	return ((size_t)shift << HIST_SUB_BITS) + (size_t)(value >> shift);
}

/*
 * Indices past the end name an empty bucket just above the range (lower
 * 2^37, width 0), so that a caller looping too far reads nothing.
 */
uint64_t hist_bucket_lower(size_t index)
{
	unsigned int shift;

	if (index < HIST_LINEAR_LIMIT)
		return index;
	if (index >= HIST_BUCKETS)
		return HIST_MAX_VALUE + 1;
	shift = (unsigned int)(index >> HIST_SUB_BITS) - 1u;
	return (uint64_t)((index & HIST_SUB_MASK) + HIST_SUB_COUNT) << shift;
}

uint64_t hist_bucket_width(size_t index)
{
	if (index < HIST_LINEAR_LIMIT)
		return 1;
	if (index >= HIST_BUCKETS)
		return 0;
	return 1ull << ((index >> HIST_SUB_BITS) - 1u);
}
