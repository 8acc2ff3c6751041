// SPDX-License-Identifier: BSD-2-Clause
/*
 * Test helper for tests/check_sandbox.c, built with ZERNEL_TEST_HOOKS and
 * never installed.  It does what zernel-exporter does before its sandbox
 * (binds a listening socket, maps the segment read-only through
 * shm_reader), enters the sandbox, then tries one forbidden or allowed thing
 * named on the command line and reports what happened on stdout.
 *
 *   sandbox_probe [--user NAME] [--fail STEP] [--max-fds N] [--early-thread 1]
 *                 [--role serve|webhook] SHM_NAME ACTION
 *
 * The role is the exporter process whose allowlist it takes: the serving
 * process (the default) or the webhook sender.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "exporter/sandbox/sandbox.h"
#include "shm/shm_reader.h"

static struct shm_reader reader;
static struct shm_snapshot snap;

static void report_status(void)
{
	static const char *const keys[] = {
		"Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:",
		"CapBnd:", "CapAmb:", "NoNewPrivs:", "Seccomp:", "Threads:",
	};
	char line[512];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f) {
		printf("STATUS_ERROR %s\n", strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f))
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (strncmp(line, keys[i], strlen(keys[i])) == 0)
				printf("%s", line);
	fclose(f);
}

/* The permissions of every mapping of the segment, one MAP line each. */
static void report_maps(const char *shm_name)
{
	char line[1024], path[300];
	FILE *f = fopen("/proc/self/maps", "r");

	snprintf(path, sizeof(path), "/dev/shm%s", shm_name);
	if (!f) {
		printf("MAPS_ERROR %s\n", strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char perms[8] = "";
		const char *p = strchr(line, '/');

		if (!p || strncmp(p, path, strlen(path)) != 0 ||
		    (p[strlen(path)] != '\n' && p[strlen(path)] != ' '))
			continue;
		if (sscanf(line, "%*s %7s", perms) == 1)
			printf("MAP %s\n", perms);
	}
	fclose(f);
}

static void report_limits(void)
{
	static const struct { int res; const char *name; } lims[] = {
		{ RLIMIT_CORE, "CORE" }, { RLIMIT_NOFILE, "NOFILE" }, { RLIMIT_FSIZE, "FSIZE" },
	};

	for (size_t i = 0; i < sizeof(lims) / sizeof(lims[0]); i++) {
		struct rlimit rl;

		if (getrlimit(lims[i].res, &rl) == 0)
			printf("RLIMIT %s %lld %lld\n", lims[i].name,
			       rl.rlim_cur == RLIM_INFINITY ? -1LL : (long long)rl.rlim_cur,
			       rl.rlim_max == RLIM_INFINITY ? -1LL : (long long)rl.rlim_max);
	}
}

static void *thread_main(void *arg)
{
	/* Reads the segment again from a thread created under the filter. */
	char reason[256];
	enum shm_read_status st = shm_reader_snapshot(&reader, &snap, reason, sizeof(reason));

	*(int *)arg = (st == SHM_READ_OK || st == SHM_READ_STALE) ? 1 : -1;
	return NULL;
}

static void *idle_main(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* Prints RESULT <what> <ok|errno name> for a call expected to fail. */
static void result(const char *what, int rc)
{
	if (rc >= 0)
		printf("RESULT %s ok\n", what);
	else
		printf("RESULT %s errno=%d\n", what, errno);
}

/*
 * What an alert webhook does: resolve, connect without blocking, send a
 * request, read the answer.  target is HOST:PORT.
 */
static int act_connect(const char *target)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *ai = NULL;
	char host[256], answer[256], req[320];
	const char *colon = strrchr(target, ':');
	struct pollfd pfd;
	socklen_t sl = sizeof(int);
	int fd = -1, soerr = 0, g, n;
	ssize_t got = -1;

	if (!colon || (size_t)(colon - target) >= sizeof(host))
		return 2;
	memcpy(host, target, (size_t)(colon - target));
	host[colon - target] = '\0';
	g = getaddrinfo(host, colon + 1, &hints, &ai);
	if (g != 0) {
		printf("RESULT connect gai=%d\n", g);
		return 0;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS))
		goto out;
	pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&pfd, 1, 5000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 ||
	    soerr != 0)
		goto out;
	n = snprintf(req, sizeof(req), "POST /hook HTTP/1.1\r\nHost: %s\r\n"
		     "Content-Length: 2\r\n\r\n{}", host);
	if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
		goto out;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 5000) == 1)
		got = recv(fd, answer, sizeof(answer) - 1, 0);
