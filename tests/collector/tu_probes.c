/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers of the probe tests; see tu_probes.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/util.h"
#include "tests/support/testutil.h"
#include "tests/collector/tu_probes.h"

int tp_snapshot(struct tp_collector *c)
{
	char reason[256];
	enum shm_read_status st;

	st = shm_reader_snapshot(&c->reader, &c->snap, reason, sizeof(reason));
	return st == SHM_READ_OK ? 0 : -1;
}

int tp_wait_publish(struct tp_collector *c)
{
	uint64_t since = now_mono_ns();

	/*
	 * Up to 30 s: while other processes on the node close uprobes, the
	 * collector may spend seconds attaching a library between publishes.
	 */
	for (int i = 0; i < 600; i++) {
		tu_sleep_ms(50);
		if (tp_snapshot(c) == 0 && c->snap.hdr->heartbeat_mono_ns > since)
			return 0;
	}
	return -1;
}

int tp_probe_node_libs;

/* A scheduler program of a collector (collector/probes/sched/sched.bpf.c) is loaded. */
static int collector_programs_loaded(void)
{
	struct bpf_prog_info info;
	__u32 id = 0, len;
	int fd, found = 0;

	while (!found && bpf_prog_get_next_id(id, &id) == 0) {
		fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		found = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
			strncmp(info.name, "zs_switch", 9) == 0;
		close(fd);
	}
	return found;
}

/*
 * A stopped collector leaves a child that closes its links, the
 * programs' last references, after it exits (collector/probes/probe_detach.c):
 * until it is done, that collector's programs still run beside the next
 * one's, on the same threads.  Each test starts on a node free of them.
 */
static void wait_collectors_gone(void)
{
	for (int waited = 0; waited < 30000 && collector_programs_loaded(); waited += 50)
		tu_sleep_ms(50);
}

int tp_collector_start(struct tp_collector *c, const char *const *extra, unsigned int min_libs)
{
	char bin[512], interval[16];
	char *argv[32];
	int n = 0;

	memset(c, 0, sizeof(*c));
	tu_unique_shm_name(c->shm, sizeof(c->shm));
	snprintf(c->log, sizeof(c->log), "/tmp/zernel-probes-%d%s.log", (int)getpid(),
		 strrchr(c->shm, '-'));
	snprintf(interval, sizeof(interval), "%d", TP_PUBLISH_MS);
	argv[n++] = (char *)tu_build_path(bin, sizeof(bin), "zernel-collector");
	argv[n++] = "--shm";
	argv[n++] = c->shm;
	argv[n++] = "--publish-interval";
	argv[n++] = interval;
	/*
	 * The node's libraries only where a test is about them: the kernel
	 * attaches and frees uprobes under one node-wide lock, and probing
	 * every CUDA library on the machine in every test would queue them.
	 */
	if (!tp_probe_node_libs)
		argv[n++] = "--no-node-libs";
	for (size_t i = 0; extra && extra[i] && n < 30; i++)
		argv[n++] = (char *)extra[i];
	argv[n] = NULL;
	shm_reader_init(&c->reader, c->shm);
	wait_collectors_gone();
	c->pid = tu_spawn(argv, c->log);
	if (c->pid < 0)
		return -1;
	/* Attaching every library of the node takes seconds on a loaded machine. */
	for (int waited = 0; waited < 60000; waited += 50) {
		int status;

		if (waitpid(c->pid, &status, WNOHANG) == c->pid) {
			c->pid = 0;
			return -1;
		}
		if (tp_snapshot(c) == 0 &&
		    c->snap.hdr->stats.libraries_attached >= min_libs)
			return 0;
		tu_sleep_ms(50);
	}
	return -1;
}

void tp_collector_stop(struct tp_collector *c)
{
	if (c->pid > 0)
		tu_stop(c->pid, SIGTERM, 5000);
	c->pid = 0;
	shm_snapshot_free(&c->snap);
	shm_reader_close(&c->reader);
	shm_unlink(c->shm);
	/* Reached only when the test passed: a failed one keeps its log. */
	unlink(c->log);
}

const struct shm_proc *tp_proc(const struct tp_collector *c, uint32_t pid)
{
	uint32_t n;
	const struct shm_proc *p = shm_snapshot_procs(&c->snap, &n);

	for (uint32_t i = 0; p && i < n; i++)
		if (p[i].pid == pid)
			return &p[i];
	return NULL;
}

const struct shm_gpu_mem *tp_gpu_mem(const struct tp_collector *c, uint32_t pid, uint32_t gpu)
{
	uint32_t n;
	const struct shm_gpu_mem *m = shm_snapshot_gpu_mem(&c->snap, &n);

	for (uint32_t i = 0; m && i < n; i++)
		if (m[i].pid == pid && m[i].gpu_id == gpu)
			return &m[i];
	return NULL;
}

unsigned int tp_gpu_mem_rows(const struct tp_collector *c, uint32_t pid)
{
	uint32_t n;
	unsigned int rows = 0;
	const struct shm_gpu_mem *m = shm_snapshot_gpu_mem(&c->snap, &n);

	for (uint32_t i = 0; m && i < n; i++)
		rows += m[i].pid == pid;
	return rows;
}

const struct shm_nccl_op *tp_nccl_op(const struct tp_collector *c, uint32_t op)
{
	uint32_t n;
	const struct shm_nccl_op *o = shm_snapshot_nccl_ops(&c->snap, &n);

	for (uint32_t i = 0; o && i < n; i++)
		if (o[i].op == op)
			return &o[i];
	return NULL;
}

