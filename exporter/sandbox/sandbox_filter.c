// SPDX-License-Identifier: BSD-2-Clause
/*
 * The exporter's seccomp allowlists.  Loaded last by sandbox_enter(), when
 * the process is already nobody with no capabilities; from then on any
 * system call not listed here kills the whole process (SIGSYS), in the
 * manner of OpenSSH's sandbox-seccomp-filter.c but stricter: no filter, no
 * exporter.
 *
 * What needs these calls: glibc (malloc, threads, stdio, time), the h2o
 * event loop (HTTP /metrics), libwebsockets (the :9092 feed), json-c (no
 * calls of its own) and the shm reader (reopens and remaps the segment
 * read-only after a collector restart).  Two roles: the serving process
 * has its listening sockets and makes no connection (no connect, and a new
 * socket of any family fails with EAFNOSUPPORT); the webhook sender, a
 * process of its own, connects out (an outgoing TCP connection, name
 * lookups through /etc files and DNS) and holds no listening socket.
 *
 * A few calls are answered with an error instead of death, where a library
 * has a sane fallback and killing would take the error path away:
 * opening a file for writing (EACCES), a socket of a family the role does
 * not use (EAFNOSUPPORT: glibc's getaddrinfo probes netlink and falls
 * back), executable memory (EACCES: a dlopen() fails cleanly) and clone3
 * (ENOSYS: glibc then uses clone, whose flags can be checked).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "common/log.h"
#include "exporter/sandbox/sandbox_filter.h"

/* Allowed with any arguments. */
static const int filter_allow[] = {
	/* descriptors: sockets, the segment, stderr */
	SCMP_SYS(read),
	SCMP_SYS(readv),
	SCMP_SYS(pread64),
	SCMP_SYS(write),		/* to descriptors already open: sockets, stderr */
	SCMP_SYS(writev),
	SCMP_SYS(close),
	SCMP_SYS(lseek),
	SCMP_SYS(fstat),
	SCMP_SYS(newfstatat),		/* fstat() in glibc 2.33+; stat of the segment */
	SCMP_SYS(statx),
	SCMP_SYS(fcntl),		/* O_NONBLOCK, FD_CLOEXEC */
	SCMP_SYS(dup),
	SCMP_SYS(pipe2),		/* h2o's cross-thread wakeup */
	SCMP_SYS(eventfd2),
	SCMP_SYS(getdents64),		/* glibc reading /proc/self/fd, sysconf */

	/* network: accepted clients (serving), the webhook's connection (sending) */
	SCMP_SYS(accept),
	SCMP_SYS(accept4),
	SCMP_SYS(shutdown),
	SCMP_SYS(getsockname),
	SCMP_SYS(getpeername),
	SCMP_SYS(getsockopt),		/* SO_ERROR after a non-blocking connect */
	SCMP_SYS(setsockopt),		/* TCP_NODELAY, SO_KEEPALIVE, SO_SNDBUF */
	SCMP_SYS(sendto),
	SCMP_SYS(recvfrom),
	SCMP_SYS(sendmsg),
	SCMP_SYS(recvmsg),
	SCMP_SYS(socketpair),		/* AF_UNIX only by definition here */

	/* waiting */
	SCMP_SYS(poll),
	SCMP_SYS(ppoll),
	SCMP_SYS(select),
	SCMP_SYS(pselect6),
	SCMP_SYS(epoll_create),
	SCMP_SYS(epoll_create1),
	SCMP_SYS(epoll_ctl),
	SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait),
	SCMP_SYS(epoll_pwait2),
	SCMP_SYS(nanosleep),
	SCMP_SYS(clock_nanosleep),

	/* memory (executable mappings are refused below) */
	SCMP_SYS(brk),
	SCMP_SYS(munmap),
	SCMP_SYS(mremap),
	SCMP_SYS(madvise),		/* glibc returns thread stacks and arenas */

	/* threads, started after the filter (clone is checked below) */
	SCMP_SYS(futex),
	SCMP_SYS(set_robust_list),
	SCMP_SYS(rseq),
	SCMP_SYS(set_tid_address),
	SCMP_SYS(sched_yield),
	SCMP_SYS(sched_getaffinity),	/* glibc sizing per-thread arenas */
	SCMP_SYS(gettid),
	SCMP_SYS(getpid),
	SCMP_SYS(getppid),
	SCMP_SYS(exit),
	SCMP_SYS(exit_group),

	/* signals: SIGTERM/SIGINT handling, SIGPIPE ignored */
	SCMP_SYS(rt_sigaction),
	SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigreturn),
	SCMP_SYS(rt_sigtimedwait),	/* main thread waiting for a stop signal */
	SCMP_SYS(rt_sigsuspend),
	SCMP_SYS(sigaltstack),
	SCMP_SYS(signalfd4),
	SCMP_SYS(restart_syscall),

	/* time and identity */
	SCMP_SYS(clock_gettime),	/* the vDSO's fallback */
	SCMP_SYS(clock_getres),
	SCMP_SYS(gettimeofday),
	SCMP_SYS(time),
	SCMP_SYS(getrandom),		/* hash seeds, WebSocket masks, TLS */
	SCMP_SYS(getuid),
	SCMP_SYS(geteuid),
	SCMP_SYS(getgid),
	SCMP_SYS(getegid),
	SCMP_SYS(uname),
	SCMP_SYS(sysinfo),
	SCMP_SYS(getrlimit),
	SCMP_SYS(getrusage),
};

