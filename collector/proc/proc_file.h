/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Opening a per-process file of /proc for a reader that takes a
 * descriptor (cgroup_id.h, proc_env.h): the collector opens, its parser
 * child reads.  Root.
 */
#ifndef ZERNEL_PROC_FILE_H
#define ZERNEL_PROC_FILE_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * path opened to read: a descriptor, or gone when the process behind it
 * has gone (ESRCH; each reader says what that means to it), or -errno.
 */
static inline int proc_file_open(const char *path, int gone)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return errno == ESRCH ? gone : -errno;
	return fd;
}

/* The same of /proc/<pid>/<name>. */
static inline int proc_file_open_pid(pid_t pid, const char *name, int gone)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	return proc_file_open(path, gone);
}

#endif /* ZERNEL_PROC_FILE_H */
