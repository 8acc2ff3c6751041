/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uprobe_multi links (Linux 6.6 and later): one BPF link attaches a
 * program to many offsets of one file, without a perf event per probe.
 * Attaching then takes one system call per program and library, and a
 * release waits for one grace period per link, outside the trace-event
 * mutex that perf uprobes hold while they wait (so another process's
 * release no longer holds up an attach).  Debian 12's libbpf 1.1 and
 * kernel headers predate them: the attach type's number is read from the
 * running kernel's BTF and the link is made with the bpf system call.
 * Root-only.
 */
#ifndef ZERNEL_UPROBE_MULTI_H
#define ZERNEL_UPROBE_MULTI_H

#include <stddef.h>
#include <stdint.h>

/* BPF_TRACE_UPROBE_MULTI as this kernel numbers it, or -ENOTSUP (cached). */
int uprobe_multi_attach_type(void);

/*
 * A link of the program prog_fd (loaded with the attach type above) at the
 * n offsets of path, on their entries or, with ret, their returns, in
 * every process.  Returns the link's descriptor or -errno.
 */
int uprobe_multi_link(int prog_fd, int attach_type, const char *path,
		      const uint64_t *offsets, size_t n, int ret);

#endif /* ZERNEL_UPROBE_MULTI_H */
