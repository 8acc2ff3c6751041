/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The node's GPUs and the driver's memory figures from NVML, for the
 * collector (root at start, its steady privileges after).  The library is
 * opened with dlopen() when present and never linked, so a node without
 * the NVIDIA driver runs the collector all the same; totals then come
 * only from --gpu-memory-total, and there is no driver figure.
 *
 * Device numbering: NVML's index is the PCI bus order, which is also
 * CUDA's device ordinal when CUDA_DEVICE_ORDER=PCI_BUS_ID (the usual
 * setting on GPU nodes) and CUDA_VISIBLE_DEVICES is unset.  Where a job
 * renumbers its devices, give --gpu-memory-total explicitly: the flag
 * wins over NVML, device by device.  The driver's figures are per NVML
 * index, which is the physical GPU id of the segment.
 */
#ifndef ZERNEL_NVML_H
#define ZERNEL_NVML_H

#include <stddef.h>
#include <stdint.h>

#include "collector/gpu/gpu_map.h"

#define NVML_LIBRARY		"libnvidia-ml.so.1"
#define NVML_DEVICES_MAX	GPU_NODES_MAX

/* The nvmlReturn_t values acted upon (NVIDIA's numbers). */
#define NVML_RET_SUCCESS		0
#define NVML_RET_NOT_SUPPORTED		3
#define NVML_RET_NO_PERMISSION		4
#define NVML_RET_INSUFFICIENT_SIZE	7
#define NVML_RET_FUNCTION_NOT_FOUND	13
#define NVML_RET_ARGUMENT_VERSION_MISMATCH 25

/* One GPU as NVML reports it. */
struct nvml_gpu {
	struct gpu_node node;	/* index, minor, UUID, bus id, name; unknown parts empty or -1 */
	uint64_t total;		/* bytes; 0 when NVML could not read the device */
	uint64_t used;		/* bytes allocations hold, every process together (no driver reserve) */
};

/* An open, initialised NVML. */
struct nvml;

/*
 * Opens library (NVML_LIBRARY when NULL) and initialises NVML.  Returns 0
 * with *out, or -ENOENT when the library cannot be loaded, -ENOSYS when it
 * lacks a needed symbol, -EIO when initialising or counting the devices
 * fails, -ENOMEM; why receives a one-line explanation.
 */
int nvml_open(const char *library, struct nvml **out, char *why, size_t whylen);
/* Shuts NVML down and closes the library; NULL is fine. */
void nvml_close(struct nvml *nv);
/* The text of an NVML return code, from the library when it has one. */
const char *nvml_strerror(const struct nvml *nv, int code);
/* The process-list entry point in use ("nvmlDeviceGetComputeRunningProcesses_v3"), or NULL. */
const char *nvml_procs_call(const struct nvml *nv);

/*
 * Reads up to max GPUs into gpus[0..*n), in NVML's index order
 * (nvidia-smi's).  The identity calls (UUID, name, minor number, PCI bus
 * id, MIG mode) are optional: a library without one leaves that field
 * unknown.  Returns 0; why says what could not be read ("" when all was).
 */
int nvml_read_gpus(struct nvml *nv, struct nvml_gpu *gpus, size_t max, size_t *n,
		   char *why, size_t whylen);

/*
 * nvml_open, nvml_read_gpus and nvml_close in one: the GPUs of a node, or
 * their total memory alone.  Return as nvml_open does.
 */
int nvml_gpus(const char *library, struct nvml_gpu *gpus, size_t max, size_t *n, char *why,
	      size_t whylen);
int nvml_gpu_totals(const char *library, uint64_t *totals, size_t max, size_t *n,
		    char *why, size_t whylen);

/* ---- the driver's figures (nvml_procs.c) ------------------------------- */

/* Processes read per device and read: a GPU holds a few dozen contexts at most. */
#define NVML_PROCS_MAX		1024u

/* usedGpuMemory the driver does not give (NVML_VALUE_NOT_AVAILABLE: no permission, WDDM). */
#define NVML_USED_NOT_AVAILABLE	UINT64_MAX

struct nvml_proc {
	uint32_t pid;		/* as the driver sees it: the host's pid namespace */
	uint64_t used_bytes;	/* or NVML_USED_NOT_AVAILABLE */
};

/* What one read of a device gave: each part is there when its code is NVML_RET_SUCCESS. */
struct nvml_device_figures {
	int mem_ret;		/* the memory call's code (nvml_memory_read) */
	uint64_t used_bytes;	/* the device's used memory, the driver's reserve left out */
	uint64_t total_bytes;
	int procs_ret;		/* the process list's; NVML_RET_FUNCTION_NOT_FOUND without the call */
	unsigned int n_procs;	/* procs[0..n_procs) */
	unsigned int needed;	/* with NVML_RET_INSUFFICIENT_SIZE: how many the driver has */
};

/*
 * Reads device index's used memory and the processes with a compute
 * context on it, with their used memory, into procs[0..max) (max at most
 * NVML_PROCS_MAX).  Two NVML
 * calls, bounded by max: more processes than max read none of them
 * (NVML_RET_INSUFFICIENT_SIZE, needed set), since a part of the list
 * would be a wrong list.  Returns 0 with out filled, or -EINVAL for an
 * index NVML has no handle of.
 */
int nvml_read_device(struct nvml *nv, unsigned int index, struct nvml_proc *procs,
		     unsigned int max, struct nvml_device_figures *out);
/* Devices nvml_read_device can read: indexes 0..n-1. */
unsigned int nvml_devices(const struct nvml *nv);

#endif /* ZERNEL_NVML_H */