/* Flags that make an open a write (or a create). */
static const unsigned long open_write_bits[] = {
	O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND, __O_TMPFILE,
};

/*
 * clone(2) is allowed for threads only: CLONE_THREAD set and no namespace
 * flag (x86_64 and arm64 pass the flags first).
 */
#define FILTER_CLONE_MASK (CLONE_THREAD | CLONE_NEWNS | CLONE_NEWCGROUP | \
			   CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | \
			   CLONE_NEWPID | CLONE_NEWNET)

/* The webhook sender's alone: its connection and its name lookups. */
static const int webhook_allow[] = {
	SCMP_SYS(connect),		/* the receiver, DNS, nscd */
	SCMP_SYS(sendmmsg),		/* glibc's resolver sends A and AAAA together */
};

/* Address families the webhook sender's sockets may have; the server makes none. */
static const int webhook_families[] = { AF_UNIX, AF_INET, AF_INET6 };

/* ioctls: non-blocking mode, bytes pending, isatty() on stderr. */
static const unsigned long allowed_ioctls[] = { FIONBIO, FIONREAD, TCGETS };

/* prctl: thread names only. */
static const int allowed_prctls[] = { PR_SET_NAME, PR_GET_NAME };

/*
 * Adds a rule.  A call this architecture lacks (poll, epoll_wait and
 * select on arm64, say) is skipped: nothing can make it there.
 */
static int add(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned int n,
	       const struct scmp_arg_cmp *cmp)
{
	int r;

	if (nr < 0)
		return 0;
	r = seccomp_rule_add_array(ctx, action, nr, n, cmp);
	if (r < 0) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

		log_error("seccomp: rule for %s: %s", name ? name : "?", strerror(-r));
		free(name);
	}
	return r;
}

static int add_open_rules(scmp_filter_ctx ctx, int nr, unsigned int flags_arg)
{
	unsigned long all = 0;
	int r;

	for (size_t i = 0; i < sizeof(open_write_bits) / sizeof(open_write_bits[0]); i++) {
		struct scmp_arg_cmp c = { flags_arg, SCMP_CMP_MASKED_EQ,
					  open_write_bits[i], open_write_bits[i] };

		all |= open_write_bits[i];
		r = add(ctx, SCMP_ACT_ERRNO(EACCES), nr, 1, &c);
		if (r < 0)
			return r;
	}
	{
		struct scmp_arg_cmp c = { flags_arg, SCMP_CMP_MASKED_EQ, all, 0 };

		return add(ctx, SCMP_ACT_ALLOW, nr, 1, &c);
	}
}

/* prot without PROT_EXEC is allowed; with it, EACCES. */
static int add_prot_rules(scmp_filter_ctx ctx, int nr)
{
	struct scmp_arg_cmp no_exec = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0);
	struct scmp_arg_cmp exec = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC);
	int r = add(ctx, SCMP_ACT_ALLOW, nr, 1, &no_exec);

	return r < 0 ? r : add(ctx, SCMP_ACT_ERRNO(EACCES), nr, 1, &exec);
}

