/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the /proc scan remembers (collector/probes/proc_seen.h): a process's maps
 * are read once, again after it execs another program or at a full scan,
 * and not after it is gone and swept; the library files processes map are
 * counted per file, and a file's count falls as its processes go.  Real
 * processes, real exec.  Unprivileged (its own children).
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/probes/proc_seen.h"
#include "shm/shm_layout.h"
#include "tests/support/testutil.h"

/* A child that execs prog once told to (a byte on the pipe); its pid. */
static pid_t child_then_exec(const char *prog, int *go)
{
	int fds[2];
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char c;

		close(fds[1]);
		if (read(fds[0], &c, 1) == 1)
			execl(prog, prog, "60", (char *)NULL);
		_exit(0);
	}
	close(fds[0]);
	*go = fds[1];
	return pid;
}

static void exe_of(pid_t pid, struct stat *st)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ck_assert_int_eq(stat(path, st), 0);
}

static void wait_exec(pid_t pid, const struct stat *before)
{
	struct stat after;

	for (int i = 0; i < 200; i++) {
		exe_of(pid, &after);
		if (after.st_ino != before->st_ino || after.st_dev != before->st_dev)
			return;
		tu_sleep_ms(10);
	}
	ck_abort_msg("pid %d never ran its new program", (int)pid);
}

static void reap(pid_t pid, int go)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(go);
}

START_TEST(maps_are_read_once_per_program)
{
	struct proc_seen *ps = proc_seen_new();
	struct stat before;
	int go;
	pid_t pid = child_then_exec("/bin/sleep", &go);

	ck_assert_ptr_nonnull(ps);
	exe_of(pid, &before);
	ck_assert_int_eq(proc_seen_mark(ps, (uint32_t)pid, 1, 0, 1), 1);
	ck_assert_int_eq(proc_seen_mark(ps, (uint32_t)pid, 2, 0, 1), 0);
	ck_assert_int_eq(proc_seen_mark(ps, (uint32_t)pid, 3, 0, 1), 0);
	/* A full scan reads it again. */
	ck_assert_int_eq(proc_seen_mark(ps, (uint32_t)pid, 4, 1, 1), 1);
	ck_assert_int_eq(proc_seen_mark(ps, (uint32_t)pid, 5, 0, 1), 0);

	/* The same pid, another program. */
	ck_assert_int_eq(write(go, "x", 1), 1);
	wait_exec(pid, &before);
	/* Its program is looked at only when the kernel saw it fork or exec. */
	ck_assert_int_eq(proc_seen_mark(ps, (uint32_t)pid, 6, 0, 0), 0);
	ck_assert_int_eq(proc_seen_mark(ps, (uint32_t)pid, 7, 0, 1), 1);
	ck_assert_int_eq(proc_seen_mark(ps, (uint32_t)pid, 8, 0, 1), 0);
	ck_assert_uint_eq(proc_seen_count(ps), 1);

	/* Gone: swept, and a later process under the pid is read afresh. */
	reap(pid, go);
	proc_seen_sweep(ps, 9);
	ck_assert_uint_eq(proc_seen_count(ps), 0);
	proc_seen_free(ps);
}
END_TEST

START_TEST(files_are_counted_while_their_processes_live)
{
	struct proc_seen *ps = proc_seen_new();

	ck_assert_ptr_nonnull(ps);
	/* Pids nothing runs under: no program, still remembered. */
	ck_assert_int_eq(proc_seen_mark(ps, 4000001, 1, 0, 1), 1);
	ck_assert_int_eq(proc_seen_mark(ps, 4000002, 1, 0, 1), 1);
	proc_seen_add_file(ps, 4000001, 8, 100);
	proc_seen_add_file(ps, 4000001, 8, 100);	/* twice: once */
	proc_seen_add_file(ps, 4000001, 8, 200);
	proc_seen_add_file(ps, 4000002, 8, 100);
	proc_seen_add_file(ps, 4000003, 8, 300);	/* not marked: ignored */
	ck_assert_uint_eq(proc_seen_mappers(ps, 8, 100), 2);
	ck_assert_uint_eq(proc_seen_mappers(ps, 8, 200), 1);
	ck_assert_uint_eq(proc_seen_mappers(ps, 8, 300), 0);
	ck_assert_uint_eq(proc_seen_mappers(ps, 9, 100), 0);

	/* Only the second is in /proc at scan 2. */
	ck_assert_int_eq(proc_seen_mark(ps, 4000002, 2, 0, 1), 0);
	proc_seen_sweep(ps, 2);
	ck_assert_uint_eq(proc_seen_count(ps), 1);
	ck_assert_uint_eq(proc_seen_mappers(ps, 8, 100), 1);
	ck_assert_uint_eq(proc_seen_mappers(ps, 8, 200), 0);

	/* Read again at a full scan: its files start afresh. */
	ck_assert_int_eq(proc_seen_mark(ps, 4000002, 3, 1, 1), 1);
	ck_assert_uint_eq(proc_seen_mappers(ps, 8, 100), 0);
	proc_seen_add_file(ps, 4000002, 8, 100);
	ck_assert_uint_eq(proc_seen_mappers(ps, 8, 100), 1);
	proc_seen_free(ps);
}
END_TEST

