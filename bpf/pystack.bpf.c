// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * The Python line behind a stall.  When a thread of a watched CPython
 * process (zp_procs, filled by the collector) leaves the CPU, this reads
 * its Python frames from the interpreter's own state: the thread's
 * PyThreadState (found by native thread id in its interpreter's list,
 * then remembered), its current _PyInterpreterFrame and the chain of
 * previous frames, code object and last instruction of each.  That walk
 * has to happen then, in the thread's own address space: when it gets a
 * CPU back the stack is the same (a thread off CPU runs no Python), but
 * another process's memory is mapped.  If the time off CPU (blocked, or
 * waiting on the run queue) reaches the threshold, the remembered frames
 * go to the collector, at most zp_rate stacks a second per process.
 * A synchronisation that spins on the CPU (CUDA's default while CPUs are
 * free) never leaves it: its time on the CPU is taken at its return
 * instead, with the frames of the line that called it.
 * Loaded by zernel-collector as root.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/watch.h"
#include "bpf/pystack.h"
#include "bpf/stall_state.h"

#define TASK_RUNNING	0
/*
 * Words of a frame read at once: the offsets the walk uses are multiples
 * of 8 below 64 (pyfind checks the layout).
 */
#define ZP_FRAME_WORDS	8

const volatile __u64 zp_threshold_ns = 2000000;	/* --stall-threshold-ms */
const volatile __u32 zp_rate = 50;			/* stacks a second, per process */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ZP_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct zp_proc);
} zp_procs SEC(".maps");

/* The thread's interpreter state and the frames it left the CPU with. */
struct zp_thread {
	__u64 tstate;			/* PyThreadState *; 0: not a Python thread */
	__u64 checked_ns;		/* when tstate was last looked for */
	__u64 out_ns;			/* left the CPU at; 0: on it, or nothing kept */
	__u32 state;			/* enum shm_stall_state of this episode */
	__u32 nframes;
	__s32 native_stack;
	__u32 truncated;
	struct zev_py_frame frames[ZP_MAX_FRAMES];
	__u64 stack_code, stack_instr;	/* the innermost frame native_stack was taken at */
	/* A synchronisation in flight: entered at, nesting, time off the CPU in it. */
	__u64 call_ns;
	__u64 call_out_ns;		/* left the CPU inside it at; 0: on it */
	__u64 call_off_ns;
	__u32 call_depth;
	__u32 call_pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct zp_thread);
} zp_threads SEC(".maps");

/* User stacks of stalls (native frames: where libtorch was entered). */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 4096);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 32 * sizeof(__u64));
} zp_native SEC(".maps");

static __always_inline __u64 read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr) != 0)
		return 0;
	return v;
}

/* tid's PyThreadState in the main interpreter's thread list, or 0. */
static __always_inline __u64 find_tstate(const struct zp_proc *pr, __u32 tid)
{
	__u64 interp = read_ptr(pr->runtime + pr->off.runtime_interp_head);
	__u64 ts;

	if (!interp)
		return 0;
	ts = read_ptr(interp + pr->off.interp_threads_head);
	for (int i = 0; i < ZP_MAX_TSTATES && ts; i++) {
		if (read_ptr(ts + pr->off.tstate_native_tid) == tid)
			return ts;
		ts = read_ptr(ts + pr->off.tstate_next);
	}
	return 0;
}

/* The remembered tstate, checked, or found again (at most every ZP_RECHECK_NS). */
static __always_inline __u64 thread_tstate(const struct zp_proc *pr, struct zp_thread *t,
					   __u32 tid, __u64 now)
{
	if (t->tstate && read_ptr(t->tstate + pr->off.tstate_native_tid) == tid)
		return t->tstate;
	if (t->checked_ns && now - t->checked_ns < ZP_RECHECK_NS)
		return 0;
	t->checked_ns = now;
	t->tstate = find_tstate(pr, tid);
	return t->tstate;
}

