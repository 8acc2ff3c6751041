/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared test helpers; see testutil.h. */
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/testutil.h"

const char *tu_build_dir(void)
{
	const char *b = getenv("ZERNEL_BUILD");

	return b && *b ? b : "build";
}

const char *tu_src_dir(void)
{
	const char *s = getenv("ZERNEL_SRC");

	return s && *s ? s : ".";
}

const char *tu_build_path(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", tu_build_dir(), rel);
	return buf;
}

void tu_unique_shm_name(char *buf, size_t len)
{
	static unsigned int n;

	snprintf(buf, len, "/zernel-test-%d-%u", (int)getpid(), n++);
}

void tu_shm_opts(struct shm_writer_opts *o, const char *name, struct shm_capacity cap)
{
	memset(o, 0, sizeof(*o));
	o->name = name;
	o->cap = cap;
	o->mode = SHM_MODE_SIMULATE;
	o->publish_interval_ms = 1000;
	o->window_ns = 60ull * 1000000000ull;
}

void tu_sweep_segments(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char name[300];
		int pid;

		if (sscanf(e->d_name, "zernel-test-%d-", &pid) != 1 || pid <= 1)
			continue;
		/* EPERM: alive, someone else's. */
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(name, sizeof(name), "/%s", e->d_name);
		shm_unlink(name);
	}
	if (d)
		closedir(d);
}

uint16_t tu_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	uint16_t port = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return 0;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

int tu_skip_unless_root(const char *test)
{
	if (geteuid() == 0)
		return 0;
	fprintf(stderr, "SKIP %s: needs root (BPF, other users' processes)\n", test);
	return 1;
}

pid_t tu_spawn_io(char *const argv[], const char *log_path, int in_fd, int out_fd)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	/* No setpgid() here: see testutil.h. */
	if (log_path) {
		int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
	}
	if (in_fd >= 0)
		dup2(in_fd, STDIN_FILENO);
	if (out_fd >= 0)
		dup2(out_fd, STDOUT_FILENO);
	execv(argv[0], argv);
	fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

void tu_skip_missing(const char *fmt, ...)
{
	const char *strict = getenv("ZERNEL_TESTS_STRICT");
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (strict && strcmp(strict, "1") == 0)
		ck_abort_msg("missing under make test: %s", msg);
	fprintf(stderr, "SKIP %s", msg);
}

pid_t tu_spawn(char *const argv[], const char *log_path)
{
	return tu_spawn_io(argv, log_path, -1, -1);
}

unsigned int tu_processes(const char *comm, pid_t parent, pid_t pgrp, pid_t *first)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	unsigned int n = 0;
	char name[64];

	snprintf(name, sizeof(name), " (%s) ", comm);
	if (first)
		*first = -1;
	while (d && (e = readdir(d))) {
		char path[300], stat[512], *close_paren, state = 0;
		int ppid = 0, group = 0;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(stat, sizeof(stat), f) && strstr(stat, name) &&
		    (close_paren = strrchr(stat, ')')) &&
		    sscanf(close_paren + 1, " %c %d %d", &state, &ppid, &group) == 3 &&
		    state != 'Z' && (!parent || ppid == parent) && (!pgrp || group == pgrp)) {
			if (first && *first < 0)
				*first = (pid_t)atoi(e->d_name);
			n++;
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

int tu_stop(pid_t pid, int sig, int timeout_ms)
{
	int status;

	if (pid <= 0)
		return -1;
	kill(pid, sig);
	for (int waited = 0; waited < timeout_ms; waited += 10) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0)
			return -1;
		tu_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) == pid)
		return status;
	return -1;
}

