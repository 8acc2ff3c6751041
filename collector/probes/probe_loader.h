/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Inside the BPF loader: its objects, its attachments and the state the
 * loader's files share.  Calls go one way: probes.c (the loader's main
 * loop) asks discovery.c what there is and tells probe_attach.c what to
 * attach, from the rows of every probe family (probe_family.h).
 * Root-only code.
 *
 * Adding a probe: a family of its own (probe_family.h says what it holds).
 */
#ifndef ZERNEL_PROBE_LOADER_H
#define ZERNEL_PROBE_LOADER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "collector/probes/decode.h"
#include "collector/probes/families.h"
#include "collector/probes/discovery.h"
#include "collector/probes/probes.h"

struct bpf_object;
struct bpf_link;
struct slot_hist;
struct open_states;
struct proc_seen;
struct pyprocs;
struct probes;
struct ring_buffer;

struct probe_object {
	const char *name;
	void *(*open)(struct bpf_object **obj);		/* the skeleton, or NULL + errno */
	/* Optional: what must be set before load (rodata, map sizes). */
	int (*configure)(void *skel, struct probes *p);
	/*
	 * Optional, after the kernel refused its load (err): 0 when configure
	 * has another way to set it up, which it takes from now on (logged);
	 * else err.
	 */
	int (*fallback)(struct probes *p, int err);
	int (*load)(void *skel);
	void (*destroy)(void *skel);
};

/* How an attachment (a family's row, probe_family.h) attaches its program. */
enum probe_how {
	PROBE_AUTO = 1,		/* where its section says (tp_btf/...) */
	PROBE_UPROBE,		/* entry of symbol, in every library of the row's kinds */
	PROBE_URETPROBE,	/* return of symbol, likewise */
	PROBE_ITER,		/* a task iterator, read on demand (open_states.c) */
};

/*
 * One attachment.  Tracepoint rows attach once, at start; uprobe rows
 * each time a library of one of their kinds is found.  A symbol's return
 * row comes right before its entry row.  A call that enters between the
 * two attaches then has a return and no entry, which every return program
 * ignores; the other order would leave an entry without its return, and
 * the thread's call state (bpf/calls.h) would take every later call of
 * that class for a nested one until it goes stale, 30 s on.  When the
 * return cannot attach, the entry is not tried.
 */
struct probe_attach {
	enum probe_obj obj;
	const char *prog;		/* program name in obj */
	enum probe_how how;
	unsigned int libs;		/* uprobes: PROBE_LIB_* the symbol may live in */
	const char *symbol;		/* uprobes */
};

#define PROBES_MAX_LINKS	8192
#define PROBES_MAX_LIBS		320
#define PROBES_MAX_SYSLIBS	64
/*
 * A library file no process has mapped for this many /proc scans in a row
 * loses its uprobes: with container churn every image brings new inodes,
 * and links that only accumulate would reach PROBES_MAX_LINKS and make
 * shutdown slow.  libc, --lib files and the node's own libraries are kept.
 */
#define PROBES_LIB_IDLE_SCANS	3
/*
 * Scans read the maps of new programs only (collector/probes/proc_seen.h); every
 * this many, they read every process's, for libraries loaded without the
 * dynamic loader (which reports the others as they load).
 */
#define PROBES_FULL_SCAN_EVERY	60
/*
 * Passes over the process tree for the children there before the
 * collector: each finds what forked during the one before it, while its
 * parent was not watched yet; a job's start-up needs two.
 */
#define PROBES_DESCENDANT_PASSES	4
#define PROBES_MAX_HELPERS	16

/* A library file probed, once per (dev, ino) whatever its name. */
struct probe_lib {
	dev_t dev;
	ino_t ino;
	unsigned int kind;		/* PROBE_LIB_* it was probed as */
	unsigned int attached;		/* symbols probed */
	int pinned;			/* kept for the collector's life (libc, --lib) */
	uint64_t seen_scan;		/* the last scan that found it mapped */
	struct bpf_link **links;	/* its uprobes as perf events, or NULL */
	int *multi_fds;			/* or its uprobe_multi links, or NULL */
	unsigned int n_multi;
	unsigned int n_links;		/* uprobes, either way */
	char path[512];			/* as first found; "" when longer */
	uint64_t probed_boot_ns;	/* CLOCK_BOOTTIME when its probes were attached */
};

#define PROBES_MAX_LOADING	64

struct probes {
	struct agg *agg;
	struct decode dec;		/* ring-buffer records to agg */
	struct probes_opts opts;

