/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * zernel-collector: loads the BPF probes (root, or CAP_BPF + CAP_PERFMON +
 * CAP_SYS_RESOURCE) or, with --simulate, generates a synthetic job without
 * any privilege; aggregates the events and publishes them into the shared
 * segment at a fixed cadence.  It owns every write to the segment.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/parser/parser.h"
#include "collector/agg/agg.h"
#include "collector/probes/decode.h"
#include "collector/identity/ident_scan.h"
#include "collector/gpu/nvml.h"
#include "collector/gpu/nvml_poll.h"
#include "collector/options.h"
#include "collector/privsep/privileges.h"
#include "collector/probes/probes.h"
#include "collector/sim/sim_sites.h"
#include "collector/sim/simulate.h"
#include "collector/agg/latency.h"
#include "common/log.h"
#include "common/util.h"
#include "shm/shm_writer.h"

#define SIM_TICK_MS		100	/* the simulator's step */
#define SLOW_WARN_EVERY_NS	(60ull * NSEC_PER_SEC)

static volatile sig_atomic_t exiting;

/*
 * The uprobe links are released by a child (collector/probes/probe_attach.c) once
 * this process lets go of them.  A container runtime kills whatever its
 * main process leaves behind, and a uprobe whose release is killed leaks
 * in the kernel, its breakpoints left in the processes it was in: so with
 * --exit-when-released the collector closes its descriptors and waits for
 * its children.  The segment is gone by then, so readers already see it
 * stopped.
 */
static void wait_uprobes_released(void)
{
	uint64_t t0 = now_mono_ns();
	int children = 0;

	syscall(SYS_close_range, 3u, ~0u, 0u);
	for (;;) {
		if (wait(NULL) > 0)
			children++;
		else if (errno != EINTR)
			break;
	}
	if (children)
		log_info("uprobes released in %.1f s", (double)(now_mono_ns() - t0) / 1e9);
}

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

static int install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a signal must cut the current wait short. */
	if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0)
		return -errno;
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) < 0)
		return -errno;
	return 0;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ms / 1000),
		.tv_nsec = (long)(ms % 1000) * 1000000L,
	};

	/* EINTR is the point: the loop then sees `exiting`. */
	nanosleep(&ts, NULL);
}

/*
 * The node's GPUs from NVML, when the driver's library is there (BPF mode
 * only); NVML stays open for the driver's memory figures.
 */
struct nvml_totals {
	struct nvml *lib;		/* NULL: no NVML */
	uint64_t total[SHM_LIMIT_GPUS];
	size_t n;
	struct nvml_gpu gpu[GPU_NODES_MAX];
	struct gpu_node node[GPU_NODES_MAX];
	size_t n_nodes;
};

static void nvml_read(struct nvml_totals *nv)
{
	char why[512];
	int err = nvml_open(NULL, &nv->lib, why, sizeof(why));

	if (err == 0)
		nvml_read_gpus(nv->lib, nv->gpu, GPU_NODES_MAX, &nv->n, why, sizeof(why));
	for (size_t i = 0; i < nv->n; i++) {
		nv->total[i] = nv->gpu[i].total;
		nv->node[i] = nv->gpu[i].node;
	}
	nv->n_nodes = nv->n;
	if (err == -ENOENT)
		log_info("NVML: %s is not available (%s); GPU totals come only from "
			 "--gpu-memory-total, CUDA devices are not mapped to physical GPUs "
			 "(gpu_map \"ordinal\" or the reason), and there is no driver figure "
			 "(the OOM rule sums the watched processes)", NVML_LIBRARY, why);
	else if (err < 0)
		log_warnx("NVML: %s; GPU totals come only from --gpu-memory-total, CUDA "
			  "devices are not mapped to physical GPUs, and there is no driver figure "
			  "(the OOM rule sums the watched processes)", why);
	else if (why[0])
		log_warnx("NVML: %zu GPUs read, %s", nv->n, why);
	else
		log_info("NVML: total memory of %zu GPUs read; the driver's memory figures "
			 "follow every few seconds (%s)", nv->n,
			 nvml_procs_call(nv->lib) ? nvml_procs_call(nv->lib) : "no process list");
}

/* The flag wins over NVML, device by device. */
static void set_gpu_totals(struct agg *agg, const struct collector_opts *o,
			   const struct nvml_totals *nv)
{
	size_t n = o->n_gpu_total > nv->n ? o->n_gpu_total : nv->n;

	for (size_t i = 0; i < nv->n_nodes; i++)
		agg_gpu_identity(agg, (uint32_t)nv->node[i].index, nv->node[i].uuid,
				 nv->node[i].name);
	for (size_t i = 0; i < n; i++) {
		if (i < o->n_gpu_total)
			agg_gpu_total(agg, (uint32_t)i, o->gpu_total[i], SHM_TOTAL_FLAG);
		else if (nv->total[i])
			agg_gpu_total(agg, (uint32_t)i, nv->total[i], SHM_TOTAL_NVML);
	}
}

