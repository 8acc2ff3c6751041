// SPDX-License-Identifier: BSD-2-Clause
/*
 * The exporter's sandbox (see sandbox.h).  Runs with whatever the exporter
 * was started with (usually root) and leaves it as an unprivileged user with
 * no capabilities, NO_NEW_PRIVS, tight rlimits and the seccomp allowlist of
 * sandbox_filter.c.  Every step is checked after it is taken; any failure is
 * reported and returned, and the caller exits.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "exporter/sandbox/sandbox.h"
#include "exporter/sandbox/sandbox_filter.h"

#ifdef ZERNEL_TEST_HOOKS
static enum sandbox_step test_fail_step = SANDBOX_STEP_NONE;

void sandbox_test_fail_step(enum sandbox_step step)
{
	test_fail_step = step;
}

/* Behaves as if the kernel had refused the step with EPERM. */
#define TEST_HOOK(step)							\
	do {								\
		if (test_fail_step == (step)) {				\
			errno = EPERM;					\
			return sandbox_fail(step, "refused (test hook)"); \
		}							\
	} while (0)
#else
#define TEST_HOOK(step) do { } while (0)
#endif

static const char *const step_names[SANDBOX_STEP_COUNT] = {
	[SANDBOX_STEP_NONE]		= "none",
	[SANDBOX_STEP_USER]		= "user",
	[SANDBOX_STEP_CAPS]		= "caps",
	[SANDBOX_STEP_NO_NEW_PRIVS]	= "no-new-privs",
	[SANDBOX_STEP_RLIMITS]		= "rlimits",
	[SANDBOX_STEP_SECCOMP]		= "seccomp",
};

const char *sandbox_step_name(enum sandbox_step step)
{
	if ((unsigned int)step >= SANDBOX_STEP_COUNT)
		return "unknown";
	return step_names[step];
}

void sandbox_warn_disabled(void)
{
	log_warnx("--no-sandbox: running WITHOUT the sandbox (no user change, "
		  "capabilities kept, no seccomp filter); for debugging only");
}

/* Logs "sandbox step <name> failed: <what>: <errno text>"; returns -errno. */
static int sandbox_fail(enum sandbox_step step, const char *what)
{
	int e = errno ? errno : EPERM;

	log_error("sandbox step %s failed: %s: %s", sandbox_step_name(step),
		  what, strerror(e));
	return -e;
}

/* Tasks in this thread group, from /proc/self/task; -errno when unknown. */
static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int have_effective(cap_value_t cap)
{
	cap_flag_value_t v = CAP_CLEAR;
	cap_t c = cap_get_proc();

	if (!c)
		return 0;
	if (cap_get_flag(c, cap, CAP_EFFECTIVE, &v) < 0)
		v = CAP_CLEAR;
	cap_free(c);
	return v == CAP_SET;
}

/*
 * Empties the bounding set (needs CAP_SETPCAP) and the ambient set.
 * Returns the number of bounding capabilities still set, or -errno.
 */
static int clear_bounding_and_ambient(int may_drop_bounding)
{
	int left = 0;

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)	/* EINVAL: a kernel without ambient sets */
		return -errno;
	for (cap_value_t c = 0; c < cap_max_bits(); c++) {
		int r = prctl(PR_CAPBSET_READ, c, 0, 0, 0);

		if (r < 0)	/* not a capability this kernel knows */
			continue;
		if (r == 1 && may_drop_bounding &&
		    prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
			return -errno;
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
			left++;
	}
	return left;
}

