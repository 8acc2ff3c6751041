/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The driver's memory figures of one GPU (see nvml.h): its used memory and
 * the processes with a compute context on it, each with the memory the
 * driver counts for it.  Called every few seconds from the collector's
 * main loop (collector/gpu/nvml_poll.h), never on an event's path: each call
 * is two NVML calls into buffers sized once.
 */
#include <errno.h>
#include <string.h>

#include "collector/gpu/nvml_impl.h"

/* The process list, read through the stride of the call in use. */
static void read_procs(struct nvml *nv, struct nvml_device *dev, struct nvml_proc *procs,
		       unsigned int max, struct nvml_device_figures *out)
{
	const unsigned char *raw = (const unsigned char *)nv->raw;
	unsigned int count = max;

	if (!nv->api.procs) {
		out->procs_ret = NVML_RET_FUNCTION_NOT_FOUND;
		return;
	}
	memset(nv->raw, 0, (size_t)max * nv->api.procs_stride);
	out->procs_ret = nv->api.procs(dev, &count, nv->raw);
	if (out->procs_ret == NVML_RET_INSUFFICIENT_SIZE) {
		out->needed = count;
		return;
	}
	if (out->procs_ret != NVML_RET_SUCCESS)
		return;
	/* More than it had room for is not a list to trust. */
	if (count > max) {
		out->procs_ret = NVML_RET_INSUFFICIENT_SIZE;
		out->needed = count;
		return;
	}
	for (unsigned int i = 0; i < count; i++) {
		const unsigned char *e = raw + (size_t)i * nv->api.procs_stride;
		unsigned long long used;
		unsigned int pid;

		memcpy(&pid, e + offsetof(struct nvml_process_v1, pid), sizeof(pid));
		memcpy(&used, e + offsetof(struct nvml_process_v1, used_gpu_memory), sizeof(used));
		procs[i].pid = pid;
		procs[i].used_bytes = used;	/* (unsigned long long)-1 stays NVML_USED_NOT_AVAILABLE */
	}
	out->n_procs = count;
}

int nvml_memory_read(const struct nvml_api *api, struct nvml_device *dev, uint64_t *total,
		     uint64_t *used)
{
	struct nvml_memory_v2 m2 = { .version = NVML_MEMORY_V2_VERSION };
	struct nvml_memory m1;
	int ret = NVML_RET_FUNCTION_NOT_FOUND;

	if (api->memory_v2)
		ret = api->memory_v2(dev, &m2);
	if (ret == NVML_RET_SUCCESS) {
		*total = m2.total;
		*used = m2.used;
		return ret;
	}
	/* A call the driver does not know, or a version it does not take: the old one. */
	if (ret != NVML_RET_FUNCTION_NOT_FOUND && ret != NVML_RET_NOT_SUPPORTED &&
	    ret != NVML_RET_ARGUMENT_VERSION_MISMATCH)
		return ret;
	ret = api->memory(dev, &m1);
	if (ret == NVML_RET_SUCCESS) {
		*total = m1.total;
		*used = m1.used;
	}
	return ret;
}

int nvml_read_device(struct nvml *nv, unsigned int index, struct nvml_proc *procs,
		     unsigned int max, struct nvml_device_figures *out)
{
	struct nvml_device *dev;

	memset(out, 0, sizeof(*out));
	if (index >= nv->n || !(dev = nv->dev[index]))
		return -EINVAL;
	if (max > NVML_PROCS_MAX)
		max = NVML_PROCS_MAX;
	/* Written only on success: out was zeroed above. */
	out->mem_ret = nvml_memory_read(&nv->api, dev, &out->total_bytes, &out->used_bytes);
	read_procs(nv, dev, procs, max, out);
	return 0;
}