int tp_workload_start(struct tp_workload *w, char *const argv[])
{
	int in[2], out[2];

	memset(w, 0, sizeof(*w));
	w->in_fd = w->out_fd = -1;
	if (pipe2(in, O_CLOEXEC) != 0)
		return -1;
	if (pipe2(out, O_CLOEXEC) != 0) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	w->pid = tu_spawn_io(argv, NULL, in[0], out[1]);
	if (w->pid < 0)
		return -1;
	close(in[0]);
	close(out[1]);
	w->in_fd = in[1];
	w->out_fd = out[0];
	return 0;
}

/* Takes one line out of w->buf into line; 0 when there was none. */
static int take_line(struct tp_workload *w, char *line, size_t len)
{
	char *nl = memchr(w->buf, '\n', w->len);
	size_t n;

	if (!nl)
		return 0;
	n = (size_t)(nl - w->buf);
	snprintf(line, len, "%.*s", (int)n, w->buf);
	memmove(w->buf, nl + 1, w->len - n - 1);
	w->len -= n + 1;
	return 1;
}

/* Reads lines until one for which match() is true; 0, or -1. */
static int read_until(struct tp_workload *w, int (*match)(const char *line, void *arg),
		      void *arg, int timeout_ms)
{
	char line[512];
	struct pollfd pfd = { .fd = w->out_fd, .events = POLLIN };
	uint64_t end = now_mono_ns() + (uint64_t)timeout_ms * NSEC_PER_MSEC;

	for (;;) {
		uint64_t now = now_mono_ns();
		ssize_t r;

		while (take_line(w, line, sizeof(line))) {
			if (match(line, arg))
				return 0;
		}
		if (w->len == sizeof(w->buf))
			w->len = 0;	/* a line too long: drop it */
		if (now >= end || poll(&pfd, 1, (int)((end - now) / NSEC_PER_MSEC) + 1) <= 0)
			return -1;
		r = read(w->out_fd, w->buf + w->len, sizeof(w->buf) - w->len);
		if (r <= 0)
			return -1;
		w->len += (size_t)r;
	}
}

static int match_equal(const char *line, void *arg)
{
	return strcmp(line, (const char *)arg) == 0;
}

int tp_workload_expect(struct tp_workload *w, const char *want, int timeout_ms)
{
	return read_until(w, match_equal, (void *)want, timeout_ms);
}

struct series_match {
	const char *name;
	unsigned long long count, p50, p99;
};

static int match_series(const char *line, void *arg)
{
	struct series_match *m = arg;
	char name[64];

	return sscanf(line, "Q %63s %llu %llu %llu", name, &m->count, &m->p50, &m->p99) == 4 &&
	       strcmp(name, m->name) == 0;
}

int tp_workload_series(struct tp_workload *w, const char *name, uint64_t *count,
		       uint64_t *p50, uint64_t *p99, int timeout_ms)
{
	struct series_match m = { .name = name };

	if (read_until(w, match_series, &m, timeout_ms) != 0)
		return -1;
	*count = m.count;
	*p50 = m.p50;
	*p99 = m.p99;
	return 0;
}

struct collect {
	const char *until;
	char *out;
	size_t len, used;
};

static int match_collect(const char *line, void *arg)
{
	struct collect *c = arg;
	int n;

	if (strcmp(line, c->until) == 0)
		return 1;
	n = snprintf(c->out + c->used, c->len - c->used, "%s\n", line);
	if (n > 0 && (size_t)n < c->len - c->used)
		c->used += (size_t)n;
	return 0;
}

int tp_workload_collect(struct tp_workload *w, const char *until, char *out, size_t len,
			int timeout_ms)
{
	struct collect c = { .until = until, .out = out, .len = len };

	if (len == 0)
		return -1;
	out[0] = '\0';
	return read_until(w, match_collect, &c, timeout_ms);
}

void tp_workload_go(struct tp_workload *w)
{
	if (write(w->in_fd, "\n", 1) != 1)
		fprintf(stderr, "workload %d: cannot write its stdin\n", (int)w->pid);
}

int tp_workload_finish(struct tp_workload *w)
{
	int status = -1;

	if (w->pid <= 0)
		return -1;
	if (w->in_fd >= 0)
		close(w->in_fd);
	if (w->out_fd >= 0)
		close(w->out_fd);
	w->in_fd = w->out_fd = -1;
	for (int waited = 0; waited < 5000; waited += 10) {
		if (waitpid(w->pid, &status, WNOHANG) == w->pid) {
			w->pid = 0;
			return status;
		}
		tu_sleep_ms(10);
	}
	kill(w->pid, SIGKILL);
	waitpid(w->pid, &status, 0);
	w->pid = 0;
	return status;
}

const char *tp_fake(char *buf, size_t len, const char *name)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "tests/fakes/%s", name);
	return tu_build_path(buf, len, rel);
}

const char *tp_zw_cuda(char *buf, size_t len)
{
	return tu_build_path(buf, len, "tests/workloads/zw_cuda");
}

int tp_collector_start_fakes(struct tp_collector *c)
{
	char bufs[3][512];
	const char *extra[] = {
		"--lib", tp_fake(bufs[0], sizeof(bufs[0]), "libcudart.so"),
		"--lib", tp_fake(bufs[1], sizeof(bufs[1]), "libcuda.so.1"),
		"--lib", tp_fake(bufs[2], sizeof(bufs[2]), "libnccl.so.2"),
		NULL,
	};

	return tp_collector_start(c, extra, 3);
}
