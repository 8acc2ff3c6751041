/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the scheduler probe (sched.bpf.c) is told before it loads: which
 * system call numbers are which kind of wait on this machine (from the
 * C library's <sys/syscall.h>, so the numbers are the running
 * architecture's), how far apart input blocks may be and still be one
 * DataLoader wait, and whether every thread counts.  Refuses a kernel that
 * cannot show a blocked thread's registers.  Root-only code.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf/probe_abi.h"
#include "bpf/sched.skel.h"
#include "bpf/sched_profile.h"
#include "bpf/slot_hist_abi.h"
#include "bpf/syscall_entry.h"
#include "collector/probes/probe_loader.h"
#include "collector/probes/sched/sched_kernel.h"
#include "collector/probes/slot_hist.h"
#include "common/log.h"
#include "common/util.h"

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "the scheduler probe reads syscall registers of x86-64 and arm64 only"
#endif

/* The waits by kind; those an architecture lacks (arm64: poll, select) are left out. */
static const struct {
	long nr;
	enum zs_sysclass cls;
} sched_syscalls[] = {
	{ SYS_read, ZS_SYS_INPUT },
	{ SYS_readv, ZS_SYS_INPUT },
	{ SYS_pread64, ZS_SYS_INPUT },
	{ SYS_preadv, ZS_SYS_INPUT },
	{ SYS_preadv2, ZS_SYS_INPUT },
	{ SYS_recvfrom, ZS_SYS_INPUT },
	{ SYS_recvmsg, ZS_SYS_INPUT },
	{ SYS_recvmmsg, ZS_SYS_INPUT },
#ifdef SYS_poll
	{ SYS_poll, ZS_SYS_POLL },
#endif
	{ SYS_ppoll, ZS_SYS_POLL },
#ifdef SYS_select
	{ SYS_select, ZS_SYS_SELECT },
#endif
	{ SYS_pselect6, ZS_SYS_SELECT },
#ifdef SYS_epoll_wait
	{ SYS_epoll_wait, ZS_SYS_INPUT },
#endif
	{ SYS_epoll_pwait, ZS_SYS_INPUT },
#ifdef SYS_epoll_pwait2
	{ SYS_epoll_pwait2, ZS_SYS_INPUT },
#endif
#ifdef SYS_io_uring_enter
	{ SYS_io_uring_enter, ZS_SYS_URING },
#endif
	{ SYS_futex, ZS_SYS_FUTEX },
#ifdef SYS_futex_waitv
	{ SYS_futex_waitv, ZS_SYS_FUTEX2 },
#endif
#ifdef SYS_futex_wait
	{ SYS_futex_wait, ZS_SYS_FUTEX2 },
#endif
#ifdef SYS_nanosleep
	{ SYS_nanosleep, ZS_SYS_SLEEP },
#endif
	{ SYS_clock_nanosleep, ZS_SYS_SLEEP },
	{ SYS_ioctl, ZS_SYS_IOCTL },
};

/*
 * bpf_task_pt_regs (Linux 5.15) is what tells a blocked thread's syscall:
 * without it every block would be "other", so the collector refuses to
 * start rather than publish that.
 */
static int sched_kernel_ok(void)
{
	int r = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_task_pt_regs, NULL);

	if (r > 0)
		return 0;
	log_error("this kernel lacks the BPF helper bpf_task_pt_regs (Linux 5.15 or later): "
		  "the scheduler probe cannot tell what a blocked thread waits for");
	return r < 0 ? r : -EOPNOTSUPP;
}

/*
 * Whether the kernel runs BPF task works (bpf_task_work_schedule_resume,
 * Linux 6.18): then a stall's Python frames are read as its thread
 * returns to user space, and only stalls pay for a walk.
 */
static int kernel_has_task_work(const struct btf *vmlinux)
{
	return vmlinux && btf__find_by_name_kind(vmlinux, "bpf_task_work_schedule_resume_impl",
						 BTF_KIND_FUNC) >= 0;
}

