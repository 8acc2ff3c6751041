/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Closing the links probe_attach.c made: a library's when no process has
 * mapped it for a while, every one at exit.  The kernel's slow release of
 * each falls on a child process, never on the collector's main loop.
 * Root-only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "collector/probes/probe_loader.h"
#include "common/log.h"

/*
 * Closing a uprobe link waits in the kernel for an RCU-tasks-trace grace
 * period, one link after the other (tens of ms each here): a thousand
 * links take tens of seconds, in D state.  Whoever drops the last
 * reference of a link's files pays that.  So before closing links the
 * collector forks a child that shares every descriptor; the collector's
 * own closes then only drop a reference and return at once, and the child,
 * once told the collector is done, closes its copies (the last ones) and
 * pays the wait instead, off the collector's main loop and after its exit.
 * The child only makes system calls (fork in a threaded process allows no
 * more), and the collector reaps it (probe_attach_reap).
 */
static pid_t hand_over_begin(int *go)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char c;

		prctl(PR_SET_NAME, "zernel-unprobe");
		/*
		 * Out of the collector's process group: a SIGKILL sent to the
		 * group (a terminal's, a test runner's, `kill -9 -- -PGID`)
		 * must not reach a release in progress.  The kernel cannot
		 * take a breakpoint out of a process while the releasing task
		 * dies ("failed to unregister, leaking uprobe"): the uprobe
		 * stays behind with the instruction it displaced, and a later
		 * uprobe on a file that reuses its inode runs that instruction
		 * in place of its own.
		 */
		setsid();
		close(fds[1]);
		/* EOF once the collector has closed its copies. */
		while (read(fds[0], &c, 1) < 0 && errno == EINTR)
			;
		syscall(SYS_close_range, 3u, ~0u, 0u);
		_exit(0);
	}
	close(fds[0]);
	if (pid < 0) {
		close(fds[1]);
		return -1;
	}
	*go = fds[1];
	return pid;
}

static void hand_over_end(struct probes *p, pid_t pid, int go)
{
	if (pid < 0)
		return;
	close(go);
	for (size_t i = 0; i < PROBES_MAX_HELPERS; i++) {
		if (!p->helpers[i]) {
			p->helpers[i] = pid;
			return;
		}
	}
	/* No slot to remember it: it is reaped when the collector exits. */
}

/*
 * Closes n perf links and n_fds uprobe_multi links; the kernel's wait
 * falls on a child when one can be forked.
 */
static void close_links(struct probes *p, struct bpf_link **links, size_t n, const int *fds,
			size_t n_fds)
{
	int go = -1;
	pid_t pid;

	if (!n && !n_fds)
		return;
	pid = hand_over_begin(&go);
	for (size_t i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	for (size_t i = 0; i < n_fds; i++)
		close(fds[i]);
	hand_over_end(p, pid, go);
}

/*
 * At exit even the collector's own closes cost: libbpf disables each perf
 * event (an ioctl that waits on the same kernel mutex) before closing it.
 * With a child holding every descriptor, the links are only forgotten
 * here (disconnected, no system call) and the collector's exit drops its
 * references; the child's pipe closes with the exit, after them.
 */
static void forget_links_at_exit(struct probes *p, struct bpf_link **links, size_t n)
{
	int go = -1;
	pid_t pid;

	(void)p;
	if (!n)
		return;
	pid = hand_over_begin(&go);
	for (size_t i = 0; i < n; i++) {
		if (pid > 0)
			bpf_link__disconnect(links[i]);
		bpf_link__destroy(links[i]);
	}
	/* go stays open: the exit closes it once every link's descriptor is closed. */
}

void probe_attach_reap(struct probes *p)
{
	for (size_t i = 0; i < PROBES_MAX_HELPERS; i++)
		if (p->helpers[i] && waitpid(p->helpers[i], NULL, WNOHANG) != 0)
			p->helpers[i] = 0;
}

static void drop_lib(struct probes *p, size_t i)
{
	struct probe_lib *lib = &p->libs[i];

	p->n_links -= lib->n_links;
	if (lib->kind & PROBE_LIB_GPU) {
		p->gpu_links -= lib->n_links;
		p->gpu_libs--;
	}
	free(lib->links);
	free(lib->multi_fds);
	p->libs[i] = p->libs[--p->n_libs];
}

size_t probe_attach_idle(struct probes *p)
{
	struct bpf_link **batch;
	size_t n = 0, n_fds = 0, dropped = 0;
	int *fds;

	batch = calloc(p->n_links ? p->n_links : 1, sizeof(*batch));
	fds = calloc(p->n_links ? p->n_links : 1, sizeof(*fds));
	if (!batch || !fds) {
		free(batch);
		free(fds);
		return 0;
	}
	for (size_t i = 0; i < p->n_libs;) {
		struct probe_lib *lib = &p->libs[i];

		if (lib->pinned || p->scan - lib->seen_scan < PROBES_LIB_IDLE_SCANS) {
			i++;
			continue;
		}
		log_info("no process maps %s any more: %u uprobes detached", lib->path,
			 lib->n_links);
		if (lib->multi_fds) {
			memcpy(fds + n_fds, lib->multi_fds, lib->n_multi * sizeof(*fds));
			n_fds += lib->n_multi;
		} else {
			memcpy(batch + n, lib->links, lib->n_links * sizeof(*batch));
			n += lib->n_links;
		}
		drop_lib(p, i);		/* the last library moves to i */
		dropped++;
	}
	close_links(p, batch, n, fds, n_fds);
	free(batch);
	free(fds);
	probe_attach_reap(p);
	return dropped;
}

void probe_attach_destroy(struct probes *p)
{
	struct bpf_link **all = calloc(p->n_links ? p->n_links : 1, sizeof(*all));
	size_t n = 0;

	/*
	 * uprobe_multi links are descriptors only: they stay open until the
	 * exit, like the perf links forget_links_at_exit disconnects, and the
	 * child it forks holds them too.
	 */
	for (size_t i = 0; i < p->n_libs; i++) {
		struct probe_lib *lib = &p->libs[i];

		if (!lib->multi_fds) {
			if (all)
				memcpy(all + n, lib->links, lib->n_links * sizeof(*all));
			else
				close_links(p, lib->links, lib->n_links, NULL, 0);
			n += lib->n_links;
		}
		free(lib->links);
		free(lib->multi_fds);
	}
	if (all) {
		memcpy(all + n, p->links, p->n_static * sizeof(*all));
		forget_links_at_exit(p, all, n + p->n_static);
		free(all);
	} else {
		close_links(p, p->links, p->n_static, NULL, 0);
	}
	p->n_libs = 0;
	p->n_static = 0;
	p->n_links = 0;
}
