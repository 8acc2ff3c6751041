/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Total memory of each GPU from NVML, for the collector (root).  The
 * library is opened with dlopen() when present and never linked, so a node
 * without the NVIDIA driver runs the collector all the same; totals then
 * come only from --gpu-memory-total.
 *
 * Device numbering: NVML's index is the PCI bus order, which is also
 * CUDA's device ordinal when CUDA_DEVICE_ORDER=PCI_BUS_ID (the usual
 * setting on GPU nodes) and CUDA_VISIBLE_DEVICES is unset.  Where a job
 * renumbers its devices, give --gpu-memory-total explicitly: the flag
 * wins over NVML, device by device.
 */
#ifndef ZERNEL_NVML_H
#define ZERNEL_NVML_H

#include <stddef.h>
#include <stdint.h>

#include "collector/gpu_map.h"

#define NVML_LIBRARY	"libnvidia-ml.so.1"

/* One GPU as NVML reports it. */
struct nvml_gpu {
	struct gpu_node node;	/* index, minor, UUID, bus id, name; unknown parts empty or -1 */
	uint64_t total;		/* bytes; 0 when NVML could not read the device */
	uint64_t used;		/* bytes the driver counts as used, every process together */
};

/*
 * Opens library (NVML_LIBRARY when NULL), initialises NVML and reads up to
 * max GPUs into gpus[0..*n), in NVML's index order (nvidia-smi's).  The
 * identity calls (UUID, name, minor number, PCI bus id, MIG mode) are
 * optional: a library without one leaves that field unknown.  Returns as
 * nvml_gpu_totals does; NVML is shut down and the library closed before
 * return.
 */
int nvml_gpus(const char *library, struct nvml_gpu *gpus, size_t max, size_t *n, char *why,
	      size_t whylen);

/*
 * Opens library (NVML_LIBRARY when NULL), initialises NVML and reads the
 * total memory of up to max devices into totals[0..*n).  Returns 0, or
 * -ENOENT when the library cannot be loaded, -ENOSYS when it lacks a
 * needed symbol, -EIO when an NVML call fails; why receives a one-line
 * explanation.  NVML is shut down and the library closed before return.
 */
int nvml_gpu_totals(const char *library, uint64_t *totals, size_t max, size_t *n,
		    char *why, size_t whylen);

#endif /* ZERNEL_NVML_H */
