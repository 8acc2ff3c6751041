// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * Where watched threads' time goes, seen from the scheduler alone: on a
 * CPU, on the run queue, or blocked, and then in what.  A thread that
 * blocks passes through sched_switch with prev_state not running; if it
 * blocked inside a system call, the call's number and arguments are in its
 * saved user registers (bpf_task_pt_regs), so no program runs on any
 * syscall path and unwatched processes pay two bit tests per context
 * switch.  The block ends at the thread's wakeup; from there until it
 * runs again it waits on the run queue.  How long it waited there, the
 * kernel's own sched_info says (its run_delay, and the time it was queued
 * at), read as it gets the CPU back, so no program runs on sched_wakeup;
 * on kernels without it, a program on sched_wakeup notes the time.  From
 * the same hooks: futex waits (distributed sync), DataLoader wait
 * episodes, off-CPU time, switches, migrations.  Uprobes add what the
 * registers cannot say: a thread inside a blocking CUDA call or an NCCL
 * call, and pthread_barrier_wait.  A switch back onto a CPU is added to
 * its process's slot (in-kernel histograms and counters,
 * bpf/slot_hist_abi.h) that the collector reads at its poll cadence;
 * without a slot it goes out as a zev_sched_switch record.  The same
 * switch program reads the Python frames of watched interpreters' threads
 * (bpf/pystack_walk.h): one program on the hottest tracepoint, not two.
 * Loaded by zernel-collector as root.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/syscall_entry.h"
#include "bpf/watch.h"
#include "bpf/sched_profile.h"
#include "bpf/sched_state.h"
#include "bpf/slot_hist.h"
#include "bpf/pystack_walk.h"
#include "bpf/coll_seen.h"

#define TASK_RUNNING		0
#define IORING_ENTER_GETEVENTS	1u

/* futex(2) operations that put the caller to sleep until another thread acts. */
#define FUTEX_WAIT		0
#define FUTEX_LOCK_PI		6
#define FUTEX_WAIT_BITSET	9
#define FUTEX_WAIT_REQUEUE_PI	11
#define FUTEX_LOCK_PI2		13
#define FUTEX_PRIVATE_FLAG	128
#define FUTEX_CLOCK_REALTIME	256

/* Set by the collector before load (collector/probes/sched/sched_config.c). */
const volatile __u8 sysclass[ZS_SYSCALL_MAX] = {};	/* enum zs_sysclass by number */
const volatile __u64 episode_gap_ns = 1000000;
const volatile __u64 training_recent_ns = 10000000000ull;
const volatile __u32 all_threads = 0;
const volatile __u32 python_frames = 1;		/* 0: --no-python-frames */
const volatile __u32 runq_from_sched_info = 0;	/* 0: from the sched_wakeup programs */
const volatile __u32 sched_info_kept = 0;	/* the kernel keeps sched_info (last_arrival) */
const volatile __u32 rq_clock_readable = 0;	/* a task's entity leads to its run queue's clock */
const volatile __u32 entry_kind = ZS_ENTRY_IDT;	/* enum zs_entry_kind of this kernel (x86) */
const volatile __u32 profile_skip = 0;		/* enum zs_profile_skip: bench-sched's profile */

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct zs_task);
} zs_threads SEC(".maps");

/*
 * One bit per tgid: the process made a tracked CUDA call.  Tested at most
 * switches of a main thread: an array load the verifier inlines, not a
 * hash lookup.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ZW_WATCHED_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} zs_cuda_bits SEC(".maps");

/* This CPU's run-queue clock and CLOCK_MONOTONIC, read together (switch_now). */
struct zs_clock {
	__u64 rq_ns;
	__u64 mono_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zs_clock);
} zs_clocks SEC(".maps");

/* How long this CPU's run-queue clock stands in for the monotonic one between reads of it. */
#define ZS_CLOCK_REREAD_NS	1000000ull

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ZS_COUNT_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} zs_counts SEC(".maps");

_Static_assert((SHM_STATE_COUNT & (SHM_STATE_COUNT - 1)) == 0,
	       "a blocked state indexes the sums under a mask");

/* Process slots, sized by the collector before load (bpf/slot_hist_abi.h). */
LH_SLOT_MAPS(zs_hist, zs_slots, zs_free);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LH_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct zs_sums);
} zs_sums SEC(".maps");

static __always_inline void count(__u32 slot)
{
	__u64 *n = bpf_map_lookup_elem(&zs_counts, &slot);

	if (n)
		*n += 1;
}

static __always_inline int watched(struct task_struct *p)
{
	return zw_is_watched(p->tgid);
}

static __always_inline int cuda_user(__u32 tgid)
{
	return zw_bit(&zs_cuda_bits, tgid);
}

static __always_inline void mark_cuda_user(__u32 tgid, int on)
{
	zw_set_bit(&zs_cuda_bits, tgid, on);
}

static __always_inline struct zs_task *thread(struct task_struct *p, __u64 flags)
{
	struct zs_task *t = bpf_task_storage_get(&zs_threads, p, NULL, flags);

	if (!t && flags)
		zw_drop(ZW_DROP_STATE_FULL);
	return t;
}

static __always_inline __u64 task_id(struct task_struct *p)
{
	return ((__u64)p->tgid << 32) | (__u32)p->pid;
}

/*
 * A training thread: one that began a CUDA launch, allocation or sync
 * within training_recent_ns before ref, or since (a return timed late,
 * unseen_return); in a process that never made such a call, its main
 * thread; every thread with --all-threads.
 */