static void capacity_for(const struct collector_opts *o, const struct nvml_totals *nv,
			 struct shm_capacity *cap)
{
	shm_capacity_default(cap);
	cap->procs = o->max_procs;
	if (2ull * o->max_procs > cap->gpu_mem)
		cap->gpu_mem = 2 * o->max_procs < SHM_LIMIT_GPU_MEM ?
			       2 * o->max_procs : SHM_LIMIT_GPU_MEM;
	if (o->simulate && o->gpus > cap->gpus)
		cap->gpus = o->gpus;
	if (o->n_gpu_total > cap->gpus)
		cap->gpus = (uint32_t)o->n_gpu_total;
	if (nv->n > cap->gpus)
		cap->gpus = (uint32_t)nv->n;
	if (cap->nccl_comms < cap->gpus)
		cap->nccl_comms = cap->gpus;
}

/* Publishes, and says so when publishing costs a large share of the cadence. */
/* What publishing needs, and when it is next due. */
struct cadence {
	struct agg *agg;
	struct shm_writer *w;
	const struct collector_opts *o;
	struct ident_scan *ident;
	struct nvml_poll *nvml;		/* the driver's figures; NULL without NVML */
	struct probes *probes;		/* NULL: simulating, or still attaching */
	uint64_t interval_ns;
	uint64_t next_ns;		/* 0: not publishing yet */
	uint64_t last_slow_warn;
};

static void publish(struct cadence *c, uint64_t now)
{
	const struct collector_opts *o = c->o;
	uint64_t t0, took;

	if (c->ident)
		ident_scan_refresh(c->ident, c->agg, now);
	if (c->nvml)
		nvml_poll_run(c->nvml, c->agg, now);
	if (c->probes)
		probes_sync(c->probes);
	t0 = now_mono_ns();
	agg_publish(c->agg, c->w, t0, now_real_ns(),
		    o->simulate ? sim_scenario_name(o->scenario) : NULL);
	took = now_mono_ns() - t0;
	if (took > c->interval_ns / 2 && t0 - c->last_slow_warn > SLOW_WARN_EVERY_NS) {
		log_warnx("publishing took %.1f ms, more than half of the %u ms interval",
			  (double)took / 1e6, o->publish_interval_ms);
		c->last_slow_warn = t0;
	}
}

/* Publishes when due; keeps the cadence rather than publish in bursts. */
static void publish_if_due(struct cadence *c)
{
	uint64_t now = now_mono_ns();

	if (!c->next_ns || now < c->next_ns)
		return;
	publish(c, now);
	c->next_ns += c->interval_ns;
	if (c->next_ns <= now) {
		log_warnx("publishing fell behind the %u ms cadence; skipping ahead",
			  c->o->publish_interval_ms);
		c->next_ns = now + c->interval_ns;
	}
}

/*
 * probes_opts.between_attaches: attaching a library takes seconds while
 * the node's uprobe lock is busy, and readers must not see the segment
 * go stale meanwhile (the events wait in the ring buffer).
 */
static void publish_between_attaches(void *ctx)
{
	publish_if_due(ctx);
}

