/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A new feed connection's request head, read here before libwebsockets
 * gets the connection.  A client may send its first frames in the same
 * packets as its handshake, without waiting for the answer; libwebsockets
 * would read them with the head and keep them in a buffer of its own,
 * which it no longer serves once ws_input.c takes the client's input over,
 * so they would be lost unanswered.  Here the head, up to its empty line,
 * goes to libwebsockets with the adoption, and what follows it is kept
 * with the connection (struct ws_conn) and read first, at the handshake's
 * end, by the client's frame reader.
 *
 * Heads are read from one epoll set adopted into the libwebsockets loop,
 * like the clients' input; a head must be complete within
 * WS_HANDSHAKE_TIMEOUT_S of the accept and fit in WS_HEAD_MAX bytes (431
 * past it).  Feed thread, unprivileged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "exporter/feed/ws.h"
#include "exporter/feed/ws_impl.h"
#include "exporter/stats.h"

#define WS_HEAD_EVENTS	64	/* connections served per wake-up */

struct ws_head_reader {
	struct ws_head_reader *older, *newer;
	struct ws_conn *conn;
	int fd;
	uint64_t deadline_ns;
	size_t len;
	char head[WS_HEAD_MAX];
};

void ws_conn_free(struct ws_server *s, struct ws_conn *conn)
{
	if (!conn)
		return;
	fairshare_give(&s->share, &conn->ticket);
	free(conn->early);
	free(conn);
}

static void unlink_reader(struct ws_server *s, struct ws_head_reader *r)
{
	if (r->older)
		r->older->newer = r->newer;
	else
		s->heads_oldest = r->newer;
	if (r->newer)
		r->newer->older = r->older;
	else
		s->heads_newest = r->older;
	epoll_ctl(s->head_fd, EPOLL_CTL_DEL, r->fd, NULL);
}

/* r's connection ends here: closed, its claim given back. */
static void reader_drop(struct ws_server *s, struct ws_head_reader *r)
{
	unlink_reader(s, r);
	close(r->fd);
	ws_conn_free(s, r->conn);
	free(r);
}

static void schedule_expiry(struct ws_server *s);

/* Heads not complete in time: their connections are closed, oldest first. */
static void on_heads_expiry(lws_sorted_usec_list_t *sul)
{
	struct ws_server *s = lws_container_of(sul, struct ws_server, heads_expiry);
	uint64_t now = now_mono_ns();

	while (s->heads_oldest && s->heads_oldest->deadline_ns <= now)
		reader_drop(s, s->heads_oldest);
	schedule_expiry(s);
}

static void schedule_expiry(struct ws_server *s)
{
	uint64_t now = now_mono_ns(), due;

	if (!s->heads_oldest)
		return;
	due = s->heads_oldest->deadline_ns;
	lws_sul_schedule(s->context, 0, &s->heads_expiry, on_heads_expiry,
			 due > now ? (lws_usec_t)((due - now) / 1000) + 1 : 1);
}

