/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers of the probe tests: run the real zernel-collector on a unique
 * segment, run workloads with a line protocol on their stdin/stdout, and
 * look rows up in the published snapshot.  The tests run as root.
 */
#ifndef ZERNEL_TU_PROBES_H
#define ZERNEL_TU_PROBES_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "shm/shm_reader.h"

#define TP_PUBLISH_MS	200

struct tp_collector {
	pid_t pid;
	char shm[64];
	char log[256];
	struct shm_reader reader;
	struct shm_snapshot snap;
};

/*
 * Starts zernel-collector --shm <unique> --publish-interval 200 plus
 * extra (NULL-terminated, may be NULL) and waits until it publishes with
 * at least min_libs libraries probed.  Returns 0 or -1 (log kept).
 */
/* Set by a test about the node's own libraries: tp_collector_start probes them. */
extern int tp_probe_node_libs;
int tp_collector_start(struct tp_collector *c, const char *const *extra, unsigned int min_libs);
/* The same, with the fake libcudart, libcuda and libnccl given by --lib. */
int tp_collector_start_fakes(struct tp_collector *c);
void tp_collector_stop(struct tp_collector *c);
/* Takes a fresh snapshot; 0 when it is valid. */
int tp_snapshot(struct tp_collector *c);
/* Waits for a publish newer than now (so events already sent are in). */
int tp_wait_publish(struct tp_collector *c);

const struct shm_proc *tp_proc(const struct tp_collector *c, uint32_t pid);
const struct shm_gpu_mem *tp_gpu_mem(const struct tp_collector *c, uint32_t pid, uint32_t gpu);
const struct shm_nccl_op *tp_nccl_op(const struct tp_collector *c, uint32_t op);
/* Number of gpu_mem rows of pid. */
unsigned int tp_gpu_mem_rows(const struct tp_collector *c, uint32_t pid);

struct tp_workload {
	pid_t pid;
	int out_fd;		/* its stdout */
	int in_fd;		/* its stdin */
	char buf[4096];		/* output read but not yet returned */
	size_t len;
};

/* Starts argv (argv[0] a path) with piped stdin/stdout, stderr inherited. */
int tp_workload_start(struct tp_workload *w, char *const argv[]);
/* Reads its output until a line equals want; 0, or -1 on EOF/timeout. */
int tp_workload_expect(struct tp_workload *w, const char *want, int timeout_ms);
/*
 * Reads its output until its "Q <name> <count> <p50> <p99>" line (what it
 * timed around its own calls); 0, or -1 on EOF/timeout.  The series come
 * in the order the workload first used them, right before DONE.
 */
int tp_workload_series(struct tp_workload *w, const char *name, uint64_t *count,
		       uint64_t *p50, uint64_t *p99, int timeout_ms);
/*
 * Reads its output until a line equals until, keeping the lines before it
 * in out (newline-terminated, cut at len); 0, or -1 on EOF/timeout.
 */
int tp_workload_collect(struct tp_workload *w, const char *until, char *out, size_t len,
			int timeout_ms);
/* Lets a workload blocked in "wait" go on. */
void tp_workload_go(struct tp_workload *w);
/* Closes its stdin and reaps it; returns its exit status. */
int tp_workload_finish(struct tp_workload *w);

/* "<build>/tests/fakes/<name>" */
const char *tp_fake(char *buf, size_t len, const char *name);
const char *tp_zw_cuda(char *buf, size_t len);

#endif /* ZERNEL_TU_PROBES_H */
