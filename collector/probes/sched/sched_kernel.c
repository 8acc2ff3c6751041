/* SPDX-License-Identifier: BSD-2-Clause */
/* The kernel's side of the scheduler probe; see sched_kernel.h. */
#include <string.h>

#include <bpf/btf.h>

#include "bpf/syscall_entry.h"
#include "collector/probes/sched/sched_kernel.h"

/* Parameters of the function type behind the BTF tracepoint typedef name. */
static int tracepoint_params(const struct btf *btf, const char *name)
{
	int id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;

	/* typedef -> pointer -> function prototype */
	for (int hops = 0; t && hops < 2; hops++)
		t = btf__type_by_id(btf, t->type);
	return t && btf_is_func_proto(t) ? btf_vlen(t) : -1;
}

int sched_btf_has_member(const struct btf *btf, const char *type, const char *member)
{
	int id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_member *m = t ? btf_members(t) : NULL;

	for (int i = 0; t && i < btf_vlen(t); i++, m++)
		if (strcmp(btf__name_by_offset(btf, m->name_off), member) == 0)
			return 1;
	return 0;
}

const char *sched_kernel_lacks(const struct btf *vmlinux)
{
	if (!vmlinux)
		return "the kernel's BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF)";
	/* The hidden first argument, preempt, prev, next, prev_state (Linux 5.18). */
	if (tracepoint_params(vmlinux, "btf_trace_sched_switch") < 5)
		return "the prev_state argument of the sched_switch tracepoint (Linux 5.18)";
	/* A task's CPU, read as it migrates (Linux 5.16 moved it there). */
	if (!sched_btf_has_member(vmlinux, "thread_info", "cpu"))
		return "a task's CPU in its thread_info (Linux 5.16)";
	if (!sched_btf_has_member(vmlinux, "task_struct", "__state") ||
	    !sched_btf_has_member(vmlinux, "task_struct", "on_cpu"))
		return "a task's __state and on_cpu (Linux 5.14, an SMP kernel)";
	return NULL;
}

unsigned int sched_entry_kind(const char *cpuinfo)
{
	for (const char *line = cpuinfo; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		/* "flags\t\t: fpu vme ... fred ...": a whole word of it. */
		if (len > 5 && strncmp(line, "flags", 5) == 0 && (line[5] == ' ' || line[5] == '\t')) {
			for (const char *w = memchr(line, ':', len); w && w < line + len;) {
				size_t n;

				w += strspn(w, ": \t");
				n = strcspn(w, " \t\n");
				if (n == 4 && strncmp(w, "fred", 4) == 0)
					return ZS_ENTRY_FRED;
				if (n == 0)
					break;
				w += n;
			}
			/* Every CPU lists the same flags: the first line tells. */
			return ZS_ENTRY_IDT;
		}
		line = end ? end + 1 : NULL;
	}
	return ZS_ENTRY_IDT;
}
