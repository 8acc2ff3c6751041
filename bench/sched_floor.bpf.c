// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * The kernel's floor for the wait probes' cost: empty programs on the same
 * syscall tracepoints (sys_enter_read, sys_exit_read), so bench_sched can
 * tell the tracepoint machinery's cost from that of the probes' own work.
 * Loaded by bench_sched as root.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("tracepoint/syscalls/sys_enter_read")
int zs_floor_enter(void *ctx)
{
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_read")
int zs_floor_exit(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
