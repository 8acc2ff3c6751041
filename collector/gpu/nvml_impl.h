/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Inside the NVML binding: the few NVML types used, declared here with
 * the layout of NVIDIA's nvml.h (so building needs no NVIDIA header), and
 * the open library.  Private to nvml.c (opening, the devices at start)
 * and nvml_procs.c (the figures read every few seconds).
 */
#ifndef ZERNEL_NVML_IMPL_H
#define ZERNEL_NVML_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "collector/gpu/nvml.h"

/* nvmlReturn_t is an int (NVML_SUCCESS is 0); nvmlDevice_t an opaque pointer. */
struct nvml_device;

struct nvml_memory {			/* nvmlMemory_t */
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
};

/*
 * nvmlMemory_v2_t, of nvmlDeviceGetMemoryInfo_v2: the driver's reserve
 * apart, so used is what allocations hold (nvidia-smi's figure since R510);
 * nvmlMemory_t's used counts the reserve too.  version is
 * NVML_STRUCT_VERSION(Memory, 2): the size, and 2 in the top byte.
 */
struct nvml_memory_v2 {
	unsigned int version;
	unsigned long long total;
	unsigned long long reserved;
	unsigned long long free;
	unsigned long long used;
};

#define NVML_MEMORY_V2_VERSION	((unsigned int)sizeof(struct nvml_memory_v2) | 2u << 24)

_Static_assert(sizeof(struct nvml_memory_v2) == 40, "nvmlMemory_v2_t is 40 bytes");

struct nvml_pci {			/* nvmlPciInfo_t (v3) */
	char bus_id_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

/*
 * The entries of the process-list calls, read through the stride of the
 * call in use (nvml.c says which): pid and usedGpuMemory sit at the same
 * offsets in all three.  nvmlProcessInfo_t (nvmlProcessInfo_v2_t) of
 * nvmlDeviceGetComputeRunningProcesses_v3 and _v2; the entry of _v3 in
 * the drivers whose nvml.h gave it a confidential-computing field
 * (nvmlProcessInfo_v3_t, 535.43 to 535.86, withdrawn after); and
 * nvmlProcessInfo_v1_t of the unversioned call of older drivers.
 */
struct nvml_process_v2 {
	unsigned int pid;
	unsigned long long used_gpu_memory;	/* NVML_VALUE_NOT_AVAILABLE: (unsigned long long)-1 */
	unsigned int gpu_instance_id;		/* 0xFFFFFFFF without MIG */
	unsigned int compute_instance_id;
};

struct nvml_process_cc {
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id;
	unsigned int compute_instance_id;
	unsigned long long used_gpu_cc_protected_memory;
};

struct nvml_process_v1 {
	unsigned int pid;
	unsigned long long used_gpu_memory;
};

_Static_assert(sizeof(struct nvml_process_v2) == 24, "nvmlProcessInfo_t is 24 bytes");
_Static_assert(sizeof(struct nvml_process_cc) == 32, "nvmlProcessInfo_v3_t is 32 bytes");
_Static_assert(sizeof(struct nvml_process_v1) == 16, "nvmlProcessInfo_v1_t is 16 bytes");
_Static_assert(offsetof(struct nvml_process_v2, used_gpu_memory) ==
	       offsetof(struct nvml_process_v1, used_gpu_memory) &&
	       offsetof(struct nvml_process_cc, used_gpu_memory) ==
	       offsetof(struct nvml_process_v1, used_gpu_memory), "usedGpuMemory at one offset");

struct nvml_api {
	int (*init)(void);
	int (*shutdown)(void);
	int (*count)(unsigned int *);
	int (*handle)(unsigned int, struct nvml_device **);
	int (*memory)(struct nvml_device *, struct nvml_memory *);
	int (*memory_v2)(struct nvml_device *, struct nvml_memory_v2 *);	/* optional */
	const char *(*error_string)(int);	/* optional */
	/* Optional: what a field cannot be read from stays unknown. */
	int (*uuid)(struct nvml_device *, char *, unsigned int);
	int (*name)(struct nvml_device *, char *, unsigned int);
	int (*minor)(struct nvml_device *, unsigned int *);
	int (*pci)(struct nvml_device *, struct nvml_pci *);
	int (*mig_mode)(struct nvml_device *, unsigned int *, unsigned int *);
	/* Optional: the newest of the process-list calls the library has. */
	int (*procs)(struct nvml_device *, unsigned int *, void *);
	const char *procs_name;
	size_t procs_stride;			/* sizeof its nvmlProcessInfo */
};

struct nvml {
	void *lib;
	struct nvml_api api;
	unsigned int count;			/* devices NVML has */
	unsigned int n;				/* handles held, at most NVML_DEVICES_MAX */
	struct nvml_device *dev[NVML_DEVICES_MAX];	/* NULL: no handle (device unreadable) */
	/* The process list as the call writes it, read through api.procs_stride. */
	struct nvml_process_cc raw[NVML_PROCS_MAX];
};

/*
 * A device's total and used memory: from nvmlDeviceGetMemoryInfo_v2 where
 * the library has it and takes the version asked, else from the
 * unversioned call (drivers before R510).  Returns the nvmlReturn_t of the
 * call that answered; *total and *used are written only on success.
 */
int nvml_memory_read(const struct nvml_api *api, struct nvml_device *dev, uint64_t *total,
		     uint64_t *used);

#endif /* ZERNEL_NVML_IMPL_H */
