/* SPDX-License-Identifier: BSD-2-Clause */
/* Identity string checks; see idtext.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/idtext.h"

/* Length of the UTF-8 sequence at s (at most n bytes), or 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;	/* continuation byte, overlong lead C0/C1, or past F4 */
	/* The second byte's range is what rules out overlongs and surrogates. */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

int idtext_printable_utf8(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		size_t len = utf8_seq(p + i, n - i);

		if (len == 0)
			return 0;
		if (len == 1 && (p[i] < 0x20 || p[i] == 0x7f))
			return 0;
		/* C1 controls: U+0080..U+009F, encoded C2 80..C2 9F. */
		if (len == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0)
			return 0;
		i += len;
	}
	return 1;
}

int idtext_copy(char *dst, size_t len, const char *s, size_t n)
{
	if (len == 0)
		return -EINVAL;
	dst[0] = '\0';
	if (n >= len)
		return -ENAMETOOLONG;
	if (!idtext_printable_utf8(s, n))
		return -EINVAL;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

int idtext_is_lower_hex(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

int idtext_is_container_id(const char *s, size_t n)
{
	return n == IDTEXT_CONTAINER_ID_LEN - 1 && idtext_is_lower_hex(s, n);
}

static int dns_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

int idtext_dns_label(const char *s, size_t n)
{
	if (n == 0 || n > 63 || !dns_alnum(s[0]) || !dns_alnum(s[n - 1]))
		return 0;
	for (size_t i = 1; i + 1 < n; i++)
		if (!dns_alnum(s[i]) && s[i] != '-')
			return 0;
	return 1;
}

int idtext_dns_subdomain(const char *s, size_t n)
{
	size_t start = 0;

	if (n == 0 || n > 253)
		return 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (!idtext_dns_label(s + start, i - start))
			return 0;
		start = i + 1;
	}
	return 1;
}

int idtext_pod_uid(const char *s, size_t n, char sep, char out[IDTEXT_POD_UID_LEN])
{
	/* Where the separators of 8-4-4-4-12 sit. */
	static const size_t dash[4] = { 8, 13, 18, 23 };
	char tmp[IDTEXT_POD_UID_LEN];

	out[0] = '\0';
	if (n == 32) {
		if (!idtext_is_lower_hex(s, n))
			return -EINVAL;
		memcpy(out, s, n);
		out[n] = '\0';
		return 0;
	}
	if (n != IDTEXT_POD_UID_LEN - 1)
		return -EINVAL;
	for (size_t i = 0, d = 0; i < n; i++) {
		if (d < 4 && i == dash[d]) {
			if (s[i] != sep)
				return -EINVAL;
			tmp[i] = '-';
			d++;
		} else if (idtext_is_lower_hex(s + i, 1)) {
			tmp[i] = s[i];
		} else {
			return -EINVAL;
		}
	}
	tmp[n] = '\0';
	memcpy(out, tmp, sizeof(tmp));
	return 0;
}

int idtext_is_pod_uid(const char *s, size_t n)
{
	char canon[IDTEXT_POD_UID_LEN];

	/* A UUID, or a static pod's 32 hex digits: either kept in its canonical form. */
	return idtext_pod_uid(s, n, '-', canon) == 0 && strlen(canon) == n &&
	       memcmp(canon, s, n) == 0;
}

int idtext_admit_field(char *field, size_t size, int (*admit)(const char *s, size_t n))
{
	size_t n = strnlen(field, size);

	if (n == size || (n && !admit(field, n)))
		return 0;
	memset(field + n, 0, size - n);
	return 1;
}
