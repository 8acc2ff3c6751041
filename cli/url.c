/* SPDX-License-Identifier: BSD-2-Clause */
/* The zernel client's feed address (see url.h). */
#include <errno.h>
#include <string.h>

#include "cli/url.h"

int cli_url_tls(const struct url *u)
{
	return strcmp(u->scheme, "wss") == 0;
}

int cli_url_parse(const char *s, struct url *out, const char **why)
{
	int err = url_parse(s, out, why);

	if (err)
		return err;
	if (strcmp(out->scheme, "ws") != 0 && !cli_url_tls(out)) {
		if (why)
			*why = "the URL must start with ws:// or wss://";
		return -EINVAL;
	}
	if (!out->port)
		out->port = cli_url_tls(out) ? 443 : CLI_URL_DEFAULT_PORT;
	return 0;
}
