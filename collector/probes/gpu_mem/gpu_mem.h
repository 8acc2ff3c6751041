/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the GPU memory family (gpu_mem.c) offers the others: a
 * synchronisation that pools wait for, seen by the NCCL family's probes.
 */
#ifndef ZERNEL_GPU_MEM_H
#define ZERNEL_GPU_MEM_H

#include <stdint.h>

struct decode;

/*
 * pid synchronised with its stream, an event or its device: its pools
 * give back what they hold above their release thresholds.
 */
void gpu_mem_pools_synced(struct decode *d, uint32_t pid);

#endif /* ZERNEL_GPU_MEM_H */
