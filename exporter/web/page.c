/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fills the WebSocket port into the embedded live page (see web_assets.h).
 * Runs once in zernel-exporter before it serves anything; pure string work.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/web/web_assets.h"

char *web_index_page(unsigned int ws_port, size_t *len)
{
	const char *page = (const char *)web_index_html;
	size_t page_len = web_index_html_len, tok_len = strlen(WEB_WS_PORT_TOKEN), n = 0;
	const char *tok = strstr(page, WEB_WS_PORT_TOKEN);
	char port[8], *out;
	int plen;

	if (ws_port == 0 || ws_port > 65535) {
		errno = EINVAL;
		return NULL;
	}
	plen = snprintf(port, sizeof(port), "%u", ws_port);
	out = malloc(page_len + (size_t)plen + 1);
	if (!out)
		return NULL;
	if (!tok) {
		/* No token (edited page): serve it as is; it falls back to 9092. */
		memcpy(out, page, page_len);
		n = page_len;
	} else {
		size_t before = (size_t)(tok - page);

		memcpy(out, page, before);
		memcpy(out + before, port, (size_t)plen);
		n = before + (size_t)plen;
		memcpy(out + n, tok + tok_len, page_len - before - tok_len);
		n += page_len - before - tok_len;
	}
	out[n] = '\0';
	if (len)
		*len = n;
	return out;
}
