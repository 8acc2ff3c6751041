/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * HTTP server on h2o's own event loop (see http.h).  Unprivileged: the
 * listening socket is bound by main before the sandbox and handed in.
 * Requests are bounded in size, connections in number and time; nothing on
 * the request path is fatal.
 *
 * /metrics: each scrape reads the segment itself (so a fault is reported
 * at once); the segment part comes rendered, per publish, from a thread of
 * its own (metrics_ahead.h, metrics_body.h), and the scrape renders only
 * the small per-request part, compressed on its own when gzip is asked for.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* libh2o-evloop: h2o's own loop, not libuv (the headers default to libuv). */
#define H2O_USE_LIBUV 0
#include <h2o.h>
#include <h2o/socket/evloop.h>

#include "common/log.h"
#include "common/log_limit.h"
#include "common/util.h"
#include "exporter/alerts/alerts.h"
#include "exporter/fairshare.h"
#include "exporter/feed/feed_json.h"
#include "exporter/http/http.h"
#include "exporter/http/http_accept.h"
#include "exporter/http/http_parked.h"
#include "exporter/http/http_waiting.h"
#include "exporter/http/metrics_ahead.h"
#include "exporter/http/metrics_body.h"
#include "exporter/prom/prom.h"
#include "exporter/prom/prom_proto.h"
#include "common/sbuf.h"
#include "exporter/source.h"
#include "exporter/explain/stall_history.h"
#include "exporter/explain/stalls_json.h"
#include "exporter/stats.h"
#include "exporter/explain/trace_json.h"
#include "exporter/web/web_assets.h"

/* One accepted connection: its claim on the fair share, and whether it waits for a request. */
struct http_conn {
	struct http_waiter waiter;	/* first: the waiting list gives back the connection */
	struct http_server *server;
	h2o_socket_t *sock;
	int evicted;			/* its slot went to a newcomer; h2o is closing it */
};

struct http_handler {
	h2o_handler_t super;
	struct http_server *server;
};

struct http_server {
	int listen_fd;
	pthread_t thread;
	int started;
	atomic_int stop;

	h2o_globalconf_t config;
	h2o_context_t ctx;
	h2o_accept_ctx_t accept_ctx;
	h2o_evloop_t *loop;
	h2o_socket_t *listener;
	unsigned int connections;
	struct fairshare share;
	struct http_waiting waiting;	/* connections waiting for their request */
	struct http_parked parked;	/* accepted with no bytes yet: no slot until they come */
	struct log_limit reject_lines;

	struct source src;
	struct alerts *alerts;		/* its families follow ours; may be NULL */
	struct sbuf self;		/* self-telemetry scratch, text or protobuf */
	char *page;			/* the live page, WebSocket port filled in */
	size_t page_len;
	struct metrics_ahead ahead;	/* /metrics' segment part, rendered ahead */
	int ahead_ready;		/* ahead initialised */
	struct stall_history *history;	/* for /api/stalls?since= */
	uint64_t history_checked_ns;	/* when the loop last offered it a snapshot */
	struct log_limit render_error_lines;
};

/* h2o calls this when the response's memory pool is cleared. */
static void body_pool_dispose(void *p)
{
	metrics_body_unref(*(struct metrics_body **)p);
}

/* The response points into b: b lives until the response is done. */
static void body_link(h2o_req_t *req, struct metrics_body *b)
{
	struct metrics_body **slot = h2o_mem_alloc_shared(&req->pool, sizeof(*slot),
							  body_pool_dispose);

	*slot = b;
	metrics_body_ref(b);
}