static __always_inline int training(struct task_struct *p, struct zs_task *t, __u64 ref)
{
	__u32 tgid = p->tgid;

	if (all_threads)
		return 1;
	if (t->last_cuda_ns && (t->last_cuda_ns >= ref || ref - t->last_cuda_ns <= training_recent_ns))
		return 1;
	if ((__u32)p->pid != tgid)
		return 0;
	return !cuda_user(tgid);
}

static __always_inline int futex_op_waits(__u64 op)
{
	switch (op & ~(__u64)(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME)) {
	case FUTEX_WAIT:
	case FUTEX_WAIT_BITSET:
	case FUTEX_WAIT_REQUEUE_PI:
	case FUTEX_LOCK_PI:
	case FUTEX_LOCK_PI2:
		return 1;
	}
	return 0;
}

/*
 * The system call p is blocked in, from its saved user registers, and its
 * second to fourth arguments; -1 when it is not in a 64-bit one (counted).
 */
static __always_inline __s64 blocked_syscall(struct task_struct *p, __u64 *a1, __u64 *a2,
					     __u64 *a3)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(p);

	if (!regs) {
		count(ZS_COUNT_NO_REGS);
		return -1;
	}
#if defined(__TARGET_ARCH_x86)
	struct zs_entry_regs er = {
		.ax = regs->ax, .orig_ax = regs->orig_ax, .cx = regs->cx,
		.ip = regs->ip, .r11 = regs->r11, .flags = regs->flags,
	};

	/* The rule of this kernel's entry (bpf/syscall_entry.h). */
	if (!zs_regs_in_syscall(&er, entry_kind)) {
		count(ZS_COUNT_NOT_SYSCALL);
		return -1;
	}
	/* 0x33: __USER_CS, 64-bit user code; 0x23 is 32-bit (compat). */
	if ((regs->cs & 0xffff) != 0x33) {
		count(ZS_COUNT_COMPAT);
		return -1;
	}
	*a1 = regs->si;
	*a2 = regs->dx;
	*a3 = regs->r10;
	return (__s64)regs->orig_ax;
#elif defined(__TARGET_ARCH_arm64)
	/* The entry code sets syscallno to NO_SYSCALL (-1) for anything else. */
	if ((int)regs->syscallno < 0) {
		count(ZS_COUNT_NOT_SYSCALL);
		return -1;
	}
	/* PSR_MODE32_BIT: an AArch32 task. */
	if (regs->pstate & 0x10) {
		count(ZS_COUNT_COMPAT);
		return -1;
	}
	*a1 = regs->regs[1];
	*a2 = regs->regs[2];
	*a3 = regs->regs[3];
	return (__s64)(int)regs->syscallno;
#else
#error "the scheduler probe reads syscall registers of x86-64 and arm64 only"
#endif
}

/*
 * Why p, leaving the CPU asleep, is blocked (enum shm_thread_state), and
 * the same as a stall of its Python frames (enum shm_stall_state), which
 * calls a block in the GPU driver's ioctl gpu even outside a call the
 * uprobes follow.
 */
static __always_inline __u32 why_blocked(struct task_struct *p, struct zs_task *t, __u32 *futex,
					 __u32 *stall)
{
	__u64 a1 = 0, a2 = 0, a3 = 0;
	__u32 cls;
	__s64 nr;

	*futex = 0;
	*stall = SHM_STALL_OTHER;
	if (t->coll_depth || (t->gpu_depth && t->sync_coll)) {
		*stall = SHM_STALL_COLLECTIVE;
		return SHM_STATE_COLLECTIVE;
	}
	if (t->gpu_depth) {
		*stall = SHM_STALL_GPU;
		return SHM_STATE_GPU;
	}
	nr = blocked_syscall(p, &a1, &a2, &a3);
	if (nr < 0 || nr >= ZS_SYSCALL_MAX)
		return SHM_STATE_OTHER;
	cls = sysclass[nr & (ZS_SYSCALL_MAX - 1)];
	/*
	 * select and pselect6 (nfds, readfds, writefds, exceptfds, ...) with
	 * no set, poll and ppoll (fds, nfds, ...) with no descriptor: a sleep
	 * (CPython 3.10's time.sleep); else input.
	 */
	if (cls == ZS_SYS_SELECT)
		cls = a1 || a2 || a3 ? ZS_SYS_INPUT : ZS_SYS_SLEEP;
	else if (cls == ZS_SYS_POLL)
		cls = a1 ? ZS_SYS_INPUT : ZS_SYS_SLEEP;
	switch (cls) {
	case ZS_SYS_INPUT:
		*stall = SHM_STALL_INPUT;
		return SHM_STATE_INPUT;
	case ZS_SYS_URING:
		/* io_uring_enter(fd, to_submit, min_complete, flags): waits for completions? */
		if (!(__u32)a2 || !((__u32)a3 & IORING_ENTER_GETEVENTS))
			return SHM_STATE_OTHER;
		*stall = SHM_STALL_INPUT;
		return SHM_STATE_INPUT;
	case ZS_SYS_FUTEX:
		if (!futex_op_waits((__u32)a1))
			return SHM_STATE_OTHER;
		*stall = SHM_STALL_LOCK;
		*futex = 1;
		return SHM_STATE_LOCK;
	case ZS_SYS_FUTEX2:
		*stall = SHM_STALL_LOCK;
		*futex = 1;
		return SHM_STATE_LOCK;
	case ZS_SYS_SLEEP:
		*stall = SHM_STALL_SLEEP;
		return SHM_STATE_SLEEP;
	case ZS_SYS_IOCTL:
		*stall = SHM_STALL_GPU;
		return SHM_STATE_OTHER;
	}
	return SHM_STATE_OTHER;
}

