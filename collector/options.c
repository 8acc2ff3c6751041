/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * zernel-collector's flags (see options.h).  Runs before anything
 * privileged; every refusal is one line on stderr that names the flag and
 * the value, and the caller exits 2.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/options.h"
#include "common/util.h"

#define PROG "zernel-collector"

#define MAX_PID		4194304u	/* PID_MAX_LIMIT on 64-bit Linux */
#define MAX_PATH_LEN	4095u

static const char usage_text[] =
"Usage: " PROG " [OPTION]...\n"
"Watch CUDA/NCCL workloads with eBPF and publish the figures into a shared\n"
"memory segment for zernel-exporter.\n"
"\n"
"Source:\n"
"  --simulate               generate a synthetic training job instead of\n"
"                           loading BPF probes (no root, no GPU needed)\n"
"  --scenario NAME          with --simulate: steady (default), oom,\n"
"                           straggler or dataloader-stall\n"
"  --processes N            with --simulate: processes to simulate (default 8)\n"
"  --gpus N                 with --simulate: GPUs, one trainer each (default 4)\n"
"  --pid PID                also watch this process and its children; a\n"
"                           thread id stands for its process (repeatable)\n"
"  --comm NAME              also watch processes with this command name\n"
"                           (repeatable)\n"
"  --lib PATH               also probe this CUDA/NCCL library (repeatable)\n"
"  --stall-threshold-ms MS  keep the Python site of a watched thread's stall\n"
"                           (blocked or waiting for a CPU) this long or\n"
"                           longer, 1..60000 (default 2)\n"
"  --stall-rate N           Python stacks taken at most per second and\n"
"                           process, 1..10000 (default 50); the rest count\n"
"                           as unsampled time\n"
"  --no-python-frames       do not read Python frames\n"
"  --python-frames-walk WHEN\n"
"                           stall: read a thread's frames only after a stall,\n"
"                           as it returns to user space (Linux 6.18 and\n"
"                           later; the default there); switch: at every\n"
"                           switch away (the default elsewhere)\n"
"  --uprobe-links HOW       multi: one uprobe_multi link per program and\n"
"                           library (Linux 6.6 and later; the default\n"
"                           there); perf: one perf event per probe (the\n"
"                           default elsewhere)\n"
"  --runq-source FROM       where a woken thread's run-queue wait is timed\n"
"                           from: sched-info, the kernel's own accounting,\n"
"                           read as the thread gets its CPU (the default\n"
"                           where the kernel keeps it); wakeup, a program\n"
"                           on every wakeup of the node\n"
"  --scan-interval MS       period of the /proc scan for processes that map\n"
"                           CUDA/NCCL libraries, 100..600000 (default 1000);\n"
"                           a library a process loads is found at once\n"
"  --no-node-libs           do not probe the node's CUDA/NCCL libraries at\n"
"                           start: a process that loads them is probed\n"
"                           when found\n"
"  --all-threads            count every thread of a watched process in its\n"
"                           thread states and DataLoader waits, not only\n"
"                           its training threads\n"
"  --dataloader-gap-us US   input blocks of a thread closer than this merge\n"
"                           into one DataLoader wait, 0..1000000 (default\n"
"                           1000)\n"
"  --process-slots N        processes whose launch latencies and scheduler\n"
"                           figures are added up in the kernel, each probe,\n"
"                           0..512 (default: what fits 64 MiB per probe for\n"
"                           this machine's CPUs, at most 512); the other\n"
"                           processes send an event per launch and switch\n"
"  --gpu-memory-total BYTES[,BYTES...]\n"
"                           total memory of GPU 0, 1, ... in bytes; without\n"
"                           it, from NVML (libnvidia-ml.so.1) when present\n"
"  --nvml-interval MS       period of the driver's memory figures read from\n"
"                           NVML (device and per-process used memory),\n"
"                           100..600000 (default 5000)\n"
"  --pods-dir DIR           the kubelet's pod log directories, for pod,\n"
"                           namespace and container names (default\n"
"                           /var/log/pods; '' for none)\n"
"  --containers-dir DIR     the kubelet's container log links (default\n"
"                           /var/log/containers; '' for none)\n"
"\n"
"Publishing:\n"
"  --shm NAME               segment name (default " SHM_DEFAULT_NAME ")\n"
"  --publish-interval MS    publish period, 100..60000 (default 1000)\n"
"  --window SEC             window of the summary quantiles (default 60)\n"
"  --max-procs N            capacity of the process table (default 1024)\n"
"  --exit-when-released     on SIGTERM, remove the segment at once but exit\n"
"                           only once the kernel has released every uprobe\n"
"                           (containers: the runtime kills what the main\n"
"                           process leaves behind)\n"
"\n"
"  --help                   print this help and exit\n"
"  --version                print the version and exit\n"
"\n"
"Environment: ZERNEL_LOG=debug|info|warn|error (default info).\n";