out:
	if (got > 0) {
		answer[got] = '\0';
		answer[strcspn(answer, "\r\n")] = '\0';
		printf("RESULT connect answer=%s\n", answer);
	} else {
		printf("RESULT connect failed errno=%d soerr=%d\n", errno, soerr);
	}
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return 0;
}

static int act(const char *action, const char *shm_name, int listen_fd)
{
	if (strcmp(action, "status") == 0) {
		char reason[256];
		enum shm_read_status st;

		report_status();
		report_maps(shm_name);
		report_limits();
		st = shm_reader_snapshot(&reader, &snap, reason, sizeof(reason));
		printf("SNAPSHOT %s\n", shm_read_status_name(st));
		return 0;
	}
	if (strcmp(action, "write-segment") == 0) {
		printf("writing to the mapping\n");
		fflush(stdout);
		*(volatile unsigned char *)reader.map = 0x5a;
		printf("RESULT write-segment survived\n");
		return 0;
	}
	if (strcmp(action, "execve") == 0) {
		char *const argv[] = { "/bin/true", NULL };

		fflush(stdout);
		execve("/bin/true", argv, NULL);
		result("execve", -1);
		return 0;
	}
	if (strcmp(action, "open-write") == 0) {
		char seg[300];
		int fd;

		snprintf(seg, sizeof(seg), "/dev/shm%s", shm_name);
		fd = open("/tmp/zernel-sandbox-probe-write", O_WRONLY | O_CREAT | O_TRUNC, 0600);
		result("open-create", fd);
		fd = open(seg, O_RDWR);
		result("open-segment-rdwr", fd);
		fd = open("/dev/null", O_WRONLY | O_APPEND);
		result("open-append", fd);
		fd = open("/etc/hostname", O_RDONLY);
		result("open-readonly", fd);
		return 0;
	}
	if (strcmp(action, "socket") == 0) {
		result("socket-packet", socket(AF_PACKET, SOCK_RAW, 0));
		result("socket-netlink", socket(AF_NETLINK, SOCK_RAW, 0));
		result("socket-inet", socket(AF_INET, SOCK_STREAM, 0));
		result("socket-inet6", socket(AF_INET6, SOCK_DGRAM, 0));
		result("socket-unix", socket(AF_UNIX, SOCK_STREAM, 0));
		return 0;
	}
	if (strcmp(action, "mmap-exec") == 0) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		void *q = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		result("mmap-exec", p == MAP_FAILED ? -1 : 0);
		result("mmap-rw", q == MAP_FAILED ? -1 : 0);
		if (q != MAP_FAILED)
			result("mprotect-exec", mprotect(q, 4096, PROT_READ | PROT_EXEC));
		return 0;
	}
	if (strcmp(action, "ptrace") == 0) {
		fflush(stdout);
		result("ptrace", (int)ptrace(PTRACE_TRACEME, 0, NULL, NULL));
		return 0;
	}
	if (strcmp(action, "fork") == 0) {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid > 0)
			waitpid(pid, NULL, 0);
		result("fork", pid);
		return 0;
	}
	if (strcmp(action, "thread") == 0) {
		pthread_t t;
		int ok = 0, r = pthread_create(&t, NULL, thread_main, &ok);

		if (r == 0)
			pthread_join(t, NULL);
		printf("RESULT thread create=%d read=%d\n", r, ok);
		return 0;
	}
	if (strcmp(action, "accept") == 0) {
		/* One real client through the filter: accept, read, answer. */
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		char buf[64];
		int c;
		ssize_t n;

		if (getsockname(listen_fd, (struct sockaddr *)&sa, &sl) < 0)
			return 1;
		printf("PORT %u\n", (unsigned int)ntohs(sa.sin_port));
		fflush(stdout);
		c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			result("accept", -1);
			return 0;
		}
		n = read(c, buf, sizeof(buf));
		if (n > 0 && write(c, buf, (size_t)n) != n)
			n = -1;
		close(c);
		printf("RESULT accept echoed=%zd\n", n);
		return 0;
	}
	if (strncmp(action, "connect=", 8) == 0)
		return act_connect(action + 8);
	if (strcmp(action, "connect-unix") == 0) {
		/* A connect with a socket the filter let exist: the call itself is the test. */
		struct sockaddr_un un = { .sun_family = AF_UNIX, .sun_path = "/run/zernel-none" };
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
			return 1;
		fflush(stdout);	/* SANDBOXED, before a call that may kill */
		result("connect-unix", connect(sv[0], (struct sockaddr *)&un, sizeof(un)));
		return 0;
	}
	if (strncmp(action, "resolve=", 8) == 0) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
		struct addrinfo *ai = NULL;
		int g = getaddrinfo(action + 8, "80", &hints, &ai);

		printf("RESULT resolve gai=%d\n", g);
		if (ai)
			freeaddrinfo(ai);
		return 0;
	}
	fprintf(stderr, "sandbox_probe: unknown action %s\n", action);
	return 2;
}

