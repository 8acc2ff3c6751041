/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The WebSocket feed client (libwebsockets) of `zernel watch`.  It runs in
 * its own thread, keeps only the newest complete message (a slow terminal
 * skips snapshots instead of queueing them), and reconnects with back-off
 * whenever the exporter goes away or stops sending.  No privilege.
 */
#ifndef ZERNEL_CLI_WS_CLIENT_H
#define ZERNEL_CLI_WS_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "cli/url.h"

#define CLI_WS_BACKOFF_MIN_MS	500u
#define CLI_WS_BACKOFF_MAX_MS	5000u
/* A connection silent this long is dropped and made again. */
#define CLI_WS_IDLE_MS		15000u

enum cli_ws_state {
	CLI_WS_CONNECTING = 0,
	CLI_WS_CONNECTED,
	CLI_WS_WAITING,			/* disconnected, retry scheduled */
};

struct cli_ws_status {
	enum cli_ws_state state;
	uint64_t retry_at_mono_ns;	/* when WAITING */
	uint64_t last_rx_mono_ns;	/* last complete message, 0 if none */
	uint64_t messages;		/* complete messages received */
	uint64_t oversize;		/* messages over CLI_FEED_MAX_BYTES dropped */
	uint64_t connects;		/* connections established */
	uint64_t failures;		/* attempts that failed or ended */
	char error[160];		/* why the last attempt failed or ended */
};

struct cli_ws;

/*
 * Starts connecting to url in a new thread.  After every new message or
 * state change one byte is written to wake_fd (non-blocking; may be -1).
 * Returns NULL with errno set when libwebsockets cannot start.
 */
struct cli_ws *cli_ws_start(const struct url *url, int wake_fd);

/*
 * Takes the newest message received since the last call: returns 1 and
 * hands over a malloc'd NUL-terminated copy, or 0 when there is none.
 */
int cli_ws_take(struct cli_ws *ws, char **msg, size_t *len);

void cli_ws_get_status(struct cli_ws *ws, struct cli_ws_status *st);

/* Stops the thread, closes the connection and frees ws (NULL is fine). */
void cli_ws_stop(struct cli_ws *ws);

#endif /* ZERNEL_CLI_WS_CLIENT_H */
