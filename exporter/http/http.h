/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exporter's HTTP server (h2o, libh2o-evloop): /metrics, /healthz, /
 * and 404 for the rest; GET and HEAD only.  It runs in a thread of its own
 * with its own segment reader and private snapshot; what it shares with
 * the other threads is the atomic counters of stats.h and the alert engine,
 * which renders under its own mutex (alerts.h).
 */
#ifndef ZERNEL_HTTP_H
#define ZERNEL_HTTP_H

/*
 * A fair share of the connections (fairshare.h): more than the limits get
 * 503 and are closed.  HTTP/1.1 only: Prometheus scrapes over it, and
 * HTTP/2's many streams per connection (and resets) would let one client
 * make the server render without bound.
 */
#define HTTP_MAX_CONNECTIONS	256	/* open at once */
#define HTTP_MAX_PER_ADDR	32	/* from one address (IPv6: one /64) */
#define HTTP_RESERVE		32	/* last slots: only for addresses holding <= 1 */
#define HTTP_MAX_HEADER_BYTES	8192	/* request line + headers; more gets 431 */
#define HTTP_MAX_BODY_BYTES	1024	/* request bodies (none expected); more gets 413 */
#define HTTP_REQ_TIMEOUT_MS	3000	/* a request's headers must be complete by then; idle
					   keep-alive connections are closed after it too */
#define HTTP_MAX_RESPONSE	(256u << 20)	/* /metrics larger than this is a 500 */

struct http_server;

/*
 * Prepares the server around an already bound, listening fd (the server
 * takes it); ws_port goes into the live page at "/".  Allocates only;
 * nothing runs until http_server_start().
 * Returns 0 or -errno.
 */
int http_server_new(struct http_server **out, int listen_fd, const char *shm_name,
		    unsigned int ws_port);

/* Starts the server thread; alerts (may be NULL) adds its families to /metrics. */
struct alerts;
int http_server_start(struct http_server *s, struct alerts *alerts);

/* Stops accepting, lets requests in flight finish (up to 1 s), joins. */
void http_server_stop(struct http_server *s);

void http_server_free(struct http_server *s);

#endif /* ZERNEL_HTTP_H */
