/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RFC 6455 frame reader for what feed clients send (see ws_rx.h).  Runs in
 * the unprivileged exporter on untrusted bytes: every length is checked
 * before use and nothing is buffered beyond one control payload.
 */
#include <string.h>

#include "exporter/feed/ws_rx.h"

#define OP_CONTINUATION	0x0
#define OP_TEXT		0x1
#define OP_BINARY	0x2
#define OP_CLOSE	0x8
#define OP_PING		0x9
#define OP_PONG		0xa

#define OP_IS_CONTROL(op)	((op) & 0x8)

void ws_rx_init(struct ws_rx *rx, size_t max_message)
{
	memset(rx, 0, sizeof(*rx));
	rx->max_message = max_message;
	rx->head_need = 2;
	utf8_dec_init(&rx->utf8);
}

static enum ws_rx_result fail(struct ws_rx *rx, uint16_t code, const char *why)
{
	rx->code = code;
	rx->why = why;
	return WS_RX_FAIL;
}

/* Close codes a peer may send (RFC 6455 7.4 and the IANA registry). */
static int close_code_valid(unsigned int code)
{
	return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
	       (code >= 3000 && code <= 4999);
}

/* Checks a complete header and sets up its payload. */
static enum ws_rx_result start_frame(struct ws_rx *rx)
{
	const uint8_t *h = rx->head;
	uint8_t len7 = h[1] & 0x7f;
	uint64_t len = len7;

	rx->fin = h[0] >> 7;
	rx->opcode = h[0] & 0x0f;
	if (len7 == 126) {
		len = (uint64_t)h[2] << 8 | h[3];
	} else if (len7 == 127) {
		len = 0;
		for (int i = 0; i < 8; i++)
			len = len << 8 | h[2 + i];
		if (len >> 63)
			return fail(rx, WS_CLOSE_PROTOCOL, "frame length with its top bit set");
	}
	rx->left = len;
	rx->pos = 0;

	if (OP_IS_CONTROL(rx->opcode)) {
		rx->control_len = 0;
		return WS_RX_MORE;
	}
	if (rx->opcode == OP_CONTINUATION) {
		if (!rx->message)
			return fail(rx, WS_CLOSE_PROTOCOL, "continuation frame outside a message");
	} else {
		if (rx->message)
			return fail(rx, WS_CLOSE_PROTOCOL, "new message inside a fragmented one");
		if (rx->opcode == OP_BINARY)
			return fail(rx, WS_CLOSE_UNACCEPTABLE, "binary messages are not accepted");
		rx->message = rx->opcode;
		rx->message_len = 0;
	}
	if (len > rx->max_message - rx->message_len)
		return fail(rx, WS_CLOSE_TOO_LARGE, "message too large");
	rx->message_len += len;
	return WS_RX_MORE;
}

/* Takes one header byte; a complete header is checked at once. */
static enum ws_rx_result header_byte(struct ws_rx *rx, uint8_t c)
{
	rx->head[rx->head_len++] = c;
	if (rx->head_len == 2) {
		uint8_t op = rx->head[0] & 0x0f;
		uint8_t len7 = c & 0x7f;

		if (rx->head[0] & 0x70)
			return fail(rx, WS_CLOSE_PROTOCOL, "reserved bits set with no extension");
		if ((op > OP_BINARY && op < OP_CLOSE) || op > OP_PONG)
			return fail(rx, WS_CLOSE_PROTOCOL, "reserved opcode");
		if (OP_IS_CONTROL(op) && !(rx->head[0] & 0x80))
			return fail(rx, WS_CLOSE_PROTOCOL, "fragmented control frame");
		if (OP_IS_CONTROL(op) && len7 > WS_RX_CONTROL_MAX)
			return fail(rx, WS_CLOSE_PROTOCOL, "control frame over 125 bytes");
		if (!(c & 0x80))
			return fail(rx, WS_CLOSE_PROTOCOL, "unmasked frame from a client");
		rx->head_need = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + 4;
	}
	if (rx->head_len < rx->head_need)
		return WS_RX_MORE;
	return start_frame(rx);
}

/* A whole control frame has arrived. */
static enum ws_rx_result end_control(struct ws_rx *rx)
{
	const uint8_t *p = rx->control;
	unsigned int code;

	switch (rx->opcode) {
	case OP_PING:
		return WS_RX_PING;
	case OP_PONG:
		return WS_RX_MORE;
	default:	/* OP_CLOSE */
		break;
	}
	if (rx->control_len == 0) {
		rx->code = WS_CLOSE_NORMAL;
		rx->why = "";
		return WS_RX_CLOSE;
	}
	if (rx->control_len == 1)
		return fail(rx, WS_CLOSE_PROTOCOL, "close frame with a one-byte payload");
	code = (unsigned int)p[0] << 8 | p[1];
	if (!close_code_valid(code))
		return fail(rx, WS_CLOSE_PROTOCOL, "invalid close code");
	if (!utf8_valid((const char *)p + 2, rx->control_len - 2u))
		return fail(rx, WS_CLOSE_INVALID_DATA, "close reason is not UTF-8");
	rx->code = (uint16_t)code;
	rx->why = "";
	return WS_RX_CLOSE;
}

/* The current frame's payload is complete. */
static enum ws_rx_result end_frame(struct ws_rx *rx)
{
	rx->head_len = 0;
	rx->head_need = 2;
	if (OP_IS_CONTROL(rx->opcode))
		return end_control(rx);
	if (!rx->fin)
		return WS_RX_MORE;
	if (!utf8_dec_complete(&rx->utf8))
		return fail(rx, WS_CLOSE_INVALID_DATA, "text message is not UTF-8");
	rx->message = 0;
	rx->message_len = 0;
	return WS_RX_MORE;
}

enum ws_rx_result ws_rx_feed(struct ws_rx *rx, const uint8_t *data, size_t len, size_t *used)
{
	enum ws_rx_result r = WS_RX_MORE;
	size_t i = 0;

	while (i < len) {
		if (rx->head_len < rx->head_need) {
			r = header_byte(rx, data[i++]);
			if (r != WS_RX_MORE)
				break;
			if (rx->head_len < rx->head_need || rx->left)
				continue;
			/* An empty payload: the frame ends with its header. */
		} else if (rx->left) {
			const uint8_t *key = rx->head + rx->head_need - 4;	/* ends the header */
			uint8_t c = data[i++] ^ key[rx->pos++ & 3];

			rx->left--;
			if (OP_IS_CONTROL(rx->opcode))
				rx->control[rx->control_len++] = c;
			else if (utf8_dec_step(&rx->utf8, c) < 0) {
				r = fail(rx, WS_CLOSE_INVALID_DATA, "text message is not UTF-8");
				break;
			}
			if (rx->left)
				continue;
		}
		r = end_frame(rx);
		if (r != WS_RX_MORE)
			break;
	}
	*used = i;
	return r;
}
