/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The processes whose libraries the loader has read, so that a /proc scan
 * reads the maps of new programs only: a process is read again when its
 * pid holds another program (its /proc/PID/exe is another file), and all
 * are read again at a full scan.  Reading every process's maps at every
 * scan was most of the collector's CPU time, and each read takes the
 * process's memory-map lock.  What a process started later loads, its
 * dynamic loader reports (collector/probes/watch/watch.bpf.c, _dl_debug_state).
 *
 * It also keeps which library files each process maps (those the caller
 * records: probed files that are not kept for good), counted per file,
 * so that a file nothing maps any more can lose its uprobes without its
 * processes' maps being read again.  Knows nothing of probes; reads
 * /proc/PID/exe only.  Root (CAP_SYS_PTRACE) for other users' processes.
 */
#ifndef ZERNEL_PROC_SEEN_H
#define ZERNEL_PROC_SEEN_H

#include <stdint.h>

struct proc_seen;

struct proc_seen *proc_seen_new(void);
void proc_seen_free(struct proc_seen *ps);

/*
 * pid is in /proc at this scan: 1 when its maps must be read (a pid not
 * seen before, another program under it, or full set), its files then
 * forgotten; 0 when they were read already.  fresh: the process may run
 * another program since it was last marked (the kernel saw it fork or
 * exec); its program is looked at only then.  -ENOMEM when the table is
 * full (the caller reads the maps, as without a table).
 */
int proc_seen_mark(struct proc_seen *ps, uint32_t pid, uint64_t scan, int full, int fresh);
/*
 * pid, marked at this scan and new to it, was forked by ppid and has run
 * no other program since (the kernel's word, collector/probes/watch/watch.bpf.c): its memory
 * began as a copy of its parent's, and what it loads itself its loader
 * reports.  When ppid was marked at this scan too and runs the same
 * program, pid takes ppid's files, and the reasons ppid's maps gave are
 * returned (>= 0): pid's maps need not be read.  -ENOENT otherwise.
 */
int proc_seen_inherit(struct proc_seen *ps, uint32_t pid, uint32_t ppid, uint64_t scan);
/* The reasons (SHM_WATCH_*) pid's maps gave, kept for its children. */
void proc_seen_set_reasons(struct proc_seen *ps, uint32_t pid, uint32_t reasons);
/* pid, marked at this scan, maps the file (dev, ino). */
void proc_seen_add_file(struct proc_seen *ps, uint32_t pid, uint64_t dev, uint64_t ino);
/* Forgets the processes not marked at scan (gone), with their files. */
void proc_seen_sweep(struct proc_seen *ps, uint64_t scan);
/* How many remembered processes map the file (dev, ino). */
uint32_t proc_seen_mappers(const struct proc_seen *ps, uint64_t dev, uint64_t ino);
/* Processes remembered. */
uint32_t proc_seen_count(const struct proc_seen *ps);

#endif /* ZERNEL_PROC_SEEN_H */
