/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fake NCCL's profiler plugin host (fake_nccl_profiler.c), which does
 * what NCCL 2.28 does with a plugin named by NCCL_PROFILER_PLUGIN.  Test code.
 */
#ifndef ZERNEL_FAKE_NCCL_PROFILER_H
#define ZERNEL_FAKE_NCCL_PROFILER_H

#include <stddef.h>
#include <stdint.h>

/* A communicator's profiler context (NULL: no plugin, or it refused). */
void *fake_profiler_comm(uint64_t comm_hash, int nranks, int rank);
/* One collective of func ("AllReduce", ...) on it: its events, host and GPU. */
void fake_profiler_collective(void *comm, const char *func, size_t count);
void fake_profiler_comm_end(void *comm);

#endif /* ZERNEL_FAKE_NCCL_PROFILER_H */
