/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections from many loopback addresses (see tu_net.h).
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/util.h"
#include "tests/support/tu_net.h"

int tu_connect_from(unsigned int host, uint16_t port, int nonblock, int rcvbuf)
{
	struct sockaddr_in src = { .sin_family = AF_INET };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);

	if (fd < 0)
		return -1;
	src.sin_addr.s_addr = htonl(0x7f000000u | (host & 0xffffffu));
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/*
	 * The port is chosen at connect(), by the whole address pair: a bind()
	 * that chose it would search every local port in use, which after a
	 * flood's hundred thousand TIME_WAIT sockets takes milliseconds a call.
	 */
	if (setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &(int){ 1 }, sizeof(int)) < 0 ||
	    (rcvbuf && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0) ||
	    bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0 && errno != EINPROGRESS)) {
		close(fd);
		return -1;
	}
	return fd;
}

int tu_connect_slow(unsigned int host, uint16_t port)
{
	int fd = tu_connect_from(host, port, 0, 0);

	if (fd >= 0 && send(fd, "G", 1, MSG_NOSIGNAL) != 1) {
		close(fd);
		return -1;
	}
	return fd;
}

int tu_connect_slow_many(int *fd, unsigned int n, unsigned int first, uint16_t port)
{
	struct pollfd *p = calloc(n, sizeof(*p));
	uint64_t t0 = now_mono_ns();
	unsigned int up = 0;

	for (unsigned int i = 0; i < n; i++)
		fd[i] = -1;
	if (!p)
		return -1;
	for (unsigned int i = 0; i < n; i++) {
		fd[i] = tu_connect_from(first + i, port, 1, 0);
		if (fd[i] < 0)
			goto fail;
		p[i] = (struct pollfd){ .fd = fd[i], .events = POLLOUT };
	}
	/* Every handshake at once: a busy machine delays each packet, not each in turn. */
	while (up < n) {
		if (now_mono_ns() - t0 > 10 * NSEC_PER_SEC || poll(p, n, 100) < 0)
			goto fail;
		for (unsigned int i = 0; i < n; i++) {
			int err = 0;
			socklen_t len = sizeof(err);

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			if (getsockopt(fd[i], SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err)
				goto fail;
			p[i].fd = -1;	/* connected: poll() passes over it from now on */
			up++;
		}
	}
	for (unsigned int i = 0; i < n; i++) {
		int fl = fcntl(fd[i], F_GETFL);

		if (fl < 0 || fcntl(fd[i], F_SETFL, fl & ~O_NONBLOCK) < 0 ||
		    send(fd[i], "G", 1, MSG_NOSIGNAL) != 1)
			goto fail;
	}
	free(p);
	return 0;
fail:
	for (unsigned int i = 0; i < n; i++) {
		if (fd[i] >= 0)
			close(fd[i]);
		fd[i] = -1;
	}
	free(p);
	return -1;
}

/* A row of /proc/net/tcp: hex, addresses as stored (network order). */
struct tcp_row {
	unsigned int local, lport, rem, st, rx;
	unsigned long inode;
};

/* The next row of f for a socket on 127.0.0.1:port; 0 at the end. */
static int next_row(FILE *f, uint16_t port, struct tcp_row *r)
{
	char line[512];

	while (fgets(line, sizeof(line), f))
		/* "sl: local rem st tx_queue:rx_queue tr:when retrnsmt uid timeout inode" */
		if (sscanf(line, " %*u: %x:%x %x:%*x %x %*x:%x %*x:%*x %*x %*u %*u %lu", &r->local,
			   &r->lport, &r->rem, &r->st, &r->rx, &r->inode) == 6 &&
		    r->local == htonl(INADDR_LOOPBACK) && r->lport == port)
			return 1;
	return 0;
}

/*
 * Of the sockets on 127.0.0.1:port in state st, how many (half_open) or
 * the sum of their receive queues, which a listener's row gives as its
 * accept queue; -1 unread.
 */
static int tcp_rows(uint16_t port, unsigned int want_st, int sum_rx)
{
	FILE *f = fopen("/proc/net/tcp", "re");
	struct tcp_row r;
	int n = 0;

	if (!f)
		return -1;
	while (next_row(f, port, &r))
		if (r.st == want_st)
			n += sum_rx ? (int)r.rx : 1;
	fclose(f);
	return n;
}

int tu_tcp_half_open(uint16_t port)
{
	return tcp_rows(port, 0x03, 0);		/* TCP_SYN_RECV */
}

int tu_tcp_accept_queue(uint16_t port)
{
	return tcp_rows(port, 0x0A, 1);		/* TCP_LISTEN */
}

int tu_tcp_accepted_from(uint16_t port, unsigned int first, unsigned int n)
{
	FILE *f = fopen("/proc/net/tcp", "re");
	struct tcp_row r;
	int held = 0;

	if (!f)
		return -1;
	while (next_row(f, port, &r)) {
		unsigned int host = ntohl(r.rem) & 0xffffffu;

		/* A socket no process has accepted yet has no inode. */
		if (r.st == 0x01 && r.inode && host >= first && host - first < n)
			held++;
	}
	fclose(f);
	return held;
}

void tu_exchange_line(int fd, const char *text, char *line, size_t len)
{
	struct timeval tv = { .tv_sec = 5 };
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	n = read(fd, line, len - 1);
	line[n > 0 ? n : 0] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
}

void tu_raise_nofile(void)
{
	struct rlimit rl;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = rl.rlim_max;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

long long tu_tcp_mem_bytes(void)
{
	FILE *f = fopen("/proc/net/sockstat", "re");
	char line[256];
	long long pages = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *m = strstr(line, " mem ");

		if (strncmp(line, "TCP:", 4) == 0 && m && sscanf(m, " mem %lld", &pages) != 1)
			pages = -1;
	}
	fclose(f);
	return pages < 0 ? -1 : pages * sysconf(_SC_PAGESIZE);
}
