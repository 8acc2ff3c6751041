/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One snapshot of the exporter's WebSocket feed, parsed into fixed-size
 * tables the views draw.  The format is the feed contract
 * (docs/feed.schema.json): the parser reads exactly the keys the metric
 * catalog names (catalog/cat_feed.c), each in its one spelling and unit.
 * The feed is still network input: every field may be missing, of the
 * wrong type or absurd, and then reads as unknown; tables are bounded
 * (rows past a table's capacity are counted in its *_dropped field),
 * strings are cut to printable ASCII so that nothing from the feed can
 * reach the terminal as an escape sequence.  Durations are nanoseconds
 * (double, < 0 = unknown).
 */
#ifndef ZERNEL_CLI_FEED_H
#define ZERNEL_CLI_FEED_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"

#define CLI_FEED_MAX_BYTES	(16u << 20)	/* a larger message is refused */
#define CLI_FEED_MAX_GPUS	256u
#define CLI_FEED_MAX_MEM	4096u
#define CLI_FEED_MAX_PROCS	4096u
#define CLI_FEED_MAX_NCCL	16u
#define CLI_FEED_MAX_ALERTS	64u
#define CLI_FEED_MAX_TELEMETRY	16u
#define CLI_FEED_COMM_LEN	17u
#define CLI_FEED_NAME_LEN	64u
#define CLI_FEED_TEXT_LEN	192u

struct cli_lat {
	double p50_ns;
	double p99_ns;
	double count;			/* < 0 when unknown */
};

struct cli_gpu {
	uint32_t gpu_id;
	uint64_t total_bytes;		/* 0 when unknown */
	uint64_t used_bytes;
	uint32_t processes;
};

/* GPU memory of one process on one device (a gpu_utilization row). */
struct cli_mem {
	uint32_t pid;
	uint32_t gpu_id;
	uint64_t used_bytes;
	uint64_t peak_bytes;
};

struct cli_proc {
	uint32_t pid;
	uint32_t ppid;
	char comm[CLI_FEED_COMM_LEN];
	/* Who it is: "unknown" (or "") where the collector found none. */
	char pod[CLI_FEED_NAME_LEN];
	char slurm_job[24];
	char rank[16];
	struct cli_lat launch;
	struct cli_lat dataloader;
	struct cli_lat futex;
	struct cli_lat barrier;
	struct cli_lat runq;
	double offcpu_preempted_ns;	/* < 0 when unknown */
	double offcpu_blocked_ns;
	double involuntary_switches;
	double voluntary_switches;
	double migrations;
	double gpu_bytes;		/* on all GPUs */
	double state_ns[SHM_STATE_COUNT];	/* training threads; < 0 when unknown */
};

struct cli_nccl {
	char op[CLI_FEED_NAME_LEN];
	double calls;
	double bytes;
	double errors;
	struct cli_lat duration;
	struct cli_lat wait;
};

struct cli_alert {
	char name[CLI_FEED_NAME_LEN];
	char severity[CLI_FEED_NAME_LEN];
	char summary[CLI_FEED_TEXT_LEN];
	char starts_at[CLI_FEED_NAME_LEN];	/* "" while pending */
	int firing;
	int pending;			/* condition true, "for" not over yet */
};

struct cli_kv {
	char key[CLI_FEED_NAME_LEN];
	double value;
};

struct cli_feed {
	/* Node-wide figures. */
	double cuda_p50_ns, cuda_p99_ns;
	double nccl_allreduce_p50_ns, nccl_allreduce_p99_ns;
	double dataloader_p50_ns, dataloader_p99_ns;
	double age_ms;			/* snapshot age, < 0 when unknown */

	int collector_up;		/* 1, 0, or -1 when absent */
	char stale_reason[CLI_FEED_TEXT_LEN];
	double generation;		/* < 0 when absent */
	char status[CLI_FEED_NAME_LEN];	/* "ok", "stale", "missing", ... or "" */
	char mode[CLI_FEED_NAME_LEN];	/* "simulate", "bpf", ... or "" */
	char scenario[CLI_FEED_NAME_LEN];

	struct cli_gpu gpu[CLI_FEED_MAX_GPUS];
	size_t n_gpu, gpu_dropped;
	struct cli_mem mem[CLI_FEED_MAX_MEM];
	size_t n_mem, mem_dropped;
	struct cli_proc proc[CLI_FEED_MAX_PROCS];
	size_t n_proc, proc_dropped;
	struct cli_nccl nccl[CLI_FEED_MAX_NCCL];
	size_t n_nccl, nccl_dropped;
	struct cli_alert alert[CLI_FEED_MAX_ALERTS];
	size_t n_alert, alert_dropped;
	struct cli_kv telemetry[CLI_FEED_MAX_TELEMETRY];
	size_t n_telemetry;

	size_t rows_skipped;		/* rows ignored for bad or missing fields */
};

/*
 * Parses one feed message (len bytes, need not be NUL-terminated) into f.
 * Returns 0, -E2BIG for a message over CLI_FEED_MAX_BYTES, or -EINVAL when
 * it is not a snapshot (a JSON object with a gpu_utilization array, as
 * every snapshot has); f is then "nothing known".
 */
int cli_feed_parse(const char *msg, size_t len, struct cli_feed *f);

/* A telemetry figure by catalog id (a map: its sum), or -1 when absent. */
double cli_feed_telemetry(const struct cli_feed *f, enum cat_id id);

/* Resets f to "nothing known". */
void cli_feed_clear(struct cli_feed *f);

/* Number of alerts in f that are firing. */
size_t cli_feed_firing(const struct cli_feed *f);

/* The GPU row of gpu_id, or NULL. */
const struct cli_gpu *cli_feed_gpu(const struct cli_feed *f, uint32_t gpu_id);

/* Looks up a process by pid, or NULL. */
const struct cli_proc *cli_feed_proc(const struct cli_feed *f, uint32_t pid);

/*
 * Where a process belongs, for a column width characters wide: "pod r3",
 * "job 77 r5", "r0" or "-".  A name too long loses its end ("~"), never
 * the rank, which tells the pods of one job apart.
 */
void cli_proc_who(char *buf, size_t len, const struct cli_proc *p, size_t width);

#endif /* ZERNEL_CLI_FEED_H */
