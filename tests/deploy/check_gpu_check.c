/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `make gpu-check` (tools/gpu_check.py) where it cannot run: no GPU here,
 * so it must say why and exit 77, not fail or pass; and the PyTorch jobs
 * it sends to a GPU node must at least be valid Python, since nothing
 * else runs them before a GPU does.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/testutil.h"

#define PY	"/usr/bin/python3"

/* Runs cmd with stdout and stderr into a file; its text in *out (malloc'd), the status returned. */
static int run_to(char **out, const char *cmd)
{
	char path[64];
	int st;

	snprintf(path, sizeof(path), "/tmp/zernel-gpucheck-%d.txt", (int)getpid());
	st = tu_system("%s >%s 2>&1", cmd, path);
	*out = tu_read_file(path, NULL);
	unlink(path);
	ck_assert_ptr_nonnull(*out);
	return st;
}

START_TEST(without_a_gpu_it_says_why_and_exits_77)
{
	char cmd[1024], *out;
	int st;

	snprintf(cmd, sizeof(cmd), "cd %s && PATH=/usr/sbin:/usr/bin:/sbin:/bin " PY
		 " tools/gpu_check.py --build %s --python " PY, tu_src_dir(), tu_build_dir());
	st = run_to(&out, cmd);
	if (access("/usr/bin/nvidia-smi", X_OK) == 0) {
		fprintf(stderr, "gpu_check: this node has nvidia-smi; status %d\n%s", st, out);
		free(out);
		return;
	}
	ck_assert_msg(st == 77, "status %d, want 77:\n%s", st, out);
	ck_assert_msg(strstr(out, "gpu-check: NOT RUN: "), "no reason given:\n%s", out);
	free(out);
}
END_TEST

START_TEST(its_jobs_are_valid_python)
{
	char cmd[2048], *out;
	int st;

	snprintf(cmd, sizeof(cmd), "cd %s && " PY " -c '"
		 "import sys; sys.path.insert(0, \"tools\"); import gpu_check as g\n"
		 "jobs = [g.MEMORY_JOB, g.SYNC_JOB, g.NCCL_JOB] + "
		 "[v.replace(\"VERDICT_S\", \"1\") + g.JOB_LOOP for v in g.VERDICT_JOBS.values()]\n"
		 "for i, code in enumerate(jobs): compile(code, \"job%%d\" %% i, \"exec\")\n"
		 "print(len(jobs), \"jobs compile\")'", tu_src_dir());
	st = run_to(&out, cmd);
	ck_assert_msg(st == 0 && strstr(out, "5 jobs compile"), "status %d:\n%s", st, out);
	free(out);
}
END_TEST

Suite *gpu_check_suite(void);
Suite *gpu_check_suite(void)
{
	Suite *s = suite_create("gpu_check");
	TCase *tc = tcase_create("elsewhere");

	tcase_add_test(tc, without_a_gpu_it_says_why_and_exits_77);
	tcase_add_test(tc, its_jobs_are_valid_python);
	suite_add_tcase(s, tc);
	return s;
}
