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
#include "bpf/sched_state.h"
#include "bpf/wait.h"

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
	zs_wait_start(in, task, id);
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

	/* Unwatched threads have no state: one pointer test. */
	zs_wait_end(bpf_task_storage_get(&zs_dl_inflight, task, NULL, 0), task, ctx->nr,
		    SHM_FAMILY_DATALOADER_WAIT);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
