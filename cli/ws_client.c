/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libwebsockets client thread of `zernel watch` (see ws_client.h).  All lws
 * calls happen on this thread except lws_cancel_service(), the one call
 * lws allows from elsewhere; the main thread sees only the mutex-guarded
 * mailbox and status.  Runs unprivileged, talks to one peer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "common/sbuf.h"
#include "cli/feed.h"
#include "cli/ws_client.h"
#include "common/log.h"
#include "common/util.h"

#define WS_RX_CHUNK	(64u * 1024u)
#define WS_TICK_US	(250 * LWS_US_PER_MS)

struct cli_ws {
	struct url url;
	int wake_fd;
	struct lws_context *ctx;
	struct lws *wsi;		/* lws thread only */
	pthread_t thread;
	int thread_started;
	atomic_int stop;

	/* lws thread only. */
	lws_sorted_usec_list_t sul_connect;
	lws_sorted_usec_list_t sul_tick;
	struct sbuf rx;
	int rx_oversize;
	int retry_pending;
	unsigned int backoff_ms;

	pthread_mutex_t lock;		/* guards what follows */
	char *mail;
	size_t mail_len;
	struct cli_ws_status st;
};

static void wake(struct cli_ws *ws)
{
	if (ws->wake_fd >= 0) {
		ssize_t r = write(ws->wake_fd, "w", 1);

		(void)r;	/* a full pipe already means "wake up" */
	}
}

static void set_state(struct cli_ws *ws, enum cli_ws_state state, const char *error)
{
	pthread_mutex_lock(&ws->lock);
	ws->st.state = state;
	if (error)
		snprintf(ws->st.error, sizeof(ws->st.error), "%s", error);
	if (state == CLI_WS_CONNECTED) {
		ws->st.connects++;
		ws->st.error[0] = '\0';
	}
	pthread_mutex_unlock(&ws->lock);
	wake(ws);
}

static void connect_cb(lws_sorted_usec_list_t *sul);

/* Once per failure or close: the next attempt after a growing delay. */
static void schedule_retry(struct cli_ws *ws, const char *why)
{
	unsigned int delay = ws->backoff_ms;

	ws->wsi = NULL;
	if (ws->retry_pending || atomic_load(&ws->stop))
		return;
	ws->retry_pending = 1;
	ws->backoff_ms = delay * 2 > CLI_WS_BACKOFF_MAX_MS ? CLI_WS_BACKOFF_MAX_MS : delay * 2;
	pthread_mutex_lock(&ws->lock);
	ws->st.failures++;
	ws->st.retry_at_mono_ns = now_mono_ns() + (uint64_t)delay * NSEC_PER_MSEC;
	pthread_mutex_unlock(&ws->lock);
	set_state(ws, CLI_WS_WAITING, why);
	log_debug("feed: %s; retrying in %u ms", why, delay);
	lws_sul_schedule(ws->ctx, 0, &ws->sul_connect, connect_cb,
			 (lws_usec_t)delay * LWS_US_PER_MS);
}

static void connect_cb(lws_sorted_usec_list_t *sul)
{
	struct cli_ws *ws = lws_container_of(sul, struct cli_ws, sul_connect);
	struct lws_client_connect_info ci;
	char host_hdr[URL_HOST_MAX + 16];

	ws->retry_pending = 0;
	if (atomic_load(&ws->stop))
		return;
	memset(&ci, 0, sizeof(ci));
	if (strchr(ws->url.host, ':'))
		snprintf(host_hdr, sizeof(host_hdr), "[%s]:%u", ws->url.host, ws->url.port);
	else
		snprintf(host_hdr, sizeof(host_hdr), "%s:%u", ws->url.host, ws->url.port);
	ci.context = ws->ctx;
	ci.address = ws->url.host;
	ci.port = ws->url.port;
	ci.path = ws->url.path;
	ci.host = host_hdr;
	ci.origin = host_hdr;
	ci.ssl_connection = cli_url_tls(&ws->url) ? LCCSCF_USE_SSL : 0;
	ci.protocol = NULL;			/* the feed speaks no subprotocol */
	ci.local_protocol_name = "zernel-feed";
	ci.pwsi = &ws->wsi;
	set_state(ws, CLI_WS_CONNECTING, NULL);
	if (!lws_client_connect_via_info(&ci))
		schedule_retry(ws, "cannot start a connection");
}

