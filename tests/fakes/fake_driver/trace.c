// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fake driver's trace ($FAKE_CUDA_TRACE) and the answer of the functions
 * it does not implement.  The trace is what tests compare with what the
 * workload says it did.  Test code, no privilege.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fakes/fake_driver/fake_driver.h"

static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static int trace_fd = -1;
static int strict;

static void trace_open(void)
{
	const char *path = getenv("FAKE_CUDA_TRACE");
	const char *s = getenv("FAKE_CUDA_STRICT");

	strict = s && *s && strcmp(s, "0") != 0;
	if (!path || !*path)
		return;
	trace_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (trace_fd < 0)
		fprintf(stderr, "fake libcuda: cannot open trace %s: %s\n", path, strerror(errno));
}

static void trace_vwrite(const char *prefix, const char *fmt, va_list ap)
{
	char line[1024];
	int n = 0, m;

	pthread_once(&trace_once, trace_open);
	if (trace_fd < 0)
		return;
	if (prefix)
		n = snprintf(line, sizeof(line), "%s", prefix);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	if (m < 0)
		return;
	n += m;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line: O_APPEND keeps lines of threads whole. */
	if (write(trace_fd, line, (size_t)n) != n)
		return;
}

void fd_trace(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	trace_vwrite(NULL, fmt, ap);
	va_end(ap);
}

CUresult fd_ret(const char *sym, CUresult rc, const char *fmt, ...)
{
	char args[768];
	va_list ap;

	args[0] = '\0';
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(args, sizeof(args), fmt, ap);
		va_end(ap);
	}
	fd_trace("call %s%s%s = %d", sym, args[0] ? " " : "", args, rc);
	return rc;
}

CUresult fd_unimplemented(const char *sym)
{
	pthread_once(&trace_once, trace_open);
	fd_trace("unimplemented %s", sym);
	/* FAKE_CUDA_STRICT=1: stop where the runtime first needs more. */
	if (strict) {
		fprintf(stderr, "fake libcuda: %s is not implemented\n", sym);
		abort();
	}
	return CUDA_ERROR_NOT_SUPPORTED;
}
