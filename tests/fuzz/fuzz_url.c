/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: every URL parser (the common one, the listen-address
 * one, the client's ws:// one, the webhook's).  What they accept must be
 * self-consistent: a host, a path starting with '/', an authority that
 * fits, and parsing the accepted text again gives the same result.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/url.h"
#include "common/url.h"
#include "exporter/alerts/webhook.h"

static void check(const struct url *u)
{
	if (u->path[0] != '/' || !u->scheme[0] ||
	    strnlen(u->host, sizeof(u->host)) == sizeof(u->host) ||
	    strnlen(u->authority, sizeof(u->authority)) == sizeof(u->authority))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct url u, again;
	char *s = malloc(size + 1), host[256], err[256];
	const char *why;
	uint16_t port;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (url_parse(s, &u, &why) == 0) {
		check(&u);
		if (url_parse(u.text, &again, &why) != 0 || memcmp(&u, &again, sizeof(u)) != 0)
			abort();
	}
	url_listen_parse(s, host, sizeof(host), &port, &why);
	if (cli_url_parse(s, &u, &why) == 0)
		check(&u);
	if (webhook_url_parse(s, &u, err, sizeof(err)) == 0)
		check(&u);
	free(s);
	return 0;
}