int tu_system(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/*
 * Decodes a chunked body in place (HTTP/1.1: Go's servers, Prometheus's
 * among them, chunk any answer over 2 KiB); returns its length.
 */
static size_t dechunk(char *b)
{
	char *in = b, *out = b;

	for (;;) {
		char *end;
		unsigned long n = strtoul(in, &end, 16);
		char *data = strstr(end, "\r\n");

		if (end == in || !data || n == 0)
			break;
		data += 2;
		if (strlen(data) < n)
			n = strlen(data);
		memmove(out, data, n);
		out += n;
		in = data + n;
		if (strncmp(in, "\r\n", 2) == 0)
			in += 2;
	}
	*out = '\0';
	return (size_t)(out - b);
}

int tu_http_request(uint16_t port, const char *method, const char *path,
		    char *body, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 5 };
	char req[1024];
	size_t used = 0, cap = 65536;
	char *resp = malloc(cap);
	int fd, status = -EPROTO, n;

	if (!resp)
		return -ENOMEM;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		free(resp);
		return -errno;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		status = -errno;
		goto out;
	}
	n = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		     "Connection: close\r\n\r\n", method, path);
	if (write(fd, req, (size_t)n) != n) {
		status = -EIO;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (used + 1 >= cap) {
			char *bigger = realloc(resp, cap * 2);

			if (!bigger) {
				status = -ENOMEM;
				goto out;
			}
			resp = bigger;
			cap *= 2;
		}
		r = read(fd, resp + used, cap - used - 1);
		if (r <= 0)
			break;
		used += (size_t)r;
	}
	resp[used] = '\0';
	if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1) {
		status = -EPROTO;
		goto out;
	}
	if (body && len) {
		char *b = strstr(resp, "\r\n\r\n");
		size_t blen;

		if (b) {
			*b = '\0';
			b += 4;
			blen = strcasestr(resp, "\r\nTransfer-Encoding: chunked") ? dechunk(b) : strlen(b);
		} else {
			b = resp + used;
			blen = 0;
		}
		if (blen >= len)
			blen = len - 1;
		memcpy(body, b, blen);
		body[blen] = '\0';
	}
out:
	close(fd);
	free(resp);
	return status;
}

int tu_wait_http(uint16_t port, const char *path, int status, int timeout_ms)
{
	for (int waited = 0; waited <= timeout_ms; waited += 50) {
		if (tu_http_request(port, "GET", path, NULL, 0) == status)
			return 0;
		tu_sleep_ms(50);
	}
	return -ETIMEDOUT;
}

void tu_sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

char *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, used = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t r;

		if (used + 4096 + 1 > cap) {
			char *bigger = realloc(buf, cap ? cap * 2 : 8192);

			if (!bigger) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = bigger;
			cap = cap ? cap * 2 : 8192;
		}
		r = fread(buf + used, 1, cap - used - 1, f);
		used += r;
		if (r == 0)
			break;
	}
	fclose(f);
	buf[used] = '\0';
	if (len)
		*len = used;
	return buf;
}

unsigned int tu_stall_site_line(const char *name)
{
	char path[512], mark[64], *text, *at;
	unsigned int line = 1;

	snprintf(path, sizeof(path), "%s/tests/py/stall_sites.py", tu_src_dir());
	snprintf(mark, sizeof(mark), "# site: %s\n", name);
	text = tu_read_file(path, NULL);
	at = text ? strstr(text, mark) : NULL;
	if (!at) {
		free(text);
		return 0;
	}
	for (const char *c = text; c < at; c++)
		line += *c == '\n';
	free(text);
	return line;
}

char *tu_capture(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	size_t cap = 65536, used = 0, r;
	char *buf = malloc(cap);
	int st;

	*status = -1;
	if (!p || !buf) {
		if (p)
			pclose(p);
		free(buf);
		return NULL;
	}
	while ((r = fread(buf + used, 1, cap - used - 1, p)) > 0) {
		used += r;
		if (used + 1 == cap) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger)
				break;
			buf = bigger;
			cap *= 2;
		}
	}
	buf[used] = '\0';
	st = pclose(p);
	if (st != -1 && WIFEXITED(st))
		*status = WEXITSTATUS(st);
	return buf;
}

int tu_have_binary(const char *rel)
{
	char path[1024];

	tu_build_path(path, sizeof(path), rel);
	return access(path, X_OK) == 0;
}

int tu_recording(void)
{
	const char *r = getenv("ZERNEL_RECORD");

	return r && strcmp(r, "1") == 0;
}

void tu_generated_file(const char *rel, const char *text, size_t len, const char *remake)
{
	char path[1024], *file;
	size_t got = 0;

	snprintf(path, sizeof(path), "%s/%s", tu_src_dir(), rel);
	if (tu_recording()) {
		FILE *f = fopen(path, "w");

		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(fwrite(text, 1, len, f), len);
		fclose(f);
	}
	file = tu_read_file(path, &got);
	ck_assert_msg(file != NULL, "cannot read %s", path);
	ck_assert_msg(got == len && memcmp(file, text, len) == 0,
		      "%s is not what the catalog generates: run make %s", path, remake);
	free(file);
}
