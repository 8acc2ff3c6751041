/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uprobe_multi links made with the bpf system call (collector/probes/uprobe_multi.c):
 * the attach type read from this kernel's BTF, a link over several offsets
 * of a real library whose program runs at each, and the errors the
 * collector relies on to fall back one offset at a time: a bad offset fails
 * the whole link, a missing file and an empty list fail with their own
 * errno.  Root (BPF).
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "collector/parser/elfsyms.h"
#include "collector/probes/uprobe_multi.h"
#include "tests/collector/tu_multi.h"
#include "tests/support/testutil.h"

#define LIBC	"/usr/lib/x86_64-linux-gnu/libc.so.6"

/* Skips (returns 1) where the test cannot run: not root, no such links, no libc. */
static int cannot_run(const char *test)
{
	if (tu_skip_unless_root(test))
		return 1;
	if (uprobe_multi_attach_type() < 0) {
		tu_skip_missing("%s: this kernel has no uprobe_multi links\n", test);
		return 1;
	}
	if (access(LIBC, R_OK) != 0) {
		tu_skip_missing("%s: no %s\n", test, LIBC);
		return 1;
	}
	return 0;
}

START_TEST(a_link_over_several_offsets_attaches_and_bad_input_is_refused)
{
	static const char *const names[] = { "getppid", "getpgrp" };
	uint64_t offsets[2], bad[2];
	int at, prog, fd;

	if (cannot_run("a_link_over_several_offsets_attaches_and_bad_input_is_refused"))
		return;
	at = uprobe_multi_attach_type();
	ck_assert_int_gt(at, 0);
	ck_assert_int_eq(uprobe_multi_attach_type(), at);	/* cached, the same */
	ck_assert_int_eq(elfsyms_resolve(LIBC, names, 2, offsets), 2);
	prog = tu_multi_prog(at);
	ck_assert_msg(prog >= 0, "load: %s", strerror(errno));

	fd = uprobe_multi_link(prog, at, LIBC, offsets, 2, 0);
	ck_assert_msg(fd >= 0, "entries: %s", strerror(-fd));
	close(fd);
	fd = uprobe_multi_link(prog, at, LIBC, offsets, 2, 1);
	ck_assert_msg(fd >= 0, "returns: %s", strerror(-fd));
	close(fd);

	/* One offset past the end of the file fails the whole link. */
	bad[0] = offsets[0];
	bad[1] = 1ull << 40;
	ck_assert_int_lt(uprobe_multi_link(prog, at, LIBC, bad, 2, 0), 0);
	ck_assert_int_eq(uprobe_multi_link(prog, at, "/nonexistent/libc.so.6", offsets, 2, 0),
			 -ENOENT);
	ck_assert_int_eq(uprobe_multi_link(prog, at, LIBC, offsets, 0, 0), -EINVAL);
	ck_assert_int_eq(uprobe_multi_link(-1, at, LIBC, offsets, 2, 0), -EINVAL);
	close(prog);
}
END_TEST

Suite *uprobe_multi_suite(void);
Suite *uprobe_multi_suite(void)
{
	Suite *s = suite_create("uprobe_multi");
	TCase *tc = tcase_create("root");

	tcase_add_test(tc, a_link_over_several_offsets_attaches_and_bad_input_is_refused);
	suite_add_tcase(s, tc);
	return s;
}
