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

#define HTTP_MAX_CONNECTIONS	256	/* open at once; more get 503 and are closed */
#define HTTP_MAX_HEADER_BYTES	8192	/* request line + headers; more gets 431 */
#define HTTP_MAX_BODY_BYTES	1024	/* request bodies (none expected); more gets 413 */
#define HTTP_REQ_TIMEOUT_MS	10000	/* idle or slow requests are closed after this */
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
