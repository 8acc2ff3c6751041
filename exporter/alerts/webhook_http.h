/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One HTTP/1.1 POST over plain TCP, for the webhook threads: no library,
 * no TLS, a deadline over the whole exchange.  Unprivileged.
 */
#ifndef ZERNEL_WEBHOOK_HTTP_H
#define ZERNEL_WEBHOOK_HTTP_H

#include <stddef.h>

#include "exporter/alerts/webhook.h"

/*
 * POSTs body (application/json) to u within timeout_ms.  Returns the HTTP
 * status (100..599), or -errno for a network failure (name lookup,
 * connect, send, no answer in time, an answer that is not HTTP), with a
 * short reason in why.
 */
/*
 * The status of a receiver's answer: "HTTP/1.x NNN ..." at the start of
 * buf (len bytes, not NUL-terminated), or -EPROTO.
 */
int webhook_http_status(const char *buf, size_t len);

int webhook_http_post(const struct url *u, const char *body, size_t len,
		      unsigned int timeout_ms, char *why, size_t whylen);

#endif /* ZERNEL_WEBHOOK_HTTP_H */
