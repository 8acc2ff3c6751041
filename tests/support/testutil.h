/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers shared by the test suites: where the build is, unique segment
 * names and free ports, starting and stopping the project's binaries so that
 * none outlives its test, a tiny HTTP client, and skipping tests that need
 * root.
 */
#ifndef ZERNEL_TESTUTIL_H
#define ZERNEL_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shm/shm_writer.h"

/* $ZERNEL_BUILD (absolute), or "build". */
const char *tu_build_dir(void);
/* $ZERNEL_SRC, or ".". */
const char *tu_src_dir(void);
/* Writes "<build>/<rel>" into buf. */
const char *tu_build_path(char *buf, size_t len, const char *rel);

/*
 * "/zernel-test-<pid>-<n>", pid the calling (test) process: never the
 * production name, and what tu_sweep_segments() goes by.
 */
void tu_unique_shm_name(char *buf, size_t len);
/*
 * Removes the test segments whose naming process is gone.  A test's
 * collector dies with the test's process group (see tu_spawn) and may not
 * unlink its own; the runner sweeps before and after the suites.  The
 * segments of a test still running, anyone's, are never touched.
 */
void tu_sweep_segments(void);
/*
 * Writer options of a test segment: name, these capacities, simulated
 * mode, a publish a second, a 60 s window.  Tests then change what they
 * are about.
 */
void tu_shm_opts(struct shm_writer_opts *o, const char *name, struct shm_capacity cap);
/* A TCP port on 127.0.0.1 that was free a moment ago. */
uint16_t tu_free_port(void);

/*
 * Skips a test that needs root: prints "SKIP <test>: <why>" to stderr and
 * returns 1 when not root, so the test can `return`.
 */
int tu_skip_unless_root(const char *test);

/*
 * Skips a test because something `make test` installs or builds is missing
 * (a Debian package, a binary of this project): prints "SKIP <message>".
 * Under ZERNEL_TESTS_STRICT=1 (set by `make test`) it fails the test
 * instead, so a missing dependency can never pass for a passing test.
 */
void tu_skip_missing(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Starts argv[0] (a path) with argv, stdout and stderr to log_path (or
 * inherited when NULL).  Returns the pid or -1.
 *
 * The child stays in the test's process group, and so must whatever a
 * test starts: Check runs each test in a child of its own group, which
 * exits at the first failed check without any teardown, and kills that
 * group when the test ends, failed, timed out or passed.  That is what
 * keeps servers, collectors and workloads from outliving their test.
 */
pid_t tu_spawn(char *const argv[], const char *log_path);
/* The same, with stdin from in_fd and then stdout to out_fd where they are >= 0. */
pid_t tu_spawn_io(char *const argv[], const char *log_path, int in_fd, int out_fd);
/* Sends sig, waits up to timeout_ms; SIGKILLs after that.  Returns the wait status or -1. */
int tu_stop(pid_t pid, int sig, int timeout_ms);
/*
 * Live processes (zombies left out) named comm whose parent is parent and
 * whose process group is pgrp, each where not 0: how many, and in *first
 * (when not NULL) one of them, or -1.
 */
unsigned int tu_processes(const char *comm, pid_t parent, pid_t pgrp, pid_t *first);
/* Runs a shell command; returns its exit status (or -1). */
int tu_system(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Runs `sh -c cmd`, returns its stdout as a malloc'd string (NULL on
 * failure) and its exit status in *status (-1 when it did not exit).
 */
char *tu_capture(const char *cmd, int *status);
/* 1 when <build>/<rel> is an executable file. */
int tu_have_binary(const char *rel);

/*
 * GET or HEAD http://127.0.0.1:port/path.  Body (NUL-terminated, truncated
 * to len-1) into body; returns the HTTP status, or -errno.
 */
int tu_http_request(uint16_t port, const char *method, const char *path,
		    char *body, size_t len);
/* Polls until GET path answers `status` or timeout_ms passes; returns 0 or -ETIMEDOUT. */
int tu_wait_http(uint16_t port, const char *path, int status, int timeout_ms);

void tu_sleep_ms(unsigned int ms);
/* Reads a whole file into a malloc'd NUL-terminated buffer; NULL on error. */
char *tu_read_file(const char *path, size_t *len);
/*
 * The line of the mark "# site: NAME" in tests/py/stall_sites.py, where
 * the script stalls on purpose; 0 when it has none.
 */
unsigned int tu_stall_site_line(const char *name);

/* 1 when ZERNEL_RECORD=1: the tests write the files they generate. */
int tu_recording(void);
/*
 * The file rel under the source tree holds exactly text (len bytes), as
 * generated; when recording it is written first.  remake: the make target
 * that writes it, named in the failure.
 */
void tu_generated_file(const char *rel, const char *text, size_t len, const char *remake);

#endif /* ZERNEL_TESTUTIL_H */
