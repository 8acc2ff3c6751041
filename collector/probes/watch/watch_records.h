/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The watch family's records: a process watched or gone, a libc to
 * probe, a change in a process's libraries.
 * Part of the probe ABI (bpf/probe_abi.h, which numbers every record
 * type and includes this): BPF code and the collector read it through
 * that header.
 */
#ifndef ZERNEL_WATCH_RECORDS_H
#define ZERNEL_WATCH_RECORDS_H

#include "bpf/probe_abi.h"

/*
 * A process is watched from now on, for reasons (or, already watched, it
 * exec'ed and has a new name).  start_ns: when its group leader started,
 * boot-relative; the BPF programs round it down to ZW_START_TICK_NS, the
 * precision of /proc/PID/stat, so a process seen by a probe and by a /proc
 * scan has one start time (the aggregation tells a reused pid by it).  The
 * collector warns at start where the kernel's clock tick differs.
 */
#define ZW_START_TICK_NS	10000000ull	/* 1 / USER_HZ (100 on x86 and arm64) */
/* Two start times, either rounded or not, of the same process. */
#define ZW_SAME_START(a, b)	((a) / ZW_START_TICK_NS == (b) / ZW_START_TICK_NS)

/* zev_watch.reasons: sent at exec; the program before it is gone. */
#define ZEV_WATCH_F_EXEC	(1u << 31)

struct zev_watch {
	struct zev_hdr hdr;
	__u32 reasons;		/* SHM_WATCH_*, ZEV_WATCH_F_EXEC */
	__u32 ppid;
	__u64 start_ns;
	char comm[SHM_COMM_LEN];	/* NUL-padded */
};

/* The process (its last thread) is gone. */
struct zev_exit {
	struct zev_hdr hdr;
	/*
	 * The group leader's start_boottime, to the nanosecond: the exit of
	 * an earlier process under a pid, read after a later one took it,
	 * must not end what belongs to the later one (collector/probes/slot_hist.c).
	 */
	__u64 start_ns;
};

/*
 * A watched process made its first futex wait: probe pthread_barrier_wait
 * in the libc it maps (a container's, a bundled runtime's).
 */
struct zev_libc_probe {
	struct zev_hdr hdr;
};

/*
 * A process's dynamic loader changed its list of libraries, or is about
 * to (dlopen, dlclose, start-up): look at its maps now.
 */
struct zev_lib_loaded {
	struct zev_hdr hdr;
};

_Static_assert(sizeof(struct zev_watch) == 56, "zev_watch is 56 bytes");
_Static_assert(sizeof(struct zev_exit) == 32, "zev_exit is 32 bytes");
_Static_assert(sizeof(struct zev_libc_probe) == 24, "zev_libc_probe is 24 bytes");
_Static_assert(sizeof(struct zev_lib_loaded) == 24, "zev_lib_loaded is 24 bytes");

#endif /* ZERNEL_WATCH_RECORDS_H */
