/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A stand-in for libnvidia-ml.so.1 with the real symbol names and ABI, for
 * the collector's NVML reader.  Its devices come from the environment:
 *   FAKE_NVML_TOTALS=BYTES,BYTES,...   one device per value
 *   FAKE_NVML_INIT_FAIL=1              nvmlInit_v2 fails (driver not loaded)
 *   FAKE_NVML_BAD_DEVICE=N             device N cannot be read
 *   FAKE_NVML_LOG=FILE                 appends "init" / "shutdown" per call
 *   FAKE_NVML_USED=BYTES,BYTES,...     used memory per device (default: a quarter)
 * Device i's identity: UUID GPU-0000000i-1111-4222-8333-00000000000i (the
 * last group is i in hex, 12 digits), name "NVIDIA Fake GPU", PCI bus id
 * 00000000:(0x10 + i):00.0, minor number i.
 * Built with -DFAKE_NVML_NO_MEMINFO it lacks nvmlDeviceGetMemoryInfo, like
 * a library too old or too stripped to use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

#define NVML_SUCCESS			0
#define NVML_ERROR_INVALID_ARGUMENT	2
#define NVML_ERROR_DRIVER_NOT_LOADED	9
#define NVML_ERROR_GPU_IS_LOST		15
#define MAX_DEV				64

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

static struct nvmlDevice_st { unsigned int index; } devs[MAX_DEV];

static void note(const char *what)
{
	const char *path = getenv("FAKE_NVML_LOG");
	FILE *f = path ? fopen(path, "a") : NULL;

	if (f) {
		fprintf(f, "%s\n", what);
		fclose(f);
	}
}

static unsigned int parse_totals(unsigned long long *t)
{
	const char *s = getenv("FAKE_NVML_TOTALS");
	unsigned int n = 0;
	char *end;

	while (s && *s && n < MAX_DEV) {
		t[n++] = strtoull(s, &end, 10);
		s = *end == ',' ? end + 1 : end + strlen(end);
	}
	return n;
}

/* The value at position i of a comma-separated list in $name; 0 when there is none. */
static __attribute__((unused)) int list_at(const char *name, unsigned int i, unsigned long long *v)
{
	const char *s = getenv(name);
	char *end;

	for (unsigned int k = 0; s && *s; k++) {
		unsigned long long x = strtoull(s, &end, 10);

		if (k == i) {
			*v = x;
			return 1;
		}
		s = *end == ',' ? end + 1 : end + strlen(end);
	}
	return 0;
}

EXPORT int nvmlInit_v2(void)
{
	note("init");
	return getenv("FAKE_NVML_INIT_FAIL") ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_SUCCESS;
}

EXPORT int nvmlShutdown(void)
{
	note("shutdown");
	return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(int r)
{
	switch (r) {
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	}
	return "Unknown Error";
}

EXPORT int nvmlDeviceGetCount_v2(unsigned int *count)
{
	unsigned long long t[MAX_DEV];

	*count = parse_totals(t);
	return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *dev)
{
	unsigned long long t[MAX_DEV];

	if (i >= parse_totals(t))
		return NVML_ERROR_INVALID_ARGUMENT;
	devs[i].index = i;
	*dev = &devs[i];
	return NVML_SUCCESS;
}

#ifndef FAKE_NVML_NO_MEMINFO
EXPORT int nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *mem)
{
	unsigned long long t[MAX_DEV];
	const char *bad = getenv("FAKE_NVML_BAD_DEVICE");

	if (!dev || dev->index >= parse_totals(t))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (bad && (unsigned int)atoi(bad) == dev->index)
		return NVML_ERROR_GPU_IS_LOST;
	mem->total = t[dev->index];
	if (!list_at("FAKE_NVML_USED", dev->index, &mem->used))
		mem->used = t[dev->index] / 4;
	mem->free = mem->total - mem->used;
	return NVML_SUCCESS;
}
#endif

static int valid(nvmlDevice_t dev)
{
	unsigned long long t[MAX_DEV];

	return dev && dev->index < parse_totals(t);
}

EXPORT int nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int len)
{
	if (!valid(dev) || !uuid || len < 41)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(uuid, len, "GPU-%08x-1111-4222-8333-%012x", dev->index, dev->index);
	return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int len)
{
	if (!valid(dev) || !name || len == 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(name, len, "NVIDIA Fake GPU");
	return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetMinorNumber(nvmlDevice_t dev, unsigned int *minor)
{
	if (!valid(dev) || !minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	*minor = dev->index;
	return NVML_SUCCESS;
}

/* nvmlPciInfo_t as of NVML's v3 call. */
typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

EXPORT int nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
	if (!valid(dev) || !pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(pci, 0, sizeof(*pci));
	pci->bus = 0x10 + dev->index;
	snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", pci->bus);
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", pci->bus);
	return NVML_SUCCESS;
}