int main(int argc, char **argv)
{
	struct sandbox_opts so = { .user = NULL, .max_fds = 0 };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	const char *shm_name, *action;
	enum sandbox_step fail = SANDBOX_STEP_NONE;
	char reason[256];
	enum shm_read_status st;
	int i, fd, r, early_thread = 0;
	pthread_t early;

	log_init("sandbox_probe");
	for (i = 1; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		if (strcmp(argv[i], "--user") == 0) {
			so.user = argv[i + 1];
		} else if (strcmp(argv[i], "--max-fds") == 0) {
			so.max_fds = (unsigned int)strtoul(argv[i + 1], NULL, 10);
		} else if (strcmp(argv[i], "--early-thread") == 0) {
			early_thread = 1;
		} else if (strcmp(argv[i], "--role") == 0) {
			if (strcmp(argv[i + 1], "webhook") == 0) {
				so.role = SANDBOX_ROLE_WEBHOOK;
			} else if (strcmp(argv[i + 1], "serve") != 0) {
				fprintf(stderr, "sandbox_probe: unknown role %s\n", argv[i + 1]);
				return 2;
			}
		} else if (strcmp(argv[i], "--fail") == 0) {
			for (int s = 0; s < SANDBOX_STEP_COUNT; s++)
				if (strcmp(argv[i + 1], sandbox_step_name((enum sandbox_step)s)) == 0)
					fail = (enum sandbox_step)s;
			if (fail == SANDBOX_STEP_NONE) {
				fprintf(stderr, "sandbox_probe: unknown step %s\n", argv[i + 1]);
				return 2;
			}
		} else {
			fprintf(stderr, "sandbox_probe: unknown flag %s\n", argv[i]);
			return 2;
		}
	}
	if (argc - i != 2) {
		fprintf(stderr, "usage: sandbox_probe [--user NAME] [--fail STEP] "
			"[--max-fds N] [--early-thread 1] [--role serve|webhook] SHM_NAME ACTION\n");
		return 2;
	}
	shm_name = argv[i];
	action = argv[i + 1];

	/* What zernel-exporter does first: bind, then open the segment. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		perror("sandbox_probe: listen");
		return 1;
	}
	shm_reader_init(&reader, shm_name);
	st = shm_reader_snapshot(&reader, &snap, reason, sizeof(reason));
	if (st != SHM_READ_OK && st != SHM_READ_STALE) {
		fprintf(stderr, "sandbox_probe: segment %s: %s\n", shm_name, reason);
		return 1;
	}

	/* The mistake sandbox_enter() must refuse: a thread already running. */
	if (early_thread && pthread_create(&early, NULL, idle_main, NULL) != 0) {
		fprintf(stderr, "sandbox_probe: pthread_create failed\n");
		return 1;
	}
	if (fail != SANDBOX_STEP_NONE)
		sandbox_test_fail_step(fail);
	r = sandbox_enter(&so);
	if (r < 0) {
		fprintf(stderr, "sandbox_probe: sandbox_enter: %s\n", strerror(-r));
		return 1;
	}
	printf("SANDBOXED\n");
	r = act(action, shm_name, fd);
	fflush(stdout);
	return r;
}
