/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The /proc scanner: finds what the loader must act on and reports it,
 * one item at a time, to its caller; it never attaches or watches anything
 * itself.  Items are library files a process maps (the CUDA and NCCL
 * libraries, or a libc on request), each with its kind and its path
 * through that process's /proc/PID/root, so that other mount namespaces
 * resolve; and processes to watch, with why and what /proc says of them.
 * Reads other processes' /proc files: root (CAP_SYS_PTRACE,
 * CAP_DAC_READ_SEARCH).
 */
#ifndef ZERNEL_DISCOVERY_H
#define ZERNEL_DISCOVERY_H

#include <dirent.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/util.h"

/* Library kinds (bits): what a file is, by its name. */
#define PROBE_LIB_CUDA		(1u << 0)	/* libcuda.so*: the driver API */
#define PROBE_LIB_CUDART	(1u << 1)	/* libcudart.so*: the runtime API */
#define PROBE_LIB_NCCL		(1u << 2)	/* libnccl.so* */
#define PROBE_LIB_LIBC		(1u << 3)	/* libc.so.6, libpthread.so.0 (pthread_barrier_wait) */
#define PROBE_LIB_LOADER	(1u << 4)	/* ld-linux*.so*: _dl_debug_state */
/* libzernel-nccl-profiler.so: Zernel's NCCL profiler plugin (nccl-profiler/), loaded by NCCL */
#define PROBE_LIB_NCCL_PROFILER	(1u << 5)
#define PROBE_LIB_GPU		(PROBE_LIB_CUDA | PROBE_LIB_CUDART | PROBE_LIB_NCCL | \
				 PROBE_LIB_NCCL_PROFILER)

/* The kind of a file by its name (its last component), or 0. */
unsigned int discovery_lib_kind(const char *path);
/*
 * One line of /proc/PID/maps (NUL-terminated; its newline is cut): the
 * kind of the library it maps with *file pointing at its path, or 0
 * (not a library we know, or deleted on disk).
 */
unsigned int discovery_maps_line(char *line, char **file);

enum discovery_what {
	DISCOVERY_LIB = 1,
	DISCOVERY_PROC,
};

struct discovery_item {
	enum discovery_what what;
	uint32_t pid;
	/* DISCOVERY_LIB */
	unsigned int kind;		/* one PROBE_LIB_* */
	char path[PATH_MAX + 64];	/* /proc/PID/root/..., or the plain path for ourselves */
	/* DISCOVERY_PROC */
	uint32_t reasons;		/* SHM_WATCH_* */
	uint32_t ppid;
	uint64_t start_ns;		/* boot-relative, /proc/PID/stat's precision */
	char comm[32];
};

/* discovery_filter's question, asked of each process (see there). */
typedef int (*discovery_wanted_fn)(void *ctx, uint32_t pid, uint32_t *reasons);

struct discovery {
	DIR *proc;			/* every process; NULL for one */
	FILE *maps;			/* of pid, while its libraries are read */
	uint32_t pid;
	uint32_t self;
	unsigned int kinds;		/* libraries to report */
	uint32_t reasons;		/* found in pid's maps so far */
	int proc_due;			/* pid's process item is still to come */
	const char *const *comms;	/* --comm names to watch */
	size_t n_comms;
	/* Optional: 0 when pid's maps need not be read (discovery_filter). */
	discovery_wanted_fn wanted;
	void *wanted_ctx;
	char last[PATH_MAX + 64];	/* the last library reported, to skip repeats */
	char maps_buf[PROC_READ_BUF];	/* maps's stdio buffer */
};

/*
 * Every process but ourselves: the CUDA/NCCL libraries each maps, then
 * the process itself when it maps one or its name is one of comms.
 * Returns 0 or -errno.
 */
int discovery_open(struct discovery *d, const char *const *comms, size_t n_comms);
/*
 * Reads the maps of only the processes for which wanted answers 1 (the
 * caller remembers which it has read).  For the others wanted may set
 * *reasons to what their maps are known to give (a forked child's, its
 * parent's): the process is reported with them, as if its maps were read.
 * Every process is still looked at for a --comm name.
 */
void discovery_filter(struct discovery *d, discovery_wanted_fn wanted, void *ctx);
/* One process as discovery_open reports each: its libraries, then itself. */
int discovery_open_one(struct discovery *d, uint32_t pid, const char *const *comms,
		       size_t n_comms);
/*
 * The libraries of kinds that process pid maps (pid 0: this process, with
 * plain paths).  No process item.  Returns 0 or -errno.
 */
int discovery_open_pid(struct discovery *d, uint32_t pid, unsigned int kinds);
/* The next item: 1, or 0 when there is none left. */
int discovery_next(struct discovery *d, struct discovery_item *it);
void discovery_close(struct discovery *d);

/*
 * The processes already below any of roots in the process tree (children,
 * their children, ...), each as a process item with reason
 * SHM_WATCH_DESCENDANT, after its parent; a root below another root is
 * one too.  Those forked later are the kernel's to follow.  Returns how
 * many, or -errno.
 */
int discovery_descendants(const uint32_t *roots, size_t n_roots,
			  void (*fn)(void *ctx, const struct discovery_item *it), void *ctx);

#endif /* ZERNEL_DISCOVERY_H */
