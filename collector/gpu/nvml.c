/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Opening NVML through dlopen() and the node's GPUs as it gives them (see
 * nvml.h).  Opened once at the collector's start, as root, before the
 * probes attach; kept open for the driver's figures (nvml_procs.c), as
 * dcgm-exporter keeps it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/gpu/nvml_impl.h"

/* dlsym into a function pointer without a cast through object pointers. */
static int sym(void *lib, const char *name, void *fnp, size_t size)
{
	void *p = dlsym(lib, name);

	if (!p)
		return -ENOSYS;
	memcpy(fnp, &p, size);
	return 0;
}

/*
 * The newest process-list call and the size of its entries.  _v3 (drivers
 * since R510) and _v2 take nvmlProcessInfo_t, with the MIG instance ids;
 * the unversioned call of older drivers takes nvmlProcessInfo_v1_t.  One
 * driver series broke _v3's entry without a new version (535.43 to 535.86
 * wrote nvmlProcessInfo_v3_t, 32 bytes, read as 24 it garbles every
 * process after the first): those libraries are the ones with the
 * confidential-computing calls (nvmlDeviceGetConfComputeMemSizeInfo) but
 * not yet nvmlDeviceGetRunningProcessDetailList, which came with the
 * return to nvmlProcessInfo_t.
 */
static void find_procs_call(void *lib, struct nvml_api *api)
{
	static const struct { const char *name; size_t stride; } calls[] = {
		{ "nvmlDeviceGetComputeRunningProcesses_v3", sizeof(struct nvml_process_v2) },
		{ "nvmlDeviceGetComputeRunningProcesses_v2", sizeof(struct nvml_process_v2) },
		{ "nvmlDeviceGetComputeRunningProcesses", sizeof(struct nvml_process_v1) },
	};

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		if (sym(lib, calls[i].name, &api->procs, sizeof(api->procs)) == 0) {
			api->procs_name = calls[i].name;
			api->procs_stride = calls[i].stride;
			break;
		}
	}
	if (api->procs && api->procs_name == calls[0].name &&
	    dlsym(lib, "nvmlDeviceGetConfComputeMemSizeInfo") &&
	    !dlsym(lib, "nvmlDeviceGetRunningProcessDetailList"))
		api->procs_stride = sizeof(struct nvml_process_cc);
}

/* The symbols; the name of the first needed one missing, or NULL. */
static const char *find_symbols(void *lib, struct nvml_api *api)
{
	const char *missing = NULL;

	memset(api, 0, sizeof(*api));
	if (sym(lib, "nvmlInit_v2", &api->init, sizeof(api->init)))
		missing = "nvmlInit_v2";
	else if (sym(lib, "nvmlShutdown", &api->shutdown, sizeof(api->shutdown)))
		missing = "nvmlShutdown";
	else if (sym(lib, "nvmlDeviceGetCount_v2", &api->count, sizeof(api->count)))
		missing = "nvmlDeviceGetCount_v2";
	else if (sym(lib, "nvmlDeviceGetHandleByIndex_v2", &api->handle, sizeof(api->handle)))
		missing = "nvmlDeviceGetHandleByIndex_v2";
	else if (sym(lib, "nvmlDeviceGetMemoryInfo", &api->memory, sizeof(api->memory)))
		missing = "nvmlDeviceGetMemoryInfo";
	sym(lib, "nvmlDeviceGetMemoryInfo_v2", &api->memory_v2, sizeof(api->memory_v2));
	sym(lib, "nvmlErrorString", &api->error_string, sizeof(api->error_string));
	sym(lib, "nvmlDeviceGetUUID", &api->uuid, sizeof(api->uuid));
	sym(lib, "nvmlDeviceGetName", &api->name, sizeof(api->name));
	sym(lib, "nvmlDeviceGetMinorNumber", &api->minor, sizeof(api->minor));
	sym(lib, "nvmlDeviceGetPciInfo_v3", &api->pci, sizeof(api->pci));
	sym(lib, "nvmlDeviceGetMigMode", &api->mig_mode, sizeof(api->mig_mode));
	find_procs_call(lib, api);
	return missing;
}

