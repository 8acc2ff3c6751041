/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A stand-in for libnvidia-ml.so.1 with the real symbol names and ABI, for
 * the collector's NVML reader.  Its devices come from the environment:
 *   FAKE_NVML_TOTALS=BYTES,BYTES,...   one device per value
 *   FAKE_NVML_INIT_FAIL=1              nvmlInit_v2 fails (driver not loaded)
 *   FAKE_NVML_BAD_DEVICE=N             device N cannot be read
 *   FAKE_NVML_LOG=FILE                 appends "init" / "shutdown" per call
 *   FAKE_NVML_USED=BYTES,BYTES,...     used memory per device (default: a quarter)
 *   FAKE_NVML_STATE=FILE               what the driver has now, read at every call,
 *                                      so a test changes it under a running reader:
 *       GPU PID BYTES       a process with a compute context on GPU, its used
 *                           memory (na: NVML_VALUE_NOT_AVAILABLE)
 *       used GPU BYTES      GPU's used memory (over FAKE_NVML_USED): what
 *                           allocations hold
 *       reserved GPU BYTES  what the driver sets aside on GPU (default 0):
 *                           nvmlMemory_v2_t's reserved, and in the used of the
 *                           unversioned call, as real drivers count it
 *       fail CALL GPU CODE  CALL (memory, memory_v2, procs) on GPU returns the
 *                           nvmlReturn_t CODE
 *       slow GPU MS         the process list of GPU takes MS milliseconds
 *                           (lines starting with # are comments)
 * Device i's identity: UUID GPU-0000000i-1111-4222-8333-00000000000i (the
 * last group is i in hex, 12 digits), name "NVIDIA Fake GPU", PCI bus id
 * 00000000:(0x10 + i):00.0, minor number i.
 * Built with -DFAKE_NVML_NO_MEMINFO it lacks nvmlDeviceGetMemoryInfo, like
 * a library too old or too stripped to use; with -DFAKE_NVML_PROCS_V1 it is
 * an older driver: its only process list is the unversioned call, with
 * nvmlProcessInfo_v1_t, and it has no nvmlDeviceGetMemoryInfo_v2; with -DFAKE_NVML_PROCS_CC it is a 535.43 to 535.86
 * driver, whose _v3 writes nvmlProcessInfo_v3_t (a confidential-computing
 * field more) and which has nvmlDeviceGetConfComputeMemSizeInfo but not
 * nvmlDeviceGetRunningProcessDetailList.  The process list follows NVML's documented
 * contract: *infoCount too small (0 with infos NULL to ask) returns
 * NVML_ERROR_INSUFFICIENT_SIZE with the count needed, or NVML_SUCCESS when
 * there is none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

#define NVML_SUCCESS			0
#define NVML_ERROR_INVALID_ARGUMENT	2
#define NVML_ERROR_NOT_SUPPORTED	3
#define NVML_ERROR_NO_PERMISSION	4
#define NVML_ERROR_INSUFFICIENT_SIZE	7
#define NVML_ERROR_DRIVER_NOT_LOADED	9
#define NVML_ERROR_GPU_IS_LOST		15
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define NVML_VALUE_NOT_AVAILABLE	(-1)
#define MAX_DEV				64
#define MAX_PROCS			4096

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