static void respond(h2o_req_t *req, int status, const char *reason, const char *ctype,
		    h2o_iovec_t *parts, size_t nparts)
{
	static h2o_generator_t generator = { NULL, NULL };
	size_t len = 0;

	for (size_t i = 0; i < nparts; i++)
		len += parts[i].len;
	req->res.status = status;
	req->res.reason = reason;
	req->res.content_length = len;
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
		       ctype, strlen(ctype));
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL,
		       H2O_STRLIT("no-store"));
	h2o_start_response(req, &generator);
	/* HEAD: the same headers, Content-Length included, and no body. */
	if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")))
		nparts = 0;
	h2o_send(req, parts, nparts, H2O_SEND_STATE_FINAL);
}

static void respond_text(h2o_req_t *req, int status, const char *reason, const char *text)
{
	h2o_iovec_t body = h2o_strdup(&req->pool, text, strlen(text));

	respond(req, status, reason, "text/plain; charset=utf-8", &body, 1);
}

/* The request's Accept-Encoding allows gzip. */
static int wants_gzip(const h2o_req_t *req)
{
	ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_ACCEPT_ENCODING, -1);

	if (i < 0)
		return 0;
	return http_accept_gzip(req->headers.entries[i].value.base,
				req->headers.entries[i].value.len);
}

/* The request's Accept prefers the protobuf exposition to the text. */
static int wants_protobuf(const h2o_req_t *req)
{
	ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_ACCEPT, -1);

	if (i < 0)
		return 0;
	return http_accept_protobuf(req->headers.entries[i].value.base,
				    req->headers.entries[i].value.len);
}

/*
 * The response parts: the cached head (may be NULL) and this request's
 * tail, plain or as one gzip member (gzip_body.h).
 */
static int metrics_parts(h2o_req_t *req, struct metrics_body *head,
			 const struct shm_snapshot *snap, enum metrics_format f,
			 const char *tail, size_t tail_len, int gzip, h2o_iovec_t *parts,
			 size_t *n)
{
	struct gzip_part t;
	unsigned char *trailer;
	int err;

	*n = 0;
	if (head) {
		err = metrics_body_form(head, snap, f, gzip);
		if (err)
			return err;
		body_link(req, head);
	}
	if (!gzip) {
		if (head)
			parts[(*n)++] = h2o_iovec_init(head->form[f].data, head->form[f].len);
		parts[(*n)++] = h2o_strdup(&req->pool, tail, tail_len);
		return 0;
	}
	err = gzip_part_make(&t, tail, tail_len, 1);
	if (err)
		return err;
	trailer = h2o_mem_alloc_pool(&req->pool, GZIP_BODY_TRAILER_LEN);
	gzip_body_trailer(trailer, head ? &head->form[f].gz : NULL, &t);
	parts[(*n)++] = h2o_iovec_init(gzip_body_header(), GZIP_BODY_HEADER_LEN);
	if (head)
		parts[(*n)++] = h2o_iovec_init(head->form[f].gz.data, head->form[f].gz.len);
	parts[(*n)++] = h2o_strdup(&req->pool, (const char *)t.data, t.len);
	parts[(*n)++] = h2o_iovec_init(trailer, GZIP_BODY_TRAILER_LEN);
	gzip_part_free(&t);
	return 0;
}

