/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The feed address given to `zernel watch --url`: ws://HOST[:PORT][/PATH]
 * (wss:// too).  Parsed strictly so that a typo is reported, not guessed.
 */
#ifndef ZERNEL_CLI_URL_H
#define ZERNEL_CLI_URL_H

#include <stdint.h>

#define CLI_URL_DEFAULT		"ws://localhost:9092"
#define CLI_URL_DEFAULT_PORT	9092u
#define CLI_URL_HOST_MAX	256u
#define CLI_URL_PATH_MAX	512u

struct cli_url {
	int tls;				/* wss:// */
	char host[CLI_URL_HOST_MAX];		/* without [] for IPv6 */
	uint16_t port;
	char path[CLI_URL_PATH_MAX];		/* "/" at least */
};

/*
 * Returns 0, or -EINVAL with a one-line reason in why (may be NULL) for
 * anything that is not a ws:// or wss:// URL with a host and a valid port.
 */
int cli_url_parse(const char *s, struct cli_url *out, const char **why);

#endif /* ZERNEL_CLI_URL_H */
