/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections accepted with nothing to read yet, waiting for their first
 * bytes outside the slots (fairshare.h, http_waiting.h).  The listener's
 * TCP_DEFER_ACCEPT (listen.c) hands the exporter a connection with its
 * first bytes, but not when the kernel answered it with a SYN cookie (its
 * SYN queue full, as under a flood): then the handshake's last ACK alone
 * makes the connection.  A scraper's request follows that ACK within a
 * scheduling delay; seated before it, the scraper would look like a slow
 * client, and a burst of newcomers from its address could take its slot.
 * Here it waits as the kernel would have made it wait, and takes a slot
 * with its request in hand.  At most HTTP_MAX_PARKED wait, the oldest
 * closed first when more come; one that sends nothing is closed after
 * HTTP_PARKED_MS.  HTTP thread only; unprivileged.
 */
#ifndef ZERNEL_HTTP_PARKED_H
#define ZERNEL_HTTP_PARKED_H

#include <stdint.h>

#define H2O_USE_LIBUV 0
#include <h2o.h>

#include "exporter/http/http_waiting.h"

#define HTTP_MAX_PARKED	512u	/* waiting at once; a burst of cookies may park this many */
#define HTTP_PARKED_MS	3000u	/* as long as the kernel's deferred accept waits */

struct http_parked {
	struct http_waiting list;	/* head: waiting longest */
	unsigned int n;
	/* sock's first bytes came, in sock->input; reading stopped.  It owns sock now. */
	void (*ready)(void *arg, h2o_socket_t *sock);
	void *arg;
};

void http_parked_init(struct http_parked *p, void (*ready)(void *arg, h2o_socket_t *sock),
		      void *arg);

/*
 * Whether sock has no bytes to read, and so should wait here rather than
 * take a slot: its peer's bytes are still to come, or it closed or failed
 * before sending any (its read here says so, and closes it).
 */
int http_parked_no_bytes(h2o_socket_t *sock);

/* sock waits for its first bytes from now_ns; the oldest waiting is closed if full. */
void http_parked_add(struct http_parked *p, h2o_socket_t *sock, uint64_t now_ns);

/* Closes those that have waited HTTP_PARKED_MS by now_ns. */
void http_parked_expire(struct http_parked *p, uint64_t now_ns);

/* Closes every one (the server stops). */
void http_parked_close_all(struct http_parked *p);

#endif /* ZERNEL_HTTP_PARKED_H */
