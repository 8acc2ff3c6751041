/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The live web page, embedded in zernel-exporter at build time (web.mk
 * turns exporter/web/index.html into $(BUILD)/exporter/web_assets.c), so
 * the exporter serves it with no file access, no CDN and no fonts.
 */
#ifndef ZERNEL_WEB_ASSETS_H
#define ZERNEL_WEB_ASSETS_H

#include <stddef.h>

/* index.html as built, NUL-terminated (the NUL is not counted in _len). */
extern const unsigned char web_index_html[];
extern const unsigned int web_index_html_len;

/* Where the page reads its WebSocket port: <meta name="zernel-ws-port" content="...">. */
#define WEB_WS_PORT_TOKEN "@ZERNEL_WS_PORT@"

/*
 * The page with the feed's port written into its meta tag: a malloc'd
 * NUL-terminated copy and its length in *len, or NULL with errno set
 * (EINVAL for port 0, ENOMEM).  Call once at start-up and serve the copy.
 */
char *web_index_page(unsigned int ws_port, size_t *len);

#endif /* ZERNEL_WEB_ASSETS_H */
