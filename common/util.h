/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Small helpers shared by every binary: clocks and strict number parsing
 * for flags (addresses: common/url.h).
 */
#ifndef ZERNEL_UTIL_H
#define ZERNEL_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define NSEC_PER_SEC 1000000000ull
#define NSEC_PER_MSEC 1000000ull
/*
 * A stdio buffer for /proc files: stdio reads them a block of their
 * st_blksize (1 KiB) at a time, and each read(2) of a seq file such as
 * maps costs a system call and a walk back to where the last one ended.
 */
#define PROC_READ_BUF (64u << 10)

uint64_t now_mono_ns(void);
uint64_t now_real_ns(void);
/* Since boot, suspend included: the clock of process start times. */
uint64_t now_boot_ns(void);

/*
 * Parses a whole decimal string into [min, max].  Returns 0, -EINVAL for
 * anything that is not a plain number, -ERANGE when out of range.
 */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif /* ZERNEL_UTIL_H */
