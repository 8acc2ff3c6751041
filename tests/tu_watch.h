/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers for the client and web-page suites (check_cli, check_cli_tmux,
 * check_webpage): a simulated collector plus a real exporter on free ports,
 * reading figures out of /metrics, and running a command for its output.
 */
#ifndef ZERNEL_TU_WATCH_H
#define ZERNEL_TU_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tu_stack {
	char shm[64];
	pid_t collector;
	pid_t exporter;
	uint16_t metrics_port;
	uint16_t ws_port;
	unsigned int ws_interval_ms;
	char log_dir[512];
};

/*
 * Starts `zernel-collector --simulate` (scenario may be NULL) and
 * `zernel-exporter`, and waits until /metrics reports the collector up.
 * Returns 0, or -errno after stopping whatever started.
 */
int tu_stack_start(struct tu_stack *s, const char *scenario, unsigned int publish_ms,
		   unsigned int ws_interval_ms);
/* (Re)starts the exporter on the stack's ports; waits for /metrics. */
int tu_stack_start_exporter(struct tu_stack *s);
void tu_stack_stop_exporter(struct tu_stack *s);
void tu_stack_stop(struct tu_stack *s);

/*
 * Cleanup that survives a failed assertion.  Check runs each test in a
 * child that exits at the first failure, so stopping processes at the end
 * of a test is not enough: tu_reaper_setup() (an unchecked fixture, run by
 * the runner itself) names a file where every process the helpers start is
 * recorded, and tu_reaper_teardown() stops whatever is left of them.
 */
void tu_reaper_setup(void);
void tu_reaper_teardown(void);
/* Records pid for the reaper, and that it was stopped (tu_stack_* do both). */
void tu_reaper_track(pid_t pid);
void tu_reaper_stopped(pid_t pid);

/* 1 when <build>/<rel> is an executable file. */
int tu_have_binary(const char *rel);

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

/*
 * Runs `sh -c cmd`, returns its stdout as a malloc'd string (NULL on
 * failure) and its exit status in *status (-1 when it did not exit).
 */
char *tu_capture(const char *cmd, int *status);

#endif /* ZERNEL_TU_WATCH_H */
