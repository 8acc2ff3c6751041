/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Text that comes from the segment (process names) is attacker-controlled:
 * any local user can name a process.  Before it reaches a Prometheus label
 * or a JSON string it is made valid UTF-8 with no control characters other
 * than newline (which each output format escapes its own way).
 */
#ifndef ZERNEL_TEXT_H
#define ZERNEL_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "common/sbuf.h"

/*
 * Copies at most srclen bytes of src (stopping at NUL) into dst as valid
 * UTF-8: invalid sequences become U+FFFD, control characters other than
 * '\n' become '?'.  dst is always NUL-terminated; returns its length.
 */
size_t text_sanitize(char *dst, size_t dstlen, const char *src, size_t srclen);

/* Appends s as a Prometheus label value body: \\, \" and \n escaped. */
int text_prom_escape(struct sbuf *b, const char *s);

/* SHM_WATCH_* bits as "cuda,nccl,descendant,pid,comm,simulated" (those set). */
void text_watch_reasons(char *buf, size_t len, uint32_t bits);

#endif /* ZERNEL_TEXT_H */
