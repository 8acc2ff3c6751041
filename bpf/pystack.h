/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the Python-stack probe (collector/probes/pystack/pystack.bpf.c) and the collector share:
 * where one watched interpreter keeps its state (struct zp_proc, written by
 * the collector into zp_procs when it recognises a supported CPython in a
 * watched process) and the structure offsets the frame walk follows.  The
 * offsets come from the collector's per-version table (collector/python/pyoffsets.c),
 * checked against the running process before they are used.  Fixed-width
 * types only: included by BPF code (after vmlinux.h) and by C.
 */
#ifndef ZERNEL_BPF_PYSTACK_H
#define ZERNEL_BPF_PYSTACK_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Interpreters watched at once, and threads with a remembered stack. */
#define ZP_MAX_PROCS		4096
#define ZP_MAX_THREADS		16384
/* Threads one interpreter's list is searched through for the caller's state. */
#define ZP_MAX_TSTATES		64
/*
 * A thread not found in its interpreter's list is looked for again after
 * this.  A miss is not final: a read of the list fails where a page of it
 * is not mapped in yet (the scheduler cannot fault it in), and a walk can
 * meet the list while it changes.  A second's wait after such a miss left
 * a second of a thread's stalls without their site; 10 ms bounds the
 * retries of a thread that is no Python thread to a hundred walks a
 * second.
 */
#define ZP_RECHECK_NS		10000000ull

/* Structure offsets of one CPython version, in bytes. */
struct zp_offsets {
	__u16 runtime_interp_head;	/* _PyRuntimeState.interpreters.head */
	__u16 interp_threads_head;	/* PyInterpreterState.threads.head */
	__u16 tstate_next;		/* PyThreadState.next */
	__u16 tstate_native_tid;	/* PyThreadState.native_thread_id (3.10: thread_id) */
	__u16 tstate_cframe;		/* PyThreadState.cframe (0: frame in tstate) */
	__u16 cframe_current_frame;	/* _PyCFrame.current_frame */
	__u16 frame_code;		/* _PyInterpreterFrame.f_code */
	__u16 frame_previous;		/* _PyInterpreterFrame.previous */
	__u16 frame_prev_instr;		/* _PyInterpreterFrame.prev_instr (3.10: f_lasti) */
	/*
	 * _PyRuntimeState.main_thread, where a thread state names its thread
	 * by pthread_self() (3.10); 0 where it names it by its native id.
	 */
	__u16 runtime_main_thread;
	__u16 pad[6];
};

/* One watched interpreter: zp_procs[tgid]. */
struct zp_proc {
	__u64 runtime;			/* address of _PyRuntime in the process */
	struct zp_offsets off;
	__u64 window_start_ns;		/* rate bound: this one-second window */
	__u32 window_sent;		/* stacks sent in it */
	__u32 tp_known;			/* tp_less_self is learned (runtime_main_thread) */
	__u64 skipped;			/* stalls over the bound since the last sent */
	__u64 skipped_ns;		/* and their time */
	/*
	 * A thread's thread pointer less its pthread_self(), learned from the
	 * main thread (whose pthread_self() _PyRuntime keeps): 0 with glibc
	 * and musl on x86-64, the size of the thread descriptor on arm64.
	 */
	__u64 tp_less_self;
	__u32 name_wakes;		/* stalls sent waking the collector (ZP_NAME_WAKES) */
	__u32 pad;
};

/*
 * A process's first stalls wake the collector to name them at once, while
 * its DataLoader is not known (zp_loaders): its first wait inside next()
 * then tells it within a batch or two, not at the next publish.
 */
#define ZP_NAME_WAKES		16

/*
 * A process's DataLoader: the code object of torch's
 * _BaseDataLoaderIter.__next__ in it, as its frames hold it (tag bits
 * included), once the collector has named a stall inside it; zp_loaders[tgid].
 * A block of a training thread with it among its innermost frames is part
 * of a DataLoader wait, whatever the system call.
 */
struct zp_loader {
	__u64 code;
	__u64 tag_mask;			/* bits of a frame's code pointer that tag it */
};

/*
 * Frames searched for it, innermost first.  A block inside next() is 13
 * frames below it where a batch's tensor comes through a worker's
 * descriptor (next, _next_data, _get_data, _try_get_data, get,
 * rebuild_storage_fd, detach, get_connection, Client, answer_challenge,
 * recv_bytes, _recv_bytes, _recv); 3.12 adds a frame where C calls Python.
 */
#define ZP_LOADER_DEPTH		24

#endif /* ZERNEL_BPF_PYSTACK_H */