static int add_socket_rules(scmp_filter_ctx ctx, enum sandbox_role role)
{
	/*
	 * libseccomp cannot say "none of these" about one argument, so each
	 * family below AF_MAX gets its own rule, and AF_MAX and above one more.
	 */
	struct scmp_arg_cmp big = SCMP_A0(SCMP_CMP_GE, AF_MAX);
	int r = add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1, &big);

	for (int fam = 0; r == 0 && fam < AF_MAX; fam++) {
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fam);
		uint32_t act = SCMP_ACT_ERRNO(EAFNOSUPPORT);

		for (size_t i = 0; role == SANDBOX_ROLE_WEBHOOK &&
				   i < sizeof(webhook_families) / sizeof(webhook_families[0]); i++)
			if (webhook_families[i] == fam)
				act = SCMP_ACT_ALLOW;
		r = add(ctx, act, SCMP_SYS(socket), 1, &c);
	}
	return r;
}

static int add_special_rules(scmp_filter_ctx ctx, enum sandbox_role role)
{
	struct scmp_arg_cmp thread = SCMP_A0(SCMP_CMP_MASKED_EQ, FILTER_CLONE_MASK, CLONE_THREAD);
	struct scmp_arg_cmp self = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid());
	struct scmp_arg_cmp this_process = SCMP_A0(SCMP_CMP_EQ, 0);
	int r;

	if ((r = add_open_rules(ctx, SCMP_SYS(openat), 2)) < 0 ||
	    (r = add_open_rules(ctx, SCMP_SYS(open), 1)) < 0 ||
	    (r = add_prot_rules(ctx, SCMP_SYS(mmap))) < 0 ||
	    (r = add_prot_rules(ctx, SCMP_SYS(mprotect))) < 0 ||
	    (r = add_socket_rules(ctx, role)) < 0 ||
	    (r = add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1, &thread)) < 0 ||
	    (r = add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0, NULL)) < 0 ||
	    /* abort() and raise() signal this process only */
	    (r = add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1, &self)) < 0 ||
	    /* getrlimit() (libwebsockets' getdtablesize()): of this process only */
	    (r = add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1, &this_process)) < 0)
		return r;
	for (size_t i = 0; i < sizeof(allowed_ioctls) / sizeof(allowed_ioctls[0]); i++) {
		struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_EQ, allowed_ioctls[i]);

		if ((r = add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1, &c)) < 0)
			return r;
	}
	for (size_t i = 0; i < sizeof(allowed_prctls) / sizeof(allowed_prctls[0]); i++) {
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)allowed_prctls[i]);

		if ((r = add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1, &c)) < 0)
			return r;
	}
	return 0;
}

int sandbox_filter_install(enum sandbox_role role)
{
	scmp_filter_ctx ctx;
	int r;

	ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!ctx)
		return -ENOMEM;
	/*
	 * Native architecture only: seccomp_init adds just that one, and a
	 * call made through another ABI (x32, i386 via int 0x80) is killed.
	 */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0)
		goto cleanup;
	/* Belt and braces: every thread gets the filter, should one exist. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (r < 0)
		goto cleanup;
	/* NO_NEW_PRIVS was set and checked by the previous step. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r < 0)
		goto cleanup;

	for (size_t i = 0; i < sizeof(filter_allow) / sizeof(filter_allow[0]); i++) {
		r = add(ctx, SCMP_ACT_ALLOW, filter_allow[i], 0, NULL);
		if (r < 0)
			goto cleanup;
	}
	for (size_t i = 0; role == SANDBOX_ROLE_WEBHOOK &&
			   i < sizeof(webhook_allow) / sizeof(webhook_allow[0]); i++) {
		r = add(ctx, SCMP_ACT_ALLOW, webhook_allow[i], 0, NULL);
		if (r < 0)
			goto cleanup;
	}
	r = add_special_rules(ctx, role);
	if (r < 0)
		goto cleanup;

	r = seccomp_load(ctx);
	if (r < 0)
		log_error("seccomp: loading the filter: %s", strerror(-r));
cleanup:
	seccomp_release(ctx);
	return r < 0 ? r : 0;
}
