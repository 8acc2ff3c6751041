/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The WebSocket feed (libwebsockets): every interval, one JSON snapshot
 * (feed_json.h) rendered once and pushed to every client.  It runs in a
 * thread of its own with its own segment reader and private snapshot; what
 * it shares with the other threads is the atomic counters of stats.h and
 * the alert engine, which renders under its own mutex (alerts.h).
 *
 * Slow clients never make memory grow.  A snapshot is shared by every
 * client that sends it and written in WS_CHUNK fragments, so a client costs
 * at most one chunk of buffered output on top of its reference.  When the
 * next snapshot falls due and a client has not taken the previous one yet,
 * that client skips it (counted in zernel_exporter_ws_frames_dropped_total);
 * after WS_STALL_INTERVALS skipped snapshots in a row it is closed
 * (zernel_exporter_ws_stalled_closed_total).
 *
 * What clients send is not needed, and is read by the exporter's own frame
 * reader (ws_rx.h): text messages are ignored, pings answered; binary
 * messages close the connection with 1003, messages over WS_MAX_RX_BYTES
 * with 1009, invalid UTF-8 with 1007, and protocol violations (an unmasked
 * frame among them) with 1002.  Frames a client sends with its handshake,
 * before it could read the answer, are read the same way.  A client asking
 * for no subprotocol gets the feed.
 */
#ifndef ZERNEL_WS_H
#define ZERNEL_WS_H

#include <stdint.h>

#define WS_PROTOCOL_NAME	"zernel-feed"
#define WS_MAX_CLIENTS		4096
/*
 * Every TCP connection to the feed port counts from accept to close
 * (fairshare.h): handshakes in progress are capped globally and per
 * address, the last slots are kept for addresses holding at most one, and
 * a handshake must finish within WS_HANDSHAKE_TIMEOUT_S.  Only the feed
 * protocol (or none) and WebSocket version 13 are accepted.
 */
#define WS_MAX_HANDSHAKES	256	/* connections not yet upgraded, at once */
#define WS_MAX_PER_ADDR		64	/* from one address (IPv6: one /64) */
#define WS_RESERVE		64	/* last slots: only for addresses holding <= 1 */
#define WS_HANDSHAKE_TIMEOUT_S	5
#define WS_HEAD_MAX		8192	/* a handshake's request head; more gets 431 */
#define WS_CHUNK		65536	/* bytes per fragment and per write */
#define WS_STALL_INTERVALS	5	/* skipped snapshots in a row before closing */
#define WS_MAX_RX_BYTES		4096	/* largest message accepted from a client */
/*
 * A client's kernel send buffer.  Left alone, the kernel grows it to
 * tcp_wmem's maximum (4 MiB) for a client that does not read before the
 * exporter sees it stall: 4,096 such clients would hold 16 GiB of the
 * node's TCP memory.  The kernel doubles it for its bookkeeping; a chunk
 * that does not fit waits in libwebsockets, and the stall rule above holds.
 */
#define WS_SNDBUF		16384

struct ws_server;

/*
 * Creates the libwebsockets context around an already bound, listening fd
 * (the server takes it).  Runs before the sandbox: libwebsockets opens what
 * it needs here.  Returns 0 or -errno.
 */
int ws_server_new(struct ws_server **out, int listen_fd, const char *shm_name,
		  uint32_t interval_ms, unsigned int fd_limit);

/* Starts the feed thread; alerts (may be NULL) gives the feed's alerts. */
struct alerts;
int ws_server_start(struct ws_server *s, struct alerts *alerts);
void ws_server_stop(struct ws_server *s);
void ws_server_free(struct ws_server *s);

#endif /* ZERNEL_WS_H */
