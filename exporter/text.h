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

/* Appends s as a Prometheus label value body: \\, \" and \n escaped. */
int text_prom_escape(struct sbuf *b, const char *s);

/* SHM_WATCH_* bits as "cuda,nccl,descendant,pid,comm,simulated" (those set). */
void text_watch_reasons(char *buf, size_t len, uint32_t bits);

#endif /* ZERNEL_TEXT_H */
