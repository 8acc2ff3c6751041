/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exporter's seccomp allowlist, private to the sandbox: the complete
 * list of system calls the exporter makes once sandboxed, in one place so
 * that it can be reviewed at a glance (sandbox_filter.c).
 */
#ifndef ZERNEL_SANDBOX_FILTER_H
#define ZERNEL_SANDBOX_FILTER_H

/*
 * Builds the filter (native architecture only, default action: kill the
 * process) and loads it for every thread.  NO_NEW_PRIVS must already be set.
 * Returns 0 or -errno.
 */
#include "exporter/sandbox/sandbox.h"

int sandbox_filter_install(enum sandbox_role role);

#endif /* ZERNEL_SANDBOX_FILTER_H */
