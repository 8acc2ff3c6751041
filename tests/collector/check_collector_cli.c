/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * zernel-collector's command line, run as the built binary: help, version,
 * and one clear line plus exit code 2 for every bad flag or value, before
 * any segment is created.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/testutil.h"

struct run {
	int status;		/* exit code, or -1 */
	char *out;		/* stdout + stderr */
};

/* Runs the collector with args (NULL-terminated), waits up to 5 s. */
static struct run run_collector(const char *const *args)
{
	char bin[512], log[128];
	char *argv[32];
	struct run r = { .status = -1 };
	size_t n = 0;
	pid_t pid;
	int st;

	tu_build_path(bin, sizeof(bin), "zernel-collector");
	snprintf(log, sizeof(log), "/tmp/zernel-cli-%d.log", (int)getpid());
	argv[n++] = bin;
	while (*args && n < sizeof(argv) / sizeof(argv[0]) - 1)
		argv[n++] = (char *)*args++;
	argv[n] = NULL;
	pid = tu_spawn(argv, log);
	ck_assert_int_gt(pid, 0);
	st = tu_stop(pid, 0, 5000);
	if (st != -1 && WIFEXITED(st))
		r.status = WEXITSTATUS(st);
	r.out = tu_read_file(log, NULL);
	ck_assert_ptr_nonnull(r.out);
	unlink(log);
	return r;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Exit 2 and one line that names the flag (and the value, when given). */
static void expect_refused(const char *const *args, const char *flag, const char *value)
{
	struct run r = run_collector(args);

	ck_assert_msg(r.status == 2, "%s %s: exit %d, want 2; output: %s",
		      flag, value ? value : "", r.status, r.out);
	ck_assert_msg(strstr(r.out, flag) != NULL, "message does not name %s: %s", flag, r.out);
	if (value)
		ck_assert_msg(strstr(r.out, value) != NULL,
			      "message does not name '%s': %s", value, r.out);
	ck_assert_msg(lines(r.out) == 1, "want one line, got: %s", r.out);
	ck_assert_msg(strstr(r.out, "zernel-collector: ") == r.out, "unprefixed: %s", r.out);
	free(r.out);
}

START_TEST(help_prints_usage_and_exits_zero)
{
	const char *args[] = { "--help", NULL };
	struct run r = run_collector(args);

	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "Usage: zernel-collector"));
	ck_assert_ptr_nonnull(strstr(r.out, "--simulate"));
	ck_assert_ptr_nonnull(strstr(r.out, "--publish-interval"));
	ck_assert_ptr_nonnull(strstr(r.out, "dataloader-stall"));
	free(r.out);
}
END_TEST

START_TEST(version_prints_name_and_version)
{
	const char *args[] = { "--version", NULL };
	struct run r = run_collector(args);

	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out, "zernel-collector " ZERNEL_VERSION "\n");
	free(r.out);
}
END_TEST

START_TEST(unknown_flags_exit_2_naming_them)
{
	const char *a1[] = { "--simulate", "--frobnicate", NULL };
	const char *a2[] = { "-x", NULL };
	const char *a3[] = { "--simulate", "stray", NULL };
	const char *a4[] = { "--help=yes", NULL };

	expect_refused(a1, "--frobnicate", NULL);
	expect_refused(a2, "-x", NULL);
	expect_refused(a3, "stray", NULL);
	expect_refused(a4, "--help=yes", NULL);
}
END_TEST

START_TEST(bad_publish_intervals_are_refused)
{
	const char *a1[] = { "--simulate", "--publish-interval", "50", NULL };
	const char *a2[] = { "--simulate", "--publish-interval", "70000", NULL };
	const char *a3[] = { "--simulate", "--publish-interval", "abc", NULL };
	const char *a4[] = { "--simulate", "--publish-interval=-5", NULL };
	const char *a5[] = { "--simulate", "--publish-interval", NULL };

	expect_refused(a1, "--publish-interval", "50");
	expect_refused(a2, "--publish-interval", "70000");
	expect_refused(a3, "--publish-interval", "abc");
	expect_refused(a4, "--publish-interval", "-5");
	expect_refused(a5, "--publish-interval", NULL);
}
END_TEST

START_TEST(bad_nvml_intervals_are_refused)
{
	const char *a1[] = { "--simulate", "--nvml-interval", "99", NULL };
	const char *a2[] = { "--simulate", "--nvml-interval", "600001", NULL };
	const char *a3[] = { "--simulate", "--nvml-interval", "5s", NULL };

	expect_refused(a1, "--nvml-interval", "99");
	expect_refused(a2, "--nvml-interval", "600001");
	expect_refused(a3, "--nvml-interval", "5s");
}
END_TEST

