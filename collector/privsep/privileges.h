/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The collector's capabilities: which it needs to start, and the smaller set
 * it keeps once its probes are loaded and attached.  The collector is the
 * only privileged part of Zernel; this is where it gives up what it no
 * longer uses.
 *
 *   capability           at start   kept   why
 *   CAP_BPF              required   yes    load programs, create maps; libbpf's
 *                                          feature probes when a library found
 *                                          later is attached
 *   CAP_PERFMON          required   yes    perf_event_open for tracepoints and
 *                                          uprobes
 *   CAP_SYS_ADMIN        see why    maybe  uprobes as perf events on kernels
 *                                          with the 2025 fix "perf: Require
 *                                          CAP_SYS_ADMIN for uprobes" (mainline
 *                                          and stable), where CAP_PERFMON no
 *                                          longer creates them: required and
 *                                          kept only there, because discovery
 *                                          attaches uprobes while running.
 *                                          uprobe_multi links (Linux 6.6+, the
 *                                          default where the kernel has them)
 *                                          need only CAP_BPF + CAP_PERFMON: then
 *                                          it is neither required nor kept.  On
 *                                          kernels before 5.8 it stands in for
 *                                          CAP_BPF + CAP_PERFMON
 *   CAP_SYS_PTRACE       optional   yes    follow /proc/PID/root of other
 *                                          users' processes, where their
 *                                          libraries are (ptrace_may_access);
 *                                          their /proc/PID/maps too, where
 *                                          CAP_PERFMON does not already open it
 *   CAP_DAC_READ_SEARCH  optional   yes    reach a library through /proc/PID/root
 *                                          when a directory on its path is not
 *                                          searchable by root without it (a
 *                                          venv in a 0700 home)
 *   CAP_SYS_RESOURCE     optional   no     raise RLIMIT_MEMLOCK for maps on
 *                                          kernels before 5.11 (no memcg
 *                                          charging); not needed once loaded
 *
 * Optional ones missing give a warning saying what will not work.
 */
#ifndef ZERNEL_PRIVILEGES_H
#define ZERNEL_PRIVILEGES_H

#include <stddef.h>
#include <sys/capability.h>

/*
 * CAP_BPF and CAP_PERFMON came with Linux 5.8; before that CAP_SYS_ADMIN
 * covers both (privileges.c swaps it in), but the numbers are still named.
 */
#ifndef CAP_PERFMON
#define CAP_PERFMON		38
#endif
#ifndef CAP_BPF
#define CAP_BPF			39
#endif

/*
 * Checks the effective set at start.  Returns 0 when every required
 * capability is there, -EPERM otherwise, and logs which are missing (an
 * error for required ones, a warning naming the consequence for optional
 * ones).  missing (may be NULL) receives the names of all absent ones,
 * space-separated, "" when none.  perf_uprobes: the uprobes will be perf
 * events, which recent kernels create only for CAP_SYS_ADMIN; uprobe_multi
 * links (perf_uprobes 0) need CAP_BPF and CAP_PERFMON alone.
 */
int privileges_check(char *missing, size_t len, int perf_uprobes);

/*
 * After the probes are loaded and attached: keeps only the steady-state set
 * above (those of it that are held), in the effective and permitted sets and
 * the bounding set; clears the inheritable and ambient sets; sets
 * NO_NEW_PRIVS.  Verifies the result.  Returns 0 or -errno after logging.
 * CAP_SYS_ADMIN is kept only with perf_uprobes, where the kernel wants it
 * for the uprobes that discovery attaches while running.
 */
int privileges_drop_to_steady(int perf_uprobes);

/*
 * 1 when this kernel creates uprobes only for CAP_SYS_ADMIN (CAP_PERFMON is
 * not enough), 0 when CAP_PERFMON suffices, -errno when it cannot tell
 * (no uprobe PMU).  Asks the kernel, registering nothing.
 */
int privileges_uprobes_need_sys_admin(void);

/* For --simulate, which needs nothing: drops every capability the same way. */
int privileges_drop_all(void);

#endif /* ZERNEL_PRIVILEGES_H */
