/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * WebSocket feed on libwebsockets (see ws.h for the client policy).
 * Unprivileged: the listening socket is bound by main and adopted here as a
 * raw descriptor; each accepted connection's request head is read by
 * ws_handshake.c, then the connection is handed to libwebsockets as an
 * HTTP connection that may upgrade.  Once a client is established,
 * libwebsockets stops reading it and ws_input.c reads what it sends, through
 * one epoll set adopted like the listener.  Everything
 * below runs in the feed thread except ws_server_new/free (main thread,
 * thread not running) and ws_server_stop (main thread; it only sets a flag
 * and wakes the loop).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "common/log.h"
#include "common/util.h"
#include "exporter/feed/feed_json.h"
#include "common/sbuf.h"
#include "exporter/source.h"
#include "exporter/stats.h"
#include "exporter/feed/ws.h"
#include "exporter/feed/ws_impl.h"

static void frame_unref(struct ws_frame *f)
{
	if (f && --f->refs == 0) {
		free(f->data);
		free(f);
	}
}

/* Renders a new current frame; keeps the old one when rendering fails. */
static int render_frame(struct ws_server *s)
{
	struct cat_status st;
	struct ws_frame *f;
	struct sbuf out;
	int err;

	source_refresh(&s->src);
	source_status(&s->src, now_mono_ns(), &st);
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	sbuf_init(&out, FEED_MAX_BYTES, 0);
	err = feed_render(&out, source_fresh(&s->src), &st, &exporter_stats, s->alerts);
	if (err || out.len == 0) {
		sbuf_free(&out);
		free(f);
		return err ? err : -EINVAL;
	}
	f->refs = 1;
	f->data = out.data;
	f->len = out.len;
	frame_unref(s->current);
	s->current = f;
	s->current_mono_ns = now_mono_ns();
	stats_set(CAT_STAT_WS_FEED_BYTES, f->len);
	return 0;
}

static void client_give_frame(struct ws_client *c, struct ws_frame *f)
{
	c->frame = f;
	c->off = 0;
	f->refs++;
	lws_callback_on_writable(c->wsi);
}

static void on_tick(lws_sorted_usec_list_t *sul)
{
	struct ws_server *s = lws_container_of(sul, struct ws_server, tick);
	int err;

	lws_sul_schedule(s->context, 0, &s->tick, on_tick,
			 (lws_usec_t)s->interval_ms * 1000);
	if (!s->clients)
		return;	/* nobody to render for */
	err = render_frame(s);
	if (err) {
		log_warnx("ws: snapshot rendering failed: %s", strerror(-err));
		return;
	}
	for (struct ws_client *c = s->clients; c; c = c->next) {
		if (c->closing)
			continue;
		if (c->frame || lws_partial_buffered(c->wsi)) {
			stats_add(CAT_STAT_WS_FRAMES_DROPPED, 1);
			if (++c->stalled >= WS_STALL_INTERVALS) {
				uint64_t n = log_limit_take(&s->stalled_lines, now_mono_ns());

				if (n)
					log_info("ws: closed %llu clients stalled for %u intervals "
						 "in the last 10 s", (unsigned long long)n, c->stalled);
				stats_add(CAT_STAT_WS_STALLED_CLOSED, 1);
				ws_client_kill(c);
			}
			continue;
		}
		c->stalled = 0;
		client_give_frame(c, s->current);
	}
}

/* Writes the next fragment of c's frame; -1 closes the connection. */
static int client_write(struct ws_server *s, struct ws_client *c)
{
	struct ws_frame *f = c->frame;
	size_t n;
	int flags;

	if (!f || c->closing)
		return 0;
	n = f->len - c->off;
	if (n > WS_CHUNK)
		n = WS_CHUNK;
	/* lws writes its header into the LWS_PRE bytes: the shared frame must not be touched. */
	memcpy(s->chunk + LWS_PRE, f->data + c->off, n);
	flags = lws_write_ws_flags(LWS_WRITE_TEXT, c->off == 0, c->off + n == f->len);
	if (lws_write(c->wsi, s->chunk + LWS_PRE, n, (enum lws_write_protocol)flags) < (int)n)
		return -1;
	c->off += n;
	if (c->off < f->len) {
		lws_callback_on_writable(c->wsi);
		return 0;
	}
	frame_unref(f);
	c->frame = NULL;
	stats_add(CAT_STAT_WS_FRAMES_SENT, 1);
	return 0;
}

