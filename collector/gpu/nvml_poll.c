/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading the driver's figures at the collector's slow cadence (see
 * nvml_poll.h).  Runs in the collector's main loop with its steady
 * privileges; NVML's handles were opened at start.
 */
#include <stdio.h>
#include <stdlib.h>

#include "collector/gpu/nvml_poll.h"
#include "common/log.h"
#include "common/util.h"

#define SLOW_LOG_EVERY_NS	(60ull * NSEC_PER_SEC)
/* A process list that lists processes whose used memory the driver does not give. */
#define PROCS_NOT_AVAILABLE	(-1)

struct nvml_poll {
	struct nvml *nv;
	uint64_t interval_ns;
	uint64_t next_ns;		/* 0: due now */
	uint64_t slow_logged_ns;
	int procs_logged;		/* no process-list call: said once */
	/* What each GPU gave at the last read: NVML's code, or PROCS_NOT_AVAILABLE. */
	int mem_state[NVML_DEVICES_MAX];
	int procs_state[NVML_DEVICES_MAX];
	struct nvml_proc procs[NVML_PROCS_MAX];
	struct agg_driver_proc figures[NVML_PROCS_MAX];
};

struct nvml_poll *nvml_poll_new(struct nvml *nv, uint32_t interval_ms)
{
	struct nvml_poll *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->nv = nv;
	p->interval_ns = (uint64_t)interval_ms * NSEC_PER_MSEC;
	return p;
}

void nvml_poll_free(struct nvml_poll *p)
{
	free(p);
}

/* One line when the used memory of gpu can no longer, or can again, be read. */
static void note_memory(struct nvml_poll *p, unsigned int gpu, int ret)
{
	if (ret == p->mem_state[gpu])
		return;
	if (ret == NVML_RET_SUCCESS)
		log_info("NVML: GPU %u: used memory read again", gpu);
	else
		log_warnx("NVML: GPU %u: nvmlDeviceGetMemoryInfo: %s; its used memory is the "
			  "watched processes' sum until NVML gives it again", gpu,
			  nvml_strerror(p->nv, ret));
	p->mem_state[gpu] = ret;
}

/* One line when the per-process figures of gpu go, come back or go for another reason. */
static void note_procs(struct nvml_poll *p, unsigned int gpu,
		       const struct nvml_device_figures *f, int state)
{
	const char *call = nvml_procs_call(p->nv);

	if (state == p->procs_state[gpu])
		return;
	p->procs_state[gpu] = state;
	if (state == NVML_RET_SUCCESS)
		log_info("NVML: GPU %u: the driver's per-process used memory is read again", gpu);
	else if (state == PROCS_NOT_AVAILABLE)
		log_warnx("NVML: GPU %u: %s gives no used memory of its processes "
			  "(NVML_VALUE_NOT_AVAILABLE); they have no driver figure", gpu, call);
	else if (state == NVML_RET_INSUFFICIENT_SIZE)
		log_warnx("NVML: GPU %u: %u processes, more than the %u read; its processes have "
			  "no driver figure", gpu, f->needed, NVML_PROCS_MAX);
	else if (state != NVML_RET_FUNCTION_NOT_FOUND)
		log_warnx("NVML: GPU %u: %s: %s; its processes have no driver figure until NVML "
			  "gives them again", gpu, call, nvml_strerror(p->nv, state));
}

/* Reads GPU gpu and gives the aggregation what NVML gave. */
static void read_gpu(struct nvml_poll *p, struct agg *a, unsigned int gpu)
{
	struct nvml_device_figures f;
	int known, state, missing = 0;

	if (nvml_read_device(p->nv, gpu, p->procs, NVML_PROCS_MAX, &f) < 0)
		return;	/* no handle since start: said then */
	note_memory(p, gpu, f.mem_ret);
	agg_gpu_device_used(a, gpu, f.mem_ret == NVML_RET_SUCCESS, f.used_bytes);

	known = f.procs_ret == NVML_RET_SUCCESS;
	for (unsigned int i = 0; known && i < f.n_procs; i++) {
		p->figures[i].pid = p->procs[i].pid;
		p->figures[i].used_bytes = p->procs[i].used_bytes == NVML_USED_NOT_AVAILABLE ?
					   AGG_DRIVER_NOT_AVAILABLE : p->procs[i].used_bytes;
		missing |= p->procs[i].used_bytes == NVML_USED_NOT_AVAILABLE;
	}
	state = !known ? f.procs_ret : missing ? PROCS_NOT_AVAILABLE : NVML_RET_SUCCESS;
	note_procs(p, gpu, &f, state);
	agg_gpu_driver_procs(a, gpu, p->figures, known ? f.n_procs : 0, known);
}

int nvml_poll_run(struct nvml_poll *p, struct agg *a, uint64_t now_ns)
{
	unsigned int n = nvml_devices(p->nv);
	uint64_t t0, took, spaced;

	if (p->next_ns && now_ns < p->next_ns)
		return 0;
	t0 = now_mono_ns();
	if (!nvml_procs_call(p->nv) && !p->procs_logged) {
		log_warnx("NVML: %s has no nvmlDeviceGetComputeRunningProcesses; processes have "
			  "no driver figure", NVML_LIBRARY);
		p->procs_logged = 1;
	}
	for (unsigned int gpu = 0; gpu < n; gpu++)
		read_gpu(p, a, gpu);
	took = now_mono_ns() - t0;
	spaced = took * NVML_POLL_SHARE;
	if (spaced > p->interval_ns &&
	    (!p->slow_logged_ns || now_ns - p->slow_logged_ns > SLOW_LOG_EVERY_NS)) {
		log_warnx("NVML: reading %u GPUs took %.1f ms; the next reads are %.1f s apart",
			  n, (double)took / 1e6, (double)spaced / 1e9);
		p->slow_logged_ns = now_ns;
	}
	p->next_ns = now_ns + (spaced > p->interval_ns ? spaced : p->interval_ns);
	return 1;
}
