/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers of the deployment tests that run Zernel for real (a podman pod,
 * a booted Debian 12): reading one series off a /metrics page, and the
 * exporter's sandbox as the host's /proc shows it.
 */
#ifndef ZERNEL_TU_DEPLOY_H
#define ZERNEL_TU_DEPLOY_H

#include <stddef.h>
#include <sys/types.h>

/*
 * The value of the sample whose name and labels are exactly series
 * ("zernel_collector_up", "x{pid=\"1\"}") in a Prometheus text body;
 * NaN when it is absent.
 */
double td_metric(const char *body, const char *series);

/*
 * 0 when /proc/PID shows the exporter's sandbox: Uid 65534 (all four),
 * every capability set 0, NoNewPrivs 1, Seccomp 2, and the segment
 * /dev/shm/zernel mapped, only ever r--s.  Otherwise -1 and what differs
 * in why.
 */
int td_exporter_sandboxed(pid_t pid, char *why, size_t len);

/* Runs sh -c on the formatted command; its stdout (malloc'd) or NULL, status in *st. */
char *td_capture(int *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* ZERNEL_TU_DEPLOY_H */
