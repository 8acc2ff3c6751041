/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading a delimited protobuf exposition back, for the tests: each
 * message is its length as a varint, then a MetricFamily.
 */
#ifndef ZERNEL_PB_READ_H
#define ZERNEL_PB_READ_H

#include <check.h>
#include <stdint.h>

#include "proto/io/prometheus/client/metrics.pb-c.h"

/* The family at *p (before end), unpacked; *p moves past it. Free it with free_unpacked. */
static inline Io__Prometheus__Client__MetricFamily *pb_next_family(const uint8_t **p,
								  const uint8_t *end)
{
	Io__Prometheus__Client__MetricFamily *f;
	uint64_t len = 0;
	unsigned int shift = 0;

	do {
		ck_assert(*p < end && shift < 64);
		len |= (uint64_t)(**p & 0x7f) << shift;
		shift += 7;
	} while (*(*p)++ & 0x80);
	ck_assert_uint_le(len, (uint64_t)(end - *p));
	f = io__prometheus__client__metric_family__unpack(NULL, len, *p);
	ck_assert_ptr_nonnull(f);
	*p += len;
	return f;
}

#endif /* ZERNEL_PB_READ_H */
