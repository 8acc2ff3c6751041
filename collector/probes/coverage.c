/* SPDX-License-Identifier: BSD-2-Clause */
/* cuGetProcAddress against the exported symbols, in an unprivileged child; see coverage.h. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/probes/coverage.h"
#include "common/log.h"

#define CHILD_UID	65534	/* nobody */
#define CHILD_SECONDS	10
#define OUT_MAX		8192

/* Every driver symbol the families probe (tests/collector/check_coverage.c holds it to that). */
const struct coverage_entry coverage_table[] = {
	{ "cuMemAlloc_v2", "cuMemAlloc", 3020, 0 },
	{ "cuMemAllocAsync", "cuMemAllocAsync", 11020, 0 },
	{ "cuMemAllocAsync_ptsz", "cuMemAllocAsync", 11020, 1 },
	{ "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", 11020, 0 },
	{ "cuMemAllocFromPoolAsync_ptsz", "cuMemAllocFromPoolAsync", 11020, 1 },
	{ "cuMemAllocPitch_v2", "cuMemAllocPitch", 3020, 0 },
	{ "cuMemFree_v2", "cuMemFree", 3020, 0 },
	{ "cuMemFreeAsync", "cuMemFreeAsync", 11020, 0 },
	{ "cuMemFreeAsync_ptsz", "cuMemFreeAsync", 11020, 1 },
	{ "cuMemCreate", "cuMemCreate", 10020, 0 },
	{ "cuMemRelease", "cuMemRelease", 10020, 0 },
	{ "cuDeviceGetDefaultMemPool", "cuDeviceGetDefaultMemPool", 11020, 0 },
	{ "cuDeviceGetMemPool", "cuDeviceGetMemPool", 11020, 0 },
	{ "cuDeviceSetMemPool", "cuDeviceSetMemPool", 11020, 0 },
	{ "cuMemPoolSetAttribute", "cuMemPoolSetAttribute", 11020, 0 },
	{ "cuMemPoolTrimTo", "cuMemPoolTrimTo", 11020, 0 },
	{ "cuMemPoolDestroy", "cuMemPoolDestroy", 11020, 0 },
	{ "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", 7000, 0 },
	{ "cuCtxCreate_v2", "cuCtxCreate", 3020, 0 },
	{ "cuCtxCreate_v3", "cuCtxCreate", 11040, 0 },
	{ "cuCtxCreate_v4", "cuCtxCreate", 12050, 0 },
	{ "cuCtxSetCurrent", "cuCtxSetCurrent", 4000, 0 },
	{ "cuCtxPushCurrent_v2", "cuCtxPushCurrent", 4000, 0 },
	{ "cuCtxGetCurrent", "cuCtxGetCurrent", 4000, 0 },
	{ "cuCtxGetDevice", "cuCtxGetDevice", 2000, 0 },
	{ "cuCtxGetDevice_v2", "cuCtxGetDevice", 13000, 0 },
	{ "cuLaunchKernel", "cuLaunchKernel", 4000, 0 },
	{ "cuLaunchKernel_ptsz", "cuLaunchKernel", 7000, 1 },
	{ "cuLaunchKernelEx", "cuLaunchKernelEx", 11060, 0 },
	{ "cuLaunchKernelEx_ptsz", "cuLaunchKernelEx", 11060, 1 },
	{ "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", 9000, 0 },
	{ "cuLaunchCooperativeKernel_ptsz", "cuLaunchCooperativeKernel", 9000, 1 },
	{ "cuGraphLaunch", "cuGraphLaunch", 10000, 0 },
	{ "cuGraphLaunch_ptsz", "cuGraphLaunch", 10000, 1 },
	{ "cuStreamSynchronize", "cuStreamSynchronize", 2000, 0 },
	{ "cuStreamSynchronize_ptsz", "cuStreamSynchronize", 7000, 1 },
	{ "cuCtxSynchronize", "cuCtxSynchronize", 2000, 0 },
	{ "cuCtxSynchronize_v2", "cuCtxSynchronize", 13000, 0 },
	{ "cuEventSynchronize", "cuEventSynchronize", 2000, 0 },
	{ "cuMemcpy", "cuMemcpy", 4000, 0 },
	{ "cuMemcpyDtoH_v2", "cuMemcpyDtoH", 3020, 0 },
	{ "cuMemcpyHtoD_v2", "cuMemcpyHtoD", 3020, 0 },
	{ "cuEventQuery", "cuEventQuery", 2000, 0 },
	{ "cuStreamQuery", "cuStreamQuery", 2000, 0 },
	{ "cuStreamQuery_ptsz", "cuStreamQuery", 7000, 1 },
	{ "cuEventRecord", "cuEventRecord", 2000, 0 },
	{ "cuEventRecord_ptsz", "cuEventRecord", 7000, 1 },
	{ "cuEventRecordWithFlags", "cuEventRecordWithFlags", 11010, 0 },
	{ "cuEventRecordWithFlags_ptsz", "cuEventRecordWithFlags", 11010, 1 },
	{ "cuStreamWaitEvent", "cuStreamWaitEvent", 3020, 0 },
	{ "cuStreamWaitEvent_ptsz", "cuStreamWaitEvent", 7000, 1 },
	{ "cuStreamBeginCapture_v2", "cuStreamBeginCapture", 10010, 0 },
	{ "cuStreamBeginCapture_v2_ptsz", "cuStreamBeginCapture", 10010, 1 },
	{ "cuStreamEndCapture", "cuStreamEndCapture", 10000, 0 },
	{ "cuStreamEndCapture_ptsz", "cuStreamEndCapture", 10000, 1 },
};
const size_t coverage_count = sizeof(coverage_table) / sizeof(coverage_table[0]);
_Static_assert(sizeof(coverage_table) / sizeof(coverage_table[0]) <=
	       sizeof(((struct coverage_result *)0)->verdict), "a verdict per entry");