/* Writes what is due to c: a close frame, a pong, or the next fragment. */
static int client_writable(struct ws_server *s, struct ws_client *c)
{
	if (c->close_code) {
		lws_close_reason(c->wsi, (enum lws_close_status)c->close_code,
				 (unsigned char *)c->close_why, strlen(c->close_why));
		return -1;
	}
	if (c->pong_due) {
		memcpy(s->chunk + LWS_PRE, c->pong, c->pong_len);
		c->pong_due = 0;
		if (lws_write(c->wsi, s->chunk + LWS_PRE, c->pong_len, LWS_WRITE_PONG) < 0)
			return -1;
		if (c->frame)
			lws_callback_on_writable(c->wsi);
		return 0;
	}
	return client_write(s, c);
}

/*
 * An upgrade the feed does not take gets its HTTP answer (RFC 6455 4.2.1
 * and 4.4): 426 naming version 13 when the client speaks another (lws
 * would take drafts, and any other number as 13), 400 when the key is
 * missing or comes twice.  Returns 1 when it answered so; the connection
 * then closes.  The answer is short and the first thing written, so the
 * socket takes it whole.
 */
static int upgrade_refused(struct lws *wsi)
{
	unsigned char buf[LWS_PRE + 256], *start = buf + LWS_PRE, *p = start;
	unsigned char *end = buf + sizeof(buf) - 1;
	char version[8] = "";

	if (lws_hdr_fragment_length(wsi, WSI_TOKEN_KEY, 0) <= 0 ||
	    lws_hdr_fragment_length(wsi, WSI_TOKEN_KEY, 1) > 0) {
		lws_return_http_status(wsi, HTTP_STATUS_BAD_REQUEST,
				       "one Sec-WebSocket-Key, please");
		return 1;
	}
	if (lws_hdr_fragment_length(wsi, WSI_TOKEN_VERSION, 1) <= 0 &&
	    lws_hdr_copy(wsi, version, sizeof(version), WSI_TOKEN_VERSION) > 0 &&
	    strcmp(version, "13") == 0)
		return 0;
	if (lws_add_http_header_status(wsi, 426, &p, end) ||
	    lws_add_http_header_by_token(wsi, WSI_TOKEN_VERSION, (unsigned char *)"13", 2,
					 &p, end) ||
	    lws_add_http_header_content_length(wsi, 0, &p, end) ||
	    lws_finalize_write_http_header(wsi, start, &p, end))
		log_debug("ws: the 426 answer did not fit");
	return 1;
}

