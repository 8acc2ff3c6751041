/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The collector's capability handling (collector/privsep/privileges.c), checked
 * against the kernel: after the drop, /proc/PID/status shows exactly the
 * steady-state set, and the kernel still grants what discovery does (a
 * uprobe perf event or a uprobe_multi link, whichever the drop was for,
 * another user's /proc/PID/maps, a BPF map) while refusing what was
 * dropped.  Each drop happens in a child process.  Root.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/privsep/privileges.h"
#include "collector/probes/uprobe_multi.h"
#include "tests/collector/tu_multi.h"
#include "tests/support/testutil.h"

#define BIT(c)		(1ull << (c))
#define STEADY_MASK	(BIT(CAP_BPF) | BIT(CAP_PERFMON) | BIT(CAP_SYS_PTRACE) | \
			 BIT(CAP_DAC_READ_SEARCH))

struct report {
	unsigned long long eff, prm, bnd, inh, amb;
	int nnp;
	int uprobe_errno;	/* perf_event_open(uprobe on "/"): EINVAL = allowed */
	int multi_errno;	/* a uprobe_multi link on a missing file: ENOENT = allowed */
	int maps_errno;		/* open(/proc/<nobody>/maps): 0 = readable */
	int root_errno;		/* open(/proc/<nobody>/root/): 0 = reachable */
	int bpf_errno;		/* BPF_MAP_CREATE: 0 = allowed */
	int rlimit_errno;	/* raising RLIMIT_NOFILE's hard limit: 0 = allowed */
	int chown_errno;	/* chown of a root file to another user: 0 = allowed */
	int check_ret;		/* privileges_check() */
	char missing[256];
};

static pid_t nobody_pid;

static void nobody_setup(void)
{
	nobody_pid = fork();
	ck_assert_int_ge(nobody_pid, 0);
	if (nobody_pid == 0) {
		if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(1);
		execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	/* Until it runs sleep as nobody. */
	for (int waited = 0; waited < 2000; waited += 10) {
		char path[64], *st;
		int ok;

		snprintf(path, sizeof(path), "/proc/%d/status", (int)nobody_pid);
		st = tu_read_file(path, NULL);
		ok = st && strstr(st, "Name:\tsleep\n") && strstr(st, "\nUid:\t65534\t");
		free(st);
		if (ok)
			return;
		tu_sleep_ms(10);
	}
	ck_abort_msg("the nobody process did not start");
}

static void nobody_teardown(void)
{
	tu_stop(nobody_pid, SIGKILL, 1000);
}

static void read_status(struct report *r)
{
	char *s = tu_read_file("/proc/self/status", NULL), *p;

	ck_assert_ptr_nonnull(s);
	if ((p = strstr(s, "\nCapEff:")))
		sscanf(p + 8, "%llx", &r->eff);
	if ((p = strstr(s, "\nCapPrm:")))
		sscanf(p + 8, "%llx", &r->prm);
	if ((p = strstr(s, "\nCapBnd:")))
		sscanf(p + 8, "%llx", &r->bnd);
	if ((p = strstr(s, "\nCapInh:")))
		sscanf(p + 8, "%llx", &r->inh);
	if ((p = strstr(s, "\nCapAmb:")))
		sscanf(p + 8, "%llx", &r->amb);
	if ((p = strstr(s, "\nNoNewPrivs:")))
		sscanf(p + 12, "%d", &r->nnp);
	free(s);
}

static int try_uprobe(void)
{
	struct perf_event_attr attr;
	unsigned int type = 0;
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	long fd;

	if (!f || fscanf(f, "%u", &type) != 1) {
		if (f)
			fclose(f);
		return ENOENT;
	}
	fclose(f);
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = type;
	attr.disabled = 1;
	attr.uprobe_path = (uint64_t)(uintptr_t)"/";	/* refused as not a file, if at all */
	fd = syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	return errno;
}

static void probe_kernel(struct report *r)
{
	union bpf_attr attr;
	struct rlimit rl;
	char path[64], file[64];
	int fd;

	r->uprobe_errno = try_uprobe();
	r->multi_errno = tu_multi_try();
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)nobody_pid);
	fd = open(path, O_RDONLY);
	r->maps_errno = fd < 0 ? errno : 0;
	if (fd >= 0) {
		char buf[64];

		if (read(fd, buf, sizeof(buf)) <= 0)	/* the check is at read time too */
			r->maps_errno = errno ? errno : EIO;
		close(fd);
	}
	snprintf(path, sizeof(path), "/proc/%d/root/", (int)nobody_pid);
	fd = open(path, O_RDONLY | O_DIRECTORY);
	r->root_errno = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 8;
	attr.max_entries = 1;
	fd = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	r->bpf_errno = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	/* Lowering a hard limit is free; raising it back needs CAP_SYS_RESOURCE. */
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max = rl.rlim_max - 1;
	setrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max = rl.rlim_max + 1;
	r->rlimit_errno = setrlimit(RLIMIT_NOFILE, &rl) < 0 ? errno : 0;
	snprintf(file, sizeof(file), "/tmp/zernel-priv-%d", (int)getpid());
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	r->chown_errno = fd >= 0 && fchown(fd, 65534, 65534) < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	unlink(file);
}

