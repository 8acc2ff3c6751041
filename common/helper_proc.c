// SPDX-License-Identifier: BSD-2-Clause
/* Helper processes on a socket pair (see helper_proc.h). */
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/helper_proc.h"

pid_t helper_fork(int *sock)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(sv[0]);
		close(sv[1]);
		return err;
	}
	close(pid == 0 ? sv[0] : sv[1]);
	*sock = pid == 0 ? sv[1] : sv[0];
	return pid;
}

int helper_begin(const char *name, int sock, int fd)
{
	pid_t parent = getppid();

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* The parent went before the line above: nobody is left to serve. */
	if (getppid() != parent)
		_exit(0);
	prctl(PR_SET_NAME, name, 0, 0, 0);
	if (sock != fd && dup2(sock, fd) != fd)
		return -1;
	syscall(SYS_close_range, (unsigned int)fd + 1u, ~0u, 0u);
	return 0;
}