static void serve_metrics(struct http_server *s, h2o_req_t *req)
{
	enum metrics_format f = wants_protobuf(req) ? METRICS_PROTO : METRICS_TEXT;
	const struct shm_snapshot *snap;
	struct prom_out self;
	struct metrics_view v;
	struct cat_status st;
	h2o_iovec_t parts[4];
	int gzip = wants_gzip(req);
	size_t n = 0;
	int err = 0;

	stats_add(CAT_STAT_SCRAPES, 1);
	metrics_ahead_want(&s->ahead, f, gzip, now_mono_ns());
	/* The request's own look at the segment: a fault is reported at once. */
	source_refresh(&s->src);
	source_status(&s->src, now_mono_ns(), &st);
	snap = source_fresh(&s->src);
	memset(&v, 0, sizeof(v));
	/* Fresh but no body: the render failed (too large, no memory) or timed out. */
	/* One publish older at most, while the one the scrape saw renders. */
	if (snap && metrics_ahead_view(&s->ahead, snap->hdr->generation,
				       snap->hdr->heartbeat_mono_ns,
				       snap->hdr->publish_interval_ms * NSEC_PER_MSEC * 3 / 2, &v) < 0)
		err = v.render_error ? v.render_error : -EAGAIN;
	/*
	 * The render thread's body of another publish than this request's,
	 * without the format asked for (the first scrape in it): that
	 * publish's snapshot is gone, so the request renders the format from
	 * the publish it sees, for this response only.
	 */
	if (!err && snap && v.body && !v.body->form[f].data &&
	    !metrics_body_current(v.body, snap)) {
		metrics_body_unref(v.body);
		v.body = metrics_body_new(snap, s->ahead.limit, f);
		if (!v.body)
			err = -errno;
	}
	/*
	 * The render thread a publish ahead of this request, or its view not
	 * fresh: its body (or the lack of one) goes with its own status, so
	 * that the response describes one publish throughout.
	 */
	if (!err && snap && !metrics_body_current(v.body, snap))
		metrics_view_status(&v, now_mono_ns(), &st);
	if (!err) {
		sbuf_reset(&s->self);
		self = prom_out_text(&s->self);
		if (f == METRICS_PROTO)
			err = prom_out_proto(&self, &s->self);
		if (!err)
			err = prom_render_self(&self, &st, &exporter_stats);
		if (!err)
			err = alerts_render_prom(s->alerts, &self);
		if (f == METRICS_PROTO) {
			int end = prom_out_proto_end(&self);

			err = err ? err : end;
		}
	}
	if (!err)
		err = metrics_parts(req, v.body, snap, f, s->self.data ? s->self.data : "",
				    s->self.len, gzip, parts, &n);
	metrics_body_unref(v.body);	/* the response holds its own reference */
	if (err) {
		/* A scraper retries every few seconds. */
		if (log_limit_take(&s->render_error_lines, now_mono_ns()))
			log_warnx("/metrics: rendering failed: %s", strerror(-err));
		respond_text(req, 500, "Internal Server Error", "metrics rendering failed\n");
		return;
	}
	/* Caches between us and the scraper must keep the encodings apart. */
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_VARY, NULL,
		       H2O_STRLIT("Accept, Accept-Encoding"));
	if (gzip)
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_ENCODING, NULL,
			       H2O_STRLIT("gzip"));
	respond(req, 200, "OK", f == METRICS_PROTO ? PROM_PROTO_CONTENT_TYPE : PROM_CONTENT_TYPE,
		parts, n);
}

/*
 * The feed's snapshot with every watched process (the pushes carry the top
 * ones): per-process detail on request, for the page or a script.
 */
static void serve_snapshot(struct http_server *s, h2o_req_t *req)
{
	struct cat_status st;
	struct sbuf out;
	h2o_iovec_t body;

	source_refresh(&s->src);
	source_status(&s->src, now_mono_ns(), &st);
	sbuf_init(&out, FEED_MAX_BYTES, 0);
	if (feed_render_full(&out, source_fresh(&s->src), &st, &exporter_stats, s->alerts) ||
	    !out.len) {
		sbuf_free(&out);
		respond_text(req, 500, "Internal Server Error", "snapshot rendering failed\n");
		return;
	}
	body = h2o_strdup(&req->pool, out.data, out.len);
	sbuf_free(&out);
	respond(req, 200, "OK", "application/json", &body, 1);
}

static void serve_healthz(struct http_server *s, h2o_req_t *req)
{
	char body[320];

	if (source_refresh(&s->src) == SHM_READ_OK) {
		respond_text(req, 200, "OK", "ok\n");
		return;
	}
	snprintf(body, sizeof(body), "%s\n", s->src.reason);
	respond_text(req, 503, "Service Unavailable", body);
}

