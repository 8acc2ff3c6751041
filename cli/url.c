/* SPDX-License-Identifier: BSD-2-Clause */
/* Strict ws:// URL parsing for the zernel client (see url.h). */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "cli/url.h"
#include "common/util.h"

static int fail(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return -EINVAL;
}

static int host_char_ok(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_';
}

int cli_url_parse(const char *s, struct cli_url *out, const char **why)
{
	const char *p, *host, *host_end, *port_s = NULL, *path;
	char port_buf[8];
	uint64_t port = CLI_URL_DEFAULT_PORT;
	size_t hlen;

	memset(out, 0, sizeof(*out));
	if (!s || !*s)
		return fail(why, "empty URL");
	if (strncasecmp(s, "ws://", 5) == 0) {
		p = s + 5;
	} else if (strncasecmp(s, "wss://", 6) == 0) {
		out->tls = 1;
		p = s + 6;
	} else {
		return fail(why, "the URL must start with ws:// or wss://");
	}

	if (*p == '[') {
		host = p + 1;
		host_end = strchr(host, ']');
		if (!host_end)
			return fail(why, "missing ']' after an IPv6 address");
		for (const char *c = host; c < host_end; c++)
			if (!isxdigit((unsigned char)*c) && *c != ':' && *c != '.')
				return fail(why, "bad character in the IPv6 address");
		p = host_end + 1;
	} else {
		host = p;
		while (host_char_ok(*p))
			p++;
		host_end = p;
	}
	hlen = (size_t)(host_end - host);
	if (hlen == 0)
		return fail(why, "the URL has no host");
	if (hlen >= sizeof(out->host))
		return fail(why, "the host name is too long");

	if (*p == ':') {
		size_t n;

		port_s = ++p;
		while (isdigit((unsigned char)*p))
			p++;
		n = (size_t)(p - port_s);
		if (n == 0 || n >= sizeof(port_buf))
			return fail(why, "the port must be a number from 1 to 65535");
		memcpy(port_buf, port_s, n);
		port_buf[n] = '\0';
		if (parse_u64(port_buf, 1, 65535, &port) < 0)
			return fail(why, "the port must be a number from 1 to 65535");
	} else if (!port_s && out->tls) {
		port = 443;
	}

	path = p;
	if (*path != '\0' && *path != '/')
		return fail(why, "unexpected character after the host (a port is written :PORT)");
	if (*path == '\0')
		path = "/";
	if (strlen(path) >= sizeof(out->path))
		return fail(why, "the path is too long");
	for (const char *c = path; *c; c++)
		if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
			return fail(why, "the path holds a space or control character");

	memcpy(out->host, host, hlen);
	out->host[hlen] = '\0';
	out->port = (uint16_t)port;
	strcpy(out->path, path);
	return 0;
}
