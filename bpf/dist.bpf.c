// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * Distributed-sync waits of watched threads: futex waits (the syscall
 * tracepoints of futex, futex_waitv and futex_wait, attached by the
 * collector) and pthread_barrier_wait (a uprobe/uretprobe pair on libc).  A barrier's own
 * futex waits count as the barrier, not again as futex waits.  An
 * unwatched thread's futex calls cost one hash lookup at entry and one
 * pointer test at exit, besides the kernel's tracepoint path.  Loaded by
 * zernel-collector as root.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/watch.h"
#include "bpf/sched_state.h"
#include "bpf/wait.h"

/* futex(2) operations that put the caller to sleep until another thread acts. */
#define FUTEX_WAIT		0
#define FUTEX_LOCK_PI		6
#define FUTEX_WAIT_BITSET	9
#define FUTEX_WAIT_REQUEUE_PI	11
#define FUTEX_LOCK_PI2		13
#define FUTEX_PRIVATE_FLAG	128
#define FUTEX_CLOCK_REALTIME	256

/*
 * The thread's call in flight, in task-local storage: an unwatched thread
 * has none, so its exits stop at one pointer test instead of a hash lookup;
 * the kernel frees it with the thread.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct zs_inflight);
} zs_dist_inflight SEC(".maps");

/* pid_tgid -> entry time of the thread's pthread_barrier_wait. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ZS_MAX_BARRIER);
	__type(key, __u64);
	__type(value, __u64);
} zs_barrier SEC(".maps");

/* tgids already reported with ZEV_LIBC_PROBE. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ZS_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u8);
} zs_dist_seen SEC(".maps");

/*
 * The first wait of a process asks user space to probe its libc: one
 * lookup per watched wait, one event per process.
 */
static __always_inline void report_process(__u64 pid_tgid)
{
	__u32 tgid = pid_tgid >> 32;
	struct zev_libc_probe *e;
	__u8 one = 1;

	if (bpf_map_lookup_elem(&zs_dist_seen, &tgid))
		return;
	if (bpf_map_update_elem(&zs_dist_seen, &tgid, &one, BPF_NOEXIST) != 0)
		return;
	e = zw_reserve(sizeof(*e), ZEV_LIBC_PROBE, pid_tgid);
	if (e)
		zw_submit(e);
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

static __always_inline void wait_begin(__u64 pid_tgid, __s64 id)
{
	struct task_struct *task;
	struct zs_inflight *in;

	/* Inside pthread_barrier_wait: the barrier sample covers it. */
	if (bpf_map_lookup_elem(&zs_barrier, &pid_tgid))
		return;
	task = bpf_get_current_task_btf();
	/* Created at the thread's first measured wait, reused after. */
	in = bpf_task_storage_get(&zs_dist_inflight, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!in) {
		zw_drop(ZW_DROP_STATE_FULL);
		return;
	}
	zs_wait_start(in, task, id);
}

/* Attached by the collector to sys_enter_futex. */
SEC("tracepoint/syscalls/sys_enter_futex")
int zs_futex_enter(struct zs_sys_enter *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;

	/* Unwatched processes stop here: one hash lookup. */
	if (!bpf_map_lookup_elem(&zw_watched, &tgid))
		return 0;
	if (!futex_op_waits((__u32)ctx->args[1]))
		return 0;
	report_process(pid_tgid);
	wait_begin(pid_tgid, ctx->nr);
	return 0;
}

/* Attached to sys_enter_futex_waitv and sys_enter_futex_wait: always waits. */
SEC("tracepoint/syscalls/sys_enter_futex_waitv")
int zs_futex2_enter(struct zs_sys_enter *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;

	if (!bpf_map_lookup_elem(&zw_watched, &tgid))
		return 0;
	report_process(pid_tgid);
	wait_begin(pid_tgid, ctx->nr);
	return 0;
}

/* Attached to the sys_exit_* of the three. */
SEC("tracepoint/syscalls/sys_exit_futex")
int zs_futex_exit(struct zs_sys_exit *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();

	/* Unwatched threads have no state: one pointer test. */
	zs_wait_end(bpf_task_storage_get(&zs_dist_inflight, task, NULL, 0), task, ctx->nr,
		    SHM_FAMILY_FUTEX_WAIT);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(zs_barrier_enter)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u64 now;

	if (!bpf_map_lookup_elem(&zw_watched, &tgid))
		return 0;
	now = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&zs_barrier, &pid_tgid, &now, BPF_ANY) != 0)
		zw_drop(ZW_DROP_STATE_FULL);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(zs_barrier_exit)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct zev_latency *e;
	__u64 *start, now, t0;

	start = bpf_map_lookup_elem(&zs_barrier, &pid_tgid);
	if (!start)
		return 0;
	t0 = *start;
	bpf_map_delete_elem(&zs_barrier, &pid_tgid);
	now = bpf_ktime_get_ns();
	e = zw_reserve(sizeof(*e), ZEV_LATENCY, pid_tgid);
	if (!e)
		return 0;
	e->family = SHM_FAMILY_BARRIER_WAIT;
	e->pad = 0;
	e->ns = now > t0 ? now - t0 : 0;
	zw_submit(e);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(zs_dist_exit_proc, struct task_struct *p)
{
	__u32 tgid = p->tgid;

	/* The group leader goes last: a reused pid is reported afresh. */
	if (p->pid == tgid)
		bpf_map_delete_elem(&zs_dist_seen, &tgid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