/* The live page (exporter/web/index.html), built once with the feed's port. */
static void serve_index(struct http_server *s, h2o_req_t *req)
{
	h2o_iovec_t body = h2o_iovec_init(s->page, s->page_len);

	h2o_add_header_by_str(&req->pool, &req->res.headers,
			      H2O_STRLIT("content-security-policy"), 0, NULL,
			      H2O_STRLIT("default-src 'none'; script-src 'unsafe-inline'; "
					 "style-src 'unsafe-inline'; img-src data:; connect-src 'self' ws: wss:; "
					 "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"));
	h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-content-type-options"),
			      0, NULL, H2O_STRLIT("nosniff"));
	h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL,
		       H2O_STRLIT("no-cache"));
	respond(req, 200, "OK", "text/html; charset=utf-8", &body, 1);
}

/* Renders a JSON document from a fresh snapshot; arg is the request's. */
typedef char *(*json_render_fn)(const struct shm_snapshot *snap, uint32_t arg, size_t *len);

/* A document from a fresh snapshot: 503 without one, 500 when it cannot be rendered. */
static void serve_json(struct http_server *s, h2o_req_t *req, json_render_fn render,
		       uint32_t arg, const char *what)
{
	const struct shm_snapshot *snap;
	h2o_iovec_t body;
	char reason[320];
	size_t len = 0;
	char *doc;

	source_refresh(&s->src);
	snap = source_fresh(&s->src);
	if (!snap) {
		snprintf(reason, sizeof(reason), "no fresh data: %s\n", s->src.reason);
		respond_text(req, 503, "Service Unavailable", reason);
		return;
	}
	doc = render(snap, arg, &len);
	if (!doc) {
		snprintf(reason, sizeof(reason), "%s rendering failed\n", what);
		respond_text(req, 500, "Internal Server Error", reason);
		return;
	}
	body = h2o_strdup(&req->pool, doc, len);
	free(doc);
	respond(req, 200, "OK", "application/json", &body, 1);
}

/* Stall sites of Python processes (exporter/explain/stalls_json.h). */
static char *render_stalls(const struct shm_snapshot *snap, uint32_t arg, size_t *len)
{
	(void)arg;
	return stalls_json_render(snap, len);
}

/*
 * The query's NAME=N, N digits only, saturating at UINT64_MAX: 1 with *v
 * set, 0 when there is no query, -1 for any other query.
 */
static int query_number(const h2o_req_t *req, const char *name, uint64_t *v)
{
	const char *q, *end = req->path.base + req->path.len;
	size_t name_len = strlen(name);

	if (req->query_at == SIZE_MAX)
		return 0;
	q = req->path.base + req->query_at + 1;
	if ((size_t)(end - q) <= name_len || strncmp(q, name, name_len) != 0)
		return -1;
	*v = 0;
	for (q += name_len; q < end; q++) {
		if (*q < '0' || *q > '9')
			return -1;
		*v = *v > (UINT64_MAX - 9) / 10 ? UINT64_MAX : *v * 10 + (uint64_t)(*q - '0');
	}
	return 1;
}

/* ?seconds=N of the request, within 1..TRACE_MAX_SECONDS; default otherwise, -1 bad. */
static long trace_seconds(const h2o_req_t *req)
{
	uint64_t v;
	int got = query_number(req, "seconds=", &v);

	if (got == 0)
		return TRACE_DEFAULT_SECONDS;
	return got > 0 && v >= 1 && v <= TRACE_MAX_SECONDS ? (long)v : -1;
}

/* Offers the history a snapshot at most once a second: it keeps one per period. */
static void history_tick(struct http_server *s, int force)
{
	const struct shm_snapshot *snap;
	uint64_t now = now_mono_ns();

	if (!force && now - s->history_checked_ns < NSEC_PER_SEC)
		return;
	s->history_checked_ns = now;
	source_refresh(&s->src);
	snap = source_fresh(&s->src);
	if (snap)
		stall_history_note(s->history, snap);
}

