/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One word of a watched process's memory, read through /proc/PID/mem: what
 * the aggregation compares with a handle it has (agg_set_user_reader), no
 * parsing.  Root (reading another process's memory).
 */
#ifndef ZERNEL_PROC_MEM_H
#define ZERNEL_PROC_MEM_H

#include <stdint.h>

/* The 8 bytes at addr of pid into *val: 0, or -errno (the process gone, the address unmapped). */
int proc_mem_u64(void *ctx, uint32_t pid, uint64_t addr, uint64_t *val);

#endif /* ZERNEL_PROC_MEM_H */