enum {
	OPT_SIMULATE = 256,
	OPT_SCENARIO,
	OPT_SHM,
	OPT_INTERVAL,
	OPT_WINDOW,
	OPT_PROCESSES,
	OPT_GPUS,
	OPT_MAX_PROCS,
	OPT_PID,
	OPT_COMM,
	OPT_LIB,
	OPT_GPU_TOTAL,
	OPT_STALL_THRESHOLD,
	OPT_STALL_RATE,
	OPT_NO_PY_FRAMES,
	OPT_PY_FRAMES_WALK,
	OPT_UPROBE_LINKS,
	OPT_RUNQ_SOURCE,
	OPT_PODS_DIR,
	OPT_CONTAINERS_DIR,
	OPT_ALL_THREADS,
	OPT_NO_NODE_LIBS,
	OPT_EXIT_RELEASED,
	OPT_SCAN_INTERVAL,
	OPT_DL_GAP,
	OPT_PROCESS_SLOTS,
	OPT_NVML_INTERVAL,
	OPT_HELP,
	OPT_VERSION,
};

static const struct option long_opts[] = {
	{ "simulate", no_argument, NULL, OPT_SIMULATE },
	{ "scenario", required_argument, NULL, OPT_SCENARIO },
	{ "shm", required_argument, NULL, OPT_SHM },
	{ "publish-interval", required_argument, NULL, OPT_INTERVAL },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "processes", required_argument, NULL, OPT_PROCESSES },
	{ "gpus", required_argument, NULL, OPT_GPUS },
	{ "max-procs", required_argument, NULL, OPT_MAX_PROCS },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "lib", required_argument, NULL, OPT_LIB },
	{ "gpu-memory-total", required_argument, NULL, OPT_GPU_TOTAL },
	{ "stall-threshold-ms", required_argument, NULL, OPT_STALL_THRESHOLD },
	{ "stall-rate", required_argument, NULL, OPT_STALL_RATE },
	{ "no-python-frames", no_argument, NULL, OPT_NO_PY_FRAMES },
	{ "python-frames-walk", required_argument, NULL, OPT_PY_FRAMES_WALK },
	{ "uprobe-links", required_argument, NULL, OPT_UPROBE_LINKS },
	{ "runq-source", required_argument, NULL, OPT_RUNQ_SOURCE },
	{ "pods-dir", required_argument, NULL, OPT_PODS_DIR },
	{ "containers-dir", required_argument, NULL, OPT_CONTAINERS_DIR },
	{ "all-threads", no_argument, NULL, OPT_ALL_THREADS },
	{ "no-node-libs", no_argument, NULL, OPT_NO_NODE_LIBS },
	{ "exit-when-released", no_argument, NULL, OPT_EXIT_RELEASED },
	{ "scan-interval", required_argument, NULL, OPT_SCAN_INTERVAL },
	{ "dataloader-gap-us", required_argument, NULL, OPT_DL_GAP },
	{ "process-slots", required_argument, NULL, OPT_PROCESS_SLOTS },
	{ "nvml-interval", required_argument, NULL, OPT_NVML_INTERVAL },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static const char *opt_name(int val)
{
	for (const struct option *lo = long_opts; lo->name; lo++)
		if (lo->val == val)
			return lo->name;
	return "?";
}

