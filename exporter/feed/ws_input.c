/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Input of established feed clients.  libwebsockets stops reading a client
 * once its handshake is done; its socket joins one epoll set, adopted into
 * the libwebsockets loop like the listener, and what arrives goes through
 * the frame reader of ws_rx.h.  Replies (pong, close) are written when the
 * client is next writable, by ws.c.  Feed thread, unprivileged.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "common/log.h"
#include "exporter/feed/ws.h"
#include "exporter/feed/ws_impl.h"
#include "exporter/stats.h"

#define WS_INPUT_EVENTS	64	/* clients served per wake-up */
#define WS_INPUT_READS	4	/* reads per client per wake-up, for fairness */

void ws_input_stop(struct ws_server *s, struct ws_client *c)
{
	if (!c->reading)
		return;
	/* ENOENT when the socket is already gone: nothing left to remove. */
	epoll_ctl(s->input_fd, EPOLL_CTL_DEL, c->fd, NULL);
	c->reading = 0;
}

int ws_input_start(struct ws_server *s, struct ws_client *c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c };

	/* From here on libwebsockets leaves the socket's input to us. */
	lws_rx_flow_control(c->wsi, LWS_RXFLOW_REASON_APPLIES_DISABLE |
			    LWS_RXFLOW_REASON_USER_BOOL | LWS_RXFLOW_REASON_FLAG_PROCESS_NOW);
	ws_rx_init(&c->rx, WS_MAX_RX_BYTES);
	c->fd = lws_get_socket_fd(c->wsi);
	if (epoll_ctl(s->input_fd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
		return -errno;
	c->reading = 1;
	return 0;
}

/* Sends a close frame (code, why) when the client is next writable, then closes. */
static void client_close(struct ws_server *s, struct ws_client *c, uint16_t code,
			 const char *why)
{
	ws_input_stop(s, c);
	c->close_code = code;
	c->close_why = why;
	lws_callback_on_writable(c->wsi);
}

/* Hands bytes from the client to its frame reader and acts on what it finds. */
static void input_take(struct ws_server *s, struct ws_client *c, const uint8_t *data,
		       size_t len)
{
	while (c->reading && len) {
		size_t used;

		switch (ws_rx_feed(&c->rx, data, len, &used)) {
		case WS_RX_MORE:
			break;
		case WS_RX_PING:
			/* Only the latest ping needs its pong (RFC 6455 5.5.3). */
			memcpy(c->pong, c->rx.control, c->rx.control_len);
			c->pong_len = c->rx.control_len;
			c->pong_due = 1;
			lws_callback_on_writable(c->wsi);
			break;
		case WS_RX_CLOSE:
			client_close(s, c, c->rx.code, "");
			break;
		case WS_RX_FAIL:
			stats_add(CAT_STAT_WS_BAD_INPUT, 1);
			log_debug("ws: closing a client: %s", c->rx.why);
			client_close(s, c, c->rx.code, c->rx.why);
			break;
		}
		data += used;
		len -= used;
	}
}

void ws_input_early(struct ws_server *s, struct ws_client *c, const uint8_t *data, size_t len)
{
	input_take(s, c, data, len);
}

/* The client's socket is readable: a few reads, the rest on the next wake-up. */
static void input_read(struct ws_server *s, struct ws_client *c)
{
	for (int i = 0; i < WS_INPUT_READS && c->reading; i++) {
		ssize_t n = recv(c->fd, s->input, sizeof(s->input), 0);

		if (n > 0) {
			input_take(s, c, s->input, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		/* End of stream or a reset: nobody to send a close frame to. */
		ws_input_stop(s, c);
		ws_client_kill(c);
	}
}

/* The input epoll set is readable: some established clients sent something. */
int ws_input_callback(struct lws *wsi, enum lws_callback_reasons reason,
			  void *user, void *in, size_t len)
{
	struct ws_server *s = lws_context_user(lws_get_context(wsi));
	struct epoll_event ev[WS_INPUT_EVENTS];
	int n;

	if (reason != LWS_CALLBACK_RAW_RX_FILE)
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	n = epoll_wait(s->input_fd, ev, WS_INPUT_EVENTS, 0);
	for (int i = 0; i < n; i++)
		input_read(s, ev[i].data.ptr);
	return 0;
}