/* /api/stalls, over the collector's window, or ?since=SECONDS over the history. */
static void serve_stalls(struct http_server *s, h2o_req_t *req)
{
	uint64_t since = 0;
	int got = query_number(req, "since=", &since);
	const struct shm_snapshot *snap;
	h2o_iovec_t body;
	char reason[320];
	size_t len = 0;
	char *doc;

	if (got < 0 || (got > 0 && since == 0)) {
		respond_text(req, 400, "Bad Request",
			     "expected /api/stalls or /api/stalls?since=SECONDS, SECONDS a whole "
			     "number of seconds from 1 (longer than the history: all of it)\n");
		return;
	}
	if (got == 0) {
		serve_json(s, req, render_stalls, 0, "stalls");
		return;
	}
	history_tick(s, 1);
	snap = source_fresh(&s->src);
	if (!snap) {
		snprintf(reason, sizeof(reason), "no fresh data: %s\n", s->src.reason);
		respond_text(req, 503, "Service Unavailable", reason);
		return;
	}
	doc = stalls_json_render_since(snap, s->history, since, &len);
	if (!doc) {
		respond_text(req, 500, "Internal Server Error", "stalls rendering failed\n");
		return;
	}
	body = h2o_strdup(&req->pool, doc, len);
	free(doc);
	respond(req, 200, "OK", "application/json", &body, 1);
}

/* Recent events in Chrome's trace format (exporter/explain/trace_json.h). */
static void serve_trace(struct http_server *s, h2o_req_t *req)
{
	long secs = trace_seconds(req);

	if (secs < 0) {
		respond_text(req, 400, "Bad Request", "expected /api/trace?seconds=N, N in 1..3600\n");
		return;
	}
	serve_json(s, req, trace_json_render, (uint32_t)secs, "trace");
}

static size_t request_header_bytes(const h2o_req_t *req)
{
	size_t n = req->input.method.len + req->input.path.len + 16;

	for (size_t i = 0; i < req->headers.size; i++)
		n += req->headers.entries[i].name->len + req->headers.entries[i].value.len + 4;
	return n;
}

/* The request's memory is freed: its response is done, and its connection waits again. */
static void request_disposed(void *p)
{
	struct http_conn *c = *(struct http_conn **)p;

	if (!c->evicted)
		http_waiting_add(&c->server->waiting, &c->waiter);
}

/* The connection of req stops waiting until req's response is done. */
static void request_began(h2o_req_t *req)
{
	h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
	struct http_conn *c = sock ? sock->on_close.data : NULL;
	struct http_conn **ref;

	if (!c)
		return;
	http_waiting_remove(&c->server->waiting, &c->waiter);
	/* Freed with the request, before the socket's own close. */
	ref = h2o_mem_alloc_shared(&req->pool, sizeof(*ref), request_disposed);
	*ref = c;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
	struct http_server *s = ((struct http_handler *)self)->server;
	const h2o_iovec_t path = req->path_normalized;

	stats_add(CAT_STAT_HTTP_REQUESTS, 1);
	request_began(req);
	/*
	 * Nothing here takes a body, so a request that frames one is refused
	 * and its connection closed, whatever its method: with both
	 * Content-Length and Transfer-Encoding, or two Content-Lengths, h2o
	 * obeys one and drops the others, and what it then read as the next
	 * request would be one that a proxy in front never saw (request
	 * smuggling, RFC 9112 section 6.3).  h2o gives every request with
	 * either header an entity, an empty one included.
	 */
	if (req->entity.base) {
		req->http1_is_persistent = 0;
		respond_text(req, 400, "Bad Request",
			     "a request here takes no body: no Content-Length or Transfer-Encoding\n");
		return 0;
	}
	if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) &&
	    !h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"))) {
		h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL,
			       H2O_STRLIT("GET, HEAD"));
		respond_text(req, 405, "Method Not Allowed", "method not allowed: use GET or HEAD\n");
		return 0;
	}
	if (request_header_bytes(req) > HTTP_MAX_HEADER_BYTES) {
		respond_text(req, 431, "Request Header Fields Too Large",
			     "request headers too large\n");
		return 0;
	}
	if (h2o_memis(path.base, path.len, H2O_STRLIT("/metrics")))
		serve_metrics(s, req);
	else if (h2o_memis(path.base, path.len, H2O_STRLIT("/healthz")))
		serve_healthz(s, req);
	else if (h2o_memis(path.base, path.len, H2O_STRLIT("/snapshot")))
		serve_snapshot(s, req);
	else if (h2o_memis(path.base, path.len, H2O_STRLIT("/api/stalls")))
		serve_stalls(s, req);
	else if (h2o_memis(path.base, path.len, H2O_STRLIT("/api/trace")))
		serve_trace(s, req);
	else if (h2o_memis(path.base, path.len, H2O_STRLIT("/")))
		serve_index(s, req);
	else
		respond_text(req, 404, "Not Found",
			     "not found: try /metrics, /healthz, /snapshot, /api/stalls, /api/trace or /\n");
	return 0;
}

