/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Levelled logging to stderr.  One write(2) per line so that lines from
 * several threads or processes sharing a terminal do not interleave.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/log.h"

static enum log_level current_level = LOG_LEVEL_INFO;
static const char *log_progname = "zernel";

static const char *const level_names[] = { "debug", "info", "warn", "error" };

int log_level_parse(const char *s, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcasecmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	if (strcasecmp(s, "warning") == 0) {
		*out = LOG_LEVEL_WARN;
		return 0;
	}
	return -EINVAL;
}

int log_init(const char *progname)
{
	const char *env = getenv("ZERNEL_LOG");
	enum log_level level;

	if (progname)
		log_progname = progname;
	if (!env || !*env)
		return 0;
	if (log_level_parse(env, &level) < 0) {
		current_level = LOG_LEVEL_INFO;
		log_warnx("ZERNEL_LOG=%s is not one of debug, info, warn, error; using info", env);
		return -EINVAL;
	}
	current_level = level;
	return 0;
}

enum log_level log_level_get(void)
{
	return current_level;
}

void log_level_set(enum log_level level)
{
	current_level = level;
}

static void log_emit(enum log_level level, int errnum, const char *fmt, va_list ap)
{
	char line[1024];
	int n, m;

	if (level < current_level)
		return;
	n = snprintf(line, sizeof(line), "%s: %s: ", log_progname, level_names[level]);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (m < 0)
		return;
	n += m;
	if ((size_t)n >= sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	if (errnum) {
		m = snprintf(line + n, sizeof(line) - (size_t)n, ": %s", strerror(errnum));
		if (m > 0)
			n += m;
		if ((size_t)n >= sizeof(line) - 2)
			n = (int)sizeof(line) - 2;
	}
	line[n++] = '\n';
	/* A failed write to stderr has nowhere better to be reported. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

#define LOG_BODY(level, errnum)				\
	do {						\
		int saved_errno = errno;		\
		va_list ap;				\
		va_start(ap, fmt);			\
		log_emit(level, errnum, fmt, ap);	\
		va_end(ap);				\
		errno = saved_errno;			\
	} while (0)

void log_debug(const char *fmt, ...) { LOG_BODY(LOG_LEVEL_DEBUG, 0); }
void log_info(const char *fmt, ...) { LOG_BODY(LOG_LEVEL_INFO, 0); }
void log_warn(const char *fmt, ...) { LOG_BODY(LOG_LEVEL_WARN, errno); }
void log_warnx(const char *fmt, ...) { LOG_BODY(LOG_LEVEL_WARN, 0); }
void log_error(const char *fmt, ...) { LOG_BODY(LOG_LEVEL_ERROR, 0); }

void fatal(const char *fmt, ...)
{
	LOG_BODY(LOG_LEVEL_ERROR, errno);
	exit(1);
}

void fatalx(const char *fmt, ...)
{
	LOG_BODY(LOG_LEVEL_ERROR, 0);
	exit(1);
}
