/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Listening sockets for both servers, created by the exporter itself so
 * that binding (the one step that may need privilege, for ports below 1024)
 * happens before the sandbox is entered.
 */
#ifndef ZERNEL_LISTEN_H
#define ZERNEL_LISTEN_H

#include <stdint.h>

/*
 * Binds host:port (numeric IPv4/IPv6 or a name), listens, and returns a
 * non-blocking close-on-exec fd, or -errno after logging why.
 */
int listen_tcp(const char *what, const char *host, uint16_t port);

#endif /* ZERNEL_LISTEN_H */