static void on_conn_close(void *data)
{
	struct http_conn *c = data;
	struct http_server *s = c->server;

	http_waiting_remove(&s->waiting, &c->waiter);
	if (!c->evicted)
		fairshare_give(&s->share, &c->waiter.ticket);
	free(c);
	s->connections--;
	stats_sub(CAT_STAT_HTTP_CONNECTIONS, 1);
}

static void on_reject_written(h2o_socket_t *sock, const char *err)
{
	(void)err;
	h2o_socket_close(sock);
}

/* How many refusals a line stands for: one line per window at most. */
static void log_reject(struct http_server *s, enum fairshare_verdict v)
{
	uint64_t n = log_limit_take(&s->reject_lines, now_mono_ns());

	if (n)
		log_warnx("http: refused %llu connections in the last 10 s (latest: %s)",
			  (unsigned long long)n, fairshare_verdict_name(v));
}

/*
 * c, waiting for its request, gives up its slot: shut down, so that h2o
 * closes it at its next read.  Its claim on the fair share goes back, or,
 * with keep, passes to a newcomer from the same address.
 */
static void evict(struct http_server *s, struct http_conn *c, int keep)
{
	http_waiting_remove(&s->waiting, &c->waiter);
	if (!keep)
		fairshare_give(&s->share, &c->waiter.ticket);
	c->evicted = 1;
	shutdown(h2o_socket_get_fd(c->sock), SHUT_RDWR);
	stats_add(CAT_STAT_HTTP_EVICTED, 1);
}

/*
 * Whether w's whole request head has come and waits in its socket (the
 * end of what h2o holds of it, then the kernel's queue), unread only
 * because the loop has not come back to it.  Such a connection is about
 * to be answered, not slow, and keeps its slot: a scraper sends its
 * request with its connection, and one wakeup's accepts could otherwise
 * give its slot away before the loop reads it.  A head larger than the
 * peek is not seen whole, and may be evicted like a slow one.
 */
static int request_arrived(const struct http_waiter *w)
{
	const struct http_conn *c = (const struct http_conn *)w;
	const h2o_buffer_t *held = c->sock->input;
	char head[3 + HTTP_MAX_HEADER_BYTES];
	size_t kept = 0;
	ssize_t n;

	if (held && held->size) {
		kept = held->size < 3 ? held->size : 3;
		memcpy(head, held->bytes + held->size - kept, kept);
	}
	n = recv(h2o_socket_get_fd(c->sock), head + kept, sizeof(head) - kept,
		 MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0)
		return 0;
	n += (ssize_t)kept;
	/* An empty line ends the head: CRLF or a bare LF, as h2o takes either. */
	return memmem(head, (size_t)n, "\n\r\n", 3) != NULL ||
	       memmem(head, (size_t)n, "\n\n", 2) != NULL;
}

