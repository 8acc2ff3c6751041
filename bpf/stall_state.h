/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a thread that leaves the CPU blocked is waiting for, from the
 * syscall it is in (its saved user registers): the shm_stall_state of
 * shm/shm_consts.h.  BPF side only; numbers are the architecture's own.
 */
#ifndef ZERNEL_BPF_STALL_STATE_H
#define ZERNEL_BPF_STALL_STATE_H

#if defined(__TARGET_ARCH_x86)
#define ZSS_SYSCALL_NR(regs)	BPF_CORE_READ(regs, orig_ax)
#define ZSS_INPUT(nr)	((nr) == 0 || (nr) == 19 || (nr) == 17 || (nr) == 295 ||	\
			 (nr) == 327 || (nr) == 45 || (nr) == 47 || (nr) == 299 ||	\
			 (nr) == 7 || (nr) == 271 || (nr) == 23 || (nr) == 270 ||	\
			 (nr) == 232 || (nr) == 281 || (nr) == 441 || (nr) == 426)
#define ZSS_LOCK(nr)	((nr) == 202 || (nr) == 449 || (nr) == 455)
#define ZSS_SLEEP(nr)	((nr) == 35 || (nr) == 230)
#define ZSS_IOCTL	16
#elif defined(__TARGET_ARCH_arm64)
#define ZSS_SYSCALL_NR(regs)	BPF_CORE_READ(regs, syscallno)
#define ZSS_INPUT(nr)	((nr) == 63 || (nr) == 65 || (nr) == 67 || (nr) == 69 ||	\
			 (nr) == 286 || (nr) == 207 || (nr) == 212 || (nr) == 243 ||	\
			 (nr) == 73 || (nr) == 72 || (nr) == 22 || (nr) == 441 ||	\
			 (nr) == 426)
#define ZSS_LOCK(nr)	((nr) == 98 || (nr) == 449 || (nr) == 455)
#define ZSS_SLEEP(nr)	((nr) == 101 || (nr) == 115)
#define ZSS_IOCTL	29
#else
#error "stall_state.h: syscall numbers of this architecture are missing"
#endif

/* The state of current, which is leaving the CPU blocked (not runnable). */
static __always_inline __u32 zss_blocked_state(struct task_struct *task)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	long nr;

	if (!regs)
		return SHM_STALL_OTHER;
	nr = ZSS_SYSCALL_NR(regs);
	if (nr < 0)
		return SHM_STALL_OTHER;
	if (ZSS_INPUT(nr))
		return SHM_STALL_INPUT;
	if (ZSS_LOCK(nr))
		return SHM_STALL_LOCK;
	if (ZSS_SLEEP(nr))
		return SHM_STALL_SLEEP;
	if (nr == ZSS_IOCTL)
		return SHM_STALL_GPU;
	return SHM_STALL_OTHER;
}

#endif /* ZERNEL_BPF_STALL_STATE_H */