	void *skel[PROBE_OBJ_COUNT];
	struct bpf_object *obj[PROBE_OBJ_COUNT];
	size_t n_obj;			/* opened so far */
	int watched_fd;			/* the shared maps (zw_*) */
	uint64_t *watched_bits;		/* zw_watched_bits, mapped */
	uint64_t *fresh_bits;		/* zw_fresh_bits (collector/probes/watch/watch.bpf.c), mapped */
	uint64_t *forked_bits;		/* zw_forked_bits, mapped */
	int drops_fd;
	struct ring_buffer *rb;
	struct slot_hist *launch_slots;	/* the launch probe's process slots */
	struct slot_hist *sched_slots;	/* the scheduler probe's */
	struct open_states *open_states;	/* its threads' states still open; NULL none */
	int coll_known_fd;		/* its zs_coll_known, what the stream tracking knows */
	uint32_t lh_slots;		/* slots each, for ncpu */
	int uprobe_multi_at;		/* BPF_TRACE_UPROBE_MULTI; -1: perf events */
	int switch_deferred;		/* the switch program walks frames in task works */
	int task_work_refused;		/* the kernel would not load that program */

	struct bpf_link **links;	/* tracepoints; uprobes live in their library */
	size_t n_static;
	size_t n_links;			/* every probe, bounded by PROBES_MAX_LINKS */
	uint64_t refused;		/* links and libraries refused at the limits */
	pid_t helpers[PROBES_MAX_HELPERS];	/* children releasing closed links; 0 = free */
	uint64_t scan;			/* /proc scans so far */
	struct probe_lib libs[PROBES_MAX_LIBS];
	size_t n_libs;
	/* Self-telemetry counts the CUDA/NCCL libraries, not libc. */
	uint64_t gpu_links;		/* uprobe links on them */
	uint64_t gpu_libs;

	int ncpu;			/* possible CPUs, for per-CPU maps */
	uint64_t *drop_vals;		/* ncpu values of one zw_drops slot */
	uint64_t drops_reported;
	uint64_t next_scan_ns;
	/* Processes whose loader just changed their libraries: looked at after the drain. */
	uint32_t loading[PROBES_MAX_LOADING];
	size_t n_loading;
	int loading_overflow;		/* more than fit: a full scan instead */
	struct pyprocs *py;		/* watched CPython processes */
	struct gpu_ident *ident;	/* CUDA ordinals to physical GPUs */
	struct proc_seen *seen;		/* processes whose maps were read */
	/*
	 * The node's libraries, found after the first publish and probed one
	 * per poll, so that a 200 MB NCCL never holds up the event drain.
	 */
	struct probe_syslib {
		char path[512];
		unsigned int kind;
	} syslibs[PROBES_MAX_SYSLIBS];
	size_t n_syslibs, next_syslib;
};

/*
 * probe_priv.c: privileges and kernel support; logs what is missing.
 * perf_uprobes: the uprobes will be perf events (see privileges.h).
 */
int probe_priv_check(int perf_uprobes);

/*
 * probe_objects.c.  How uprobes attach: *multi_at is BPF_TRACE_UPROBE_MULTI
 * for uprobe_multi links (the kernel has them and --uprobe-links does not
 * say perf), -1 for perf events.  Returns 0, or -ENOTSUP after logging when
 * --uprobe-links multi asks for what the kernel lacks.
 */
int probe_choose_uprobe_links(const struct probes_opts *o, int *multi_at);

/* sched_config.c: the scheduler probe's settings; refuses a kernel it cannot use. */
int sched_configure(void *skel, struct probes *p);
/* Its load refused: 0 when a switch program without task work is left to try. */
int sched_fallback(struct probes *p, int err);
/* Logs how many blocks it could not tie to a 64-bit syscall (counted as other). */
void sched_report_counts(struct probes *p);

/* probe_objects.c: opens, configures and loads every object, sharing the maps. */
int probe_objects_load(struct probes *p);
/* pystack/pystack.c: the Python-stack settings, into the copy of an object that walks frames. */
void pystack_settings(const struct probes *p, __u64 *threshold_ns, __u32 *rate);
void probe_objects_destroy(struct probes *p);

/*
 * probe_attach.c.  probe_attach_static: every tracepoint row (tracefs is
 * mounted first if the kernel has it unmounted); 0 or -errno after
 * logging.  probe_attach_lib: every uprobe row of kind in the library at
 * path, once per file; 1 newly probed, 0 known already, or -errno (stat
 * errors silent, the others logged).
 */
int probe_attach_static(struct probes *p);
int probe_attach_lib(struct probes *p, const char *path, unsigned int kind, int pinned);

/*
 * probe_detach.c.  Detaches the uprobes of every library no scan has found
 * mapped for PROBES_LIB_IDLE_SCANS scans; returns the libraries dropped.
 */
size_t probe_attach_idle(struct probes *p);
/*
 * Every link, as the collector exits (only then: the links' descriptors
 * stay open until the process ends).  The kernel's slow release of each
 * happens in a child process (see probe_detach.c), so this returns fast.
 */
void probe_attach_destroy(struct probes *p);
/* Reaps the children that finished releasing links. */
void probe_attach_reap(struct probes *p);

#endif /* ZERNEL_PROBE_LOADER_H */
