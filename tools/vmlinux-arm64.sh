#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# vmlinux-arm64.sh X86_VMLINUX_H > ARM64_VMLINUX_H
#
# The kernel types the BPF programs compile against, for an arm64 build
# on an x86-64 machine: this machine's vmlinux.h with its one type the
# programs read by architecture, struct pt_regs, replaced by arm64's
# (arch/arm64/include/asm/ptrace.h; user_pt_regs from the uapi header).
# The programs' other kernel types (task_struct, ...) are found by name
# and relocated against the running kernel's BTF at load (CO-RE), so the
# x86 declarations serve; the register file is what differs.
set -eu

src=${1:?usage: vmlinux-arm64.sh X86_VMLINUX_H}
grep -q '^struct pt_regs {' "$src" || { echo "vmlinux-arm64.sh: no struct pt_regs in $src" >&2; exit 1; }
awk '
/^struct pt_regs \{/ {
	print "struct user_pt_regs {"
	print "\t__u64 regs[31];"
	print "\t__u64 sp;"
	print "\t__u64 pc;"
	print "\t__u64 pstate;"
	print "};"
	print ""
	print "struct pt_regs {"
	print "\tunion {"
	print "\t\tstruct user_pt_regs user_regs;"
	print "\t\tstruct {"
	print "\t\t\tu64 regs[31];"
	print "\t\t\tu64 sp;"
	print "\t\t\tu64 pc;"
	print "\t\t\tu64 pstate;"
	print "\t\t};"
	print "\t};"
	print "\tu64 orig_x0;"
	print "\ts32 syscallno;"
	print "\tu32 pmr;"
	print "\tu64 sdei_ttbr1;"
	print "\tu64 stackframe[2];"
	print "\tu64 lockdep_hardirqs;"
	print "\tu64 exit_rcu;"
	print "};"
	skip = 1
	next
}
skip && /^};/ { skip = 0; next }
skip { next }
{ print }
' "$src"
