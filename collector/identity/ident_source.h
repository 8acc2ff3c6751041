/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a process's identity is parsed from, as it stands now: its cgroup
 * file and its environment, opened and read (never parsed) here, with one
 * digest of their bytes.  The identity refresh asks the parser child
 * again only when the digest moved since the last parse: an environment
 * is fixed at execve (but for a process writing over its own), a cgroup
 * file changes when the process is moved, and a refresh that finds both
 * as they were keeps what was parsed from them.  Root.
 */
#ifndef ZERNEL_IDENT_SOURCE_H
#define ZERNEL_IDENT_SOURCE_H

#include <stdint.h>
#include <sys/types.h>

struct ident_source {
	int cgroup_fd;		/* at its start; -errno as cgroup_id_open returns them */
	int environ_fd;		/* the same, as proc_env_open */
	/* Of both files' bytes; 0 when either could not be read whole or is empty. */
	uint64_t digest;
};

/* Opens and reads pid's two files; src is always filled. */
void ident_source_open(pid_t pid, struct ident_source *src);

/* Closes what is still open. */
void ident_source_close(struct ident_source *src);

#endif /* ZERNEL_IDENT_SOURCE_H */