static int feed_callback(struct lws *wsi, enum lws_callback_reasons reason,
			 void *user, void *in, size_t len)
{
	struct ws_server *s = lws_context_user(lws_get_context(wsi));
	struct ws_client *c = user;
	static const char early[] = "data sent before the handshake completed";

	switch (reason) {
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
		/* Still HTTP: a refusal here can say why, then hang up. */
		if (upgrade_refused(wsi)) {
			stats_add(CAT_STAT_WS_BAD_INPUT, 1);
			return -1;
		}
		return 0;
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		if (s->nclients >= WS_MAX_CLIENTS) {
			stats_add(CAT_STAT_WS_REJECTED, 1);
			return -1;
		}
		return 0;
	case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
		/* The connection ws_handshake.c is handing over (s->adopting). */
		lws_set_opaque_user_data(wsi, s->adopting);
		s->adopting = NULL;
		break;
	case LWS_CALLBACK_WSI_DESTROY:
		/* Every adopted connection ends here, upgraded or not. */
		ws_conn_free(s, lws_get_opaque_user_data(wsi));
		lws_set_opaque_user_data(wsi, NULL);
		break;
	case LWS_CALLBACK_ESTABLISHED:
		c->wsi = wsi;
		c->next = s->clients;
		c->pprev = &s->clients;
		if (s->clients)
			s->clients->pprev = &c->next;
		s->clients = c;
		s->nclients++;
		stats_add(CAT_STAT_WS_CLIENTS, 1);
		stats_add(CAT_STAT_WS_CONNECTIONS, 1);
		/* A new client gets a snapshot at once, not after up to one interval. */
		if (!s->current || now_mono_ns() - s->current_mono_ns >
				   (uint64_t)s->interval_ms * NSEC_PER_MSEC)
			render_frame(s);
		if (s->current)
			client_give_frame(c, s->current);
		if (ws_input_start(s, c) < 0) {
			log_warn("ws: cannot watch a client's input");
			ws_client_kill(c);
			return 0;
		}
		{
			struct ws_conn *conn = lws_get_opaque_user_data(wsi);

			/* Frames that came with the handshake come first. */
			if (conn && conn->early) {
				ws_input_early(s, c, conn->early, conn->early_len);
				free(conn->early);
				conn->early = NULL;
				conn->early_len = 0;
			}
		}
		return 0;
	case LWS_CALLBACK_CLOSED:
		if (!c->wsi)
			return 0;
		ws_input_stop(s, c);
		*c->pprev = c->next;
		if (c->next)
			c->next->pprev = c->pprev;
		frame_unref(c->frame);
		c->frame = NULL;
		c->wsi = NULL;
		s->nclients--;
		stats_sub(CAT_STAT_WS_CLIENTS, 1);
		return 0;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return client_writable(s, c);
	case LWS_CALLBACK_RECEIVE:
		/*
		 * Not expected: what follows the head is read by ws_input.c
		 * (ws_handshake.c keeps it from libwebsockets).  Should a
		 * frame reach libwebsockets all the same, it came before the
		 * client could have read the answer (RFC 6455 4.1).
		 */
		stats_add(CAT_STAT_WS_BAD_INPUT, 1);
		lws_close_reason(wsi, LWS_CLOSE_STATUS_PROTOCOL_ERR, (unsigned char *)early,
				 strlen(early));
		return -1;
	case LWS_CALLBACK_HTTP:
		/*
		 * A plain HTTP request on the feed port: answered, then closed,
		 * since what a client sent behind it went no further than
		 * ws_handshake.c.
		 */
		lws_return_http_status(wsi, HTTP_STATUS_BAD_REQUEST,
				       "this port serves the WebSocket feed: connect with ws://");
		return -1;
	default:
		break;
	}
	(void)in;
	return lws_callback_http_dummy(wsi, reason, user, in, len);
}

/* How many refusals a line stands for: one line per window at most. */
static void log_reject(struct ws_server *s, const char *why)
{
	uint64_t n = log_limit_take(&s->reject_lines, now_mono_ns());

	if (n)
		log_warnx("ws: refused %llu connections in the last 10 s (latest: %s)",
			  (unsigned long long)n, why);
}

/* Admits fd from sa, or closes it: 0 when admitted (*conn holds its claim). */
static int admit(struct ws_server *s, int fd, const struct sockaddr *sa, socklen_t len,
		 struct ws_conn **conn)
{
	enum fairshare_verdict v = FAIRSHARE_FULL;
	const char *why;

	*conn = calloc(1, sizeof(**conn));
	if (s->share.total - s->nclients >= WS_MAX_HANDSHAKES)
		why = "handshakes in progress";
	else if (*conn && (v = fairshare_take(&s->share, sa, len, &(*conn)->ticket)) ==
			  FAIRSHARE_OK)
		return 0;
	else
		why = fairshare_verdict_name(v);
	free(*conn);
	*conn = NULL;
	close(fd);
	stats_add(CAT_STAT_WS_REJECTED, 1);
	log_reject(s, why);
	return -1;
}

/* The listening socket, adopted as a raw descriptor: readable means accept. */
static int listener_callback(struct lws *wsi, enum lws_callback_reasons reason,
			     void *user, void *in, size_t len)
{
	struct ws_server *s = lws_context_user(lws_get_context(wsi));
	static const int sndbuf = WS_SNDBUF;

	if (reason != LWS_CALLBACK_RAW_RX_FILE)
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct ws_conn *conn;
		int fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				log_reject(s, strerror(errno));
			break;
		}
		if (admit(s, fd, (struct sockaddr *)&ss, sl, &conn) < 0)
			continue;
		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) < 0)
			log_debug("ws: SO_SNDBUF: %s", strerror(errno));
		/* On failure it closes fd and gives conn back. */
		if (ws_head_begin(s, fd, conn) < 0)
			log_reject(s, "cannot read its request");
	}
	return 0;
}

