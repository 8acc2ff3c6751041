/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Logging to stderr for every Zernel process, in the OpenBSD style:
 * log_warn appends strerror(errno), log_warnx does not; fatal/fatalx exit(1)
 * and belong only to start-up and broken invariants.  The level comes from
 * ZERNEL_LOG=debug|info|warn|error (default info).
 */
#ifndef ZERNEL_LOG_H
#define ZERNEL_LOG_H

enum log_level { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR };

/*
 * Reads ZERNEL_LOG and names the process in every line.  Returns 0, or
 * -EINVAL when ZERNEL_LOG holds an unknown level (the level stays info and a
 * warning says so).
 */
int log_init(const char *progname);
enum log_level log_level_get(void);
void log_level_set(enum log_level level);
/* Parses "debug", "info", "warn" or "error"; -EINVAL otherwise. */
int log_level_parse(const char *s, enum log_level *out);

void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif /* ZERNEL_LOG_H */