/*
 * The first futex wait of a process asks user space to probe
 * pthread_barrier_wait in the libc it maps (a container's, a bundled
 * runtime's): one lookup per thread, one event per process, none for a
 * child that runs its parent's program (bpf/watch.h, zw_libc_seen).
 */
static __always_inline void report_libc(struct task_struct *p, struct zs_task *t)
{
	__u32 tgid = p->tgid;
	struct zev_libc_probe *e;
	__u8 one = 1;

	if (t->libc_seen)
		return;
	t->libc_seen = 1;
	if (bpf_map_lookup_elem(&zw_libc_seen, &tgid))
		return;
	if (bpf_map_update_elem(&zw_libc_seen, &tgid, &one, BPF_NOEXIST) != 0)
		return;
	e = zw_reserve(sizeof(*e), ZEV_LIBC_PROBE, task_id(p));
	if (e)
		zw_submit(e);
}

/* One DataLoader wait: the episode's first block to its last resumption. */
static __always_inline void close_episode(struct task_struct *p, struct zs_task *t)
{
	struct zev_latency *e;
	__u64 start = t->ep_start_ns, end = t->ep_resume_ns;

	t->ep_start_ns = 0;
	if (!t->ep_training || end <= start)
		return;
	e = zw_reserve(sizeof(*e), ZEV_LATENCY, task_id(p));
	if (!e)
		return;
	e->family = SHM_FAMILY_DATALOADER_WAIT;
	e->pad = 0;
	e->ns = end - start;
	zw_submit(e);
}

/* What the thread is inside: ZS_IN_* */
#define ZS_IN_NONE	0
#define ZS_IN_GPU	1
#define ZS_IN_COLL	2

static __always_inline __u8 inside(const struct zs_task *t)
{
	if (t->coll_depth || t->sync_coll)
		return ZS_IN_COLL;
	return t->gpu_depth ? ZS_IN_GPU : ZS_IN_NONE;
}

/* The stretch open since *on (0: none) closes at now into gpu or coll. */
static __always_inline void stretch_close(const struct zs_task *t, __u64 *on, __u64 *gpu,
					  __u64 *coll, __u64 now)
{
	__u64 since = *on;

	*on = 0;
	if (!since || now <= since)
		return;
	if (inside(t) == ZS_IN_COLL)
		*coll += now - since;
	else
		*gpu += now - since;
}

/*
 * Time on the CPU inside a blocking CUDA call or an NCCL call is the
 * call's state, not oncpu: the driver spins in a synchronisation while it
 * has CPUs to spare, so a thread waiting for the GPU may never leave its
 * CPU.  The open stretch is closed, in the state it had, before a probe
 * changes what the thread is inside, and as the thread leaves the CPU.
 *
 * A probe that fires in a thread still marked off its CPU finds that its
 * return went unseen (unseen_return), while its last stint's sums wait
 * for that return: its stretches go aside, from the first such probe on,
 * until the return is timed (unseen_settle).
 */
static __always_inline void incall_close(struct zs_task *t, __u64 now)
{
	if (!t->out_ns) {
		stretch_close(t, &t->incall_on_ns, &t->incall_gpu_ns, &t->incall_coll_ns, now);
	} else if (!t->unseen_first_ns) {
		t->unseen_first_ns = now;
		t->unseen_first = inside(t);
	} else {
		stretch_close(t, &t->unseen_on_ns, &t->unseen_gpu_ns, &t->unseen_coll_ns, now);
	}
}

/* On the CPU now: inside such a call, a stretch opens. */
static __always_inline void incall_open(struct zs_task *t, __u64 now)
{
	if (!t->gpu_depth && !t->coll_depth)
		return;
	if (t->out_ns)
		t->unseen_on_ns = now;
	else
		t->incall_on_ns = now;
}

/*
 * The return timed at back (switch_in done): the stretches kept aside are
 * the new stint's, and from back to the first probe it was inside what it
 * was inside as it left.
 */
static __always_inline void unseen_settle(struct zs_task *t, __u64 back)
{
	__u64 first = t->unseen_first_ns;

	if (!first)
		return;
	t->incall_gpu_ns = t->unseen_gpu_ns;
	t->incall_coll_ns = t->unseen_coll_ns;
	if (first > back && t->unseen_first == ZS_IN_GPU)
		t->incall_gpu_ns += first - back;
	else if (first > back && t->unseen_first == ZS_IN_COLL)
		t->incall_coll_ns += first - back;
	t->incall_on_ns = t->unseen_on_ns;
	t->unseen_first_ns = 0;
	t->unseen_on_ns = 0;
	t->unseen_gpu_ns = 0;
	t->unseen_coll_ns = 0;
}

/*
 * Its stint on the CPU from t->in_ns to end, split into oncpu, gpu and
 * collective (switch_in starts the next one afresh).  0 when the stint is
 * unknown.
 */
static __always_inline int stint_split(const struct zs_task *t, __u64 end, __u64 *oncpu,
				       __u64 *gpu, __u64 *coll)
{
	__u64 run, g = t->incall_gpu_ns, c = t->incall_coll_ns;

	if (!t->in_ns || end < t->in_ns)
		return 0;
	run = end - t->in_ns;
	/* Stretches come from the same clock within the stint; bound them anyway. */
	if (g > run)
		g = run;
	if (c > run - g)
		c = run - g;
	*oncpu = run - g - c;
	*gpu = g;
	*coll = c;
	return 1;
}

/*
 * prev (its state t) leaves the CPU.  Returns t (NULL: none), and in stall the
 * state its Python frames stall in if it stays off long enough (enum
 * shm_stall_state).  keep_frames: zp_switch_out reads its frames after
 * this, and takes those the DataLoader check read (zp_loader_at).
 */
