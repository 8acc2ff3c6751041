/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RFC 6455 frames sent by a feed client, checked by the exporter itself.
 * libwebsockets does the handshake and the sending; what clients send is
 * read here because the libwebsockets this project builds on does not
 * check every rule a server must (an unmasked client frame goes through).
 * Pure: bytes in, a verdict out; no I/O, no allocation.
 *
 * The feed needs no input, so text messages are checked (size, UTF-8) and
 * dropped; pings are answered, pongs ignored, binary messages refused.
 */
#ifndef ZERNEL_WS_RX_H
#define ZERNEL_WS_RX_H

#include <stddef.h>
#include <stdint.h>

#include "common/utf8.h"

#define WS_RX_CONTROL_MAX	125	/* payload limit of a control frame */

/* RFC 6455 section 7.4.1 status codes the reader closes with. */
#define WS_CLOSE_NORMAL		1000
#define WS_CLOSE_PROTOCOL	1002
#define WS_CLOSE_UNACCEPTABLE	1003
#define WS_CLOSE_INVALID_DATA	1007
#define WS_CLOSE_TOO_LARGE	1009

enum ws_rx_result {
	WS_RX_MORE,	/* every byte taken; nothing to do yet */
	WS_RX_PING,	/* a ping: answer with a pong carrying control[] */
	WS_RX_CLOSE,	/* the client closes: reply with code, then close */
	WS_RX_FAIL,	/* the client broke the protocol: close with code */
};

struct ws_rx {
	size_t max_message;	/* largest text message accepted, in bytes */

	/* The frame being read. */
	uint8_t head[14];	/* header: 2 bytes, extended length, mask key */
	uint8_t head_len;
	uint8_t head_need;
	uint8_t opcode;
	uint8_t fin;
	uint64_t left;		/* payload bytes still to come */
	uint64_t pos;		/* payload bytes unmasked so far */

	/* The message a fragment belongs to (text or binary; 0 = none). */
	uint8_t message;
	uint64_t message_len;

	/* UTF-8 check carried across fragments. */
	struct utf8_dec utf8;

	/* Payload of the control frame being read. */
	uint8_t control[WS_RX_CONTROL_MAX];
	uint8_t control_len;

	/* Set with WS_RX_CLOSE and WS_RX_FAIL. */
	uint16_t code;
	const char *why;
};

void ws_rx_init(struct ws_rx *rx, size_t max_message);

/*
 * Reads up to len bytes of the client's stream.  Stops early to report a
 * ping (the caller answers and feeds the rest), a close or a failure (the
 * caller feeds nothing more).  *used tells how many bytes were taken.
 */
enum ws_rx_result ws_rx_feed(struct ws_rx *rx, const uint8_t *data, size_t len, size_t *used);

#endif /* ZERNEL_WS_RX_H */
