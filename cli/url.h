/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The feed address given to `zernel watch --url`: ws://HOST[:PORT][/PATH]
 * or wss://, parsed by the common parser (common/url.h).  The port
 * defaults to the exporter's feed port for ws:// and to 443 for wss://.
 */
#ifndef ZERNEL_CLI_URL_H
#define ZERNEL_CLI_URL_H

#include "common/url.h"

#define CLI_URL_DEFAULT		"ws://localhost:9092"
#define CLI_URL_DEFAULT_PORT	9092u

/*
 * Returns 0, or -EINVAL with a one-line reason in why (may be NULL) for
 * anything that is not a ws:// or wss:// URL with a host and a valid port.
 */
int cli_url_parse(const char *s, struct url *out, const char **why);

/* The URL asks for TLS (wss://). */
int cli_url_tls(const struct url *u);

#endif /* ZERNEL_CLI_URL_H */