static enum opts_result bad_value(FILE *err, int val, const char *arg, const char *why)
{
	fprintf(err, PROG ": invalid value '%s' for --%s: %s\n", arg, opt_name(val), why);
	return OPTS_EXIT_USAGE;
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	int err = parse_u64(s, min, max, &v);

	if (err == 0)
		*out = (uint32_t)v;
	return err;
}

/* "BYTES[,BYTES...]": one positive total per GPU index. */
static int parse_totals(struct collector_opts *o, const char *arg)
{
	char buf[4096], *tok, *save = NULL;
	size_t n = 0;

	if (strlen(arg) >= sizeof(buf))
		return -E2BIG;
	strcpy(buf, arg);
	if (buf[0] == '\0' || buf[strlen(buf) - 1] == ',' || strstr(buf, ",,"))
		return -EINVAL;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		int err;

		if (n >= SHM_LIMIT_GPUS)
			return -E2BIG;
		err = parse_u64(tok, 1, UINT64_MAX, &v);
		if (err)
			return err;
		o->gpu_total[n++] = v;
	}
	o->n_gpu_total = n;
	return 0;
}

static int shm_name_ok(const char *s)
{
	size_t len = strlen(s);

	return s[0] == '/' && len >= 2 && len < 255 && !strchr(s + 1, '/');
}

/* The flags that set a uint32_t field to a number in a range. */
struct number_flag {
	int opt;
	size_t field;		/* offsetof(struct collector_opts, ...) */
	uint32_t min, max;
	const char *what;	/* what the number counts, for the refusal */
};

#define NUMBER(opt, field, min, max, what) \
	{ opt, offsetof(struct collector_opts, field), min, max, what }

static const struct number_flag number_flags[] = {
	NUMBER(OPT_INTERVAL, publish_interval_ms, OPTS_MIN_INTERVAL_MS, OPTS_MAX_INTERVAL_MS,
	       "milliseconds"),
	NUMBER(OPT_WINDOW, window_s, 1, OPTS_MAX_WINDOW_S, "seconds"),
	NUMBER(OPT_PROCESSES, processes, 1, SHM_LIMIT_PROCS, "a count"),
	NUMBER(OPT_GPUS, gpus, 1, SHM_LIMIT_GPUS, "a count"),
	NUMBER(OPT_MAX_PROCS, max_procs, 1, SHM_LIMIT_PROCS, "a count"),
	NUMBER(OPT_STALL_THRESHOLD, stall_threshold_ms, 1, 60000, "milliseconds"),
	NUMBER(OPT_STALL_RATE, stall_rate, 1, 10000, "a count"),
	NUMBER(OPT_SCAN_INTERVAL, scan_interval_ms, OPTS_MIN_INTERVAL_MS, OPTS_MAX_SCAN_MS,
	       "milliseconds"),
	NUMBER(OPT_NVML_INTERVAL, nvml_interval_ms, OPTS_MIN_INTERVAL_MS, OPTS_MAX_SCAN_MS,
	       "milliseconds"),
	NUMBER(OPT_DL_GAP, dataloader_gap_us, 0, OPTS_MAX_DL_GAP_US, "microseconds"),
	NUMBER(OPT_PROCESS_SLOTS, process_slots, 0, OPTS_MAX_PROCESS_SLOTS, "a count"),
};

/*
 * The flags that choose one of two ways (enum frames_walk, uprobe_links,
 * runq_source): the first word stores 1, the second 2; 0, their default,
 * leaves the choice to what the kernel offers.
 */
struct way_flag {
	int opt;
	size_t field;
	const char *first, *second;
};

#define WAY(opt, field, first, second) \
	{ opt, offsetof(struct collector_opts, field), first, second }

static const struct way_flag way_flags[] = {
	WAY(OPT_PY_FRAMES_WALK, frames_walk, "stall", "switch"),
	WAY(OPT_UPROBE_LINKS, uprobe_links, "multi", "perf"),
	WAY(OPT_RUNQ_SOURCE, runq_source, "sched-info", "wakeup"),
};

_Static_assert(FRAMES_WALK_STALL == 1 && FRAMES_WALK_SWITCH == 2 &&
	       UPROBE_LINKS_MULTI == 1 && UPROBE_LINKS_PERF == 2 &&
	       RUNQ_SOURCE_SCHED_INFO == 1 && RUNQ_SOURCE_WAKEUP == 2,
	       "a way flag stores its word's place");
