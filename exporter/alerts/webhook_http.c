/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Webhook transport: the URL rule and a bounded HTTP/1.1 POST over plain
 * sockets (see webhook.h for the system calls it makes, which the
 * exporter's seccomp allowlist permits).  Runs unprivileged in the webhook
 * threads; everything read from the network is bounded.
 */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "exporter/alerts/webhook_http.h"

#define RESPONSE_MAX	(64u << 10)	/* read at most this much of an answer */

int webhook_url_parse(const char *url, struct url *u, char *err, size_t errlen)
{
	const char *why = NULL;

	if (url_parse(url, u, &why) == 0 && strcmp(u->scheme, "http") != 0)
		why = strcmp(u->scheme, "https") == 0 ?
			"https is not supported: give an http:// URL (put a TLS relay in "
			"front of the receiver if it needs TLS)" :
			"expected http://HOST[:PORT][/PATH]";
	if (why) {
		snprintf(err, errlen, "webhook URL '%.200s': %s", url, why);
		return -EINVAL;
	}
	if (!u->port)
		u->port = 80;
	return 0;
}

/* ---- the exchange ------------------------------------------------------ */

static int remaining_ms(uint64_t deadline_ns)
{
	uint64_t now = now_mono_ns();

	return now >= deadline_ns ? 0 : (int)((deadline_ns - now + 999999) / 1000000);
}

/* Waits for events on fd until the deadline: 0, or -ETIMEDOUT / -errno. */
static int wait_fd(int fd, short events, uint64_t deadline_ns)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = events };
		int ms = remaining_ms(deadline_ns), r;

		if (ms == 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, ms);
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static int connect_one(const struct addrinfo *ai, uint64_t deadline_ns)
{
	socklen_t sl = sizeof(int);
	int fd, soerr = 0, r;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return fd;
	if (errno != EINPROGRESS) {
		r = -errno;
		goto fail;
	}
	r = wait_fd(fd, POLLOUT, deadline_ns);
	if (r < 0)
		goto fail;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
		r = -errno;
		goto fail;
	}
	if (soerr) {
		r = -soerr;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return r;
}

static int connect_any(const struct url *u, uint64_t deadline_ns, char *why,
		       size_t whylen)
{
	struct addrinfo hints, *res = NULL;
	int fd = -EHOSTUNREACH, g;
	char port[8];

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	/* An IP literal needs no resolver: try that first. */
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%u", (unsigned int)u->port);
	g = getaddrinfo(u->host, port, &hints, &res);
	if (g == EAI_NONAME) {
		hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
		g = getaddrinfo(u->host, port, &hints, &res);
	}
	if (g != 0) {
		snprintf(why, whylen, "cannot resolve %s: %s", u->host, gai_strerror(g));
		return -EHOSTUNREACH;
	}
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = connect_one(ai, deadline_ns);
		if (fd >= 0)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(why, whylen, "connect to %s: %s", u->authority, strerror(-fd));
	return fd;
}

static int send_all(int fd, const char *p, size_t len, uint64_t deadline_ns)
{
	while (len) {
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL);

		if (w > 0) {
			p += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN)
			return -errno;
		if (wait_fd(fd, POLLOUT, deadline_ns) < 0)
			return -ETIMEDOUT;
	}
	return 0;
}

int webhook_http_status(const char *buf, size_t len)
{
	int st;

	if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ' ||
	    !isdigit((unsigned char)buf[9]) || !isdigit((unsigned char)buf[10]) ||
	    !isdigit((unsigned char)buf[11]))
		return -EPROTO;
	st = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	return st >= 100 && st <= 599 ? st : -EPROTO;
}

int webhook_http_post(const struct url *u, const char *body, size_t len,
		      unsigned int timeout_ms, char *why, size_t whylen)
{
	uint64_t deadline = now_mono_ns() + (uint64_t)timeout_ms * NSEC_PER_MSEC;
	char head[URL_MAX + 512], *resp = NULL;
	size_t got = 0;
	int fd, r, n;

	why[0] = '\0';
	fd = connect_any(u, deadline, why, whylen);
	if (fd < 0)
		return fd;
	n = snprintf(head, sizeof(head),
		     "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: zernel-exporter/%s\r\n"
		     "Content-Type: application/json\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n", u->path, u->authority, ZERNEL_VERSION, len);
	r = send_all(fd, head, (size_t)n, deadline);
	if (!r)
		r = send_all(fd, body, len, deadline);
	if (r) {
		snprintf(why, whylen, "sending to %s: %s", u->authority, strerror(-r));
		goto cleanup;
	}
	resp = malloc(RESPONSE_MAX);
	if (!resp) {
		r = -ENOMEM;
		goto cleanup;
	}
	/* Read to the end (Connection: close) so the receiver's reply is never cut with a reset. */
	for (;;) {
		ssize_t k;

		if (got == RESPONSE_MAX)
			break;
		k = recv(fd, resp + got, RESPONSE_MAX - got, 0);
		if (k > 0) {
			got += (size_t)k;
			continue;
		}
		if (k == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			r = -errno;
			break;
		}
		if (wait_fd(fd, POLLIN, deadline) < 0) {
			r = -ETIMEDOUT;
			break;
		}
	}
	n = webhook_http_status(resp, got);
	if (n > 0) {
		r = n;	/* a status line is an answer, whatever came after it */
	} else {
		if (!r)
			r = -EPROTO;
		snprintf(why, whylen, "%s: %s", u->authority, got ? "answer is not HTTP/1.x" :
			 r == -ETIMEDOUT ? "no answer in time" : strerror(-r));
	}
cleanup:
	free(resp);
	close(fd);
	return r;
}
