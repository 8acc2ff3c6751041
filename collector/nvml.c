/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The node's GPUs from NVML through dlopen() (see nvml.h).  Runs once at
 * the collector's start, as root, before the probes attach.  The few NVML
 * types used are declared here with the layout of nvml.h, so building
 * needs no NVIDIA header either.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/nvml.h"

/* nvmlReturn_t is an int (NVML_SUCCESS is 0); nvmlDevice_t an opaque pointer. */
struct nvml_device;

struct nvml_memory {			/* nvmlMemory_t */
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
};

struct nvml_pci {			/* nvmlPciInfo_t (v3) */
	char bus_id_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

struct nvml_api {
	int (*init)(void);
	int (*shutdown)(void);
	int (*count)(unsigned int *);
	int (*handle)(unsigned int, struct nvml_device **);
	int (*memory)(struct nvml_device *, struct nvml_memory *);
	const char *(*error_string)(int);	/* optional */
	/* Optional: what a field cannot be read from stays unknown. */
	int (*uuid)(struct nvml_device *, char *, unsigned int);
	int (*name)(struct nvml_device *, char *, unsigned int);
	int (*minor)(struct nvml_device *, unsigned int *);
	int (*pci)(struct nvml_device *, struct nvml_pci *);
	int (*mig_mode)(struct nvml_device *, unsigned int *, unsigned int *);
};

static const char *nvml_error(const struct nvml_api *api, int r)
{
	const char *s = api->error_string ? api->error_string(r) : NULL;

	return s ? s : "unknown NVML error";
}

/* dlsym into a function pointer without a cast through object pointers. */
static int sym(void *lib, const char *name, void *fnp, size_t size)
{
	void *p = dlsym(lib, name);

	if (!p)
		return -ENOSYS;
	memcpy(fnp, &p, size);
	return 0;
}

/* What NVML says of device i beyond its memory; unknown fields stay unknown. */
static void read_identity(const struct nvml_api *api, struct nvml_device *dev, unsigned int i,
			  struct gpu_node *g)
{
	struct nvml_pci pci;
	unsigned int minor, cur = 0, pending = 0;

	g->index = (int32_t)i;
	g->minor = -1;
	if (api->minor && api->minor(dev, &minor) == 0 && minor < GPU_FDS_MINOR_MODESET)
		g->minor = (int32_t)minor;
	if (api->uuid && api->uuid(dev, g->uuid, sizeof(g->uuid)) != 0)
		g->uuid[0] = '\0';
	g->uuid[sizeof(g->uuid) - 1] = '\0';
	if (api->name && api->name(dev, g->name, sizeof(g->name)) != 0)
		g->name[0] = '\0';
	g->name[sizeof(g->name) - 1] = '\0';
	memset(&pci, 0, sizeof(pci));
	/* NVML's "00000000:3B:00.0"; anything longer than that form is not one. */
	if (api->pci && api->pci(dev, &pci) == 0 &&
	    strnlen(pci.bus_id, sizeof(pci.bus_id)) < sizeof(g->pci_bus_id))
		memcpy(g->pci_bus_id, pci.bus_id, strnlen(pci.bus_id, sizeof(pci.bus_id)) + 1);
	if (api->mig_mode && api->mig_mode(dev, &cur, &pending) == 0 && cur == 1)
		g->flags |= GPU_NODE_F_MIG;
}

int nvml_gpus(const char *library, struct nvml_gpu *gpus, size_t max, size_t *n, char *why,
	      size_t whylen)
{
	struct nvml_api api;
	unsigned int count = 0;
	const char *missing = NULL;
	int inited = 0, ret;
	void *lib;

	*n = 0;
	why[0] = '\0';
	if (!library)
		library = NVML_LIBRARY;
	lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();

		snprintf(why, whylen, "%s", e ? e : "cannot be loaded");
		return -ENOENT;
	}
	memset(&api, 0, sizeof(api));
	if (sym(lib, "nvmlInit_v2", &api.init, sizeof(api.init)))
		missing = "nvmlInit_v2";
	else if (sym(lib, "nvmlShutdown", &api.shutdown, sizeof(api.shutdown)))
		missing = "nvmlShutdown";
	else if (sym(lib, "nvmlDeviceGetCount_v2", &api.count, sizeof(api.count)))
		missing = "nvmlDeviceGetCount_v2";
	else if (sym(lib, "nvmlDeviceGetHandleByIndex_v2", &api.handle, sizeof(api.handle)))
		missing = "nvmlDeviceGetHandleByIndex_v2";
	else if (sym(lib, "nvmlDeviceGetMemoryInfo", &api.memory, sizeof(api.memory)))
		missing = "nvmlDeviceGetMemoryInfo";
	sym(lib, "nvmlErrorString", &api.error_string, sizeof(api.error_string));
	sym(lib, "nvmlDeviceGetUUID", &api.uuid, sizeof(api.uuid));
	sym(lib, "nvmlDeviceGetName", &api.name, sizeof(api.name));
	sym(lib, "nvmlDeviceGetMinorNumber", &api.minor, sizeof(api.minor));
	sym(lib, "nvmlDeviceGetPciInfo_v3", &api.pci, sizeof(api.pci));
	sym(lib, "nvmlDeviceGetMigMode", &api.mig_mode, sizeof(api.mig_mode));
	if (missing) {
		snprintf(why, whylen, "%s has no %s", library, missing);
		ret = -ENOSYS;
		goto cleanup;
	}

	ret = api.init();
	if (ret != 0) {
		snprintf(why, whylen, "nvmlInit_v2: %s", nvml_error(&api, ret));
		ret = -EIO;
		goto cleanup;
	}
	inited = 1;
	ret = api.count(&count);
	if (ret != 0) {
		snprintf(why, whylen, "nvmlDeviceGetCount_v2: %s", nvml_error(&api, ret));
		ret = -EIO;
		goto cleanup;
	}
	for (unsigned int i = 0; i < count && *n < max; i++) {
		struct nvml_gpu *g = &gpus[(*n)++];
		struct nvml_memory mem;
		struct nvml_device *dev = NULL;

		memset(g, 0, sizeof(*g));
		g->node.index = (int32_t)i;
		g->node.minor = -1;
		ret = api.handle(i, &dev);
		if (ret == 0)
			read_identity(&api, dev, i, &g->node);
		if (ret == 0)
			ret = api.memory(dev, &mem);
		if (ret != 0) {
			/* A device NVML cannot read (lost, no permission) keeps total 0: unknown. */
			snprintf(why, whylen, "device %u: %s", i, nvml_error(&api, ret));
			continue;
		}
		g->total = mem.total;
		g->used = mem.used;
	}
	if (count > max)
		snprintf(why, whylen, "%u devices, only the first %zu kept", count, max);
	ret = 0;
cleanup:
	if (inited)
		api.shutdown();
	dlclose(lib);
	return ret;
}

int nvml_gpu_totals(const char *library, uint64_t *totals, size_t max, size_t *n,
		    char *why, size_t whylen)
{
	struct nvml_gpu *gpus = calloc(max ? max : 1, sizeof(*gpus));
	int ret;

	*n = 0;
	if (!gpus) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	ret = nvml_gpus(library, gpus, max, n, why, whylen);
	for (size_t i = 0; i < *n; i++)
		totals[i] = gpus[i].total;
	free(gpus);
	return ret;
}
