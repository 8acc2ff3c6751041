/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The in-flight half of a blocking-call measurement, shared by the
 * DataLoader (dataload.bpf.c) and distributed-sync (dist.bpf.c) probes:
 * stamp the call at entry in the thread's task-local state, and at exit
 * report its duration only if the thread slept in it.  BPF side only.
 */
#ifndef ZERNEL_BPF_WAIT_H
#define ZERNEL_BPF_WAIT_H

/* Entry: remember when, which call, and the voluntary-switch count. */
static __always_inline void zs_wait_start(struct zs_inflight *in, struct task_struct *task,
					  __s64 id)
{
	in->start_ns = bpf_ktime_get_ns();
	in->nvcsw = task->nvcsw;
	in->id = id;
}

/*
 * Exit of call id: one zev_latency sample of family when the thread had
 * entered that call and slept in it (its voluntary switches changed).  A
 * read served from the page cache, a poll that found data ready or a futex
 * whose value had already changed is not a wait, however long it ran.
 */
static __always_inline void zs_wait_end(struct zs_inflight *in, struct task_struct *task,
					__s64 id, __u32 family)
{
	struct zev_latency *e;
	__u64 now, start, nvcsw;
	__s64 in_id;

	if (!in || in->start_ns == 0)
		return;
	start = in->start_ns;
	nvcsw = in->nvcsw;
	in_id = in->id;
	in->start_ns = 0;
	/* A stale entry: the thread never came back from that call. */
	if (in_id != id)
		return;
	if (task->nvcsw == nvcsw)
		return;
	now = bpf_ktime_get_ns();
	e = zw_reserve(sizeof(*e), ZEV_LATENCY, bpf_get_current_pid_tgid());
	if (!e)
		return;
	e->family = family;
	e->pad = 0;
	e->ns = now > start ? now - start : 0;
	zw_submit(e);
}

#endif /* ZERNEL_BPF_WAIT_H */
