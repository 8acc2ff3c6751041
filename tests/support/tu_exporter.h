/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exporter rig of the end-to-end suites: `zernel-collector --simulate`
 * and the real `zernel-exporter` on a unique segment and free ports, and
 * reading figures out of its /metrics.  Runs unprivileged or as root.
 */
#ifndef ZERNEL_TU_EXPORTER_H
#define ZERNEL_TU_EXPORTER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tu_stack {
	char shm[64];
	pid_t collector;
	pid_t exporter;
	uint16_t metrics_port;
	uint16_t ws_port;
	unsigned int ws_interval_ms;	/* --ws-interval; 0: the exporter's default */
	const char *const *exporter_args; /* more exporter flags (NULL-terminated) or NULL */
	char col_log[512];		/* kept when a test fails, removed by tu_stack_stop */
	char exp_log[512];
};

/* Names the segment, picks the ports and the logs; starts nothing. */
void tu_stack_init(struct tu_stack *s);
/*
 * Starts `zernel-collector --simulate --shm <s->shm>` plus args
 * (NULL-terminated, may be NULL); does not wait.  0 or -errno.
 */
int tu_stack_start_collector(struct tu_stack *s, const char *const *args);
/* (Re)starts the exporter on the stack's segment and ports; waits for /metrics. */
int tu_stack_start_exporter(struct tu_stack *s);
/* Waits until /metrics reports the collector up; 0 or -ETIMEDOUT. */
int tu_stack_wait_up(const struct tu_stack *s, int timeout_ms);
/* Sends sig and reaps; returns the wait status (-1 when none was running). */
int tu_stack_stop_collector(struct tu_stack *s, int sig);
int tu_stack_stop_exporter(struct tu_stack *s);
/* Stops both, removes the segment and the logs. */
void tu_stack_stop(struct tu_stack *s);
/* Copies both logs to stderr: what a failing test shows. */
void tu_stack_dump_logs(const struct tu_stack *s);

/*
 * tu_stack_init, then the collector (with --scenario when scenario is not
 * NULL), then the exporter; waits until /metrics reports the collector up.
 * Returns 0, or -errno after dumping the logs and stopping what started.
 */
int tu_stack_start(struct tu_stack *s, const char *scenario, unsigned int publish_ms,
		   unsigned int ws_interval_ms);

/*
 * The value of the first sample of metric `name` whose labels include every
 * `key="value"` pair of `labels` (a comma-separated list, may be NULL or "").
 * Returns 0, or -ENOENT.
 */
int tu_metric(const char *text, const char *name, const char *labels, double *out);
/* Waits until /metrics has at least n samples of name; 0 or -ETIMEDOUT. */
int tu_wait_metric(uint16_t port, const char *name, int n, int timeout_ms);
/* GET /metrics into a malloc'd string (NULL on failure). */
char *tu_scrape(uint16_t port);
/* The value of the unlabelled series name in one scrape; -1 when absent. */
double tu_scrape_value(uint16_t port, const char *name);

#endif /* ZERNEL_TU_EXPORTER_H */