/* The clients' vhost: the feed is its only protocol, and the default. */
static const struct lws_protocols ws_protocols[] = {
	{ WS_PROTOCOL_NAME, feed_callback, sizeof(struct ws_client), WS_MAX_RX_BYTES,
	  0, NULL, WS_CHUNK },
	{ NULL, NULL, 0, 0, 0, NULL, 0 },
};

/* Descriptors of our own, on a vhost no connection is ever adopted into. */
static const struct lws_protocols ws_internal_protocols[] = {
	{ "zernel-listener", listener_callback, 0, 0, 0, NULL, 0 },
	{ "zernel-client-input", ws_input_callback, 0, 0, 0, NULL, 0 },
	{ "zernel-handshakes", ws_head_callback, 0, 0, 0, NULL, 0 },
	{ NULL, NULL, 0, 0, 0, NULL, 0 },
};

/*
 * libwebsockets' own lines, which a peer can cause by the thousand (a
 * handshake with too many headers logs nine), go through the same limit
 * as ours.  lws logs from the thread that created the context, then only
 * from the service thread.
 */
static struct log_limit lws_lines;

static void lws_log_emit(int level, const char *line)
{
	size_t n = strlen(line);
	uint64_t lines;
	char also[64] = "";

	/*
	 * libwebsockets 4.1 reports, at error level, every adoption with a
	 * read buffer: how every feed connection comes (ws_handshake.c).
	 */
	if (strstr(line, "adopt_socket_readbuf: calling service"))
		return;
	lines = log_limit_take(&lws_lines, now_mono_ns());
	if (!lines)
		return;
	/* lws lines end in a newline; ours add one. */
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		n--;
	if (lines > 1)
		snprintf(also, sizeof(also), " (one of %llu lines in the last 10 s)",
			 (unsigned long long)lines);
	if (level & LLL_ERR)
		log_warnx("lws: %.*s%s", (int)n, line, also);
	else
		log_debug("lws: %.*s%s", (int)n, line, also);
}

/*
 * Watches fd (a listening socket or an epoll set) from the loop, as a raw
 * descriptor on the internal vhost served by protocol.  When that fails
 * libwebsockets has not closed fd: it stays the caller's.
 */
static int watch(struct ws_server *s, int fd, const char *protocol, int *adopted)
{
	lws_sock_file_fd_type d;

	d.filefd = fd;
	if (!lws_adopt_descriptor_vhost(s->internal, LWS_ADOPT_RAW_FILE_DESC, d, protocol, NULL))
		return -EIO;
	*adopted = 1;
	return 0;
}

/* A new epoll set in *fd, watched like a listener by protocol; *fd is closed by ws_server_free. */
static int watch_new_set(struct ws_server *s, int *fd, const char *protocol, int *adopted)
{
	*fd = epoll_create1(EPOLL_CLOEXEC);
	if (*fd < 0)
		return -errno;
	return watch(s, *fd, protocol, adopted);
}