enum child_action { DROP_STEADY_PERF, DROP_STEADY_MULTI, DROP_ALL, NO_DROP, LOWER_BPF_PTRACE,
		    LOWER_PTRACE, LOWER_SYS_ADMIN };

/* Removes caps from the effective and permitted sets, nothing else. */
static int lower(const cap_value_t *caps, int n)
{
	cap_t c = cap_get_proc();
	int r;

	if (!c)
		return -1;
	r = cap_set_flag(c, CAP_EFFECTIVE, n, caps, CAP_CLEAR) < 0 ||
	    cap_set_flag(c, CAP_PERMITTED, n, caps, CAP_CLEAR) < 0 ||
	    cap_set_proc(c) < 0 ? -1 : 0;
	cap_free(c);
	return r;
}

/* Runs action in a child, which reports through a pipe; returns the drop's result. */
static int in_child(enum child_action action, struct report *r)
{
	int p[2], status, ret = 0;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct report c;
		cap_value_t bp[] = { CAP_BPF, CAP_SYS_PTRACE }, pt[] = { CAP_SYS_PTRACE },
			    sa[] = { CAP_SYS_ADMIN };

		memset(&c, 0, sizeof(c));
		switch (action) {
		case DROP_STEADY_PERF:	ret = privileges_drop_to_steady(1); break;
		case DROP_STEADY_MULTI:	ret = privileges_drop_to_steady(0); break;
		case DROP_ALL:		ret = privileges_drop_all(); break;
		case NO_DROP:		break;
		case LOWER_BPF_PTRACE:	ret = lower(bp, 2); break;
		case LOWER_PTRACE:	ret = lower(pt, 1); break;
		case LOWER_SYS_ADMIN:	ret = lower(sa, 1); break;
		}
		if (action == LOWER_BPF_PTRACE || action == NO_DROP)
			c.check_ret = privileges_check(c.missing, sizeof(c.missing), 1);
		read_status(&c);
		probe_kernel(&c);
		c.check_ret = action == LOWER_BPF_PTRACE || action == NO_DROP ? c.check_ret : ret;
		if (write(p[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
			_exit(3);
		_exit(ret < 0 ? 2 : 0);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], r, sizeof(*r)), (ssize_t)sizeof(*r));
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status) ? -1 : 0;
}

/* After the drop for action, the sets are exactly want. */
static void expect_steady(enum child_action action, unsigned long long want)
{
	struct report r;

	ck_assert_int_eq(in_child(action, &r), 0);
	ck_assert_msg(r.eff == want, "CapEff %llx, want %llx", r.eff, want);
	ck_assert_msg(r.prm == want, "CapPrm %llx, want %llx", r.prm, want);
	ck_assert_msg(r.bnd == want, "CapBnd %llx, want %llx", r.bnd, want);
	ck_assert_uint_eq(r.inh, 0);
	ck_assert_uint_eq(r.amb, 0);
	ck_assert_int_eq(r.nnp, 1);
}

/*
 * With perf uprobes, CAP_SYS_ADMIN stays where the kernel wants it for
 * them; with uprobe_multi links it goes.
 */
START_TEST(steady_drop_keeps_exactly_the_steady_set)
{
	int need_admin;

	if (tu_skip_unless_root("steady_drop_keeps_exactly_the_steady_set"))
		return;
	need_admin = privileges_uprobes_need_sys_admin();
	ck_assert_int_ge(need_admin, 0);
	expect_steady(DROP_STEADY_PERF, STEADY_MASK | (need_admin ? BIT(CAP_SYS_ADMIN) : 0));
	if (uprobe_multi_attach_type() < 0) {
		tu_skip_missing("steady_drop_keeps_exactly_the_steady_set: no uprobe_multi links "
				"on this kernel, the drop for them not checked\n");
		return;
	}
	expect_steady(DROP_STEADY_MULTI, STEADY_MASK);
}
END_TEST

START_TEST(after_the_drop_discovery_still_works)
{
	struct report r;

	if (tu_skip_unless_root("after_the_drop_discovery_still_works"))
		return;
	if (uprobe_multi_attach_type() >= 0) {
		ck_assert_int_eq(in_child(DROP_STEADY_MULTI, &r), 0);
		/* A uprobe_multi link can still be made: refused for the path only. */
		ck_assert_msg(r.multi_errno == ENOENT, "uprobe_multi link: %s",
			      strerror(r.multi_errno));
	}
	ck_assert_int_eq(in_child(DROP_STEADY_PERF, &r), 0);
	/* A uprobe can still be created: refused for the path, not for privilege. */
	ck_assert_msg(r.uprobe_errno == EINVAL, "uprobe: %s", strerror(r.uprobe_errno));
	ck_assert_msg(r.maps_errno == 0, "another user's maps: %s", strerror(r.maps_errno));
	ck_assert_msg(r.root_errno == 0, "another user's root: %s", strerror(r.root_errno));
	ck_assert_msg(r.bpf_errno == 0, "BPF map: %s", strerror(r.bpf_errno));
	/* And what was dropped is gone. */
	ck_assert_int_eq(r.rlimit_errno, EPERM);
	ck_assert_int_eq(r.chown_errno, EPERM);
}
END_TEST

