/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Before loading anything: does this process hold the privileges the probes
 * need, and does the kernel have what they use (BTF, uprobes)?  Each
 * missing piece is named, so an operator knows exactly what to grant.
 * Runs as root or with the capabilities of collector/privsep/privileges.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "collector/privsep/privileges.h"
#include "collector/probes/probe_loader.h"
#include "common/log.h"

static int check_kernel(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		log_error("/sys/kernel/btf/vmlinux is missing: this kernel has no BTF "
			  "(CONFIG_DEBUG_INFO_BTF=y is needed for the probes)");
		return -ENOTSUP;
	}
	if (access("/sys/bus/event_source/devices/uprobe/type", R_OK) != 0) {
		log_error("this kernel has no uprobe support "
			  "(/sys/bus/event_source/devices/uprobe; CONFIG_UPROBE_EVENTS=y is needed)");
		return -ENOTSUP;
	}
	return 0;
}

int probe_priv_check(int perf_uprobes)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	int err;

	/* Capabilities: collector/privsep/privileges.c names each one missing. */
	err = privileges_check(NULL, 0, perf_uprobes);
	if (err) {
		log_error("the BPF probes need root or the capabilities above (or use --simulate)");
		return err;
	}
	err = check_kernel();
	if (err)
		return err;
	/* Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK. */
	if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0)
		log_debug("cannot raise RLIMIT_MEMLOCK (%s); fine on kernels >= 5.11",
			  strerror(errno));
	return 0;
}
