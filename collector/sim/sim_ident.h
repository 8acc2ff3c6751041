/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Who the simulated processes are: a torchelastic job on Kubernetes, one
 * pod per rank (as a PyTorchJob lays it out: one trainer per pod, so
 * local rank 0 and group rank = rank), containerd, a run id for the job.
 * On a real node collector/identity/ident_scan.c reads these from /proc and the
 * kubelet's directories; the simulator has no /proc entry to read, so it
 * hands its processes' identity to the aggregation itself.  Pure.
 */
#ifndef ZERNEL_SIM_IDENT_H
#define ZERNEL_SIM_IDENT_H

#include <stdint.h>

#include "shm/shm_layout.h"

#define SIM_NAMESPACE	"ml-training"
#define SIM_POD_PREFIX	"llama-ft-worker-"	/* + rank */
#define SIM_CONTAINER	"pytorch"
#define SIM_RUN_ID	"llama-ft-4821"

/*
 * The identity of a process of rank's pod (a trainer or one of its
 * DataLoader workers, which share its pod, container and environment).
 * Ids are derived from seed and rank, not drawn from the simulator's
 * random stream, so the job's figures do not depend on them.
 */
void sim_ident_build(uint64_t seed, uint32_t rank, uint32_t world_size,
		     struct shm_identity *out);

#endif /* ZERNEL_SIM_IDENT_H */