static __always_inline struct zs_task *switch_out(struct task_struct *prev, struct zs_task *t,
						  int involuntary, __u64 now, __u32 *stall,
						  int keep_frames)
{
	__u32 block = ZS_NONE, futex = 0;
	int loader = ZP_LOADER_UNKNOWN, in_episode, train;

	*stall = SHM_STALL_RUNQ;
	/* No state to read its block from (the table is full, counted): other. */
	if (!t || t->exited) {
		if (!involuntary)
			*stall = SHM_STALL_OTHER;
		return NULL;
	}
	if (!involuntary) {
		block = why_blocked(prev, t, &futex, stall);
		if (futex && t->barrier_ns)
			futex = 0;	/* the barrier's own sample covers it */
		if (block == SHM_STATE_LOCK)
			report_libc(prev, t);
	}
	/*
	 * Where its Python frames are read and its process's DataLoader is
	 * known, a training thread that leaves the CPU inside the
	 * DataLoader's next() is in a DataLoader wait, blocked (input,
	 * whatever the call: the pin-memory thread's queue is a futex) or
	 * preempted; outside it, it is not.
	 */
	train = training(prev, t, now);
	if (!t->gpu_depth && !t->coll_depth && train && !(profile_skip & ZS_SKIP_LOADER))
		loader = zp_loader_at(now, !(profile_skip & ZS_SKIP_SPAN), keep_frames);
	if (loader == ZP_LOADER_IN && !involuntary) {
		block = SHM_STATE_INPUT;
		*stall = SHM_STALL_INPUT;
		futex = 0;
	}
	/*
	 * DataLoader waits (input blocks, or whatever the frames place inside
	 * next(), preemptions included: a busy machine does not split a
	 * batch) merge into one episode while the time from the end of one to
	 * the start of the next stays under episode_gap_ns.  A shorter block
	 * of another kind in between (the interpreter's lock handed over
	 * while a batch is unpickled) does not end it; a longer one does,
	 * being longer than the gap, and so does leaving the CPU where the
	 * frames place the thread outside next().
	 */
	in_episode = loader == ZP_LOADER_UNKNOWN ? block == SHM_STATE_INPUT
						 : loader == ZP_LOADER_IN;
	if (t->ep_start_ns && (loader == ZP_LOADER_OUT ||
			       now > t->ep_resume_ns + episode_gap_ns))
		close_episode(prev, t);
	if (in_episode && !t->ep_start_ns) {
		t->ep_start_ns = now;
		t->ep_resume_ns = now;
		t->ep_training = train;
	}
	t->ep_block = in_episode;
	/*
	 * Leaving again with no return seen since the last time, and none
	 * timed (unseen_return): the stint since in_ns would hold that time
	 * off the CPU too, as on it.
	 */
	if (t->out_ns) {
		count(ZS_COUNT_RETURN_LOST);
		t->in_ns = 0;
		t->out_ns = 0;
		unseen_settle(t, now);
	}
	incall_close(t, now);
	t->out_ns = now;
	t->wake_ns = 0;
	t->block = block;
	t->futex = futex;
	if (runq_from_sched_info)
		t->run_delay_out = prev->sched_info.run_delay;
	return t;
}

/* One sample into histogram family (ZS_HIST_*) of a process slot. */
static __always_inline void slot_sample(__u32 slot, __u32 family, __u64 ns)
{
	__u32 key = slot * LH_FAMILIES + family;
	struct lh_val *v = bpf_map_lookup_elem(&zs_hist, &key);

	if (v)
		lh_add(v, ns);
}

/*
 * What record r says, added to the slot of the process of thread t (tgid,
 * whose leader started at leader_start): what the collector's decoder
 * would do with it (collector/probes/decode.c).  0 when the process has no slot:
 * r goes out as an event instead.  A global function, which the verifier
 * checks once: inlined, each combination of r's flags that the switch
 * program can build would be checked through it anew.
 */
__noinline int zs_account(struct zs_task *t, const struct zev_sched_switch *r, __u32 tgid,
			  __u64 leader_start)
{
	struct zs_sums *s;
	__u32 slot;

	if (!t || !r)
		return 0;
	if (!t->slot)
		t->slot = lh_take_slot(&zs_slots, &zs_free, tgid, leader_start);
	if (!t->slot)
		return 0;
	slot = t->slot - 1;
	s = bpf_map_lookup_elem(&zs_sums, &slot);
	if (!s)
		return 0;
	if (r->flags & ZS_SW_OFFCPU) {
		if (r->flags & ZS_SW_INVOLUNTARY) {
			s->v[ZS_SUM_OFF_PREEMPTED] += r->offcpu_ns;
			s->v[ZS_SUM_INVOLUNTARY]++;
		} else {
			s->v[ZS_SUM_OFF_BLOCKED] += r->offcpu_ns;
			s->v[ZS_SUM_VOLUNTARY]++;
		}
	}
	if (r->flags & ZS_SW_RUNQ)
		slot_sample(slot, ZS_HIST_RUNQ, r->runq_ns);
	if ((r->flags & (ZS_SW_BLOCKED | ZS_SW_FUTEX)) == (ZS_SW_BLOCKED | ZS_SW_FUTEX))
		slot_sample(slot, ZS_HIST_FUTEX, r->blocked_ns);
	if (!(r->flags & ZS_SW_TRAINING))
		return 1;
	if (r->flags & ZS_SW_ONCPU) {
		s->v[ZS_SUM_STATE + SHM_STATE_ONCPU] += r->oncpu_ns;
		s->v[ZS_SUM_STATE + SHM_STATE_GPU] += r->gpu_ns;
		s->v[ZS_SUM_STATE + SHM_STATE_COLLECTIVE] += r->coll_ns;
	}
	if (r->flags & ZS_SW_BLOCKED)
		s->v[ZS_SUM_STATE + (r->blocked_state & (SHM_STATE_COUNT - 1))] += r->blocked_ns;
	if (r->flags & ZS_SW_RUNQ)
		s->v[ZS_SUM_STATE + SHM_STATE_RUNQ] += r->runq_ns;
	return 1;
}