/*
 * fairshare_take, and when it refuses, room made by a connection still
 * waiting for its request (see http_waiting.h), none whose request has
 * come unread (request_arrived): the newcomer's own address's longest
 * waiting, whose slot it takes over (its address holds no more than
 * before), or else, when every slot is taken and the newcomer's address
 * holds none, the longest waiting of all.  A newcomer whose address holds
 * connections that are all being answered is refused.
 */
static enum fairshare_verdict admit(struct http_server *s, const struct sockaddr *sa,
				    socklen_t len, struct fairshare_ticket *t)
{
	enum fairshare_verdict v = fairshare_take(&s->share, sa, len, t);
	struct http_waiter *w;

	if (v == FAIRSHARE_OK)
		return v;
	w = http_waiting_oldest(&s->waiting, t, request_arrived);
	if (w) {
		evict(s, (struct http_conn *)w, 1);
		return FAIRSHARE_OK;
	}
	if (v != FAIRSHARE_FULL || fairshare_held(&s->share, t) != 0)
		return v;
	w = http_waiting_oldest(&s->waiting, NULL, request_arrived);
	if (!w)
		return v;
	evict(s, (struct http_conn *)w, 0);
	return fairshare_take(&s->share, sa, len, t);
}

/* sock, with bytes to read, takes a slot (admit) or is answered 503. */
static void seat(void *arg, h2o_socket_t *sock)
{
	static char busy[] = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
			     "Content-Type: text/plain\r\nContent-Length: 20\r\n\r\n"
			     "too many connections";
	struct http_server *s = arg;
	struct sockaddr_storage ss;
	struct http_conn *c;
	enum fairshare_verdict v;
	socklen_t len;

	memset(&ss, 0, sizeof(ss));
	len = h2o_socket_getpeername(sock, (struct sockaddr *)&ss);
	c = calloc(1, sizeof(*c));
	v = c ? admit(s, (struct sockaddr *)&ss, len, &c->waiter.ticket) : FAIRSHARE_FULL;
	if (v != FAIRSHARE_OK) {
		h2o_iovec_t buf = h2o_iovec_init(busy, sizeof(busy) - 1);

		free(c);
		stats_add(CAT_STAT_HTTP_REJECTED, 1);
		log_reject(s, v);
		h2o_socket_write(sock, &buf, 1, on_reject_written);
		return;
	}
	c->server = s;
	c->sock = sock;
	http_waiting_add(&s->waiting, &c->waiter);
	s->connections++;
	stats_add(CAT_STAT_HTTP_CONNECTIONS, 1);
	sock->on_close.cb = on_conn_close;
	sock->on_close.data = c;
	h2o_accept(&s->accept_ctx, sock);
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
	struct http_server *s = listener->data;

	if (err)
		return;
	/* A few per wakeup, so one busy listener cannot starve the requests. */
	for (int i = 0; i < 16; i++) {
		h2o_socket_t *sock = h2o_evloop_socket_accept(listener);

		if (!sock)
			return;
		if (http_parked_no_bytes(sock))
			http_parked_add(&s->parked, sock, now_mono_ns());
		else
			seat(s, sock);
	}
}