int main(int argc, char **argv)
{
	struct collector_opts o;
	struct shm_writer w = { .fd = -1 };
	struct shm_writer_opts wo;
	struct agg_opts ao;
	struct agg *agg = NULL;
	struct decode dec = { 0 };
	struct sim *sim = NULL;
	struct probes *probes = NULL;
	struct ident_scan *ident = NULL;
	static struct nvml_totals nv;
	struct cadence cad = { 0 };
	int created = 0, err, ret = 1;

	/* 1. Flags and logging. */
	switch (opts_parse(&o, argc, argv, stdout, stderr)) {
	case OPTS_EXIT_OK:
		return 0;
	case OPTS_EXIT_USAGE:
		return 2;
	case OPTS_RUN:
		break;
	}
	log_init("zernel-collector");
	err = install_signals();
	if (err < 0) {
		errno = -err;
		log_warn("cannot install signal handlers");
		goto cleanup;
	}
	cad.o = &o;
	cad.w = &w;
	cad.interval_ns = (uint64_t)o.publish_interval_ms * NSEC_PER_MSEC;

	/* 2. Device totals (a real node only), then the aggregation state, sized like the segment. */
	if (!o.simulate)
		nvml_read(&nv);
	memset(&ao, 0, sizeof(ao));
	capacity_for(&o, &nv, &ao.cap);
	ao.window_ns = (uint64_t)o.window_s * NSEC_PER_SEC;
	agg = agg_new(&ao);
	cad.agg = agg;
	if (!agg) {
		log_warn("cannot allocate the aggregation tables");
		goto cleanup;
	}

	/* 3. The segment: a fresh one, so readers see a new generation. */
	memset(&wo, 0, sizeof(wo));
	wo.name = o.shm_name;
	wo.cap = ao.cap;
	wo.mode = o.simulate ? SHM_MODE_SIMULATE : SHM_MODE_BPF;
	wo.publish_interval_ms = o.publish_interval_ms;
	wo.window_ns = ao.window_ns;
	err = shm_writer_create(&w, &wo);
	if (err < 0) {
		errno = -err;
		log_warn("cannot create the shared memory segment %s", o.shm_name);
		goto cleanup;
	}
	created = 1;

	/* 4. The event source. */
	if (o.simulate) {
		/* Its trainers' stalls name the simulated script's lines. */
		const struct decode_ops sim_ops = { .py_where = sim_py_where };
		struct sim_opts so = {
			.scenario = o.scenario,
			.processes = o.processes,
			.gpus = o.gpus,
			.gpu_total = o.gpu_total,
			.n_gpu_total = o.n_gpu_total,
			.seed = 0x5eed,
		};

		if (o.n_pids || o.n_comms || o.n_libs)
			log_warnx("--pid, --comm and --lib are ignored with --simulate");
		/* The simulated devices, before their processes, as on a real node. */
		for (uint32_t g = 0; g < so.gpus; g++)
			agg_gpu_total(agg, g, sim_gpu_total(&so, g),
				      g < so.n_gpu_total ? SHM_TOTAL_FLAG : SHM_TOTAL_SIMULATED);
		/* Its records take the probes' path: a decoder of its own. */
		err = decode_init(&dec, agg, &sim_ops);
		if (err < 0) {
			errno = -err;
			log_warn("cannot set up the decoder");
			goto cleanup;
		}
		sim = sim_new(&dec, &so, now_mono_ns());
		if (!sim) {
			log_warn("cannot start the simulation");
			goto cleanup;
		}
		/* The simulator needs no privilege at all: give up whatever we hold. */
		if (privileges_drop_all() < 0)
			goto cleanup;
		log_info("simulating %u processes on %u GPUs, scenario %s",
			 o.processes, o.gpus, sim_scenario_name(o.scenario));
	} else {
		struct probes_opts po = {
			.pids = o.pids, .n_pids = o.n_pids,
			.comms = o.comms, .n_comms = o.n_comms,
			.libs = o.libs, .n_libs = o.n_libs,
			.discovery_interval_ms = o.scan_interval_ms,
			.stall_threshold_ms = o.stall_threshold_ms,
			.stall_rate = o.stall_rate,
			.no_python_frames = o.no_python_frames,
			.frames_walk = o.frames_walk,
			.runq_source = o.runq_source,
			.uprobe_links = o.uprobe_links,
			.gpus = nv.node, .n_gpus = nv.n_nodes,
			.all_threads = o.all_threads,
			.no_node_libs = o.no_node_libs,
			.dataloader_gap_us = o.dataloader_gap_us,
			.process_slots = o.process_slots,
			.between_attaches = publish_between_attaches,
			.between_ctx = &cad,
		};

		err = probes_start(&probes, agg, &po);
		if (err < 0) {
			log_error("cannot start the BPF probes: %s", strerror(-err));
			goto cleanup;
		}
		set_gpu_totals(agg, &o, &nv);
		log_info("BPF probes attached");
		/* Workload identity: cgroups, the kubelet's log directories, environments. */
		ident = ident_scan_new(o.pods_dir, o.containers_dir);
		if (!ident) {
			log_warn("cannot allocate the identity reader");
			goto cleanup;
		}
		/* Keep only what discovery needs to attach to new libraries. */
		if (privileges_drop_to_steady(probes_uprobes_as_perf(probes)) < 0)
			goto cleanup;
		/* The driver's figures, read with the steady privileges from now on. */
		if (nv.lib && !(cad.nvml = nvml_poll_new(nv.lib, o.nvml_interval_ms))) {
			log_warn("cannot allocate the NVML reader");
			goto cleanup;
		}
	}
	log_info("publishing to %s every %u ms, quantile window %u s",
		 o.shm_name, o.publish_interval_ms, o.window_s);

	/* 5. Poll the source and publish at the cadence until told to stop. */
	cad.ident = ident;
	cad.probes = probes;
	publish(&cad, now_mono_ns());
	cad.next_ns = now_mono_ns() + cad.interval_ns;
	while (!exiting) {
		uint64_t now = now_mono_ns();
		uint64_t wait_ms = cad.next_ns > now ?
				   (cad.next_ns - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC : 0;

		if (sim) {
			if (wait_ms > SIM_TICK_MS)
				wait_ms = SIM_TICK_MS;
			if (wait_ms)
				sleep_ms(wait_ms);
			sim_tick(sim, now_mono_ns());
		} else {
			/* Until the publish is due: a signal cuts the wait short. */
			err = probes_poll(probes, (int)wait_ms);
			if (err < 0 && err != -EINTR) {
				log_error("event source failed: %s", strerror(-err));
				goto cleanup;
			}
		}
		publish_if_due(&cad);
	}
	log_info("shutting down");
	ret = 0;

cleanup:
	/* 6. Stop the source, then remove the segment: readers see it go. */
	if (probes)
		probes_stop(probes);
	parser_stop();
	ident_scan_free(ident);
	nvml_poll_free(cad.nvml);
	nvml_close(nv.lib);
	sim_free(sim);
	decode_destroy(&dec);
	if (created)
		shm_writer_close(&w, 1);
	agg_free(agg);
	if (o.exit_when_released)
		wait_uprobes_released();
	return ret;
}
