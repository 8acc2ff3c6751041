/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Small helpers shared by every binary: clocks, strict number parsing for
 * flags, and listen-address parsing.
 */
#ifndef ZERNEL_UTIL_H
#define ZERNEL_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define NSEC_PER_SEC 1000000000ull
#define NSEC_PER_MSEC 1000000ull

uint64_t now_mono_ns(void);
uint64_t now_real_ns(void);

/*
 * Parses a whole decimal string into [min, max].  Returns 0, -EINVAL for
 * anything that is not a plain number, -ERANGE when out of range.
 */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/*
 * Parses "ADDR:PORT", "[V6ADDR]:PORT" or ":PORT" (all addresses).  host
 * receives the address text ("0.0.0.0" for ":PORT").  Returns 0 or -EINVAL.
 */
int parse_listen(const char *s, char *host, size_t host_len, uint16_t *port);

#endif /* ZERNEL_UTIL_H */
