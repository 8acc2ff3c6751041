/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wait and scheduler probe modules (DataLoader waits, distributed-sync
 * waits, scheduler stalls) as the BPF loader sees them: three table
 * entries.  Root-only code.
 */
#ifndef ZERNEL_PROBE_SCHED_H
#define ZERNEL_PROBE_SCHED_H

#include <stddef.h>

#include "collector/probe_module.h"

extern const struct probe_module probe_dataload_module;
extern const struct probe_module probe_dist_module;
extern const struct probe_module probe_sched_module;

/*
 * Attaching programs to syscall tracepoints, shared by dataload and dist:
 * enter and exit go to sys_enter_<name> and sys_exit_<name> for every name
 * this kernel has (tracefs is mounted first if it is not).  Returns 0 when
 * at least one was attached, or -errno (after logging why).
 */
#define PROBE_SYSCALL_MAX_LINKS	64

struct bpf_program;
struct bpf_link;

struct probe_syscall_links {
	struct bpf_link *link[PROBE_SYSCALL_MAX_LINKS];
	size_t n;
};

int probe_syscalls_attach(struct bpf_program *enter, struct bpf_program *exit,
			  const char *const *names, size_t n, struct probe_syscall_links *l);
void probe_syscalls_detach(struct probe_syscall_links *l);

/*
 * The dist module: a watched process made its first futex wait
 * (ZEV_LIBC_PROBE); probe pthread_barrier_wait in the libc it maps.
 */
void probe_dist_libc(uint32_t pid);

#endif /* ZERNEL_PROBE_SCHED_H */
