/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exporter's sandbox: entered once, after the listening sockets are bound
 * and the segment is open read-only, before any thread is started.  It turns
 * a root (or any) process into one that runs as an unprivileged user with no
 * capabilities, NO_NEW_PRIVS and a seccomp allowlist, and fails closed.
 */
#ifndef ZERNEL_SANDBOX_H
#define ZERNEL_SANDBOX_H

#include <stddef.h>

#define SANDBOX_DEFAULT_USER	"nobody"
#define SANDBOX_DEFAULT_NOFILE	1024u	/* RLIMIT_NOFILE when max_fds is 0 */
#define SANDBOX_MIN_NOFILE	64u

/*
 * The steps, in the order sandbox_enter() takes them.  The bounding and
 * ambient sets are cleared inside SANDBOX_STEP_USER, before setuid():
 * PR_CAPBSET_DROP needs CAP_SETPCAP, which the uid change takes away.
 */
enum sandbox_step {
	SANDBOX_STEP_NONE = 0,
	SANDBOX_STEP_USER,		/* setgroups(0), setgid, setuid; cannot regain root */
	SANDBOX_STEP_CAPS,		/* empty effective/permitted/inheritable, bounding, ambient */
	SANDBOX_STEP_NO_NEW_PRIVS,	/* PR_SET_NO_NEW_PRIVS */
	SANDBOX_STEP_RLIMITS,		/* no core dumps, bounded files, not dumpable */
	SANDBOX_STEP_SECCOMP,		/* the allowlist; anything else kills the process */
	SANDBOX_STEP_COUNT
};

/*
 * Which of the exporter's two processes: the one that serves the ports and
 * may make no connection of its own, or the one that sends the alert
 * webhooks (exporter/alerts/webhook_sender.c), the only one that may.
 */
enum sandbox_role {
	SANDBOX_ROLE_SERVE = 0,
	SANDBOX_ROLE_WEBHOOK,
};

struct sandbox_opts {
	const char *user;		/* --user NAME; NULL means "nobody" */
	unsigned int max_fds;		/* RLIMIT_NOFILE; 0 means SANDBOX_DEFAULT_NOFILE */
	enum sandbox_role role;		/* the allowlist: sandbox_filter.c */
};

/* "user", "caps", "no-new-privs", "rlimits", "seccomp". */
const char *sandbox_step_name(enum sandbox_step step);

/*
 * Enters the sandbox.  Must run while the process has a single thread: the
 * capability and NO_NEW_PRIVS changes are per thread, so a thread started
 * earlier would keep its privileges (refused with -EBUSY).  Threads created
 * afterwards inherit everything.  On failure it logs one line naming the
 * step and the reason and returns -errno; the caller must then exit
 * non-zero, since the process is left half-sandboxed.
 *
 * When started as root it changes to opts->user; otherwise it keeps its uid
 * and still takes every other step.
 */
int sandbox_enter(const struct sandbox_opts *opts);

/*
 * The caller's part of the contract: a warning for --no-sandbox, logged at
 * every start so that a debugging run is never mistaken for a production one.
 */
void sandbox_warn_disabled(void);

#ifdef ZERNEL_TEST_HOOKS
/*
 * Test builds only (never the shipped binary): makes sandbox_enter() fail at
 * step, as if the kernel had refused it, so tests can see it fail closed.
 */
void sandbox_test_fail_step(enum sandbox_step step);
#endif

#endif /* ZERNEL_SANDBOX_H */