int ws_server_new(struct ws_server **out, int listen_fd, const char *shm_name,
		  uint32_t interval_ms, unsigned int fd_limit)
{
	struct lws_context_creation_info info;
	struct ws_server *s = calloc(1, sizeof(*s));
	int err = -ENOMEM;

	if (!s)
		return -ENOMEM;
	s->listen_fd = listen_fd;
	s->input_fd = -1;
	s->head_fd = -1;
	s->interval_ms = interval_ms;
	source_init(&s->src, shm_name);
	s->chunk = malloc(LWS_PRE + WS_CHUNK);
	if (!s->chunk)
		goto cleanup;
	/* Below the descriptor limit, with room for HTTP and our own files. */
	{
		unsigned int total = WS_MAX_CLIENTS + WS_MAX_HANDSHAKES;
		unsigned int room = fd_limit > 1024 ? fd_limit - 512 : fd_limit / 2;

		if (total > room)
			total = room;
		err = fairshare_init(&s->share, total, WS_MAX_PER_ADDR < total ? WS_MAX_PER_ADDR :
				     total, WS_RESERVE < total / 2 ? WS_RESERVE : total / 2);
		if (err < 0)
			goto cleanup;
		err = -ENOMEM;
	}

	lws_set_log_level(log_level_get() == LOG_LEVEL_DEBUG ?
			  LLL_ERR | LLL_WARN | LLL_NOTICE : LLL_ERR, lws_log_emit);
	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
	info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
	info.protocols = ws_protocols;
	info.gid = -1;
	info.uid = -1;
	info.user = s;
	info.fd_limit_per_thread = fd_limit;
	info.timeout_secs = WS_HANDSHAKE_TIMEOUT_S;	/* handshakes and closes that hang */
	info.max_http_header_data = WS_HEAD_MAX;	/* every head ws_handshake.c hands over */
	info.vhost_name = "zernel-feed";
	s->context = lws_create_context(&info);
	if (!s->context) {
		log_warnx("ws: cannot create the libwebsockets context");
		err = -EIO;
		goto cleanup;
	}
	s->vhost = lws_create_vhost(s->context, &info);
	if (!s->vhost) {
		log_warnx("ws: cannot create the libwebsockets vhost");
		err = -EIO;
		goto cleanup;
	}
	info.protocols = ws_internal_protocols;
	info.vhost_name = "zernel-internal";
	/*
	 * Not the clients' "no listener" port: libwebsockets moves a
	 * connection to the vhost of that port whose name starts with its
	 * Host header, and no client may reach this one.
	 */
	info.port = CONTEXT_PORT_NO_LISTEN;
	s->internal = lws_create_vhost(s->context, &info);
	if (!s->internal) {
		log_warnx("ws: cannot create the libwebsockets internal vhost");
		err = -EIO;
		goto cleanup;
	}
	err = watch(s, listen_fd, "zernel-listener", &s->listen_adopted);
	if (err < 0) {
		log_warnx("ws: cannot watch the listening socket");
		goto cleanup;
	}
	err = watch_new_set(s, &s->input_fd, "zernel-client-input", &s->input_adopted);
	if (err < 0) {
		log_warnx("ws: cannot watch the clients' input: %s", strerror(-err));
		goto cleanup;
	}
	err = watch_new_set(s, &s->head_fd, "zernel-handshakes", &s->head_adopted);
	if (err < 0) {
		log_warnx("ws: cannot watch the handshakes: %s", strerror(-err));
		goto cleanup;
	}
	*out = s;
	return 0;
cleanup:
	ws_server_free(s);
	return err;
}

static void *ws_thread(void *arg)
{
	struct ws_server *s = arg;

	lws_sul_schedule(s->context, 0, &s->tick, on_tick,
			 (lws_usec_t)s->interval_ms * 1000);
	while (!atomic_load(&s->stop))
		if (lws_service(s->context, 0) < 0)
			break;
	return NULL;
}

int ws_server_start(struct ws_server *s, struct alerts *alerts)
{
	int err;

	s->alerts = alerts;
	err = pthread_create(&s->thread, NULL, ws_thread, s);

	if (err)
		return -err;
	s->started = 1;
	return 0;
}

void ws_server_stop(struct ws_server *s)
{
	if (!s || !s->started)
		return;
	atomic_store(&s->stop, 1);
	lws_cancel_service(s->context);
	pthread_join(s->thread, NULL);
	s->started = 0;
}

void ws_server_free(struct ws_server *s)
{
	if (!s)
		return;
	ws_server_stop(s);
	ws_head_close_all(s);
	/* Closes every connection (their CLOSED callbacks drop frame references). */
	if (s->context)
		lws_context_destroy(s->context);
	if (!s->listen_adopted && s->listen_fd >= 0)
		close(s->listen_fd);
	if (!s->input_adopted && s->input_fd >= 0)
		close(s->input_fd);
	if (!s->head_adopted && s->head_fd >= 0)
		close(s->head_fd);
	frame_unref(s->current);
	source_close(&s->src);
	fairshare_free(&s->share);
	free(s->chunk);
	free(s);
}
