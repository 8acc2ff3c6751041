/* SPDX-License-Identifier: BSD-2-Clause */
/* The address parser (see url.h).  Pure functions. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/url.h"
#include "common/util.h"

static int fail(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return -EINVAL;
}

/*
 * HOST[:PORT] in the n bytes at s.  host_required: "" is refused (a URL)
 * rather than taken as every address (a listen address).
 */
static int host_port(const char *s, size_t n, char *host, size_t host_len, uint16_t *port,
		     int host_required, const char **why)
{
	const char *end = s + n, *h = s, *h_end, *p;
	char digits[8];
	uint64_t v;

	if (*s == '[') {
		h = s + 1;
		h_end = memchr(h, ']', (size_t)(end - h));
		if (!h_end)
			return fail(why, "unclosed '[' around an IPv6 address");
		for (const char *c = h; c < h_end; c++)
			if (!isxdigit((unsigned char)*c) && *c != ':' && *c != '.')
				return fail(why, "bad IPv6 address");
		p = h_end + 1;
	} else {
		for (h_end = h; h_end < end && *h_end != ':'; h_end++)
			if (!isalnum((unsigned char)*h_end) && *h_end != '.' && *h_end != '-' &&
			    *h_end != '_')
				return fail(why, "bad character in the host");
		p = h_end;
	}
	if (h_end == h && (host_required || *s == '['))
		return fail(why, "missing host");
	if ((size_t)(h_end - h) >= host_len)
		return fail(why, "host name too long");
	*port = 0;
	if (p < end) {
		size_t len = (size_t)(end - p - 1);

		if (*p != ':')
			return fail(why, "bad host (a port is written :PORT)");
		if (len == 0 || len >= sizeof(digits))
			return fail(why, "port must be in 1..65535");
		memcpy(digits, p + 1, len);
		digits[len] = '\0';
		if (parse_u64(digits, 1, 65535, &v) < 0)
			return fail(why, "port must be in 1..65535");
		*port = (uint16_t)v;
	}
	memcpy(host, h, (size_t)(h_end - h));
	host[h_end - h] = '\0';
	return 0;
}

int url_parse(const char *s, struct url *u, const char **why)
{
	const char *sep, *auth, *rest;
	size_t slen;
	int err;

	memset(u, 0, sizeof(*u));
	if (!s || !*s)
		return fail(why, "empty URL");
	if (strlen(s) >= sizeof(u->text))
		return fail(why, "too long");
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f)
			return fail(why, "contains a space, a control or a non-ASCII character");
	sep = strstr(s, "://");
	slen = sep ? (size_t)(sep - s) : 0;
	if (!sep || slen == 0 || slen >= sizeof(u->scheme))
		return fail(why, "expected SCHEME://HOST[:PORT][/PATH]");
	for (size_t i = 0; i < slen; i++) {
		if (!isalpha((unsigned char)s[i]))
			return fail(why, "expected SCHEME://HOST[:PORT][/PATH]");
		u->scheme[i] = (char)tolower((unsigned char)s[i]);
	}
	auth = sep + 3;
	rest = auth + strcspn(auth, "/?#");
	if (strchr(rest, '#'))
		return fail(why, "a fragment (#...) has no meaning here");
	if (memchr(auth, '@', (size_t)(rest - auth)))
		return fail(why, "credentials in the URL are not supported");
	err = host_port(auth, (size_t)(rest - auth), u->host, sizeof(u->host), &u->port, 1, why);
	if (err)
		return err;
	snprintf(u->authority, sizeof(u->authority), "%.*s", (int)(rest - auth), auth);
	snprintf(u->path, sizeof(u->path), "%s%s", *rest == '/' ? "" : "/", rest);
	memcpy(u->text, s, strlen(s) + 1);
	return 0;
}

int url_listen_parse(const char *s, char *host, size_t host_len, uint16_t *port,
		     const char **why)
{
	int err;

	if (!s || host_len == 0)
		return fail(why, "empty address");
	err = host_port(s, strlen(s), host, host_len, port, 0, why);
	if (err)
		return err;
	if (*port == 0)
		return fail(why, "missing :PORT");
	if (!*host)
		snprintf(host, host_len, "0.0.0.0");
	return 0;
}
