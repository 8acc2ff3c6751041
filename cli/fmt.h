/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Human-readable figures for the zernel client's views: bytes in binary
 * units, durations picked from ns/us/ms/s, counts with k/M suffixes.  Each
 * writes into the caller's buffer and returns it, so calls nest in printf.
 */
#ifndef ZERNEL_CLI_FMT_H
#define ZERNEL_CLI_FMT_H

#include <stddef.h>
#include <stdint.h>

#define CLI_FMT_LEN 24u

/* "61.2 GiB", "512 MiB", "0 B". */
char *cli_fmt_bytes(char *buf, size_t len, double bytes);
/* "850 ns", "12.3 us", "4.56 ms", "1.20 s"; "-" when ns < 0 (unknown). */
char *cli_fmt_dur(char *buf, size_t len, double ns);
/* "999", "12.3k", "4.56M". */
char *cli_fmt_count(char *buf, size_t len, double n);

#endif /* ZERNEL_CLI_FMT_H */
