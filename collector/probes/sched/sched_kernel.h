/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the scheduler probe (collector/probes/sched/sched.bpf.c) needs of the kernel, read
 * from its BTF before the load, so that a kernel without it is refused
 * with the reason rather than with the verifier's log.
 */
#ifndef ZERNEL_SCHED_KERNEL_H
#define ZERNEL_SCHED_KERNEL_H

struct btf;

/*
 * NULL when vmlinux has what the probe reads; else what it lacks, in
 * words for the log.
 */
const char *sched_kernel_lacks(const struct btf *vmlinux);

/* Whether struct name in btf has a member called member. */
int sched_btf_has_member(const struct btf *btf, const char *name, const char *member);

/*
 * How this x86 kernel enters from user space (enum zs_entry_kind of
 * bpf/syscall_entry.h), from the text of /proc/cpuinfo: FRED where the
 * "fred" flag is listed, which the kernel does only where it turned FRED
 * on (it clears the flag when it boots without it); else the IDT.
 */
unsigned int sched_entry_kind(const char *cpuinfo);

#endif /* ZERNEL_SCHED_KERNEL_H */
