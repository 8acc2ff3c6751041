/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The scheduler probe's kernel check (collector/sched_kernel.h), on BTF
 * made as the kernels before and after each change describe themselves,
 * and on this machine's own.  Unprivileged.
 */
#include <check.h>
#include <string.h>

#include <bpf/btf.h>

#include "collector/sched_kernel.h"

/*
 * A kernel's BTF with what the check reads: sched_switch's tracepoint
 * with params arguments (5 from Linux 5.18), thread_info with or without
 * its cpu (Linux 5.16), task_struct's state as __state (Linux 5.14).
 */
static struct btf *kernel_btf(int params, int ti_cpu, const char *state)
{
	struct btf *b = btf__new_empty();
	int u32, task, ptr, proto, fptr;

	ck_assert_ptr_nonnull(b);
	u32 = btf__add_int(b, "unsigned int", 4, 0);
	task = btf__add_struct(b, "task_struct", 8);
	ck_assert_int_eq(btf__add_field(b, state, u32, 0, 0), 0);
	ck_assert_int_eq(btf__add_field(b, "on_cpu", u32, 32, 0), 0);
	ck_assert_int_gt(btf__add_struct(b, "thread_info", 8), 0);
	ck_assert_int_eq(btf__add_field(b, "flags", u32, 0, 0), 0);
	if (ti_cpu)
		ck_assert_int_eq(btf__add_field(b, "cpu", u32, 32, 0), 0);
	ptr = btf__add_ptr(b, task);
	proto = btf__add_func_proto(b, 0);
	for (int i = 0; i < params; i++)
		ck_assert_int_eq(btf__add_func_param(b, "", i == 0 || i == 1 ? u32 : ptr), 0);
	fptr = btf__add_ptr(b, proto);
	ck_assert_int_gt(btf__add_typedef(b, "btf_trace_sched_switch", fptr), 0);
	return b;
}

START_TEST(a_kernel_with_everything_passes)
{
	struct btf *b = kernel_btf(5, 1, "__state");

	ck_assert_ptr_null(sched_kernel_lacks(b));
	btf__free(b);
}
END_TEST

START_TEST(older_kernels_are_told_what_they_lack)
{
	struct btf *b = kernel_btf(4, 1, "__state");

	ck_assert_ptr_nonnull(strstr(sched_kernel_lacks(b), "prev_state"));
	btf__free(b);
	b = kernel_btf(5, 0, "__state");
	ck_assert_ptr_nonnull(strstr(sched_kernel_lacks(b), "thread_info"));
	btf__free(b);
	b = kernel_btf(5, 1, "state");
	ck_assert_ptr_nonnull(strstr(sched_kernel_lacks(b), "__state"));
	btf__free(b);
	ck_assert_ptr_nonnull(strstr(sched_kernel_lacks(NULL), "BTF"));
}
END_TEST

/* The kernel the tests run on loads the probe: it must pass the check. */
START_TEST(this_kernel_passes)
{
	struct btf *b = btf__load_vmlinux_btf();
	const char *why;

	ck_assert_msg(b != NULL, "this machine has no kernel BTF");
	why = sched_kernel_lacks(b);
	ck_assert_msg(why == NULL, "lacks %s", why);
	btf__free(b);
}
END_TEST

Suite *sched_kernel_suite(void);
Suite *sched_kernel_suite(void)
{
	Suite *s = suite_create("sched_kernel");
	TCase *tc = tcase_create("btf");

	tcase_add_test(tc, a_kernel_with_everything_passes);
	tcase_add_test(tc, older_kernels_are_told_what_they_lack);
	tcase_add_test(tc, this_kernel_passes);
	suite_add_tcase(s, tc);
	return s;
}