/* Whether a task's fair-class entity leads to its run queue's clock (CONFIG_FAIR_GROUP_SCHED). */
static int rq_clock_readable(const struct btf *vmlinux)
{
	return sched_btf_has_member(vmlinux, "sched_entity", "cfs_rq") &&
	       sched_btf_has_member(vmlinux, "cfs_rq", "rq") &&
	       sched_btf_has_member(vmlinux, "rq", "clock");
}

/*
 * Whether this kernel keeps sched_info (CONFIG_SCHED_INFO) where a BPF
 * program can read it, and keeps it up to date: its BTF has the fields,
 * a task's fair-class entity leads to its run queue's clock
 * (CONFIG_FAIR_GROUP_SCHED), and this process's own count of
 * times it got a CPU (the third field of /proc/self/schedstat, "0 0 0"
 * where the kernel does not account) is past zero.  Says why when not.
 */
static int sched_info_usable(const struct btf *vmlinux, const char **why)
{
	unsigned long long run_ns = 0, delay_ns = 0, slices = 0;
	int fields = 0;
	FILE *f;

	*why = "the kernel's BTF lacks sched_info.last_queued, sched_info.last_arrival, "
	       "sched_info.run_delay or sched_entity.cfs_rq (CONFIG_SCHED_INFO, "
	       "CONFIG_FAIR_GROUP_SCHED)";
	if (!vmlinux)
		return 0;
	fields = sched_btf_has_member(vmlinux, "sched_info", "last_queued") &&
		 sched_btf_has_member(vmlinux, "sched_info", "last_arrival") &&
		 sched_btf_has_member(vmlinux, "sched_info", "run_delay") &&
		 rq_clock_readable(vmlinux);
	if (!fields)
		return 0;
	*why = "/proc/self/schedstat shows no sched_info accounting";
	f = fopen("/proc/self/schedstat", "re");
	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu %llu", &run_ns, &delay_ns, &slices) != 3)
		slices = 0;
	fclose(f);
	return slices > 0;
}

/*
 * Run-queue waits from sched_info (no program on sched_wakeup, which every
 * wakeup of the node would run), or from the wakeup programs.
 */
static int choose_runq_source(struct sched_bpf *s, const struct probes *p,
			      const struct btf *vmlinux)
{
	const char *why = NULL;
	int kept = sched_info_usable(vmlinux, &why);
	int sched_info = p->opts.runq_source != RUNQ_SOURCE_WAKEUP && kept;

	if (!sched_info && p->opts.runq_source == RUNQ_SOURCE_SCHED_INFO) {
		log_error("--runq-source sched-info: %s; use wakeup", why);
		return -EOPNOTSUPP;
	}
	if (sched_info)
		log_info("run-queue waits come from the kernel's sched_info, read as each "
			 "thread gets its CPU");
	else if (p->opts.runq_source == RUNQ_SOURCE_AUTO)
		log_info("run-queue waits are timed from sched_wakeup: %s", why);
	else
		log_info("run-queue waits are timed from sched_wakeup");
	s->rodata->runq_from_sched_info = sched_info ? 1 : 0;
	/* Whichever times the run queue, sched_info times a return no switch showed. */
	s->rodata->sched_info_kept = kept ? 1 : 0;
	bpf_program__set_autoload(s->progs.zs_wakeup, !sched_info);
	bpf_program__set_autoload(s->progs.zs_wakeup_new, !sched_info);
	return 0;
}

/*
 * The syscall rule of this kernel's entry from user space (FRED or the
 * IDT, bpf/syscall_entry.h), from the first "flags" line of /proc/cpuinfo.
 * arm64 has one entry, and its own rule.
 */
