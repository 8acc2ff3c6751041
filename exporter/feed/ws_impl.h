/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the feed's files share: the server, its clients and the snapshot
 * frames they send.  Feed thread only (see ws.c).
 */
#ifndef ZERNEL_WS_IMPL_H
#define ZERNEL_WS_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <libwebsockets.h>

#include "common/log_limit.h"
#include "exporter/fairshare.h"
#include "exporter/feed/ws_rx.h"
#include "exporter/source.h"

/* One rendered snapshot, shared by every client sending it. */
struct ws_frame {
	unsigned int refs;	/* feed thread only */
	char *data;
	size_t len;
};

/*
 * What the feed keeps of a connection from its accept to its close: its
 * claim on the fair share, and the bytes its client sent after the request
 * head, in the same packets, before it could have read the answer (see
 * ws_handshake.c).  libwebsockets holds it as the connection's opaque
 * user data from the connection's adoption.
 */
struct ws_conn {
	struct fairshare_ticket ticket;
	uint8_t *early;		/* NULL when none */
	size_t early_len;
};

/* Per established client; libwebsockets allocates and zeroes it. */
struct ws_client {
	struct ws_client *next;
	struct ws_client **pprev;
	struct lws *wsi;
	struct ws_frame *frame;	/* being sent; NULL when idle */
	size_t off;		/* bytes of frame already written */
	unsigned int stalled;	/* snapshots skipped in a row */
	int closing;

	/* Input, read by ws_input.c rather than libwebsockets. */
	int fd;
	int reading;		/* fd is in the input epoll set */
	struct ws_rx rx;
	uint16_t close_code;	/* a close frame is due; 0 = none */
	const char *close_why;
	uint8_t pong[WS_RX_CONTROL_MAX];
	uint8_t pong_len;
	uint8_t pong_due;
};

struct ws_server {
	int listen_fd;
	int listen_adopted;	/* lws owns listen_fd */
	int input_fd;		/* epoll set of the established clients */
	int input_adopted;	/* lws owns input_fd */
	int head_fd;		/* epoll set of the connections sending their request head */
	int head_adopted;	/* lws owns head_fd */
	uint32_t interval_ms;
	pthread_t thread;
	int started;
	atomic_int stop;

	struct lws_context *context;
	struct lws_vhost *vhost;	/* the clients': the feed protocol only */
	struct lws_vhost *internal;	/* the listener and the input set: no client reaches it */
	struct fairshare share;		/* every accepted connection, until closed */
	struct log_limit reject_lines;
	struct log_limit stalled_lines;
	lws_sorted_usec_list_t tick;
	struct ws_head_reader *heads_oldest;	/* request heads being read, oldest first */
	struct ws_head_reader *heads_newest;
	lws_sorted_usec_list_t heads_expiry;
	struct ws_conn *adopting;	/* handed to libwebsockets with the next adoption */

	struct source src;
	struct alerts *alerts;		/* the feed's alerts; may be NULL */
	struct ws_frame *current;	/* the latest snapshot */
	uint64_t current_mono_ns;
	struct ws_client *clients;
	unsigned int nclients;
	unsigned char *chunk;		/* LWS_PRE + WS_CHUNK write scratch */
	uint8_t input[4096];		/* read scratch */
};

/* Closes c without a close frame, from outside its own callback. */
static inline void ws_client_kill(struct ws_client *c)
{
	c->closing = 1;
	lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

/*
 * ws_handshake.c: reading a new connection's request head before
 * libwebsockets gets the connection.  ws_head_begin takes fd and conn (it
 * closes and gives back both when it fails); -errno.
 */
int ws_head_begin(struct ws_server *s, int fd, struct ws_conn *conn);
int ws_head_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
		     void *in, size_t len);
void ws_head_close_all(struct ws_server *s);
/* Gives a connection that never reached libwebsockets back: its claim and its memory. */
void ws_conn_free(struct ws_server *s, struct ws_conn *conn);

/* ws_input.c: reading what established clients send. */
int ws_input_start(struct ws_server *s, struct ws_client *c);
/* Bytes c sent after its request head, read like those that follow them. */
void ws_input_early(struct ws_server *s, struct ws_client *c, const uint8_t *data, size_t len);
void ws_input_stop(struct ws_server *s, struct ws_client *c);
int ws_input_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
		      void *in, size_t len);

#endif /* ZERNEL_WS_IMPL_H */
