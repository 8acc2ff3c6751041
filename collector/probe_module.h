/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Inside the BPF loader: the probe module interface (one BPF object each)
 * and the loader state that the loader's files share.  Adding a module is
 * a bpf/X.bpf.c, a collector/probe_X.c defining a struct probe_module, and
 * one line in the table of collector/probes.c.  Root-only code.
 */
#ifndef ZERNEL_PROBE_MODULE_H
#define ZERNEL_PROBE_MODULE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collector/decode.h"
#include "collector/probes.h"

struct bpf_object;
struct bpf_link;
struct ring_buffer;
struct probes;

/* Library kinds a uprobe's symbol lives in (bits). */
#define PROBE_LIB_CUDA		(1u << 0)	/* libcuda.so*: the driver API */
#define PROBE_LIB_CUDART	(1u << 1)	/* libcudart.so*: the runtime API */
#define PROBE_LIB_NCCL		(1u << 2)	/* libnccl.so* */
#define PROBE_LIB_ALL		0x7u

/* One symbol to probe: entry and/or return program, by program name. */
struct probe_uprobe {
	unsigned int libs;		/* PROBE_LIB_* the symbol may live in */
	const char *symbol;
	const char *prog;		/* uprobe at entry, or NULL */
	const char *ret_prog;		/* uretprobe, or NULL */
};

struct probe_module {
	const char *name;
	/* Opens the skeleton and sets its rodata; returns it and its object. */
	int (*open)(void **skel, struct bpf_object **obj, const struct probes_opts *opts);
	int (*load)(void *skel);
	void (*destroy)(void *skel);
	const struct probe_uprobe *uprobes;
	size_t n_uprobes;
	/*
	 * Optional, for modules that aggregate in BPF maps: poll runs after
	 * each ring-buffer drain; proc_exit runs when a watched process is
	 * gone, before the aggregation forgets it, to flush and drop its
	 * entries.
	 */
	void (*poll)(void *skel, struct probes *p, uint64_t now_ns);
	void (*proc_exit)(void *skel, struct probes *p, uint32_t pid);
};

extern const struct probe_module probe_watch_module;
extern const struct probe_module probe_gpu_mem_module;
extern const struct probe_module probe_cuda_trace_module;
extern const struct probe_module probe_nccl_module;

#define PROBES_MAX_MODULES	8
#define PROBES_MAX_LINKS	8192
#define PROBES_MAX_LIBS		256

struct probe_loaded {
	const struct probe_module *mod;
	void *skel;
	struct bpf_object *obj;
};

struct probe_lib {
	dev_t dev;
	ino_t ino;
	unsigned int kind;		/* one PROBE_LIB_* */
	unsigned int attached;		/* uprobe links made */
};

struct probes {
	struct agg *agg;
	struct decode dec;		/* ring-buffer records to agg */
	struct probes_opts opts;

	struct probe_loaded mod[PROBES_MAX_MODULES];
	size_t n_mod;
	int watched_fd;			/* the shared maps (zw_*) */
	int drops_fd;
	struct ring_buffer *rb;

	struct bpf_link **links;	/* bounded by PROBES_MAX_LINKS */
	size_t n_links;
	uint64_t n_uprobe_links;
	struct probe_lib libs[PROBES_MAX_LIBS];
	size_t n_libs;

	int ncpu;			/* possible CPUs, for per-CPU maps */
	uint64_t *drop_vals;		/* ncpu values of one zw_drops slot */
	uint64_t drops_reported;
	uint64_t next_scan_ns;
};

/* probe_priv.c: privileges and kernel support; logs what is missing. */
int probe_priv_check(void);

/* discovery.c */
/* Attaches every module's uprobes for kind to path, once per (dev, ino). */
int discovery_attach_lib(struct probes *p, const char *path, unsigned int kind);
/* Library kind of a file name (basename), or 0. */
unsigned int discovery_lib_kind(const char *path);
/* Scans /proc: libraries mapped, --comm names; marks processes watched. */
void discovery_scan(struct probes *p);
/* Evicts watched processes that are gone. */
void discovery_sweep(struct probes *p);

/*
 * probes.c: the watched set is the aggregation's process table; the
 * kernel's zw_watched filter is kept in step with it.  probes_watch adds
 * what a /proc scan or --pid found (the probes add their own in the
 * kernel and report them as records); probes_unwatch drops a process
 * found gone.
 */
void probes_watch(struct probes *p, uint32_t pid, uint32_t ppid, uint32_t reason,
		  const char *comm, uint64_t start_ns);
void probes_unwatch(struct probes *p, uint32_t pid);

#endif /* ZERNEL_PROBE_MODULE_H */
