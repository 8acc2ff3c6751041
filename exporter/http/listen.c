/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP listeners (see listen.h).  Called from main before the sandbox step;
 * nothing here runs afterwards.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "exporter/http/listen.h"

#define LISTEN_BACKLOG	1024

int listen_tcp(const char *what, const char *host, uint16_t port)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE,
	};
	struct addrinfo *res = NULL;
	char service[8];
	int fd = -1, one = 1, err, gai;

	snprintf(service, sizeof(service), "%u", (unsigned int)port);
	gai = getaddrinfo(host, service, &hints, &res);
	if (gai != 0) {
		log_warnx("%s: cannot resolve %s: %s", what, host, gai_strerror(gai));
		return -EINVAL;
	}
	fd = socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    res->ai_protocol);
	if (fd < 0) {
		err = -errno;
		log_warn("%s: socket", what);
		goto cleanup;
	}
	/* Restarts must not wait for TIME_WAIT connections to expire. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) < 0) {
		err = -errno;
		log_warn("%s: cannot bind %s:%u", what, host, (unsigned int)port);
		goto cleanup;
	}
	if (listen(fd, LISTEN_BACKLOG) < 0) {
		err = -errno;
		log_warn("%s: listen on %s:%u", what, host, (unsigned int)port);
		goto cleanup;
	}
	freeaddrinfo(res);
	return fd;
cleanup:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return err;
}
