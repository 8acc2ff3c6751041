/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A strict checker of Prometheus text exposition, for what promtool does
 * not check: one HELP and one TYPE per family, before its samples, samples
 * of a family contiguous, every series unique, label names and escapes
 * valid, label values valid UTF-8, counters ending in _total and never
 * negative, histograms with increasing le, cumulative buckets, a +Inf
 * bucket equal to _count and both _sum and _count, summaries with
 * quantiles in [0, 1] plus _sum and _count.
 */
#ifndef ZERNEL_PROM_VALIDATE_H
#define ZERNEL_PROM_VALIDATE_H

#include <stddef.h>

/*
 * Returns 0 when text passes, or -EINVAL with "line N: problem" in err for
 * the first problem found (-ENOMEM when out of memory).
 */
int prom_validate(const char *text, size_t len, char *err, size_t errlen);

#endif /* ZERNEL_PROM_VALIDATE_H */
