/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a process is, from /proc: its name, parent, start time, whether it
 * still lives, the process a thread belongs to.  Every subsystem of the
 * collector asks; this folder asks no other.
 */
#ifndef ZERNEL_PROC_STAT_H
#define ZERNEL_PROC_STAT_H

#include <stddef.h>
#include <stdint.h>

/*
 * ppid, start time (boot-relative ns, at /proc/PID/stat's precision) and
 * state letter (state may be NULL) from /proc/PID/stat; 0 or -errno.
 */
int proc_stat_read(uint32_t pid, uint32_t *ppid, uint64_t *start_ns, char *state);
/* pid's name from /proc/PID/comm; 0, or -errno when it is gone. */
int proc_comm(uint32_t pid, char *buf, size_t len);
/* The start time of pid, boot-relative ns at /proc/PID/stat's precision; 0 or -errno. */
int proc_start_time(uint32_t pid, uint64_t *start_ns);
/* Its parent process, from /proc/PID/stat: 0 or -errno. */
int proc_parent(uint32_t pid, uint32_t *ppid);
/*
 * Whether pid is a live process (not a zombie) that started at start_ns
 * (to /proc/PID/stat's precision; 0: any): 1 or 0.
 */
int proc_alive(uint32_t pid, uint64_t start_ns);
/* Whether pid is a live process, 1 or 0, and when it started. */
int proc_live_start(uint32_t pid, uint64_t *start_ns);
/* The process (thread group) that thread tid belongs to: 0 or -errno. */
int proc_tgid(uint32_t tid, uint32_t *tgid);

#endif /* ZERNEL_PROC_STAT_H */