static int step_user(const char *user)
{
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;
	struct passwd *pw;
	uid_t uid;
	gid_t gid;
	int r;

	TEST_HOOK(SANDBOX_STEP_USER);
	if (getresuid(&ruid, &euid, &suid) < 0)
		return sandbox_fail(SANDBOX_STEP_USER, "getresuid");
	if (ruid != 0 && euid != 0 && suid != 0) {
		/* Already unprivileged: nothing to change to, the rest still applies. */
		log_info("sandbox: not started as root; staying uid %u (--user needs root)",
			 (unsigned int)ruid);
		return 0;
	}

	errno = 0;
	pw = getpwnam(user);
	if (!pw) {
		if (!errno)
			errno = ENOENT;
		log_error("sandbox step user failed: no user named \"%s\": %s",
			  user, strerror(errno));
		return -errno;
	}
	uid = pw->pw_uid;
	gid = pw->pw_gid;
	if (uid == 0 || gid == 0) {
		errno = EINVAL;
		log_error("sandbox step user failed: user \"%s\" has uid %u gid %u; "
			  "the exporter refuses to keep root", user,
			  (unsigned int)uid, (unsigned int)gid);
		return -EINVAL;
	}

	/*
	 * The bounding set needs CAP_SETPCAP, which setuid() takes away; a
	 * root without it (some containers) keeps a bounding set that
	 * NO_NEW_PRIVS makes inert, and the caps step says so.
	 */
	r = clear_bounding_and_ambient(have_effective(CAP_SETPCAP));
	if (r < 0) {
		errno = -r;
		return sandbox_fail(SANDBOX_STEP_USER, "clearing the capability bounding set");
	}
	if (setgroups(0, NULL) < 0)
		return sandbox_fail(SANDBOX_STEP_USER, "setgroups(0)");
	if (setresgid(gid, gid, gid) < 0)
		return sandbox_fail(SANDBOX_STEP_USER, "setresgid");
	if (setresuid(uid, uid, uid) < 0)
		return sandbox_fail(SANDBOX_STEP_USER, "setresuid");

	/* Verify, in the manner of OpenSSH's permanently_set_uid(). */
	if (getresuid(&ruid, &euid, &suid) < 0 || getresgid(&rgid, &egid, &sgid) < 0)
		return sandbox_fail(SANDBOX_STEP_USER, "reading back the ids");
	if (ruid != uid || euid != uid || suid != uid ||
	    rgid != gid || egid != gid || sgid != gid) {
		errno = EPERM;
		return sandbox_fail(SANDBOX_STEP_USER, "ids did not all change");
	}
	if (getgroups(0, NULL) != 0) {
		errno = EPERM;
		return sandbox_fail(SANDBOX_STEP_USER, "supplementary groups remain");
	}
	if (setuid(0) == 0 || seteuid(0) == 0 || setgid(0) == 0) {
		errno = EPERM;
		return sandbox_fail(SANDBOX_STEP_USER, "root could be regained");
	}
	log_debug("sandbox: now uid %u gid %u (%s)", (unsigned int)uid,
		  (unsigned int)gid, user);
	return 0;
}

static int step_caps(void)
{
	cap_t empty = NULL, now = NULL;
	int r, left, ret = 0;

	TEST_HOOK(SANDBOX_STEP_CAPS);
	empty = cap_init();		/* effective, permitted, inheritable: all clear */
	if (!empty) {
		ret = sandbox_fail(SANDBOX_STEP_CAPS, "cap_init");
		goto cleanup;
	}
	/* Bounding first: dropping it needs the CAP_SETPCAP the next call removes. */
	left = clear_bounding_and_ambient(have_effective(CAP_SETPCAP));
	if (left < 0) {
		errno = -left;
		ret = sandbox_fail(SANDBOX_STEP_CAPS, "clearing the bounding and ambient sets");
		goto cleanup;
	}
	now = cap_get_proc();
	if (!now) {
		ret = sandbox_fail(SANDBOX_STEP_CAPS, "cap_get_proc");
		goto cleanup;
	}
	/*
	 * capset(2) only when something is held: started unprivileged (the
	 * systemd unit) there is nothing to drop, and its syscall filter
	 * refuses capset like every other @privileged call.
	 */
	if (cap_compare(now, empty) != 0 && cap_set_proc(empty) < 0) {
		ret = sandbox_fail(SANDBOX_STEP_CAPS, "cap_set_proc(empty)");
		goto cleanup;
	}
	cap_free(now);
	now = cap_get_proc();
	if (!now) {
		ret = sandbox_fail(SANDBOX_STEP_CAPS, "cap_get_proc");
		goto cleanup;
	}
	r = cap_compare(now, empty);
	if (r != 0) {
		errno = EPERM;
		ret = sandbox_fail(SANDBOX_STEP_CAPS, "capabilities remain after dropping");
		goto cleanup;
	}
	for (cap_value_t c = 0; c < cap_max_bits(); c++) {
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1) {
			errno = EPERM;
			ret = sandbox_fail(SANDBOX_STEP_CAPS, "an ambient capability remains");
			goto cleanup;
		}
	}
	if (left > 0)
		/*
		 * Only a process holding CAP_SETPCAP can shrink its bounding
		 * set.  Without it, and with NO_NEW_PRIVS next, the bounding set
		 * can never grant anything: it only limits what execve() adds.
		 */
		log_info("sandbox: %d bounding-set capabilities left in place "
			 "(clearing them needs CAP_SETPCAP; NO_NEW_PRIVS makes them unusable)",
			 left);
cleanup:
	cap_free(now);
	cap_free(empty);
	return ret;
}

static int step_no_new_privs(void)
{
	TEST_HOOK(SANDBOX_STEP_NO_NEW_PRIVS);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return sandbox_fail(SANDBOX_STEP_NO_NEW_PRIVS, "prctl(PR_SET_NO_NEW_PRIVS)");
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
		errno = EPERM;
		return sandbox_fail(SANDBOX_STEP_NO_NEW_PRIVS, "flag did not stick");
	}
	return 0;
}

/*
 * Highest open descriptor, and whether any open regular file is writable
 * (then RLIMIT_FSIZE 0 would kill the process on its next log line).
 */