int ws_head_begin(struct ws_server *s, int fd, struct ws_conn *conn)
{
	struct ws_head_reader *r = malloc(sizeof(*r));
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	int was_empty = s->heads_oldest == NULL;

	if (!r) {
		close(fd);
		ws_conn_free(s, conn);
		return -ENOMEM;
	}
	r->conn = conn;
	r->fd = fd;
	r->len = 0;
	r->deadline_ns = now_mono_ns() + (uint64_t)WS_HANDSHAKE_TIMEOUT_S * NSEC_PER_SEC;
	ev.data.ptr = r;
	if (epoll_ctl(s->head_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;

		close(fd);
		ws_conn_free(s, conn);
		free(r);
		return err;
	}
	r->older = s->heads_newest;
	r->newer = NULL;
	if (s->heads_newest)
		s->heads_newest->newer = r;
	else
		s->heads_oldest = r;
	s->heads_newest = r;
	if (was_empty)
		schedule_expiry(s);
	return 0;
}

/*
 * The length of the head in buf up to and including its empty line (CRLF
 * or a bare LF, as libwebsockets takes either), or 0 while it is not all
 * there.  The search resumes from where the last read ended, less the
 * three bytes an ending could straddle.
 */
static size_t head_end(const char *buf, size_t len, size_t from)
{
	for (size_t i = from > 3 ? from - 3 : 0; i < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (i + 1 < len && buf[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* The head is all there: libwebsockets gets the connection, with the head to read. */
static void hand_over(struct ws_server *s, struct ws_head_reader *r, size_t head_len)
{
	struct ws_conn *conn = r->conn;
	size_t after = r->len - head_len;
	int fd = r->fd;
	char *head = r->head;

	unlink_reader(s, r);
	if (after) {
		conn->early = malloc(after);
		if (!conn->early) {
			close(fd);
			ws_conn_free(s, conn);
			free(r);
			return;
		}
		memcpy(conn->early, r->head + head_len, after);
		conn->early_len = after;
	}
	/*
	 * The feed's callback takes conn as the connection's own when
	 * libwebsockets creates it (SERVER_NEW_CLIENT_INSTANTIATED), before it
	 * reads the head; the handshake may end before the call returns.  On
	 * failure libwebsockets has closed fd, and either conn is still here
	 * or the connection's end gave it back.
	 */
	s->adopting = conn;
	if (!lws_adopt_socket_vhost_readbuf(s->vhost, fd, head, head_len) && s->adopting)
		ws_conn_free(s, s->adopting);
	s->adopting = NULL;
	free(r);
}

/*
 * The head does not fit: answered as HTTP says, then closed.  What the
 * client sent past the head is read and dropped first, as much as is
 * there, so that the close is a FIN after the answer, not a reset that
 * could discard it.
 */
static void refuse_large(struct ws_server *s, struct ws_head_reader *r)
{
	static const char answer[] = "HTTP/1.1 431 Request Header Fields Too Large\r\n"
				     "Connection: close\r\nContent-Length: 0\r\n\r\n";

	stats_add(CAT_STAT_WS_BAD_INPUT, 1);
	/* Best effort: the socket's buffer is empty, and a refused peer gets no wait. */
	if (send(r->fd, answer, sizeof(answer) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("ws: the 431 answer: %s", strerror(errno));
	shutdown(r->fd, SHUT_WR);
	for (int i = 0; i < 8 && recv(r->fd, r->head, sizeof(r->head), MSG_DONTWAIT) > 0; i++)
		;
	reader_drop(s, r);
}

/* r's socket is readable: what it holds, up to the end of the head. */
static void head_read(struct ws_server *s, struct ws_head_reader *r)
{
	size_t from = r->len, end;
	ssize_t n;

	if (r->len == sizeof(r->head)) {
		refuse_large(s, r);
		return;
	}
	n = recv(r->fd, r->head + r->len, sizeof(r->head) - r->len, 0);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		reader_drop(s, r);	/* gone before its handshake */
		return;
	}
	r->len += (size_t)n;
	end = head_end(r->head, r->len, from);
	if (end)
		hand_over(s, r, end);
	else if (r->len == sizeof(r->head))
		refuse_large(s, r);
}

int ws_head_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
		     void *in, size_t len)
{
	struct ws_server *s = lws_context_user(lws_get_context(wsi));
	struct epoll_event ev[WS_HEAD_EVENTS];
	int n;

	if (reason != LWS_CALLBACK_RAW_RX_FILE)
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	n = epoll_wait(s->head_fd, ev, WS_HEAD_EVENTS, 0);
	for (int i = 0; i < n; i++)
		head_read(s, ev[i].data.ptr);
	schedule_expiry(s);
	return 0;
}

void ws_head_close_all(struct ws_server *s)
{
	while (s->heads_oldest)
		reader_drop(s, s->heads_oldest);
}
