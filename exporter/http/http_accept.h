/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Content negotiation on /metrics: the Accept and Accept-Encoding request
 * headers (RFC 9110, 12.5), read as lists of "token;param=value;q=0.5".
 * Unprivileged, on the request path: reads the header value in place,
 * bounded by its length; anything malformed counts as absent.
 */
#ifndef ZERNEL_HTTP_ACCEPT_H
#define ZERNEL_HTTP_ACCEPT_H

#include <stddef.h>

/*
 * The q (0..1000, thousandths) of the list element of value (len bytes,
 * may be NULL) whose token is name (case-insensitive) and which carries
 * every "key=value" of params (a NULL-terminated list, or NULL); the
 * highest when several match.  -1 when none does.
 */
int http_accept_q(const char *value, size_t len, const char *name,
		  const char *const *params);

/* Whether Accept-Encoding allows gzip: gzip or x-gzip, else "*", with q above 0. */
int http_accept_gzip(const char *value, size_t len);

/*
 * Whether Accept prefers Prometheus's delimited protobuf (io.prometheus.
 * client.MetricFamily) over the text format: its q above 0 and above that
 * of text/plain and of the text and any-type wildcards.  A tie, or no
 * Accept, is text.
 */
int http_accept_protobuf(const char *value, size_t len);

#endif /* ZERNEL_HTTP_ACCEPT_H */