static int scan_fds(int *highest, int *writable_file)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	if (!d)
		return -errno;
	*highest = -1;
	*writable_file = -1;
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		char *end;
		long fd;
		int fl;

		if (de->d_name[0] == '.')
			continue;
		fd = strtol(de->d_name, &end, 10);
		if (*end || fd < 0 || fd == dirfd(d))
			continue;
		if (fd > *highest)
			*highest = (int)fd;
		fl = fcntl((int)fd, F_GETFL);
		if (fl >= 0 && (fl & O_ACCMODE) != O_RDONLY &&
		    fstat((int)fd, &st) == 0 && S_ISREG(st.st_mode))
			*writable_file = (int)fd;
	}
	closedir(d);
	return 0;
}

static int set_limit(int resource, rlim_t value)
{
	struct rlimit rl = { .rlim_cur = value, .rlim_max = value };

	return setrlimit(resource, &rl);
}

static int step_rlimits(unsigned int max_fds)
{
	struct rlimit cur;
	int highest = -1, writable = -1, r;
	rlim_t nofile;

	TEST_HOOK(SANDBOX_STEP_RLIMITS);
	if (set_limit(RLIMIT_CORE, 0) < 0)
		return sandbox_fail(SANDBOX_STEP_RLIMITS, "RLIMIT_CORE 0");
	/* Also keeps other processes of the same user from ptrace-attaching. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return sandbox_fail(SANDBOX_STEP_RLIMITS, "prctl(PR_SET_DUMPABLE, 0)");

	r = scan_fds(&highest, &writable);
	if (r < 0) {
		errno = -r;
		return sandbox_fail(SANDBOX_STEP_RLIMITS, "listing /proc/self/fd");
	}
	nofile = max_fds ? max_fds : SANDBOX_DEFAULT_NOFILE;
	if (nofile < SANDBOX_MIN_NOFILE)
		nofile = SANDBOX_MIN_NOFILE;
	if (getrlimit(RLIMIT_NOFILE, &cur) == 0 && cur.rlim_max != RLIM_INFINITY &&
	    cur.rlim_max < nofile)
		nofile = cur.rlim_max;	/* lowering is all an unprivileged process may do */
	if ((rlim_t)highest + SANDBOX_MIN_NOFILE / 2 > nofile) {
		errno = EMFILE;
		log_error("sandbox step rlimits failed: descriptor %d is already open "
			  "and RLIMIT_NOFILE would be %llu", highest,
			  (unsigned long long)nofile);
		return -EMFILE;
	}
	if (set_limit(RLIMIT_NOFILE, nofile) < 0)
		return sandbox_fail(SANDBOX_STEP_RLIMITS, "RLIMIT_NOFILE");

	if (writable < 0) {
		/* It never writes a file; seccomp refuses opening one anyway. */
		if (set_limit(RLIMIT_FSIZE, 0) < 0)
			return sandbox_fail(SANDBOX_STEP_RLIMITS, "RLIMIT_FSIZE 0");
	} else {
		log_debug("sandbox: RLIMIT_FSIZE left as is: descriptor %d is a "
			  "writable file (a log?)", writable);
	}
	return 0;
}

static int step_seccomp(enum sandbox_role role)
{
	int r;

	TEST_HOOK(SANDBOX_STEP_SECCOMP);
	r = sandbox_filter_install(role);
	if (r < 0) {
		errno = -r;
		return sandbox_fail(SANDBOX_STEP_SECCOMP, "installing the syscall allowlist");
	}
	return 0;
}

int sandbox_enter(const struct sandbox_opts *opts)
{
	const char *user = opts && opts->user ? opts->user : SANDBOX_DEFAULT_USER;
	enum sandbox_role role = opts ? opts->role : SANDBOX_ROLE_SERVE;
	int threads, r;

	threads = count_threads();
	if (threads < 0) {
		log_error("sandbox: cannot count threads in /proc/self/task (is /proc "
			  "mounted?): %s", strerror(-threads));
		return threads;
	}
	if (threads != 1) {
		log_error("sandbox: the process already runs %d threads; the sandbox "
			  "must be entered before any thread starts", threads);
		return -EBUSY;
	}

	r = step_user(user);
	if (r == 0)
		r = step_caps();
	if (r == 0)
		r = step_no_new_privs();
	if (r == 0)
		r = step_rlimits(opts ? opts->max_fds : 0);
	if (r == 0)
		r = step_seccomp(role);
	if (r == 0)
		log_info("sandbox: %s entered (uid %u, no capabilities, no_new_privs, "
			 "seccomp allowlist%s)",
			 role == SANDBOX_ROLE_WEBHOOK ? "webhook sender" : "server",
			 (unsigned int)getuid(),
			 role == SANDBOX_ROLE_WEBHOOK ? " with outgoing connections" :
			 ", no outgoing connection");
	return r;
}