_Static_assert(sizeof(enum frames_walk) == sizeof(uint32_t) &&
	       sizeof(enum uprobe_links) == sizeof(uint32_t) &&
	       sizeof(enum runq_source) == sizeof(uint32_t), "a way is stored as a uint32_t");

/* Parses flag c if it is one of the tables'; 1 when it was (*r says how it went). */
static int parse_from_tables(struct collector_opts *o, int c, const char *arg, FILE *err,
			     enum opts_result *r)
{
	char why[128];
	uint32_t v = 0;

	*r = OPTS_RUN;
	for (size_t i = 0; i < sizeof(number_flags) / sizeof(number_flags[0]); i++) {
		const struct number_flag *n = &number_flags[i];

		if (n->opt != c)
			continue;
		if (parse_u32(arg, n->min, n->max, &v) < 0) {
			snprintf(why, sizeof(why), "expected %s in %u..%u", n->what, n->min, n->max);
			*r = bad_value(err, c, arg, why);
		} else {
			memcpy((char *)o + n->field, &v, sizeof(v));
		}
		return 1;
	}
	for (size_t i = 0; i < sizeof(way_flags) / sizeof(way_flags[0]); i++) {
		const struct way_flag *w = &way_flags[i];

		if (w->opt != c)
			continue;
		v = strcmp(arg, w->first) == 0 ? 1 : strcmp(arg, w->second) == 0 ? 2 : 0;
		if (!v) {
			snprintf(why, sizeof(why), "expected %s or %s", w->first, w->second);
			*r = bad_value(err, c, arg, why);
		} else {
			memcpy((char *)o + w->field, &v, sizeof(v));
		}
		return 1;
	}
	return 0;
}

static enum opts_result parse_one(struct collector_opts *o, int c, const char *arg,
				  FILE *out, FILE *err)
{
	enum opts_result r;
	int e;

	if (parse_from_tables(o, c, arg, err, &r))
		return r;
	switch (c) {
	case OPT_SIMULATE:
		o->simulate = 1;
		break;
	case OPT_SCENARIO:
		if (sim_scenario_parse(arg, &o->scenario) < 0)
			return bad_value(err, c, arg,
					 "expected steady, oom, straggler or dataloader-stall");
		break;
	case OPT_SHM:
		if (!shm_name_ok(arg))
			return bad_value(err, c, arg,
					 "expected '/name' (one leading slash, no other, under 255 bytes)");
		o->shm_name = arg;
		break;
	case OPT_PID:
		if (o->n_pids >= OPTS_MAX_PIDS)
			return bad_value(err, c, arg, "too many --pid (at most 64)");
		if (parse_u32(arg, 1, MAX_PID, &o->pids[o->n_pids]) < 0)
			return bad_value(err, c, arg, "expected a process id in 1..4194304");
		o->n_pids++;
		break;
	case OPT_COMM:
		if (o->n_comms >= OPTS_MAX_COMMS)
			return bad_value(err, c, arg, "too many --comm (at most 64)");
		if (arg[0] == '\0' || strlen(arg) >= SHM_COMM_LEN)
			return bad_value(err, c, arg, "expected a command name of 1..15 bytes");
		o->comms[o->n_comms++] = arg;
		break;
	case OPT_LIB:
		if (o->n_libs >= OPTS_MAX_LIBS)
			return bad_value(err, c, arg, "too many --lib (at most 64)");
		if (arg[0] == '\0' || strlen(arg) > MAX_PATH_LEN)
			return bad_value(err, c, arg, "expected a library path");
		o->libs[o->n_libs++] = arg;
		break;
	case OPT_GPU_TOTAL:
		e = parse_totals(o, arg);
		if (e == -E2BIG)
			return bad_value(err, c, arg, "too long (at most 256 GPUs)");
		if (e < 0)
			return bad_value(err, c, arg,
					 "expected positive byte counts separated by commas");
		break;
	case OPT_NO_PY_FRAMES:
		o->no_python_frames = 1;
		break;
	case OPT_PODS_DIR:
	case OPT_CONTAINERS_DIR:
		if (strlen(arg) > MAX_PATH_LEN || (arg[0] && arg[0] != '/'))
			return bad_value(err, c, arg, "expected an absolute directory path or ''");
		if (c == OPT_PODS_DIR)
			o->pods_dir = arg;
		else
			o->containers_dir = arg;
		break;
	case OPT_ALL_THREADS:
		o->all_threads = 1;
		break;
	case OPT_NO_NODE_LIBS:
		o->no_node_libs = 1;
		break;
	case OPT_EXIT_RELEASED:
		o->exit_when_released = 1;
		break;
	case OPT_HELP:
		fputs(usage_text, out);
		return OPTS_EXIT_OK;
	case OPT_VERSION:
		fprintf(out, PROG " %s\n", ZERNEL_VERSION);
		return OPTS_EXIT_OK;
	default:
		return OPTS_EXIT_USAGE;
	}
	return OPTS_RUN;
}

