/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The scheduler probe's kernel check (collector/probes/sched/sched_kernel.h), on BTF
 * made as the kernels before and after each change describe themselves,
 * and on this machine's own; the syscall rule of each x86 entry from user
 * space (bpf/syscall_entry.h) on the registers each leaves.  Unprivileged.
 */
#include <check.h>
#include <string.h>

#include <bpf/btf.h>

#include "bpf/syscall_entry.h"
#include "collector/probes/sched/sched_kernel.h"

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

/*
 * Saved user registers of a thread blocked after each kind of entry, as
 * the kernel's entry code leaves them (arch/x86/entry/entry_64.S for the
 * IDT, entry_fred.c for FRED): ax is -ENOSYS in a syscall until it
 * returns; through the IDT, SYSCALL's cx and r11 are the return address
 * and the flags, and an exception's orig_ax is its error code; under FRED
 * SYSCALL leaves cx and r11 as the program had them, and every event that
 * is no syscall has orig_ax -1.  A page fault can find -ENOSYS in ax by
 * chance (a program's own value): the rule must not take it for a call.
 */
#define USER_IP		0x7f3a1c2b4d5eul
#define USER_FLAGS	0x246ul
#define SYS_CLOCK_NANOSLEEP_X86	230ul

static const struct {
	const char *what;
	unsigned int kind;
	struct zs_entry_regs regs;
	int in_syscall;
} entries[] = {
	{ "IDT: clock_nanosleep", ZS_ENTRY_IDT,
	  { (unsigned long)-ZS_ENOSYS, SYS_CLOCK_NANOSLEEP_X86, USER_IP, USER_IP, USER_FLAGS,
	    USER_FLAGS }, 1 },
	{ "IDT: a page fault with -ENOSYS in ax", ZS_ENTRY_IDT,
	  { (unsigned long)-ZS_ENOSYS, 6, 0x5612d0a0ul, USER_IP, 0x202, USER_FLAGS }, 0 },
	{ "IDT: a syscall already returned", ZS_ENTRY_IDT,
	  { 0, SYS_CLOCK_NANOSLEEP_X86, USER_IP, USER_IP, USER_FLAGS, USER_FLAGS }, 0 },
	{ "FRED: clock_nanosleep, cx and r11 the program's", ZS_ENTRY_FRED,
	  { (unsigned long)-ZS_ENOSYS, SYS_CLOCK_NANOSLEEP_X86, 0x5612d0a0ul, USER_IP, 0x3,
	    USER_FLAGS }, 1 },
	{ "FRED: read (syscall 0)", ZS_ENTRY_FRED,
	  { (unsigned long)-ZS_ENOSYS, 0, 0x10, USER_IP, 0x3, USER_FLAGS }, 1 },
	{ "FRED: a page fault with -ENOSYS in ax", ZS_ENTRY_FRED,
	  { (unsigned long)-ZS_ENOSYS, (unsigned long)-1, USER_IP, USER_IP, USER_FLAGS,
	    USER_FLAGS }, 0 },
	{ "FRED: an interrupt", ZS_ENTRY_FRED,
	  { 42, (unsigned long)-1, 0x10, USER_IP, 0x3, USER_FLAGS }, 0 },
};

START_TEST(each_entry_tells_a_syscall_by_its_own_rule)
{
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		ck_assert_msg(zs_regs_in_syscall(&entries[i].regs, entries[i].kind) ==
				      entries[i].in_syscall,
			      "%s: in a syscall is %d, want %d", entries[i].what,
			      zs_regs_in_syscall(&entries[i].regs, entries[i].kind),
			      entries[i].in_syscall);
	/* The IDT's rule on a FRED kernel would call its syscalls other: the bug it fixes. */
	ck_assert_int_eq(zs_regs_in_syscall(&entries[3].regs, ZS_ENTRY_IDT), 0);
}
END_TEST

START_TEST(fred_is_told_by_the_cpuinfo_flag)
{
	ck_assert_uint_eq(sched_entry_kind("processor\t: 0\nflags\t\t: fpu vme de fred lkgs "
					   "wrmsrns\n"), ZS_ENTRY_FRED);
	ck_assert_uint_eq(sched_entry_kind("flags\t\t: fpu vme de pse fred\nbugs\t\t: \n"),
			  ZS_ENTRY_FRED);
	/* Booted without it: the kernel lists no fred. */
	ck_assert_uint_eq(sched_entry_kind("processor\t: 0\nflags\t\t: fpu vme de lkgs\n"),
			  ZS_ENTRY_IDT);
	/* A word that holds it is not it, nor is it on another line. */
	ck_assert_uint_eq(sched_entry_kind("flags\t\t: fpu fredx\nmodel name\t: fred\n"),
			  ZS_ENTRY_IDT);
	ck_assert_uint_eq(sched_entry_kind("vmx flags\t: fred\n"), ZS_ENTRY_IDT);
	ck_assert_uint_eq(sched_entry_kind(""), ZS_ENTRY_IDT);
	ck_assert_uint_eq(sched_entry_kind(NULL), ZS_ENTRY_IDT);
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
	tcase_add_test(tc, each_entry_tells_a_syscall_by_its_own_rule);
	tcase_add_test(tc, fred_is_told_by_the_cpuinfo_flag);
	suite_add_tcase(s, tc);
	return s;
}
