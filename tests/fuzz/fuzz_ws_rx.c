/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: the feed's WebSocket frame reader on a client's byte
 * stream.  The first byte of the input seeds where the stream is split;
 * the reader must give the same verdicts whatever the split, as TCP may
 * deliver any split.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/feed/ws_rx.h"

#define EVENTS_MAX	64

struct verdicts {
	enum ws_rx_result r[EVENTS_MAX];
	uint8_t control[EVENTS_MAX][WS_RX_CONTROL_MAX];
	uint8_t control_len[EVENTS_MAX];
	uint16_t code;
	size_t n;
};

/* Feeds data in pieces of at most piece bytes (0: all at once). */
static void run(const uint8_t *data, size_t len, uint32_t seed, struct verdicts *v)
{
	struct ws_rx rx;
	size_t off = 0;

	memset(v, 0, sizeof(*v));
	ws_rx_init(&rx, 4096);
	while (off < len && v->n < EVENTS_MAX) {
		size_t piece = len - off, used = 0;
		enum ws_rx_result r;

		if (seed) {
			seed = seed * 1103515245u + 12345u;
			piece = 1 + (seed >> 16) % (piece < 64 ? piece : 64);
		}
		r = ws_rx_feed(&rx, data + off, piece, &used);
		if (used > piece)
			abort();
		off += used;
		if (r == WS_RX_MORE) {
			if (used != piece)
				abort();	/* MORE means every byte was taken */
			continue;
		}
		v->r[v->n] = r;
		if (r == WS_RX_PING) {
			if (rx.control_len > WS_RX_CONTROL_MAX)
				abort();
			v->control_len[v->n] = rx.control_len;
			memcpy(v->control[v->n], rx.control, rx.control_len);
		}
		v->n++;
		if (r == WS_RX_CLOSE || r == WS_RX_FAIL) {
			v->code = rx.code;
			if (!rx.why)
				abort();
			break;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct verdicts whole, split;

	if (size < 1)
		return 0;
	run(data + 1, size - 1, 0, &whole);
	run(data + 1, size - 1, data[0] | 1u, &split);
	if (whole.n != split.n || whole.code != split.code)
		abort();
	for (size_t i = 0; i < whole.n; i++)
		if (whole.r[i] != split.r[i] || whole.control_len[i] != split.control_len[i] ||
		    memcmp(whole.control[i], split.control[i], whole.control_len[i]) != 0)
			abort();
	return 0;
}