int nvml_open(const char *library, struct nvml **out, char *why, size_t whylen)
{
	struct nvml *nv;
	const char *missing;
	int ret;

	*out = NULL;
	why[0] = '\0';
	if (!library)
		library = NVML_LIBRARY;
	nv = calloc(1, sizeof(*nv));
	if (!nv) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	nv->lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (!nv->lib) {
		const char *e = dlerror();

		snprintf(why, whylen, "%s", e ? e : "cannot be loaded");
		free(nv);
		return -ENOENT;
	}
	missing = find_symbols(nv->lib, &nv->api);
	if (missing) {
		snprintf(why, whylen, "%s has no %s", library, missing);
		ret = -ENOSYS;
		goto fail;
	}
	ret = nv->api.init();
	if (ret != 0) {
		snprintf(why, whylen, "nvmlInit_v2: %s", nvml_strerror(nv, ret));
		ret = -EIO;
		goto fail;
	}
	ret = nv->api.count(&nv->count);
	if (ret != 0) {
		snprintf(why, whylen, "nvmlDeviceGetCount_v2: %s", nvml_strerror(nv, ret));
		nv->api.shutdown();
		ret = -EIO;
		goto fail;
	}
	/* Handles stay valid until shutdown: taken once, not at every read. */
	nv->n = nv->count < NVML_DEVICES_MAX ? nv->count : NVML_DEVICES_MAX;
	for (unsigned int i = 0; i < nv->n; i++)
		if (nv->api.handle(i, &nv->dev[i]) != 0)
			nv->dev[i] = NULL;
	*out = nv;
	return 0;
fail:
	dlclose(nv->lib);
	free(nv);
	return ret;
}

void nvml_close(struct nvml *nv)
{
	if (!nv)
		return;
	nv->api.shutdown();
	dlclose(nv->lib);
	free(nv);
}

const char *nvml_strerror(const struct nvml *nv, int code)
{
	const char *s = nv && nv->api.error_string ? nv->api.error_string(code) : NULL;

	return s ? s : "unknown NVML error";
}

const char *nvml_procs_call(const struct nvml *nv)
{
	return nv->api.procs_name;
}

unsigned int nvml_devices(const struct nvml *nv)
{
	return nv->n;
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

int nvml_read_gpus(struct nvml *nv, struct nvml_gpu *gpus, size_t max, size_t *n,
		   char *why, size_t whylen)
{
	*n = 0;
	why[0] = '\0';
	for (unsigned int i = 0; i < nv->count && *n < max; i++) {
		struct nvml_gpu *g = &gpus[(*n)++];
		struct nvml_device *dev = NULL;
		int ret;

		memset(g, 0, sizeof(*g));
		g->node.index = (int32_t)i;
		g->node.minor = -1;
		ret = nv->api.handle(i, &dev);
		if (ret == 0)
			read_identity(&nv->api, dev, i, &g->node);
		if (ret == 0)
			ret = nvml_memory_read(&nv->api, dev, &g->total, &g->used);
		if (ret != 0) {
			/* A device NVML cannot read (lost, no permission) keeps total 0: unknown. */
			snprintf(why, whylen, "device %u: %s", i, nvml_strerror(nv, ret));
			continue;
		}
	}
	if (nv->count > max)
		snprintf(why, whylen, "%u devices, only the first %zu kept", nv->count, max);
	return 0;
}

int nvml_gpus(const char *library, struct nvml_gpu *gpus, size_t max, size_t *n, char *why,
	      size_t whylen)
{
	struct nvml *nv;
	int ret;

	*n = 0;
	ret = nvml_open(library, &nv, why, whylen);
	if (ret < 0)
		return ret;
	ret = nvml_read_gpus(nv, gpus, max, n, why, whylen);
	nvml_close(nv);
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
