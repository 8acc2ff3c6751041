/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Whether a blocked x86-64 thread's saved user registers are those of a
 * system call, by how the kernel entered: one rule per entry kind, shared
 * by the scheduler probe (collector/probes/sched/sched.bpf.c) and its test, which checks it
 * on the register sets each kind of entry leaves.
 *
 * Through the IDT (every x86 kernel without FRED), the SYSCALL instruction
 * leaves the return address in cx and the flags in r11, and the entry code
 * saves them: an exception (a page fault) matches ax == -ENOSYS, cx == ip
 * and r11 == flags only by accident, and its orig_ax holds an error code,
 * not -1.  Under FRED (Linux 6.9 and later, on CPUs that have it), SYSCALL
 * leaves cx and r11 alone, so that test fails for every syscall; instead
 * the entry code sets orig_ax to -1 for every event that is not a syscall
 * (arch/x86/entry/entry_fred.c).  Both: ax holds -ENOSYS until it returns.
 */
#ifndef ZERNEL_BPF_SYSCALL_ENTRY_H
#define ZERNEL_BPF_SYSCALL_ENTRY_H

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define ZS_ENOSYS		38

/* How the kernel enters from user space (the collector tells, at start). */
enum zs_entry_kind {
	ZS_ENTRY_IDT = 0,
	ZS_ENTRY_FRED = 1,
};

/* The saved registers the rule reads. */
struct zs_entry_regs {
	unsigned long ax, orig_ax, cx, ip, r11, flags;
};

static __always_inline int zs_regs_in_syscall(const struct zs_entry_regs *r, unsigned int kind)
{
	if ((long)r->ax != -ZS_ENOSYS)
		return 0;
	if (kind == ZS_ENTRY_FRED)
		return (long)r->orig_ax >= 0;
	return r->cx == r->ip && r->r11 == r->flags;
}

#endif /* ZERNEL_BPF_SYSCALL_ENTRY_H */
