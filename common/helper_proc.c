// SPDX-License-Identifier: BSD-2-Clause
/* Helper processes on a socket pair (see helper_proc.h). */
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/helper_proc.h"

/* The forking process, as it was before the fork: the child's parent. */
static pid_t parent;

pid_t helper_fork(int *sock)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return -errno;
	parent = getpid();
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

/* Every descriptor above fd; one by one where close_range is missing (before 5.9). */
static int close_above(int fd)
{
	struct rlimit rl;

	if (syscall(SYS_close_range, (unsigned int)fd + 1u, ~0u, 0u) == 0)
		return 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return -1;
	for (rlim_t i = (rlim_t)fd + 1; i < rl.rlim_cur && i < 1u << 20; i++)
		close((int)i);
	return 0;
}

int helper_begin(const char *name, int sock, int fd, int die_with_parent)
{
	if (die_with_parent) {
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		/* The parent went before the line above: nobody is left to serve. */
		if (getppid() != parent)
			_exit(0);
	}
	prctl(PR_SET_NAME, name, 0, 0, 0);
	if (sock != fd && dup2(sock, fd) != fd)
		return -1;
	return close_above(fd);
}