START_TEST(drop_all_leaves_nothing)
{
	struct report r;

	if (tu_skip_unless_root("drop_all_leaves_nothing"))
		return;
	ck_assert_int_eq(in_child(DROP_ALL, &r), 0);
	ck_assert_uint_eq(r.eff, 0);
	ck_assert_uint_eq(r.prm, 0);
	ck_assert_uint_eq(r.bnd, 0);
	ck_assert_uint_eq(r.amb, 0);
	ck_assert_int_eq(r.nnp, 1);
	ck_assert_int_eq(r.bpf_errno, EPERM);
	ck_assert_int_eq(r.uprobe_errno, EACCES);
	ck_assert_int_eq(r.multi_errno, uprobe_multi_attach_type() < 0 ? ENOTSUP : EPERM);
	ck_assert_int_eq(r.maps_errno, EACCES);
	ck_assert_int_eq(r.root_errno, EACCES);
}
END_TEST

START_TEST(check_names_exactly_what_is_missing)
{
	struct report r;

	if (tu_skip_unless_root("check_names_exactly_what_is_missing"))
		return;
	ck_assert_int_eq(in_child(NO_DROP, &r), 0);
	ck_assert_int_eq(r.check_ret, 0);
	/* Optional ones are named exactly when this root lacks them. */
	ck_assert_int_eq(strstr(r.missing, "CAP_SYS_RESOURCE") != NULL,
			 !(r.eff & BIT(CAP_SYS_RESOURCE)));
	ck_assert_int_eq(strstr(r.missing, "CAP_DAC_READ_SEARCH") != NULL,
			 !(r.eff & BIT(CAP_DAC_READ_SEARCH)));
	ck_assert_ptr_null(strstr(r.missing, "CAP_BPF"));
	/* With root's capabilities, each probe of the kernel succeeds. */
	ck_assert_int_eq(r.uprobe_errno, EINVAL);
	ck_assert_int_eq(r.multi_errno, uprobe_multi_attach_type() < 0 ? ENOTSUP : ENOENT);
	ck_assert_int_eq(r.maps_errno, 0);
	ck_assert_int_eq(r.root_errno, 0);
	ck_assert_int_eq(r.bpf_errno, 0);
	ck_assert_int_eq(r.chown_errno, 0);
	if (r.eff & BIT(CAP_SYS_RESOURCE))
		ck_assert_int_eq(r.rlimit_errno, 0);
	ck_assert_int_eq(in_child(LOWER_BPF_PTRACE, &r), 0);
	ck_assert_int_eq(r.check_ret, -EPERM);
	ck_assert_ptr_nonnull(strstr(r.missing, "CAP_BPF"));
	ck_assert_ptr_nonnull(strstr(r.missing, "CAP_SYS_PTRACE"));
	ck_assert_ptr_null(strstr(r.missing, "CAP_PERFMON"));
}
END_TEST

/* Why each kept capability is kept: without it the kernel says no. */
START_TEST(the_kept_capabilities_are_needed)
{
	struct report r;
	int need_admin;

	if (tu_skip_unless_root("the_kept_capabilities_are_needed"))
		return;
	/* Another user's /proc/PID/root, where discovery finds its libraries. */
	ck_assert_int_eq(in_child(LOWER_PTRACE, &r), 0);
	ck_assert_msg(r.root_errno == EACCES, "root without CAP_SYS_PTRACE: %s",
		      strerror(r.root_errno));
	need_admin = privileges_uprobes_need_sys_admin();
	ck_assert_int_ge(need_admin, 0);
	ck_assert_int_eq(in_child(LOWER_SYS_ADMIN, &r), 0);
	/* The module's answer matches what the kernel does without CAP_SYS_ADMIN. */
	ck_assert_int_eq(r.uprobe_errno, need_admin ? EACCES : EINVAL);
	/* uprobe_multi links do without it: why the drop for them lets it go. */
	ck_assert_int_eq(r.multi_errno, uprobe_multi_attach_type() < 0 ? ENOTSUP : ENOENT);
}
END_TEST

Suite *privileges_suite(void);

Suite *privileges_suite(void)
{
	Suite *s = suite_create("privileges");
	TCase *tc = tcase_create("root");

	tcase_add_checked_fixture(tc, nobody_setup, nobody_teardown);
	tcase_add_test(tc, steady_drop_keeps_exactly_the_steady_set);
	tcase_add_test(tc, after_the_drop_discovery_still_works);
	tcase_add_test(tc, drop_all_leaves_nothing);
	tcase_add_test(tc, check_names_exactly_what_is_missing);
	tcase_add_test(tc, the_kept_capabilities_are_needed);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}