typedef struct {
	unsigned int version;
	unsigned long long total;
	unsigned long long reserved;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_v2_t;

/* NVML_STRUCT_VERSION(Memory, 2) */
#define nvmlMemory_v2	((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

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

/* What FAKE_NVML_STATE says of device dev now. */
struct state {
	int has_used;
	unsigned long long used, reserved;
	int fail_memory, fail_memory_v2, fail_procs;	/* nvmlReturn_t; 0: none */
	unsigned int slow_ms;
	unsigned int n;
	unsigned int pid[MAX_PROCS];
	unsigned long long bytes[MAX_PROCS];
};

static void read_state(unsigned int dev, struct state *st)
{
	const char *path = getenv("FAKE_NVML_STATE");
	FILE *f = path ? fopen(path, "r") : NULL;
	char line[256], word[32], val[32];
	unsigned int gpu, pid;
	int code;

	memset(st, 0, sizeof(*st));
	while (f && fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		if (sscanf(line, "used %u %31s", &gpu, val) == 2 && gpu == dev) {
			st->has_used = 1;
			st->used = strtoull(val, NULL, 10);
		} else if (sscanf(line, "reserved %u %31s", &gpu, val) == 2 && gpu == dev) {
			st->reserved = strtoull(val, NULL, 10);
		} else if (sscanf(line, "fail %31s %u %d", word, &gpu, &code) == 3 && gpu == dev) {
			if (strcmp(word, "memory") == 0)
				st->fail_memory = code;
			else if (strcmp(word, "memory_v2") == 0)
				st->fail_memory_v2 = code;
			else if (strcmp(word, "procs") == 0)
				st->fail_procs = code;
		} else if (sscanf(line, "slow %u %d", &gpu, &code) == 2 && gpu == dev) {
			st->slow_ms = (unsigned int)code;
		} else if (sscanf(line, "%u %u %31s", &gpu, &pid, val) == 3 && gpu == dev &&
			   st->n < MAX_PROCS) {
			st->pid[st->n] = pid;
			st->bytes[st->n++] = strcmp(val, "na") == 0 ?
					     (unsigned long long)NVML_VALUE_NOT_AVAILABLE :
					     strtoull(val, NULL, 10);
		}
	}
	if (f)
		fclose(f);
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
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
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
/* Device dev's memory now: total, what allocations hold, the driver's reserve. */
static int memory_now(nvmlDevice_t dev, struct state *st, unsigned long long *total,
		      unsigned long long *allocated)
{
	unsigned long long t[MAX_DEV];
	const char *bad = getenv("FAKE_NVML_BAD_DEVICE");

	if (!dev || dev->index >= parse_totals(t))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (bad && (unsigned int)atoi(bad) == dev->index)
		return NVML_ERROR_GPU_IS_LOST;
	read_state(dev->index, st);
	*total = t[dev->index];
	if (st->has_used)
		*allocated = st->used;
	else if (!list_at("FAKE_NVML_USED", dev->index, allocated))
		*allocated = t[dev->index] / 4;
	return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *mem)
{
	unsigned long long total, allocated;
	struct state st;
	int ret = memory_now(dev, &st, &total, &allocated);

	if (ret != NVML_SUCCESS)
		return ret;
	if (st.fail_memory)
		return st.fail_memory;
	mem->total = total;
	mem->used = allocated + st.reserved;
	mem->free = total - mem->used;
	return NVML_SUCCESS;
}

#ifndef FAKE_NVML_PROCS_V1
EXPORT int nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *mem)
{
	unsigned long long total, allocated;
	struct state st;
	int ret;

	if (!mem)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (mem->version != nvmlMemory_v2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	ret = memory_now(dev, &st, &total, &allocated);
	if (ret != NVML_SUCCESS)
		return ret;
	if (st.fail_memory_v2)
		return st.fail_memory_v2;
	if (st.fail_memory)
		return st.fail_memory;
	mem->total = total;
	mem->reserved = st.reserved;
	mem->used = allocated;
	mem->free = total - st.reserved - allocated;
	return NVML_SUCCESS;
}
#endif
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

/* nvmlProcessInfo_t of the _v3 call (and _v2), and the v1 of the unversioned one. */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
	unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessInfo_v3_t;

/* The process list of dev into infos, entries of size bytes (v3 or v1). */
static int running_processes(nvmlDevice_t dev, unsigned int *count, void *infos, size_t size)
{
	static struct state st;

	if (!valid(dev) || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	read_state(dev->index, &st);
	if (st.slow_ms) {
		struct timespec ts = { st.slow_ms / 1000, (long)(st.slow_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	if (st.fail_procs)
		return st.fail_procs;
	if (*count < st.n) {
		*count = st.n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	if (st.n && !infos)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned int i = 0; i < st.n; i++) {
		nvmlProcessInfo_v3_t e = {
			.pid = st.pid[i], .usedGpuMemory = st.bytes[i],
			/* Without MIG both ids are 0xFFFFFFFF. */
			.gpuInstanceId = 0xFFFFFFFFu, .computeInstanceId = 0xFFFFFFFFu,
			.usedGpuCcProtectedMemory = 0,
		};

		memcpy((char *)infos + i * size, &e, size);
	}
	*count = st.n;
	return NVML_SUCCESS;
}

#ifdef FAKE_NVML_PROCS_V1
EXPORT int nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t dev, unsigned int *count,
						  nvmlProcessInfo_v1_t *infos)
{
	return running_processes(dev, count, infos, sizeof(*infos));
}
#elif defined(FAKE_NVML_PROCS_CC)
EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
						     nvmlProcessInfo_v3_t *infos)
{
	return running_processes(dev, count, infos, sizeof(*infos));
}

/* Only its presence matters: what marks the drivers of that _v3. */
EXPORT int nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t dev, void *info)
{
	(void)dev;
	(void)info;
	return NVML_ERROR_NOT_SUPPORTED;
}
#else
EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
						     nvmlProcessInfo_t *infos)
{
	return running_processes(dev, count, infos, sizeof(*infos));
}

/* A current driver has both: its _v3 is back to nvmlProcessInfo_t. */
EXPORT int nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t dev, void *info)
{
	(void)dev;
	(void)info;
	return NVML_ERROR_NOT_SUPPORTED;
}

EXPORT int nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t dev, void *list)
{
	(void)dev;
	(void)list;
	return NVML_ERROR_NOT_SUPPORTED;
}
#endif