/*
 * A forked child that runs its parent's program takes the parent's files
 * and reasons, when the parent was looked at in the same scan; one that
 * ran exec, or whose parent is known only from an earlier scan, is read.
 * Real children of this process: forked, and one exec'd.
 */
START_TEST(a_forked_child_takes_its_parents_files)
{
	struct proc_seen *ps = proc_seen_new();
	uint32_t self = (uint32_t)getpid();
	int go1, go2, go3;
	pid_t c1 = child_then_exec("/bin/sleep", &go1);
	pid_t c2 = child_then_exec("/bin/sleep", &go2);
	pid_t c3 = child_then_exec("/bin/sleep", &go3);
	struct stat forked;

	ck_assert_ptr_nonnull(ps);
	ck_assert_int_eq(proc_seen_mark(ps, self, 1, 0, 1), 1);
	proc_seen_add_file(ps, self, 8, 100);
	proc_seen_add_file(ps, self, 8, 200);
	proc_seen_set_reasons(ps, self, SHM_WATCH_CUDA);

	ck_assert_int_eq(proc_seen_mark(ps, (uint32_t)c1, 1, 0, 1), 1);
	ck_assert_int_eq(proc_seen_inherit(ps, (uint32_t)c1, self, 1), SHM_WATCH_CUDA);
	ck_assert_uint_eq(proc_seen_mappers(ps, 8, 100), 2);
	ck_assert_uint_eq(proc_seen_mappers(ps, 8, 200), 2);
	/* Once: it has files now. */
	ck_assert_int_eq(proc_seen_inherit(ps, (uint32_t)c1, self, 1), -ENOENT);
	ck_assert_uint_eq(proc_seen_mappers(ps, 8, 100), 2);

	/* Scan 2 finds c2 before its parent: the parent's files may be stale. */
	ck_assert_int_eq(proc_seen_mark(ps, (uint32_t)c2, 2, 0, 1), 1);
	ck_assert_int_eq(proc_seen_inherit(ps, (uint32_t)c2, self, 2), -ENOENT);
	ck_assert_int_eq(proc_seen_inherit(ps, (uint32_t)c2, 4000009, 2), -ENOENT);
	ck_assert_int_eq(proc_seen_mark(ps, self, 2, 0, 0), 0);
	ck_assert_int_eq(proc_seen_inherit(ps, (uint32_t)c2, self, 2), SHM_WATCH_CUDA);
	ck_assert_uint_eq(proc_seen_mappers(ps, 8, 200), 3);

	/* c3 runs another program: its maps are its own. */
	exe_of(c3, &forked);
	ck_assert_int_eq(write(go3, "x", 1), 1);
	wait_exec(c3, &forked);
	ck_assert_int_eq(proc_seen_mark(ps, (uint32_t)c3, 2, 0, 1), 1);
	ck_assert_int_eq(proc_seen_inherit(ps, (uint32_t)c3, self, 2), -ENOENT);

	/* The children gone, the parent's own count is left. */
	reap(c1, go1);
	reap(c2, go2);
	reap(c3, go3);
	ck_assert_int_eq(proc_seen_mark(ps, self, 3, 0, 0), 0);
	proc_seen_sweep(ps, 3);
	ck_assert_uint_eq(proc_seen_count(ps), 1);
	ck_assert_uint_eq(proc_seen_mappers(ps, 8, 100), 1);
	ck_assert_uint_eq(proc_seen_mappers(ps, 8, 200), 1);
	proc_seen_free(ps);
}
END_TEST

/* A node's worth of processes coming and going keeps the counts exact. */
START_TEST(churn_keeps_the_table_and_counts_exact)
{
	struct proc_seen *ps = proc_seen_new();
	uint64_t scan = 0;

	ck_assert_ptr_nonnull(ps);
	for (int round = 0; round < 20; round++) {
		scan++;
		/* 5,000 live pids a round, a fifth of them new; each maps file pid % 7. */
		for (uint32_t k = 0; k < 5000; k++) {
			uint32_t pid = 5000000 + (uint32_t)round * 1000 + k;
			int r = proc_seen_mark(ps, pid, scan, 0, 1);

			ck_assert_int_ge(r, 0);
			if (r == 1)
				proc_seen_add_file(ps, pid, 1, pid % 7);
		}
		proc_seen_sweep(ps, scan);
		ck_assert_uint_eq(proc_seen_count(ps), 5000);
		for (uint64_t f = 0; f < 7; f++) {
			uint32_t want = 0;

			for (uint32_t k = 0; k < 5000; k++)
				want += (5000000 + (uint32_t)round * 1000 + k) % 7 == f;
			ck_assert_uint_eq(proc_seen_mappers(ps, 1, f), want);
		}
	}
	proc_seen_free(ps);
}
END_TEST

Suite *proc_seen_suite(void);
Suite *proc_seen_suite(void)
{
	Suite *s = suite_create("proc_seen");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, maps_are_read_once_per_program);
	tcase_add_test(tc, files_are_counted_while_their_processes_live);
	tcase_add_test(tc, a_forked_child_takes_its_parents_files);
	tcase_add_test(tc, churn_keeps_the_table_and_counts_exact);
	suite_add_tcase(s, tc);
	return s;
}
