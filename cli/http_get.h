/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One plain-HTTP GET to the exporter (http://HOST[:PORT]/PATH), for the
 * commands that read its JSON APIs.  Bounded: the response may not pass
 * HTTP_GET_MAX bytes, nor take longer than timeout_ms.  Unprivileged.
 */
#ifndef ZERNEL_CLI_HTTP_GET_H
#define ZERNEL_CLI_HTTP_GET_H

#include <stddef.h>

#include "common/url.h"

#define HTTP_GET_MAX	(16u << 20)

/*
 * GETs path on the host of u.  Returns the HTTP status and sets *body
 * (malloc'ed, NUL-terminated) and *len; or -errno with why set.
 */
int http_get(const struct url *u, const char *path, int timeout_ms, char **body, size_t *len,
	     const char **why);

#endif /* ZERNEL_CLI_HTTP_GET_H */