/*
 * When next, getting the CPU now, was woken, as the sched_wakeup programs
 * would have noted it (0: not, or no news), from the kernel's sched_info.
 * The tracepoint comes before the kernel adds this wait to run_delay: the
 * wait so far is what run_delay gained since the thread left the CPU (the
 * parts queued on other CPUs before a migration) plus the time since it
 * was last queued, in the clock of the run queue it is on (reached
 * through its fair-class entity, CONFIG_FAIR_GROUP_SCHED; the variable
 * runqueues needs CONFIG_KALLSYMS_ALL), which the kernel updated for this
 * switch.
 */
static __always_inline __u64 woken_at(struct task_struct *next, struct zs_task *t, __u64 now)
{
	__u64 queued, clock, waited = 0;

	if (!runq_from_sched_info)
		return t->wake_ns;
	/* As mark_woken: a block's end, or a thread not seen before. */
	if (t->out_ns ? t->block == ZS_NONE : t->in_ns != 0)
		return 0;
	queued = next->sched_info.last_queued;
	/* Loads through BTF pointers, not helper calls: this runs at every switch. */
	clock = next->se.cfs_rq->rq->clock;
	if (queued && clock > queued)
		waited = clock - queued;
	if (t->out_ns)
		waited += next->sched_info.run_delay - t->run_delay_out;
	else if (!waited)
		return 0;
	/* Within the time off the CPU: the two clocks tick alike, not in step. */
	if (t->out_ns && waited > now - t->out_ns)
		waited = now - t->out_ns;
	return waited < now ? now - waited : 0;
}

/*
 * next gets the CPU.  Returns how long it was off it (0: not known), in
 * py_call whether it left inside a synchronisation the Python frames time
 * (1 when not known), in stall the state its frames stalled in, and in
 * train whether it was a training thread then (0 when not known).
 */
static __always_inline __u64 switch_in(struct task_struct *next, __u64 now, int *py_call,
				       __u32 *stall, int *train)
{
	struct zs_task *t = thread(next, BPF_LOCAL_STORAGE_GET_F_CREATE);
	struct zev_sched_switch r = {}, *e;
	__u64 out, wake, leader_start, off = 0;

	*py_call = 1;
	*stall = SHM_STALL_OTHER;
	*train = 0;
	if (!t)
		return 0;
	*py_call = t->py_call;
	*stall = t->stall;
	out = t->out_ns;
	wake = woken_at(next, t, now);
	/* Neither seen leaving nor waking: its time is known from now on. */
	if (!out && !wake)
		goto done;
	if (out && now >= out) {
		off = now - out;
		r.flags |= ZS_SW_OFFCPU;
		r.offcpu_ns = off;
		if (stint_split(t, out, &r.oncpu_ns, &r.gpu_ns, &r.coll_ns))
			r.flags |= ZS_SW_ONCPU;
		if (t->block == ZS_NONE) {
			r.flags |= ZS_SW_INVOLUNTARY | ZS_SW_RUNQ;
			r.runq_ns = off;
		} else {
			r.flags |= ZS_SW_BLOCKED;
			r.blocked_state = t->block;
			r.blocked_ns = off;
			if (wake >= out && wake <= now) {
				r.flags |= ZS_SW_RUNQ;
				r.blocked_ns = wake - out;
				r.runq_ns = now - wake;
			}
			if (t->futex)
				r.flags |= ZS_SW_FUTEX;
		}
		/* Back from one of the open episode's waits. */
		if (t->ep_start_ns && t->ep_block)
			t->ep_resume_ns = now;
		*train = training(next, t, out);
	} else if (!out && wake && now >= wake) {
		/* New, or first seen waking: runnable since its wakeup. */
		r.flags |= ZS_SW_RUNQ;
		r.runq_ns = now - wake;
		*train = training(next, t, wake);
	}
	if (*train)
		r.flags |= ZS_SW_TRAINING;
	if (!r.flags)
		goto done;
	leader_start = t->slot ? 0 : BPF_CORE_READ(next, group_leader, start_boottime);
	if (zs_account(t, &r, next->tgid, leader_start))
		goto done;
	e = zw_reserve_at(sizeof(*e), ZEV_SCHED_SWITCH, task_id(next), now);
	if (!e)
		goto done;
	r.hdr = e->hdr;
	*e = r;
	zw_submit(e);
done:
	t->in_ns = now;
	t->out_ns = 0;
	t->wake_ns = 0;
	t->incall_gpu_ns = 0;
	t->incall_coll_ns = 0;
	incall_open(t, now);
	unseen_settle(t, now);
	return off;
}

/*
 * When p, current and leaving the CPU or exiting, got its CPU back after
 * leaving it at t->out_ns with no switch back that this program saw; 0
 * when it was seen, or when it cannot be told.  Some kernels fire no
 * sched_switch for a switch away from some of their own tasks (one here
 * hides its init's threads), so a watched thread that gets the CPU
 * straight from one comes back unseen.  The kernel's sched_info noted its
 * arrival in the run queue's clock, which this switch updated: the time
 * since, in that clock, is a duration in ours.
 */