/* Rules between flags, once all are known. */
static enum opts_result check_combination(const struct collector_opts *o,
					  const char *seen_sim_only, FILE *err)
{
	if (!o->simulate && seen_sim_only) {
		fprintf(err, PROG ": --%s needs --simulate\n", seen_sim_only);
		return OPTS_EXIT_USAGE;
	}
	if (o->simulate && o->processes > o->max_procs) {
		fprintf(err, PROG ": invalid value '%u' for --processes: more than "
			"--max-procs %u\n", o->processes, o->max_procs);
		return OPTS_EXIT_USAGE;
	}
	return OPTS_RUN;
}

/* What a flag not given leaves; the rest is zero. */
static const struct collector_opts defaults = {
	/* The segment, and how often and over what window it is written */
	.shm_name = SHM_DEFAULT_NAME, .max_procs = SHM_DEFAULT_MAX_PROCS,
	.publish_interval_ms = OPTS_DEFAULT_INTERVAL_MS, .window_s = OPTS_DEFAULT_WINDOW_S,
	/* The simulated job */
	.scenario = SIM_STEADY, .processes = SIM_DEFAULT_PROCESSES, .gpus = SIM_DEFAULT_GPUS,
	/* Finding processes, their pods and their GPUs' memory */
	.pods_dir = KUBE_PODS_DIR, .containers_dir = KUBE_CONTAINERS_DIR,
	.scan_interval_ms = OPTS_DEFAULT_SCAN_MS, .nvml_interval_ms = OPTS_DEFAULT_NVML_MS,
	/* The probes */
	.dataloader_gap_us = OPTS_DEFAULT_DL_GAP_US, .process_slots = OPTS_PROCESS_SLOTS_AUTO,
};

enum opts_result opts_parse(struct collector_opts *o, int argc, char **argv,
			    FILE *out, FILE *err)
{
	const char *sim_only = NULL;
	enum opts_result r;
	int c;

	*o = defaults;

	opterr = 0;
	optind = 1;
	/* Leading ':' makes a missing value come back as ':'. */
	while ((c = getopt_long(argc, argv, ":", long_opts, NULL)) != -1) {
		if (c == '?' && optopt > 0 && optopt < OPT_SIMULATE) {
			fprintf(err, PROG ": unknown option '-%c' (see --help)\n", optopt);
			return OPTS_EXIT_USAGE;
		}
		if (c == '?') {
			fprintf(err, PROG ": unknown option '%s' (see --help)\n",
				argv[optind - 1]);
			return OPTS_EXIT_USAGE;
		}
		if (c == ':') {
			fprintf(err, PROG ": option '%s' needs a value\n", argv[optind - 1]);
			return OPTS_EXIT_USAGE;
		}
		r = parse_one(o, c, optarg, out, err);
		if (r != OPTS_RUN)
			return r;
		if (c == OPT_SCENARIO || c == OPT_PROCESSES || c == OPT_GPUS)
			sim_only = opt_name(c);
	}
	if (optind < argc) {
		fprintf(err, PROG ": unexpected argument '%s' (see --help)\n", argv[optind]);
		return OPTS_EXIT_USAGE;
	}
	return check_combination(o, sim_only, err);
}
