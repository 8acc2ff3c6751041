/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The DataLoader-wait module (bpf/dataload.bpf.c): attaches its two
 * programs to the syscall tracepoints of the reads, polls and io_uring
 * waits it measures, so that no other syscall pays for them.  Its samples
 * arrive as zev_latency records.  Also holds the syscall-tracepoint
 * attachment that the dist module shares.  Root-only.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "bpf/dataload.skel.h"
#include "collector/probe_sched.h"
#include "common/log.h"
#include "shm/shm_layout.h"

#define PROBE_TRACEFS		"/sys/kernel/tracing"
#define PROBE_TRACEFS_DEBUG	"/sys/kernel/debug/tracing"

/* Those an architecture lacks (arm64: poll, select, epoll_wait) are skipped. */
static const char *const dataload_syscalls[] = {
	"read", "readv", "pread64", "preadv", "preadv2",
	"recvfrom", "recvmsg", "recvmmsg",
	"poll", "ppoll", "select", "pselect6",
	"epoll_wait", "epoll_pwait", "epoll_pwait2",
};
static const char *const dataload_uring[] = { "io_uring_enter" };

static struct probe_syscall_links dataload_links;

/*
 * The tracefs directory libbpf will read tracepoint ids from.  A minimal
 * system may not mount it: then it is mounted where libbpf looks first.
 */
static const char *probe_tracefs(void)
{
	static const char *const dirs[] = { PROBE_TRACEFS_DEBUG, PROBE_TRACEFS };
	char path[128];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/syscalls", dirs[i]);
		if (access(path, F_OK) == 0)
			return dirs[i];
	}
	if (access(PROBE_TRACEFS_DEBUG, F_OK) != 0 &&
	    mount("tracefs", PROBE_TRACEFS, "tracefs", 0, NULL) == 0) {
		snprintf(path, sizeof(path), "%s/events/syscalls", PROBE_TRACEFS);
		if (access(path, F_OK) == 0) {
			log_info("mounted tracefs on %s for the syscall tracepoints",
				 PROBE_TRACEFS);
			return PROBE_TRACEFS;
		}
	}
	return NULL;
}

int probe_syscalls_attach(struct bpf_program *enter, struct bpf_program *exit,
			  const char *const *names, size_t n, struct probe_syscall_links *l)
{
	const char *tracefs = probe_tracefs();
	size_t attached = 0;
	char tp[96], path[192];

	if (!tracefs) {
		log_error("no syscall tracepoints: tracefs is not mounted and cannot be "
			  "(mount -t tracefs nodev %s), or the kernel lacks "
			  "CONFIG_FTRACE_SYSCALLS", PROBE_TRACEFS);
		return -ENOENT;
	}
	for (size_t i = 0; i < n; i++) {
		struct bpf_link *in, *out;

		snprintf(path, sizeof(path), "%s/events/syscalls/sys_enter_%s", tracefs, names[i]);
		if (access(path, F_OK) != 0) {
			log_debug("no syscall %s on this kernel or architecture", names[i]);
			continue;
		}
		if (l->n + 2 > PROBE_SYSCALL_MAX_LINKS)
			return -ENOSPC;
		snprintf(tp, sizeof(tp), "sys_enter_%s", names[i]);
		in = bpf_program__attach_tracepoint(enter, "syscalls", tp);
		if (!in)
			return -errno;
		l->link[l->n++] = in;
		snprintf(tp, sizeof(tp), "sys_exit_%s", names[i]);
		out = bpf_program__attach_tracepoint(exit, "syscalls", tp);
		if (!out)
			return -errno;
		l->link[l->n++] = out;
		attached++;
	}
	return attached > 0 ? 0 : -ENOENT;
}

void probe_syscalls_detach(struct probe_syscall_links *l)
{
	for (size_t i = 0; i < l->n; i++)
		bpf_link__destroy(l->link[i]);
	l->n = 0;
}

static int dataload_open(void **skel, struct bpf_object **obj, const struct probes_opts *opts)
{
	struct dataload_bpf *s = dataload_bpf__open();

	(void)opts;
	if (!s)
		return -errno;
	*skel = s;
	*obj = s->obj;
	return 0;
}

static int dataload_load(void *skel)
{
	struct dataload_bpf *s = skel;
	int err = dataload_bpf__load(s);

	if (err)
		return err;
	/* The loader attaches tp* sections itself; these go per syscall. */
	err = probe_syscalls_attach(s->progs.zs_dl_enter, s->progs.zs_dl_exit, dataload_syscalls,
				    sizeof(dataload_syscalls) / sizeof(dataload_syscalls[0]),
				    &dataload_links);
	if (err) {
		probe_syscalls_detach(&dataload_links);
		return err;
	}
	/* io_uring (5.1) is optional, and may be disabled. */
	if (probe_syscalls_attach(s->progs.zs_dl_uring_enter, s->progs.zs_dl_exit,
				  dataload_uring, 1, &dataload_links) != 0)
		log_debug("no io_uring_enter tracepoint: io_uring waits are not measured");
	return 0;
}

static void dataload_destroy(void *skel)
{
	probe_syscalls_detach(&dataload_links);
	dataload_bpf__destroy(skel);
}

const struct probe_module probe_dataload_module = {
	.name = "dataload",
	.open = dataload_open,
	.load = dataload_load,
	.destroy = dataload_destroy,
};