static __always_inline __u64 unseen_return(struct task_struct *p, const struct zs_task *t,
					   __u64 now)
{
	__u64 arrived, clock, back;

	if (!t->out_ns || t->exited || !sched_info_kept)
		return 0;
	arrived = p->sched_info.last_arrival;
	clock = p->se.cfs_rq->rq->clock;
	if (!arrived || clock < arrived || clock - arrived >= now)
		return 0;
	back = now - (clock - arrived);
	/* An arrival before it left is the one already seen: no news. */
	return back > t->out_ns ? back : 0;
}

/*
 * p got its CPU at back, unseen (unseen_return): its time off it is
 * accounted as at a switch back.  Its Python frames have moved on since,
 * so a stall over the threshold counts as unsampled, time included.
 */
static __noinline void returned_unseen(struct task_struct *p, __u64 back)
{
	int py_call, train;
	__u32 stall;
	__u64 off = switch_in(p, back, &py_call, &stall, &train);

	count(ZS_COUNT_RETURN_TIMED);
	if (python_frames)
		zp_returned_unseen(p, back, train ? off : 0);
}

/*
 * CLOCK_MONOTONIC at this switch, for a switch of a watched thread.
 * bpf_ktime_get_ns() reads the clock source, and where the kernel does not
 * trust the TSC (kvm-clock without its stable bit) each read also keeps
 * the clock monotonic across CPUs through one shared cache line: on a
 * busy two-CPU VM that was about 200 ns a call, a quarter to a third of
 * this program's time.  The scheduler has just read its own clock for
 * this switch (rq->clock, updated by __schedule).  Its advance since this
 * CPU last read both clocks, added to the monotonic time then, is the
 * time now, within the microseconds the run queue's clock can lag; the
 * monotonic clock is read again once ZS_CLOCK_REREAD_NS of it have
 * passed, so the two cannot drift apart.  Durations taken against stamps
 * of other programs (uprobes) are bounded where they are taken.
 */
static __always_inline __u64 switch_now(struct task_struct *next)
{
	__u32 zero = 0;
	struct zs_clock *c;
	__u64 rq, mono;

	if (!rq_clock_readable)
		return bpf_ktime_get_ns();
	/* next gets this CPU: its entity is on this CPU's run queue (BTF loads). */
	rq = next->se.cfs_rq->rq->clock;
	c = bpf_map_lookup_elem(&zs_clocks, &zero);
	if (!c || !rq)
		return bpf_ktime_get_ns();
	if (c->rq_ns && rq >= c->rq_ns && rq - c->rq_ns < ZS_CLOCK_REREAD_NS)
		return c->mono_ns + (rq - c->rq_ns);
	mono = bpf_ktime_get_ns();
	c->rq_ns = rq;
	c->mono_ns = mono;
	return mono;
}

/*
 * Every switch on the node comes here.  deferred: the Python frames of a
 * stall are read by a task work (see bpf/pystack_walk.h), else at every
 * switch away; the collector loads the program that fits the kernel.
 */
