/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * GPU totals from NVML through dlopen() (see nvml.h).  Runs once at the
 * collector's start, as root, before the probes attach.  The few NVML
 * types used are declared here with the layout of nvml.h, so building
 * needs no NVIDIA header either.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collector/nvml.h"

/* nvmlReturn_t is an int (NVML_SUCCESS is 0); nvmlDevice_t an opaque pointer. */
struct nvml_device;

struct nvml_memory {			/* nvmlMemory_t */
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
};

struct nvml_api {
	int (*init)(void);
	int (*shutdown)(void);
	int (*count)(unsigned int *);
	int (*handle)(unsigned int, struct nvml_device **);
	int (*memory)(struct nvml_device *, struct nvml_memory *);
	const char *(*error_string)(int);	/* optional */
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

int nvml_gpu_totals(const char *library, uint64_t *totals, size_t max, size_t *n,
		    char *why, size_t whylen)
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
		struct nvml_memory mem;
		struct nvml_device *dev = NULL;

		ret = api.handle(i, &dev);
		if (ret == 0)
			ret = api.memory(dev, &mem);
		if (ret != 0) {
			/* A device NVML cannot read (lost, no permission) keeps total 0: unknown. */
			snprintf(why, whylen, "device %u: %s", i, nvml_error(&api, ret));
			totals[(*n)++] = 0;
			continue;
		}
		totals[(*n)++] = mem.total;
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
