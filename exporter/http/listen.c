/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP listeners (see listen.h).  Called from main before the sandbox step;
 * nothing here runs afterwards.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "exporter/http/listen.h"

#define LISTEN_BACKLOG	1024

/*
 * A connection reaches the exporter with its first bytes (TCP_DEFER_ACCEPT):
 * until then the kernel holds it as a half-open request.  Under a flood
 * that fills the accept queue, the kernel drops a scraper's first data
 * segment with its handshake's last ACK, and the client sends it again
 * hundreds of milliseconds later; accepted before it, the scraper's
 * connection looked like a slow client's and could be the one evicted.
 * Accepted with its bytes, its complete request is in its socket, and a
 * connection that sends nothing takes no slot and no descriptor.  The
 * kernel counts the wait in retransmissions of its SYN-ACK (1 s, then 2 s
 * more): a silent client is accepted about 3 s after connecting, and then
 * has the request timeout like any other.  A connection the kernel made
 * from a SYN cookie comes without that wait; http_parked.h makes it.
 */
#define LISTEN_DEFER_S	3

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
	if (setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &(int){ LISTEN_DEFER_S },
		       sizeof(int)) < 0)
		log_warn("%s: TCP_DEFER_ACCEPT (silent connections will take slots)", what);
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
