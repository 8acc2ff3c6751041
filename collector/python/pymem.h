/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reads of a watched process's memory through a descriptor of its
 * /proc/PID/mem: by the collector (root, which opened it) and by the
 * parser child it hands the descriptor to.
 */
#ifndef ZERNEL_PYMEM_H
#define ZERNEL_PYMEM_H

#include <stddef.h>
#include <stdint.h>

/* Reads len bytes at addr of the process whose /proc/PID/mem is fd. 0 or -errno. */
int pymem_read(int fd, uint64_t addr, void *buf, size_t len);

#endif /* ZERNEL_PYMEM_H */