static __always_inline void walk_frames(const struct zp_proc *pr, struct zp_thread *t,
					__u64 tstate)
{
	__u64 frame, cframe;
	__u64 buf[ZP_FRAME_WORDS];
	__u32 n = 0;

	if (pr->off.tstate_cframe) {
		cframe = read_ptr(tstate + pr->off.tstate_cframe);
		frame = cframe ? read_ptr(cframe + pr->off.cframe_current_frame) : 0;
	} else {
		frame = read_ptr(tstate + pr->off.cframe_current_frame);
	}
	t->truncated = 0;
	for (int i = 0; i < ZP_MAX_FRAMES; i++) {
		if (!frame)
			break;
		if (bpf_probe_read_user(buf, sizeof(buf), (const void *)frame) != 0)
			break;
		t->frames[i].code = buf[(pr->off.frame_code >> 3) & 7];
		t->frames[i].instr = buf[(pr->off.frame_prev_instr >> 3) & 7];
		frame = buf[(pr->off.frame_previous >> 3) & 7];
		n = i + 1;
	}
	if (frame && n == ZP_MAX_FRAMES)
		t->truncated = 1;
	t->nframes = n;
}

/* prev (current) leaves the CPU: remember where its Python code stands. */
static __always_inline void switch_out(void *ctx, struct task_struct *prev,
				       int runnable, __u64 now)
{
	__u32 tgid = prev->tgid, tid = prev->pid;
	struct zp_proc *pr = bpf_map_lookup_elem(&zp_procs, &tgid);
	struct zp_thread *t;
	__u64 ts;

	if (!pr)
		return;
	t = bpf_task_storage_get(&zp_threads, prev, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t) {
		zw_drop(ZW_DROP_STATE_FULL);
		return;
	}
	if (t->call_depth)
		t->call_out_ns = now;
	t->out_ns = 0;
	ts = thread_tstate(pr, t, tid, now);
	if (!ts)
		return;
	walk_frames(pr, t, ts);
	if (!t->nframes)
		return;
	t->state = runnable ? SHM_STALL_RUNQ : zss_blocked_state(prev);
	/*
	 * Unwinding the user stack costs more than the whole Python walk: a
	 * thread that leaves the CPU again at the same instruction of the same
	 * code (a loop waiting on the same call) keeps the stack it had.
	 */
	if (t->frames[0].code != t->stack_code || t->frames[0].instr != t->stack_instr) {
		t->native_stack = bpf_get_stackid(ctx, &zp_native, BPF_F_USER_STACK);
		t->stack_code = t->frames[0].code;
		t->stack_instr = t->frames[0].instr;
	}
	t->out_ns = now;
}

/*
 * The process's entry when this stall may be sent within its rate; a
 * stall over the bound is counted there, time included, and the next
 * one sent carries the count, so no stall time is lost.
 */
static __always_inline struct zp_proc *rate_ok(__u32 tgid, __u64 now, __u64 ns)
{
	struct zp_proc *pr = bpf_map_lookup_elem(&zp_procs, &tgid);

	if (!pr)
		return NULL;
	if (now - pr->window_start_ns >= 1000000000ull) {
		pr->window_start_ns = now;
		pr->window_sent = 0;
	}
	if (pr->window_sent >= zp_rate) {
		__sync_fetch_and_add(&pr->skipped, 1);
		__sync_fetch_and_add(&pr->skipped_ns, ns);
		return NULL;
	}
	pr->window_sent++;
	return pr;
}