int http_server_new(struct http_server **out, int listen_fd, const char *shm_name,
		    unsigned int ws_port)
{
	struct http_server *s = calloc(1, sizeof(*s));
	h2o_hostconf_t *host;
	h2o_pathconf_t *path;
	struct http_handler *h;

	if (!s)
		return -ENOMEM;
	s->page = web_index_page(ws_port, &s->page_len);
	if (!s->page) {
		int err = -errno;

		free(s);
		return err;
	}
	if (fairshare_init(&s->share, HTTP_MAX_CONNECTIONS, HTTP_MAX_PER_ADDR, HTTP_RESERVE) < 0) {
		free(s->page);
		free(s);
		return -ENOMEM;
	}
	s->listen_fd = listen_fd;
	http_parked_init(&s->parked, seat, s);
	h2o_config_init(&s->config);
	s->config.server_name = h2o_iovec_init(H2O_STRLIT("zernel-exporter"));
	s->config.max_request_entity_size = HTTP_MAX_BODY_BYTES;
	s->config.http1.req_timeout = HTTP_REQ_TIMEOUT_MS;
	/* HTTP/1.1 only: no h2c upgrade and no HTTP/2 with prior knowledge. */
	s->config.http1.upgrade_to_http2 = 0;
	s->config.http2.idle_timeout = HTTP_REQ_TIMEOUT_MS;
	host = h2o_config_register_host(&s->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
	path = h2o_config_register_path(host, "/", 0);
	h = (struct http_handler *)h2o_create_handler(path, sizeof(*h));
	h->super.on_req = on_req;
	h->server = s;
	source_init(&s->src, shm_name);
	sbuf_init(&s->self, 1u << 20, 0);
	if (metrics_ahead_init(&s->ahead, shm_name, HTTP_MAX_RESPONSE) < 0) {
		http_server_free(s);
		return -ENOMEM;
	}
	s->ahead_ready = 1;
	s->history = stall_history_new();
	if (!s->history) {
		http_server_free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

static void *http_thread(void *arg)
{
	struct http_server *s = arg;

	s->loop = h2o_evloop_create();
	h2o_context_init(&s->ctx, s->loop, &s->config);
	s->accept_ctx.ctx = &s->ctx;
	s->accept_ctx.hosts = s->config.hosts;
	s->listener = h2o_evloop_socket_create(s->loop, s->listen_fd, H2O_SOCKET_FLAG_DONT_READ);
	s->listen_fd = -1;	/* the socket owns it now */
	s->listener->data = s;
	h2o_socket_read_start(s->listener, on_accept);

	/* 100 ms: how soon a stop request is noticed. */
	while (!atomic_load(&s->stop)) {
		h2o_evloop_run(s->loop, 100);
		http_parked_expire(&s->parked, now_mono_ns());
		history_tick(s, 0);
	}

	h2o_socket_read_stop(s->listener);
	h2o_socket_close(s->listener);
	s->listener = NULL;
	http_parked_close_all(&s->parked);
	/* Responses in flight get up to 1 s; idle keep-alive connections do not wait. */
	for (int i = 0; i < 10 && s->connections > 0; i++)
		h2o_evloop_run(s->loop, 100);
	if (s->connections == 0) {
		h2o_context_dispose(&s->ctx);
		h2o_evloop_destroy(s->loop);
	} else {
		/* h2o cannot dispose a loop with live sockets; the process is exiting. */
		log_info("http: %u connections still open at shutdown", s->connections);
	}
	s->loop = NULL;
	return NULL;
}

int http_server_start(struct http_server *s, struct alerts *alerts)
{
	int err;

	s->alerts = alerts;
	err = metrics_ahead_start(&s->ahead);
	if (err)
		return err;
	err = pthread_create(&s->thread, NULL, http_thread, s);
	if (err) {
		metrics_ahead_stop(&s->ahead);
		return -err;
	}
	s->started = 1;
	return 0;
}

void http_server_stop(struct http_server *s)
{
	if (!s || !s->started)
		return;
	atomic_store(&s->stop, 1);
	pthread_join(s->thread, NULL);
	metrics_ahead_stop(&s->ahead);
	s->started = 0;
}

void http_server_free(struct http_server *s)
{
	if (!s)
		return;
	http_server_stop(s);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->ahead_ready)
		metrics_ahead_free(&s->ahead);
	sbuf_free(&s->self);
	stall_history_free(s->history);
	source_close(&s->src);
	h2o_config_dispose(&s->config);
	fairshare_free(&s->share);
	free(s->page);
	free(s);
}
