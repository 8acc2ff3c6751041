/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http_get.h.  HTTP/1.0 with Connection: close, so the body ends with the
 * connection and no chunked coding comes back.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/http_get.h"
#include "common/util.h"

static int connect_to(const struct url *u, const char **why)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	char port[8];
	int fd = -1;

	snprintf(port, sizeof(port), "%u", u->port ? u->port : 9091);
	if (getaddrinfo(u->host, port, &hints, &res) != 0) {
		*why = "cannot resolve the host";
		return -EHOSTUNREACH;
	}
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		*why = "cannot connect (is zernel-exporter running?)";
		return -ECONNREFUSED;
	}
	return fd;
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads until the peer closes: the whole response in *out. */
static int recv_all(int fd, int timeout_ms, char **out, size_t *len, const char **why)
{
	uint64_t deadline = now_mono_ns() + (uint64_t)timeout_ms * NSEC_PER_MSEC;
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = now_mono_ns();
		ssize_t got;

		if (now >= deadline || poll(&p, 1, (int)((deadline - now) / NSEC_PER_MSEC) + 1) == 0) {
			free(buf);
			*why = "no complete answer in time";
			return -ETIMEDOUT;
		}
		if (n == cap) {
			char *bigger;

			if (cap >= HTTP_GET_MAX) {
				free(buf);
				*why = "answer too large";
				return -E2BIG;
			}
			bigger = realloc(buf, cap * 2 + 1);
			if (!bigger) {
				free(buf);
				return -ENOMEM;
			}
			buf = bigger;
			cap *= 2;
		}
		got = recv(fd, buf + n, cap - n, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			free(buf);
			*why = "connection failed";
			return -EIO;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int http_get(const struct url *u, const char *path, int timeout_ms, char **body, size_t *len,
	     const char **why)
{
	char req[URL_MAX + URL_HOST_MAX + 128], *resp = NULL, *start;
	size_t n = 0;
	int fd, err, status = 0;

	*body = NULL;
	fd = connect_to(u, why);
	if (fd < 0)
		return fd;
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n"
		 "Accept: application/json\r\n\r\n", path, u->authority);
	err = send_all(fd, req, strlen(req));
	if (err == 0)
		err = recv_all(fd, timeout_ms, &resp, &n, why);
	else
		*why = "cannot send the request";
	close(fd);
	if (err)
		return err;
	start = strstr(resp, "\r\n\r\n");
	if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1 || !start || status < 100 || status > 599) {
		free(resp);
		*why = "not an HTTP answer";
		return -EPROTO;
	}
	start += 4;
	*len = n - (size_t)(start - resp);
	memmove(resp, start, *len + 1);
	*body = resp;
	return status;
}