typedef int (*gpa_v2_fn)(const char *, void **, int, uint64_t, int *);
typedef int (*gpa_v1_fn)(const char *, void **, int, uint64_t);

static void __attribute__((noreturn)) child_fail(FILE *out, const char *why)
{
	fprintf(out, "E %s\n", why);
	fclose(out);
	_exit(2);
}

/*
 * The child: no privilege, then the driver, loaded from the descriptor
 * the parent opened (nobody need not be able to reach the file: a
 * container's root, a build folder under /root); writes "E why" or one
 * "R index verdict" per entry.
 */
static void child(int lib_fd, int fd)
{
	gpa_v2_fn gpa2 = NULL;
	gpa_v1_fn gpa1 = NULL;
	void *lib, *p;
	char path[32];
	FILE *out = fdopen(fd, "w");

	alarm(CHILD_SECONDS);
	if (!out)
		_exit(2);
	if (getuid() == 0 && (setgroups(0, NULL) != 0 || setgid(CHILD_UID) != 0 ||
			      setuid(CHILD_UID) != 0))
		child_fail(out, "cannot become nobody");
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	/* A process may open its own descriptors' links whatever its credentials. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", lib_fd);
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *why = dlerror();

		fprintf(out, "E dlopen: %.200s\n", why ? why : "failed");
		fclose(out);
		_exit(2);
	}
	p = dlsym(lib, "cuGetProcAddress_v2");
	if (p)
		memcpy(&gpa2, &p, sizeof(p));
	else if ((p = dlsym(lib, "cuGetProcAddress")) != NULL)
		memcpy(&gpa1, &p, sizeof(p));
	if (!gpa2 && !gpa1)
		child_fail(out, "nogpa");
	for (size_t i = 0; i < coverage_count; i++) {
		const struct coverage_entry *e = &coverage_table[i];
		uint64_t flags = e->ptds ? 2u : 0u;	/* ..._PER_THREAD_DEFAULT_STREAM */
		void *got = NULL, *exp = dlsym(lib, e->symbol);
		int status = 0, rc;
		unsigned int v;

		rc = gpa2 ? gpa2(e->name, &got, e->version, flags, &status)
			  : gpa1(e->name, &got, e->version, flags);
		if (!exp)
			v = COVERAGE_NOT_EXPORTED;
		else if (rc != 0 || !got)
			v = COVERAGE_NOT_OFFERED;
		else
			v = got == exp ? COVERAGE_SAME : COVERAGE_DIFFERS;
		fprintf(out, "R %zu %u\n", i, v);
	}
	fclose(out);
	_exit(0);
}

