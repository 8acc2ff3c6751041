/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helper processes that talk to the process that forked them over one
 * SOCK_SEQPACKET socket pair and hold nothing else: the collector's parser
 * (collector/parser/), the exporter's webhook sender
 * (exporter/alerts/webhook_sender.c).  Each then enters a sandbox of its
 * own.
 */
#ifndef ZERNEL_HELPER_PROC_H
#define ZERNEL_HELPER_PROC_H

#include <sys/types.h>

/*
 * Forks with a socket pair.  In the parent: the child's pid, and *sock its
 * end of the pair.  In the child: 0, and *sock the child's end.  -errno
 * when either could not be made.
 */
pid_t helper_fork(int *sock);

/*
 * The child's first steps: takes name, moves sock to descriptor fd and
 * closes every descriptor above it (standard input, output and error
 * stay).  With die_with_parent, SIGKILL when the thread that forked it
 * ends (PR_SET_PDEATHSIG, which a later change of uid clears); already
 * orphaned, it exits.  Without, it is for the child to end when its
 * socket reads EOF, as it does once the parent is gone.  0, or -1 when
 * sock could not be moved or a descriptor not closed.
 */
int helper_begin(const char *name, int sock, int fd, int die_with_parent);

#endif /* ZERNEL_HELPER_PROC_H */
