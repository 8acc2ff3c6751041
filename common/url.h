/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one parser of network addresses, for every program: URLs
 * (scheme://HOST[:PORT][/PATH][?QUERY]: the exporter's --webhook, the
 * client's --url) and listen addresses (ADDR:PORT: the exporter's
 * --metrics-listen and --ws-listen).  Strict, so that a typo is reported
 * rather than guessed: no spaces, controls or non-ASCII bytes, no
 * credentials, no fragment, a host of letters, digits, '.', '-', '_' or a
 * bracketed IPv6 address, a port in 1..65535.  Which schemes make sense,
 * and the default port, is the caller's business.
 */
#ifndef ZERNEL_URL_H
#define ZERNEL_URL_H

#include <stddef.h>
#include <stdint.h>

#define URL_MAX		1024u
#define URL_HOST_MAX	256u

struct url {
	char text[URL_MAX];		/* the URL as given */
	char scheme[8];			/* lower case: "http", "ws", "wss" */
	char host[URL_HOST_MAX];	/* without the brackets of an IPv6 address */
	uint16_t port;			/* 0 when the URL names none */
	char path[URL_MAX];		/* path and query, "/" at least */
	char authority[URL_HOST_MAX + 8]; /* host[:port] as written: a Host header */
};

/*
 * Returns 0, or -EINVAL with why (may be NULL) set to a sentence saying
 * which rule the URL breaks.
 */
int url_parse(const char *s, struct url *u, const char **why);

/*
 * "ADDR:PORT", "[V6ADDR]:PORT" or ":PORT" (all addresses: host becomes
 * "0.0.0.0").  Returns 0 or -EINVAL with why (may be NULL).
 */
int url_listen_parse(const char *s, char *host, size_t host_len, uint16_t *port,
		     const char **why);

#endif /* ZERNEL_URL_H */