/* Sends t's frames as a stall of ns in state, within the process's rate. */
static __always_inline void send_stall(struct zp_thread *t, __u32 tgid, __u32 tid, __u64 now,
				       __u32 state, __u64 ns)
{
	struct zev_py_stall *e;
	struct zp_proc *pr = rate_ok(tgid, now, ns);

	if (!pr)
		return;
	e = zw_reserve_at(sizeof(*e), ZEV_PY_STALL, ((__u64)tgid << 32) | tid, now);
	if (!e)
		return;
	e->state = state;
	e->nframes = t->nframes;
	e->ns = ns;
	e->native_stack = t->native_stack;
	e->truncated = t->truncated;
	e->pad = 0;
	/* Taken by subtraction: what other CPUs add meanwhile stays for the next. */
	e->skipped = (__u32)pr->skipped;
	e->skipped_ns = pr->skipped_ns;
	__sync_fetch_and_add(&pr->skipped, -(__u64)e->skipped);
	__sync_fetch_and_add(&pr->skipped_ns, -e->skipped_ns);
	__builtin_memcpy(e->frames, t->frames, sizeof(e->frames));
	zw_submit(e);
}

/* next gets a CPU: a stall long enough is sent with the frames kept. */
static __always_inline void switch_in(struct task_struct *next, __u64 now)
{
	struct zp_thread *t = bpf_task_storage_get(&zp_threads, next, NULL, 0);
	__u64 ns;

	if (!t)
		return;
	if (t->call_out_ns) {
		t->call_off_ns += now - t->call_out_ns;
		t->call_out_ns = 0;
	}
	if (!t->out_ns)
		return;
	ns = now - t->out_ns;
	t->out_ns = 0;
	if (ns < zp_threshold_ns)
		return;
	send_stall(t, next->tgid, next->pid, now, t->state, ns);
}

/* A synchronisation begins (the outermost of nested ones counts). */
SEC("uprobe")
int BPF_KPROBE(zp_sync)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid;
	struct zp_thread *t;

	if (!bpf_map_lookup_elem(&zp_procs, &tgid))
		return 0;
	t = bpf_task_storage_get(&zp_threads, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return 0;
	if (t->call_depth++ == 0) {
		t->call_ns = bpf_ktime_get_ns();
		t->call_off_ns = 0;
		t->call_out_ns = 0;
	}
	return 0;
}

/*
 * It returns: the part of it spent on the CPU, when it reaches the
 * threshold, is a GPU stall at the calling line.  Its time off the CPU
 * was already taken at the switches, with the state it blocked in.
 */
SEC("uretprobe")
int BPF_KRETPROBE(zp_sync_ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid, tid = task->pid;
	struct zp_thread *t = bpf_task_storage_get(&zp_threads, task, NULL, 0);
	struct zp_proc *pr;
	__u64 now, on, ts;

	if (!t || !t->call_depth || --t->call_depth)
		return 0;
	now = bpf_ktime_get_ns();
	on = now - t->call_ns;
	on = on > t->call_off_ns ? on - t->call_off_ns : 0;
	t->call_ns = 0;
	if (on < zp_threshold_ns)
		return 0;
	pr = bpf_map_lookup_elem(&zp_procs, &tgid);
	if (!pr)
		return 0;
	ts = thread_tstate(pr, t, tid, now);
	if (!ts)
		return 0;
	walk_frames(pr, t, ts);
	if (!t->nframes)
		return 0;
	t->native_stack = bpf_get_stackid(ctx, &zp_native, BPF_F_USER_STACK);
	t->stack_code = t->frames[0].code;
	t->stack_instr = t->frames[0].instr;
	send_stall(t, tgid, tid, now, SHM_STALL_GPU, on);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(zp_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	__u32 tgid = prev->tgid;
	__u64 now;

	/*
	 * Every switch on the node comes here: read the clock only when one
	 * side is a watched Python process's thread (what switch_out and
	 * switch_in look up first).
	 */
	if (!bpf_map_lookup_elem(&zp_procs, &tgid) &&
	    !bpf_task_storage_get(&zp_threads, next, NULL, 0))
		return 0;
	now = bpf_ktime_get_ns();
	switch_out(ctx, prev, preempt || prev_state == TASK_RUNNING, now);
	switch_in(next, now);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
