/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One line per window (see log_limit.h).
 */
#include "common/log_limit.h"

uint64_t log_limit_take(struct log_limit *l, uint64_t now_ns)
{
	uint64_t n;

	l->held++;
	if (l->last_ns && now_ns - l->last_ns < LOG_LIMIT_WINDOW_NS)
		return 0;
	n = l->held;
	l->held = 0;
	/* 0 means never: a clock this early still counts as written. */
	l->last_ns = now_ns ? now_ns : 1;
	return n;
}
