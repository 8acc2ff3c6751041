/* SPDX-License-Identifier: BSD-2-Clause */
/* Clocks and strict parsers for command-line values. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t now_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t now_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	/* strtoull accepts leading blanks and a minus sign; flags must not. */
	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_listen(const char *s, char *host, size_t host_len, uint16_t *port)
{
	const char *colon, *h = s;
	size_t hlen;
	uint64_t p;

	if (!s || host_len == 0)
		return -EINVAL;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		h = s + 1;
		hlen = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return -EINVAL;
		hlen = (size_t)(colon - s);
	}
	if (parse_u64(colon + 1, 1, 65535, &p) < 0)
		return -EINVAL;
	if (hlen == 0) {
		h = "0.0.0.0";
		hlen = strlen(h);
	}
	if (hlen >= host_len)
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	*port = (uint16_t)p;
	return 0;
}
