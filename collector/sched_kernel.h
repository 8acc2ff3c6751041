/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the scheduler probe (bpf/sched.bpf.c) needs of the kernel, read
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

#endif /* ZERNEL_SCHED_KERNEL_H */