/* Reads the child's output, at most OUT_MAX bytes, within CHILD_SECONDS + 1 s. */
static size_t read_all(int fd, char *buf, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t got = 0;

	while (got + 1 < len && poll(&pfd, 1, (CHILD_SECONDS + 1) * 1000) > 0) {
		ssize_t r = read(fd, buf + got, len - 1 - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	return got;
}

static int parse(const char *path, const char *text, struct coverage_result *out)
{
	const char *line = text;
	uint32_t seen = 0;

	if (strncmp(text, "E nogpa", 7) == 0) {
		log_warnx("%s has no cuGetProcAddress: whether calls reach the probed symbols "
			  "cannot be checked", path);
		return -ENOSYS;
	}
	if (strncmp(text, "E ", 2) == 0) {
		log_warnx("%s: the coverage check could not run: %.*s", path,
			  (int)strcspn(text + 2, "\n"), text + 2);
		return -ENOEXEC;
	}
	while (line && *line) {
		size_t i;
		unsigned int v;

		if (sscanf(line, "R %zu %u", &i, &v) != 2 || i >= coverage_count ||
		    v >= COVERAGE_VERDICTS)
			return -ECHILD;
		out->verdict[i] = (uint8_t)v;
		out->checked++;
		seen++;
		if (v == COVERAGE_DIFFERS) {
			out->differ++;
			log_warnx("%s: cuGetProcAddress(\"%s\", %d%s) answers another address than "
				  "the exported %s: calls through it are not seen", path,
				  coverage_table[i].name, coverage_table[i].version,
				  coverage_table[i].ptds ? ", per-thread stream" : "",
				  coverage_table[i].symbol);
		} else if (v == COVERAGE_NOT_OFFERED) {
			out->not_offered++;
		} else if (v == COVERAGE_NOT_EXPORTED) {
			out->not_exported++;
		}
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	return seen == coverage_count ? 0 : -ECHILD;
}

int coverage_check(const char *path, struct coverage_result *out)
{
	char buf[OUT_MAX];
	int fds[2], lib_fd, status = 0, err;
	pid_t pid;

	memset(out, 0, sizeof(*out));
	lib_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (lib_fd < 0) {
		log_warnx("%s: the coverage check could not run: cannot open it: %s", path,
			  strerror(errno));
		return -ENOEXEC;
	}
	if (pipe(fds) != 0) {
		err = -errno;
		close(lib_fd);
		return err;
	}
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(lib_fd);
		close(fds[0]);
		close(fds[1]);
		return err;
	}
	if (pid == 0) {
		close(fds[0]);
		child(lib_fd, fds[1]);
	}
	close(lib_fd);
	close(fds[1]);
	read_all(fds[0], buf, sizeof(buf));
	close(fds[0]);
	/* Done writing or out of time: either way it ends here. */
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	err = parse(path, buf, out);
	if (err == -ECHILD)
		log_warnx("%s: the coverage check's child %s after %u of %zu entries", path,
			  WIFEXITED(status) ? "said something else" : "did not finish",
			  out->checked, coverage_count);
	else if (err == 0)
		log_info("%s: %u probed entry points checked through cuGetProcAddress: %u answered "
			 "elsewhere, %u not offered, %u not exported", path, out->checked,
			 out->differ, out->not_offered, out->not_exported);
	return err;
}