static __always_inline int zs_on_switch(void *ctx, bool preempt, struct task_struct *prev,
					struct task_struct *next, unsigned int prev_state,
					int deferred)
{
	int prev_watched = watched(prev);
	int next_watched = watched(next);
	/* As the kernel counts nivcsw: preempted, or left while runnable. */
	int runnable = preempt || prev_state == TASK_RUNNING;
	__u64 now;

	if (!prev_watched && !next_watched)
		return 0;
	now = switch_now(next);
	if (prev_watched && !(profile_skip & ZS_SKIP_OUT)) {
		struct zs_task *t = thread(prev, BPF_LOCAL_STORAGE_GET_F_CREATE);
		__u64 back = t && !(profile_skip & ZS_SKIP_UNSEEN) ? unseen_return(prev, t, now) : 0;
		/*
		 * A training thread's frames are read at this switch away
		 * (zp_switch_out), after the DataLoader check: the check keeps
		 * those it walks for it.  Kept for a thread the walk then
		 * skips, they are only overwritten: no stall is timed from
		 * them (zp_switch_out leaves its out_ns 0).
		 */
		int keep_frames = python_frames && !deferred &&
				  !(profile_skip & (ZS_SKIP_FRAMES_OUT | ZS_SKIP_SHARED));
		int py_call = 0;
		__u32 stall;

		if (back)
			returned_unseen(prev, back);
		t = switch_out(prev, t, runnable, now, &stall, keep_frames);

		/*
		 * Deferred, the frames' side needs nothing of a switch away
		 * but inside a call it times: the stall's start and state
		 * are the thread's own here (switch_in hands them over).
		 */
		if (profile_skip & ZS_SKIP_FRAMES_OUT)
			py_call = 0;
		else if (python_frames && deferred)
			py_call = zp_switch_out_note(prev, now);
		else if (python_frames)
			py_call = zp_switch_out(ctx, prev, stall, now,
						!t || !training(prev, t, now) ? ZP_WALK_NONE :
						profile_skip & ZS_SKIP_SPAN ? ZP_WALK_EACH :
						ZP_WALK_SPAN);
		if (t) {
			t->py_call = py_call;
			t->stall = stall;
		}
	}
	if (next_watched && !(profile_skip & ZS_SKIP_IN)) {
		int py_call, train;
		__u32 stall;
		__u64 off = switch_in(next, now, &py_call, &stall, &train);

		/*
		 * The frames' side has work only after a stall of a training
		 * thread (helper threads idle in waits by design), or inside
		 * a synchronisation.
		 */
		if (python_frames && !(profile_skip & ZS_SKIP_FRAMES_IN) &&
		    (!off || (off >= zp_threshold_ns && train) || py_call))
			zp_switch_in(next, now, deferred, train ? off : 0, stall);
	}
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(zs_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	return zs_on_switch(ctx, preempt, prev, next, prev_state, 0);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(zs_switch_deferred, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	return zs_on_switch(ctx, preempt, prev, next, prev_state, 1);
}

/* Without sched_info (runq_from_sched_info 0): the wakeup, noted as it happens. */
static __always_inline void mark_woken(struct task_struct *p)
{
	struct zs_task *t;

	if (!watched(p))
		return;
	t = thread(p, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return;
	/* The first wakeup ends the block; one of a running thread is no news. */
	if (t->out_ns ? (t->block != ZS_NONE && !t->wake_ns) : !t->in_ns)
		t->wake_ns = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(zs_wakeup, struct task_struct *p)
{
	mark_woken(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(zs_wakeup_new, struct task_struct *p)
{
	mark_woken(p);
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(zs_migrate, struct task_struct *p, int dest_cpu)
{
	struct zev_sched_migrate *e;
	struct zs_task *t;
	struct zs_sums *s;
	__u32 slot;

	if (!watched(p))
		return 0;
	/* The tracepoint also fires when the CPU does not change. */
	if (BPF_CORE_READ(p, thread_info.cpu) == (__u32)dest_cpu)
		return 0;
	/* Counted in its process's slot as its switches are; a record when it has none yet. */
	t = thread(p, 0);
	if (t && t->slot) {
		slot = t->slot - 1;
		s = bpf_map_lookup_elem(&zs_sums, &slot);
		if (s) {
			s->v[ZS_SUM_MIGRATIONS]++;
			return 0;
		}
	}
	e = zw_reserve(sizeof(*e), ZEV_SCHED_MIGRATE, task_id(p));
	if (!e)
		return 0;
	e->cpu = dest_cpu;
	e->pad = 0;
	zw_submit(e);
	return 0;
}

/*
 * Every thread that exits on the node comes here; only a watched one goes
 * past the first test.  This program is attached before zw_exit (its
 * family's first row, sched.c), and a tracepoint runs its programs in
 * the order they were attached, so a process's last thread is still
 * watched here.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(zs_task_exit, struct task_struct *p)
{
	struct zev_thread_exit *e;
	struct zs_task *t;
	__u32 tgid = p->tgid, tid = p->pid;
	__u64 now, back, oncpu, gpu, coll;

	if (!watched(p))
		return 0;
	t = thread(p, 0);
	if (BPF_CORE_READ(p, signal, live.counter) == 0) {
		/* The last thread: a reused pid starts afresh. */
		mark_cuda_user(tgid, 0);
		bpf_map_delete_elem(&zw_libc_seen, &tgid);
		bpf_map_delete_elem(&zs_coll_seen, &tgid);
		bpf_map_delete_elem(&zs_coll_known, &tgid);
	}
	/* A stall still to be named goes with its thread. */
	if (python_frames)
		bpf_map_delete_elem(&zp_pending, &tid);
	if (!t || t->exited)
		return 0;
	now = bpf_ktime_get_ns();
	back = unseen_return(p, t, now);
	if (back)
		returned_unseen(p, back);
	t->exited = 1;
	if (t->ep_start_ns)
		close_episode(p, t);
	incall_close(t, now);
	/* Its last return was neither seen nor timed (out_ns still set): no stint known. */
	if (t->out_ns) {
		count(ZS_COUNT_RETURN_LOST);
		return 0;
	}
	if (!stint_split(t, now, &oncpu, &gpu, &coll))
		return 0;
	e = zw_reserve_at(sizeof(*e), ZEV_THREAD_EXIT, task_id(p), now);
	if (!e)
		return 0;
	e->flags = ZS_SW_ONCPU | (training(p, t, now) ? ZS_SW_TRAINING : 0);
	e->pad = 0;
	e->oncpu_ns = oncpu;
	e->gpu_ns = gpu;
	e->coll_ns = coll;
	zw_submit(e);
	return 0;
}

/*
 * The states of training threads that are still open, read by the
 * collector just before each publish (collector/probes/sched/open_states.c): a state
 * is otherwise counted when it ends, so a thread blocked for a minute
 * would add nothing to any counter for that minute.  Threads on a CPU
 * count their stint so far; threads off it their block, or their wait on
 * the run queue after a preemption.  A thread woken and not yet running
 * counts only where the wakeup programs timed the wakeup; with the time
 * taken from sched_info (at the switch back) its open time is left to
 * that switch, as is the time of a thread whose return went unseen.
 */
SEC("iter/task")
int zs_open_states(struct bpf_iter__task *ctx)
{
	struct task_struct *p = ctx->task;
	struct zs_open_state r = {};
	struct zs_task *t;
	__u64 now, out, wake, oncpu, gpu, coll, since, s;
	__u32 block;

	if (!p)
		return 0;
	t = bpf_task_storage_get(&zs_threads, p, NULL, 0);
	if (!t || t->exited)
		return 0;
	now = bpf_ktime_get_ns();
	out = t->out_ns;
	block = t->block;
	if (out) {
		if (now <= out || p->on_cpu || !training(p, t, out))
			return 0;
		if (block == ZS_NONE) {
			r.ns[SHM_STATE_RUNQ] = now - out;
		} else if (block >= SHM_STATE_COUNT) {
			return 0;
		} else if (p->__state != TASK_RUNNING) {
			r.ns[block] = now - out;
		} else {
			wake = t->wake_ns;
			if (!wake || wake < out || wake > now)
				return 0;
			r.ns[block] = wake - out;
			r.ns[SHM_STATE_RUNQ] = now - wake;
		}
	} else {
		if (!t->in_ns || !training(p, t, now) || !stint_split(t, now, &oncpu, &gpu, &coll))
			return 0;
		/* The stretch inside a call still open: incall_close settles it later. */
		since = t->incall_on_ns;
		if (since && since >= t->in_ns && since < now) {
			s = now - since < oncpu ? now - since : oncpu;
			oncpu -= s;
			if (inside(t) == ZS_IN_COLL)
				coll += s;
			else
				gpu += s;
		}
		r.ns[SHM_STATE_ONCPU] = oncpu;
		r.ns[SHM_STATE_GPU] = gpu;
		r.ns[SHM_STATE_COLLECTIVE] = coll;
	}
	r.tgid = p->tgid;
	r.tid = p->pid;
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}

/*
 * A new program in a watched process has made no CUDA call yet, whatever
 * the old one made: its main thread is a training thread again until it
 * does (training()).  The exec left one thread, this one.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(zs_exec, struct task_struct *p)
{
	struct zs_task *t;

	if (!watched(p))
		return 0;
	mark_cuda_user(p->tgid, 0);
	t = thread(p, 0);
	if (t)
		t->last_cuda_ns = 0;
	return 0;
}

/* The calling thread's state, when its process is watched. */
static __always_inline struct zs_task *current_thread(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	if (!watched(task))
		return NULL;
	return thread(task, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

static __always_inline void cuda_call(struct zs_task *t, __u64 now)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	/* The process is a CUDA user from its first call on any thread. */
	if (!t->last_cuda_ns)
		mark_cuda_user(tgid, 1);
	t->last_cuda_ns = now;
}

/*
 * The entry of a blocking CUDA or NCCL call: the thread is a CUDA user, and
 * the stretch before the call ends here.  NULL when its process is not
 * watched.
 */
static __always_inline struct zs_task *call_enter(__u64 *now)
{
	struct zs_task *t = current_thread();

	if (!t)
		return NULL;
	*now = bpf_ktime_get_ns();
	cuda_call(t, *now);
	incall_close(t, *now);
	return t;
}

/* Kernel and graph launches: they mark a training thread, nothing more. */
SEC("uprobe")
int BPF_KPROBE(zs_cuda_launch)
{
	struct zs_task *t = current_thread();

	if (t)
		cuda_call(t, bpf_ktime_get_ns());
	return 0;
}

/* A blocking CUDA call; a synchronisation among them may complete collectives. */
static __always_inline void gpu_call_enter(int is_sync)
{
	__u64 now;
	struct zs_task *t = call_enter(&now);

	if (!t)
		return;
	/* The outermost sync completes the collectives queued before it, by any thread. */
	if (is_sync && t->gpu_depth == 0)
		t->sync_coll = t->coll_pending ||
			       zs_coll_outstanding(bpf_get_current_pid_tgid() >> 32);
	t->gpu_depth++;
	incall_open(t, now);
}

/* Blocking calls: allocation, free, blocking copies. */
SEC("uprobe")
int BPF_KPROBE(zs_cuda_block)
{
	gpu_call_enter(0);
	return 0;
}

/* Stream, context, device and event synchronisation. */
SEC("uprobe")
int BPF_KPROBE(zs_cuda_sync)
{
	gpu_call_enter(1);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(zs_cuda_ret)
{
	struct zs_task *t = thread(bpf_get_current_task_btf(), 0);
	__u64 now;

	/* A return whose entry came before the probe was attached: no entry. */
	if (!t || t->gpu_depth == 0)
		return 0;
	now = bpf_ktime_get_ns();
	incall_close(t, now);
	if (--t->gpu_depth == 0) {
		if (t->sync_coll) {
			__u32 tgid = bpf_get_current_pid_tgid() >> 32;
			struct zs_coll_seen *seen = bpf_map_lookup_elem(&zs_coll_seen, &tgid);

			if (seen)
				seen->synced_ns = now;
			t->coll_pending = 0;
		}
		t->sync_coll = 0;
	}
	incall_open(t, now);
	return 0;
}

/* NCCL collectives and point-to-point calls. */
SEC("uprobe")
int BPF_KPROBE(zs_nccl_call)
{
	__u64 now;
	struct zs_task *t = call_enter(&now);

	if (!t)
		return 0;
	if (t->coll_depth++ == 0) {
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;
		struct zs_coll_seen *seen = bpf_map_lookup_elem(&zs_coll_seen, &tgid);
		struct zs_coll_seen first = { .queued_ns = now };

		if (seen)
			seen->queued_ns = now;
		else
			bpf_map_update_elem(&zs_coll_seen, &tgid, &first, BPF_NOEXIST);
	}
	t->coll_pending = 1;
	if (python_frames)
		zp_collective_queued(bpf_get_current_task_btf());
	incall_open(t, now);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(zs_nccl_ret)
{
	struct zs_task *t = thread(bpf_get_current_task_btf(), 0);
	__u64 now;

	if (!t || !t->coll_depth)
		return 0;
	now = bpf_ktime_get_ns();
	incall_close(t, now);
	t->coll_depth--;
	incall_open(t, now);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(zs_barrier_enter)
{
	struct zs_task *t = current_thread();

	if (t)
		t->barrier_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(zs_barrier_exit)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct zs_task *t = thread(task, 0);
	struct zev_latency *e;
	__u64 now, t0;

	if (!t || !t->barrier_ns)
		return 0;
	t0 = t->barrier_ns;
	t->barrier_ns = 0;
	now = bpf_ktime_get_ns();
	e = zw_reserve_at(sizeof(*e), ZEV_LATENCY, task_id(task), now);
	if (!e)
		return 0;
	e->family = SHM_FAMILY_BARRIER_WAIT;
	e->pad = 0;
	e->ns = now > t0 ? now - t0 : 0;
	zw_submit(e);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
