// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * The watched-process set in the kernel: children of watched processes join
 * it at fork, processes named with --comm join it at exec, and a process
 * leaves it when its last thread exits.  Loaded first: it owns the shared
 * maps of watch.h.  Loaded by zernel-collector as root.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/watch.h"

const volatile __u32 n_comms = 0;
const volatile char comms[ZW_MAX_COMMS][SHM_COMM_LEN] = {};

/*
 * One bit per tgid, for every process on the node: it began (fork) or ran
 * a new program (exec) since the collector's /proc scan last looked at
 * it.  The scan looks at the program of these and of pids it has not
 * seen, not at every process of the node each time.  The collector maps
 * the array and clears the bits it takes (atomically: neighbours share a
 * word).
 */
ZW_TGID_BITS(zw_fresh_bits);

/*
 * One bit per tgid: the process runs the program it was forked with (set
 * at fork, cleared at exec).  Its memory began as a copy of its parent's,
 * so the scan can take the parent's libraries instead of reading the
 * child's maps: a DataLoader worker of a process that imported torch
 * maps some 1,700 areas, about 4 ms of kernel time to list.  Read by the
 * collector, which maps the array.
 */
ZW_TGID_BITS(zw_forked_bits);

SEC("tp_btf/sched_process_fork")
int BPF_PROG(zw_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	/* A new thread is not a new process. */
	if (ctgid == ptgid)
		return 0;
	zw_set_bit(&zw_fresh_bits, ctgid, 1);
	zw_set_bit(&zw_forked_bits, ctgid, 1);
	if (!zw_is_watched(ptgid))
		return 0;
	zw_watch_task(child, ctgid, SHM_WATCH_DESCENDANT);
	if (bpf_map_lookup_elem(&zw_libc_seen, &ptgid))
		bpf_map_update_elem(&zw_libc_seen, &ctgid, &one, BPF_ANY);
	return 0;
}

static __always_inline int comm_matches(const char *comm)
{
	for (__u32 i = 0; i < ZW_MAX_COMMS; i++) {
		int same = 1;

		if (i >= n_comms)
			break;
		for (__u32 j = 0; j < SHM_COMM_LEN; j++) {
			if (comm[j] != comms[i][j]) {
				same = 0;
				break;
			}
			if (comm[j] == '\0')
				break;
		}
		if (same)
			return 1;
	}
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(zw_exec, struct task_struct *p)
{
	char comm[SHM_COMM_LEN] = {};
	__u32 tgid = BPF_CORE_READ(p, tgid);
	__u32 *reasons;

	zw_set_bit(&zw_fresh_bits, tgid, 1);
	zw_set_bit(&zw_forked_bits, tgid, 0);
	/* The new program has no CUDA device yet, whatever the old one set. */
	bpf_task_storage_delete(&zw_curdev, p);
	/* Nor, for its children, the old one's libc. */
	bpf_map_delete_elem(&zw_libc_seen, &tgid);
	reasons = bpf_map_lookup_elem(&zw_watched, &tgid);
	if (reasons) {
		/* A new program: user space starts its figures afresh, under its new name. */
		zw_emit_watch(p, *reasons | ZEV_WATCH_F_EXEC);
		return 0;
	}
	if (n_comms == 0)
		return 0;
	BPF_CORE_READ_STR_INTO(&comm, p, comm);
	if (comm_matches(comm))
		zw_watch_task(p, tgid, SHM_WATCH_COMM);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(zw_exit, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct zev_exit *e;

	if (!bpf_map_lookup_elem(&zw_watched, &tgid))
		return 0;
	/* Only the last thread's exit ends the process. */
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	bpf_map_delete_elem(&zw_watched, &tgid);
	zw_mark_watched(tgid, 0);
	e = zw_reserve(sizeof(*e), ZEV_EXIT, ((__u64)tgid << 32) | BPF_CORE_READ(p, pid));
	if (e) {
		e->start_ns = BPF_CORE_READ(p, group_leader, start_boottime);
		/* Wake the reader: eviction frees table rows. */
		bpf_ringbuf_submit(e, 0);
	}
	return 0;
}

/*
 * The dynamic loader calls _dl_debug_state before and after each change
 * to a process's libraries, for debuggers.  Any process on the node may be
 * about to load a CUDA library, so every call is reported, waking the
 * collector: it looks at the process's maps at once instead of at its
 * next /proc scan.  Two calls per dlopen and per program start.
 */
SEC("uprobe")
int BPF_KPROBE(zw_dl_state)
{
	struct zev_lib_loaded *e = zw_reserve(sizeof(*e), ZEV_LIB_LOADED,
					      bpf_get_current_pid_tgid());

	if (e)
		bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