static void choose_entry(struct sched_bpf *s)
{
#if defined(__x86_64__)
	char *line = NULL;
	size_t cap = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");
	unsigned int kind = ZS_ENTRY_IDT;

	while (f && getline(&line, &cap, f) > 0) {
		if (strncmp(line, "flags", 5) == 0) {
			kind = sched_entry_kind(line);
			break;
		}
	}
	free(line);
	if (f)
		fclose(f);
	if (kind == ZS_ENTRY_FRED)
		log_info("this kernel enters through FRED: a blocked thread's syscall is told by "
			 "its orig_ax");
	s->rodata->entry_kind = kind;
#else
	(void)s;
#endif
}

/* The switch program's clock: the run queue's, where it can be read (switch_now). */
static void choose_clock(struct sched_bpf *s, const struct btf *vmlinux)
{
	s->rodata->rq_clock_readable = vmlinux && rq_clock_readable(vmlinux) ? 1 : 0;
}

/* One of the two switch programs: frames walked after stalls only, or at every switch. */
static int choose_switch(struct sched_bpf *s, struct probes *p, const struct btf *vmlinux)
{
	int deferred = 0;

	if (!p->opts.no_python_frames && p->opts.frames_walk != FRAMES_WALK_SWITCH) {
		deferred = kernel_has_task_work(vmlinux) && !p->task_work_refused;
		if (!deferred && p->opts.frames_walk == FRAMES_WALK_STALL) {
			log_error("--python-frames-walk stall: this kernel has no BPF task work "
				  "(Linux 6.18 or later); use switch");
			return -EOPNOTSUPP;
		}
	}
	if (!p->opts.no_python_frames)
		log_info("Python frames are read %s", deferred ?
			 "after stalls only, as their threads return to user space" :
			 "at every switch away of a watched Python thread");
	bpf_program__set_autoload(s->progs.zs_switch, !deferred);
	bpf_program__set_autoload(s->progs.zs_switch_deferred, deferred);
	p->switch_deferred = deferred;
	return 0;
}

/*
 * A kernel can have BPF task works and still refuse them to a switch
 * program (some 6.18 builds verify the callback as sleepable, which a
 * tracepoint program is not): then the frames are walked at every switch,
 * unless --python-frames-walk stall asked for task works.  Any refusal
 * of the object with the task work gets this one more try; a refusal of
 * the other program is then the error.
 */
int sched_fallback(struct probes *p, int err)
{
	if (!p->switch_deferred)
		return err;
	if (p->opts.frames_walk == FRAMES_WALK_STALL) {
		log_error("--python-frames-walk stall: the scheduler programs with the BPF task "
			  "work were refused (%s); use switch", strerror(-err));
		return err;
	}
	log_info("the scheduler programs with the BPF task work were refused (%s): trying "
		 "them with Python frames read at every switch away", strerror(-err));
	p->task_work_refused = 1;
	return 0;
}

/*
 * The parts of the switch program `make bench-sched` turns off for its
 * profile (bpf/sched_profile.h): none unless it says so.
 */
static __u32 profile_skip(void)
{
	const char *v = getenv("ZERNEL_BENCH_SCHED_SKIP");
	static int said;	/* configured again when the task work is refused */
	unsigned long bits;
	char *end;

	if (!v || !*v)
		return 0;
	errno = 0;
	bits = strtoul(v, &end, 0);
	if (errno || *end || bits > ZS_SKIP_ALL) {
		if (!said++)
			log_warnx("ZERNEL_BENCH_SCHED_SKIP=%s is not a set of bench-sched's parts "
				  "(0 to %u): the whole switch program runs", v, ZS_SKIP_ALL);
		return 0;
	}
	if (bits && !said++)
		log_warnx("ZERNEL_BENCH_SCHED_SKIP=%#lx: parts of the switch program are off, "
			  "for bench-sched's profile; what they measure is missing", bits);
	return (__u32)bits;
}

