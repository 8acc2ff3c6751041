// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * DataLoader waits: how long watched threads stay blocked in read-family
 * syscalls, in the poll/select/epoll waits that precede such reads, and in
 * io_uring_enter when it waits for completions.  The collector attaches the
 * two programs to the sys_enter_* / sys_exit_* tracepoints of exactly those
 * syscalls, so no other syscall runs them; in an unwatched process they
 * cost one hash lookup at entry and one pointer test at exit (the kernel's
 * tracepoint path around them costs far more: see bench/bench_sched.c).
 * Loaded by zernel-collector as root.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/watch.h"
#include "bpf/sched_events.h"

#define IORING_ENTER_GETEVENTS	1u

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
} zs_dl_inflight SEC(".maps");

static __always_inline void wait_begin(__s64 id)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct zs_inflight *in;

	/* Created at the thread's first measured call, reused after. */
	in = bpf_task_storage_get(&zs_dl_inflight, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!in) {
		zw_drop(ZW_DROP_STATE_FULL);
		return;
	}
	in->start_ns = bpf_ktime_get_ns();
	in->nvcsw = task->nvcsw;
	in->id = id;
}

static __always_inline int current_watched(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return bpf_map_lookup_elem(&zw_watched, &tgid) != NULL;
}

/*
 * Attached by the collector to each syscall of the family, not by name.
 * It reads no argument: the kernel refuses a program that reads past the
 * arguments of the shortest syscall it is attached to.
 */
SEC("tracepoint/syscalls/sys_enter_read")
int zs_dl_enter(struct zs_sys_enter *ctx)
{
	/* Unwatched processes stop here: one hash lookup. */
	if (!current_watched())
		return 0;
	wait_begin(ctx->nr);
	return 0;
}

/*
 * io_uring_enter(fd, to_submit, min_complete, flags, ...) waits only when
 * asked for completions.
 */
SEC("tracepoint/syscalls/sys_enter_io_uring_enter")
int zs_dl_uring_enter(struct zs_sys_enter *ctx)
{
	if (!current_watched())
		return 0;
	if ((__u32)ctx->args[2] == 0 || !((__u32)ctx->args[3] & IORING_ENTER_GETEVENTS))
		return 0;
	wait_begin(ctx->nr);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_read")
int zs_dl_exit(struct zs_sys_exit *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 now, start, nvcsw;
	struct zs_inflight *in;
	struct zev *e;
	__s64 in_id;

	/* Only threads that entered a measured call have one in flight. */
	in = bpf_task_storage_get(&zs_dl_inflight, task, NULL, 0);
	if (!in || in->start_ns == 0)
		return 0;
	start = in->start_ns;
	nvcsw = in->nvcsw;
	in_id = in->id;
	in->start_ns = 0;
	/* A stale entry: the thread never came back from that call. */
	if (in_id != ctx->nr)
		return 0;
	/*
	 * Only calls that slept count: a read served from the page cache or a
	 * poll that found data ready is not a wait, however long it ran.
	 */
	if (task->nvcsw == nvcsw)
		return 0;
	now = bpf_ktime_get_ns();
	e = zw_reserve(ZEV_LATENCY, bpf_get_current_pid_tgid());
	if (!e)
		return 0;
	e->arg = ZS_FAMILY_DATALOADER_WAIT;
	e->v0 = now > start ? now - start : 0;
	e->v1 = ctx->nr;
	zw_submit(e);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