START_TEST(bad_simulation_values_are_refused)
{
	const char *a1[] = { "--simulate", "--scenario", "nope", NULL };
	const char *a2[] = { "--simulate", "--processes", "0", NULL };
	const char *a3[] = { "--simulate", "--processes", "2000", "--max-procs", "100", NULL };
	const char *a4[] = { "--simulate", "--gpus", "0", NULL };
	const char *a5[] = { "--scenario", "oom", NULL };
	const char *a6[] = { "--simulate", "--window", "0", NULL };
	const char *a7[] = { "--simulate", "--max-procs", "99999999", NULL };

	expect_refused(a1, "--scenario", "nope");
	expect_refused(a2, "--processes", "0");
	expect_refused(a3, "--processes", "2000");
	expect_refused(a4, "--gpus", "0");
	expect_refused(a5, "--scenario", NULL);
	expect_refused(a6, "--window", "0");
	expect_refused(a7, "--max-procs", "99999999");
}
END_TEST

START_TEST(bad_names_pids_and_totals_are_refused)
{
	const char *a1[] = { "--simulate", "--shm", "noslash", NULL };
	const char *a2[] = { "--simulate", "--shm", "/a/b", NULL };
	const char *a3[] = { "--simulate", "--pid", "0", NULL };
	const char *a4[] = { "--simulate", "--pid", "12ab", NULL };
	const char *a5[] = { "--simulate", "--comm", "a_name_far_too_long", NULL };
	const char *a6[] = { "--simulate", "--gpu-memory-total", "1,,2", NULL };
	const char *a7[] = { "--simulate", "--gpu-memory-total", "0", NULL };
	const char *a8[] = { "--simulate", "--gpu-memory-total", "80G", NULL };
	const char *a9[] = { "--simulate", "--python-frames-walk", "sometimes", NULL };
	const char *a10[] = { "--simulate", "--uprobe-links", "kprobe", NULL };
	const char *a11[] = { "--simulate", "--process-slots", "513", NULL };
	const char *a12[] = { "--simulate", "--process-slots", "-1", NULL };
	const char *a13[] = { "--simulate", "--runq-source", "schedstat", NULL };

	expect_refused(a1, "--shm", "noslash");
	expect_refused(a2, "--shm", "/a/b");
	expect_refused(a3, "--pid", "0");
	expect_refused(a4, "--pid", "12ab");
	expect_refused(a5, "--comm", "a_name_far_too_long");
	expect_refused(a6, "--gpu-memory-total", "1,,2");
	expect_refused(a7, "--gpu-memory-total", "0");
	expect_refused(a8, "--gpu-memory-total", "80G");
	expect_refused(a9, "--python-frames-walk", "sometimes");
	expect_refused(a10, "--uprobe-links", "kprobe");
	expect_refused(a11, "--process-slots", "513");
	expect_refused(a12, "--process-slots", "-1");
	expect_refused(a13, "--runq-source", "schedstat");
}
END_TEST

START_TEST(refused_flags_create_no_segment)
{
	char name[64], path[128];
	const char *args[] = { "--simulate", "--shm", name, "--processes", "0", NULL };
	struct stat st;
	struct run r;

	tu_unique_shm_name(name, sizeof(name));
	snprintf(path, sizeof(path), "/dev/shm%s", name);
	r = run_collector(args);
	ck_assert_int_eq(r.status, 2);
	ck_assert_int_ne(stat(path, &st), 0);
	free(r.out);
}
END_TEST

/*
 * A full /dev/shm (a tmpfs of 64 KiB, filled, in a mount namespace of its
 * own): a clear error naming the segment and the cause, exit 1, no
 * SIGBUS on the first publish.
 */
START_TEST(full_dev_shm_is_a_clear_error)
{
	char bin[512], out[128], *text;
	int st;

	if (tu_skip_unless_root("full_dev_shm_is_a_clear_error"))
		return;
	snprintf(out, sizeof(out), "/tmp/zernel-shmfull-%d.txt", (int)getpid());
	st = tu_system("unshare -m sh -c 'mount --make-rprivate / && "
		       "mount -t tmpfs -o size=64k zernel-full /dev/shm && "
		       "dd if=/dev/zero of=/dev/shm/filler bs=4k count=16 2>/dev/null; "
		       "exec \"%s\" --simulate --shm /zernel-full' > %s 2>&1",
		       tu_build_path(bin, sizeof(bin), "zernel-collector"), out);
	text = tu_read_file(out, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(st == 1, "exit %d: %s", st, text);
	ck_assert_msg(strstr(text, "cannot create the shared memory segment /zernel-full") &&
		      strstr(text, "No space left on device"), "unclear: %s", text);
	free(text);
	unlink(out);
}
END_TEST

Suite *collector_cli_suite(void);
Suite *collector_cli_suite(void)
{
	Suite *s = suite_create("collector_cli");
	TCase *tc = tcase_create("flags");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, help_prints_usage_and_exits_zero);
	tcase_add_test(tc, version_prints_name_and_version);
	tcase_add_test(tc, unknown_flags_exit_2_naming_them);
	tcase_add_test(tc, bad_publish_intervals_are_refused);
	tcase_add_test(tc, bad_nvml_intervals_are_refused);
	tcase_add_test(tc, bad_simulation_values_are_refused);
	tcase_add_test(tc, bad_names_pids_and_totals_are_refused);
	tcase_add_test(tc, refused_flags_create_no_segment);
	tcase_add_test(tc, full_dev_shm_is_a_clear_error);
	suite_add_tcase(s, tc);
	return s;
}