/* Drops a connection that has gone silent (exporter stopped, network gone). */
static void tick_cb(lws_sorted_usec_list_t *sul)
{
	struct cli_ws *ws = lws_container_of(sul, struct cli_ws, sul_tick);
	uint64_t now = now_mono_ns(), last;
	enum cli_ws_state state;

	pthread_mutex_lock(&ws->lock);
	last = ws->st.last_rx_mono_ns;
	state = ws->st.state;
	pthread_mutex_unlock(&ws->lock);
	if (state == CLI_WS_CONNECTED && ws->wsi && last &&
	    now - last > (uint64_t)CLI_WS_IDLE_MS * NSEC_PER_MSEC) {
		log_debug("feed: nothing for %u ms, reconnecting", CLI_WS_IDLE_MS);
		lws_set_timeout(ws->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
	}
	lws_sul_schedule(ws->ctx, 0, &ws->sul_tick, tick_cb, WS_TICK_US);
}

static void deliver(struct cli_ws *ws)
{
	char *copy = malloc(ws->rx.len + 1);

	if (!copy)
		return;
	memcpy(copy, ws->rx.data, ws->rx.len);
	copy[ws->rx.len] = '\0';
	pthread_mutex_lock(&ws->lock);
	free(ws->mail);		/* an untaken older snapshot is superseded */
	ws->mail = copy;
	ws->mail_len = ws->rx.len;
	ws->st.messages++;
	ws->st.last_rx_mono_ns = now_mono_ns();
	pthread_mutex_unlock(&ws->lock);
	wake(ws);
}

static int feed_callback(struct lws *wsi, enum lws_callback_reasons reason,
			 void *user, void *in, size_t len)
{
	struct cli_ws *ws = lws_context_user(lws_get_context(wsi));
	char why[160];

	(void)user;
	if (!ws)
		return 0;
	switch (reason) {
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		snprintf(why, sizeof(why), "cannot connect to %.60s:%u: %.*s",
			 ws->url.host, ws->url.port, in && len ? (int)(len < 60 ? len : 60) : 5,
			 in && len ? (const char *)in : "error");
		schedule_retry(ws, why);
		break;
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		ws->backoff_ms = CLI_WS_BACKOFF_MIN_MS;
		sbuf_reset(&ws->rx);
		ws->rx_oversize = 0;
		set_state(ws, CLI_WS_CONNECTED, NULL);
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		if (lws_is_first_fragment(wsi)) {
			sbuf_reset(&ws->rx);
			ws->rx_oversize = 0;
		}
		if (!ws->rx_oversize && sbuf_append(&ws->rx, in, len) < 0)
			ws->rx_oversize = 1;
		if (lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi)) {
			if (ws->rx_oversize) {
				pthread_mutex_lock(&ws->lock);
				ws->st.oversize++;
				pthread_mutex_unlock(&ws->lock);
				wake(ws);
			} else {
				deliver(ws);
			}
			sbuf_reset(&ws->rx);
			ws->rx_oversize = 0;
		}
		break;
	case LWS_CALLBACK_CLIENT_CLOSED:
		snprintf(why, sizeof(why), "the exporter at %.60s:%u closed the connection",
			 ws->url.host, ws->url.port);
		schedule_retry(ws, why);
		break;
	default:
		break;
	}
	return 0;
}

static const struct lws_protocols protocols[] = {
	{ .name = "zernel-feed", .callback = feed_callback, .rx_buffer_size = WS_RX_CHUNK },
	{ 0 }
};

/* lws logs go through ZERNEL_LOG=debug only: they would tear the full-screen view. */
static void lws_log_bridge(int level, const char *line)
{
	(void)level;
	log_debug("lws: %.*s", (int)strcspn(line, "\n"), line);
}

static void *ws_thread(void *arg)
{
	struct cli_ws *ws = arg;

	lws_sul_schedule(ws->ctx, 0, &ws->sul_connect, connect_cb, 1);
	lws_sul_schedule(ws->ctx, 0, &ws->sul_tick, tick_cb, WS_TICK_US);
	while (!atomic_load(&ws->stop))
		if (lws_service(ws->ctx, 0) < 0)
			break;
	return NULL;
}

struct cli_ws *cli_ws_start(const struct url *url, int wake_fd)
{
	struct lws_context_creation_info info;
	struct cli_ws *ws = calloc(1, sizeof(*ws));
	int err;

	if (!ws)
		return NULL;
	ws->url = *url;
	ws->wake_fd = wake_fd;
	ws->backoff_ms = CLI_WS_BACKOFF_MIN_MS;
	sbuf_init(&ws->rx, CLI_FEED_MAX_BYTES, 0);
	pthread_mutex_init(&ws->lock, NULL);

	lws_set_log_level(log_level_get() == LOG_LEVEL_DEBUG ?
			  LLL_ERR | LLL_WARN | LLL_NOTICE : 0, lws_log_bridge);
	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = protocols;
	info.user = ws;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	info.fd_limit_per_thread = 16;	/* one connection; not ulimit -n sized tables */
	if (cli_url_tls(url))
		info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	ws->ctx = lws_create_context(&info);
	if (!ws->ctx) {
		err = EIO;
		goto fail;
	}
	err = pthread_create(&ws->thread, NULL, ws_thread, ws);
	if (err)
		goto fail;
	ws->thread_started = 1;
	return ws;
fail:
	cli_ws_stop(ws);
	errno = err;
	return NULL;
}

int cli_ws_take(struct cli_ws *ws, char **msg, size_t *len)
{
	int got = 0;

	pthread_mutex_lock(&ws->lock);
	if (ws->mail) {
		*msg = ws->mail;
		*len = ws->mail_len;
		ws->mail = NULL;
		got = 1;
	}
	pthread_mutex_unlock(&ws->lock);
	return got;
}

void cli_ws_get_status(struct cli_ws *ws, struct cli_ws_status *st)
{
	pthread_mutex_lock(&ws->lock);
	*st = ws->st;
	pthread_mutex_unlock(&ws->lock);
}

void cli_ws_stop(struct cli_ws *ws)
{
	if (!ws)
		return;
	atomic_store(&ws->stop, 1);
	if (ws->thread_started) {
		lws_cancel_service(ws->ctx);
		pthread_join(ws->thread, NULL);
	}
	if (ws->ctx)
		lws_context_destroy(ws->ctx);
	free(ws->mail);
	sbuf_free(&ws->rx);
	pthread_mutex_destroy(&ws->lock);
	free(ws);
}