int sched_configure(void *skel, struct probes *p)
{
	struct sched_bpf *s = skel;
	struct btf *vmlinux;
	const char *lacks;
	int err = sched_kernel_ok();

	if (err)
		return err;
	for (size_t i = 0; i < ARRAY_SIZE(sched_syscalls); i++) {
		long nr = sched_syscalls[i].nr;

		if (nr < 0 || nr >= ZS_SYSCALL_MAX) {
			log_error("syscall number %ld is past the probe's table (%d)", nr,
				  ZS_SYSCALL_MAX);
			return -ERANGE;
		}
		s->rodata->sysclass[nr] = (__u8)sched_syscalls[i].cls;
	}
	s->rodata->episode_gap_ns = (__u64)p->opts.dataloader_gap_us * 1000u;
	s->rodata->all_threads = p->opts.all_threads ? 1 : 0;
	s->rodata->python_frames = p->opts.no_python_frames ? 0 : 1;
	s->rodata->profile_skip = profile_skip();
	pystack_settings(p, &s->rodata->zp_threshold_ns, &s->rodata->zp_rate);
	/* The process slots, sized as the launch probe's (collector/probes/slot_hist.h). */
	p->lh_slots = slot_hist_slots(p->ncpu, p->opts.process_slots);
	bpf_map__set_max_entries(s->maps.zs_hist, SLOT_HIST_MAP_SLOTS(p->lh_slots) * LH_FAMILIES);
	bpf_map__set_max_entries(s->maps.zs_sums, SLOT_HIST_MAP_SLOTS(p->lh_slots));
	bpf_map__set_max_entries(s->maps.zs_slots, SLOT_HIST_MAP_SLOTS(p->lh_slots));
	bpf_map__set_max_entries(s->maps.zs_free, SLOT_HIST_MAP_SLOTS(p->lh_slots));
	/* The kernel's BTF, read once for the three choices (NULL: none, each says so). */
	vmlinux = btf__load_vmlinux_btf();
	lacks = sched_kernel_lacks(vmlinux);
	if (lacks) {
		log_error("this kernel lacks %s: the scheduler probe cannot load", lacks);
		btf__free(vmlinux);
		return -EOPNOTSUPP;
	}
	err = choose_runq_source(s, p, vmlinux);
	if (!err) {
		choose_clock(s, vmlinux);
		choose_entry(s);
		err = choose_switch(s, p, vmlinux);
	}
	btf__free(vmlinux);
	return err;
}

void sched_report_counts(struct probes *p)
{
	static const char *const what[ZS_COUNT_SLOTS] = {
		[ZS_COUNT_NOT_SYSCALL] = "blocks of watched threads outside a syscall (page "
					 "faults), counted as other",
		[ZS_COUNT_COMPAT] = "blocks of watched threads in 32-bit syscalls, counted as other",
		[ZS_COUNT_NO_REGS] = "blocks of watched threads without saved registers, "
				     "counted as other",
		[ZS_COUNT_RETURN_TIMED] = "returns of watched threads to a CPU with no "
					  "sched_switch, timed from sched_info",
		[ZS_COUNT_RETURN_LOST] = "returns of watched threads to a CPU with no "
					 "sched_switch and no sched_info: their stints are "
					 "not counted",
	};
	struct sched_bpf *s = p->skel[PROBE_OBJ_SCHED];
	uint64_t *vals;
	int fd;

	if (!s || p->ncpu <= 0 || (fd = bpf_map__fd(s->maps.zs_counts)) < 0)
		return;
	vals = calloc((size_t)p->ncpu, sizeof(*vals));
	if (!vals)
		return;
	for (__u32 slot = 0; slot < ZS_COUNT_SLOTS; slot++) {
		uint64_t total = 0;

		if (bpf_map_lookup_elem(fd, &slot, vals) != 0)
			continue;
		for (int c = 0; c < p->ncpu; c++)
			total += vals[c];
		if (total)
			log_info("%llu %s", (unsigned long long)total, what[slot]);
	}
	free(vals);
}
