/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections waiting for their first bytes (see http_parked.h): a list
 * in the order they were accepted, each one's h2o socket reading into its
 * own input buffer until something comes.
 */
#include <stdlib.h>
#include <sys/socket.h>

#include "exporter/http/http_parked.h"

/* On the same intrusive list as the connections waiting for a request (no ticket here). */
struct http_parked_conn {
	struct http_waiter node;	/* first: the list gives back the connection */
	struct http_parked *pool;
	h2o_socket_t *sock;
	uint64_t since_ns;
};

void http_parked_init(struct http_parked *p, void (*ready)(void *arg, h2o_socket_t *sock),
		      void *arg)
{
	p->list.head = p->list.tail = NULL;
	p->n = 0;
	p->ready = ready;
	p->arg = arg;
}

int http_parked_no_bytes(h2o_socket_t *sock)
{
	char byte;

	return recv(h2o_socket_get_fd(sock), &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
}

/* The one waiting longest, or NULL. */
static struct http_parked_conn *oldest(const struct http_parked *p)
{
	return (struct http_parked_conn *)p->list.head;
}

/* Takes pc off the list and frees it; its socket is the caller's. */
static h2o_socket_t *unpark(struct http_parked_conn *pc)
{
	struct http_parked *p = pc->pool;
	h2o_socket_t *sock = pc->sock;

	http_waiting_remove(&p->list, &pc->node);
	p->n--;
	sock->data = NULL;
	free(pc);
	return sock;
}

static void close_parked(struct http_parked_conn *pc)
{
	h2o_socket_t *sock = unpark(pc);

	h2o_socket_read_stop(sock);
	h2o_socket_close(sock);
}

static void on_first_bytes(h2o_socket_t *sock, const char *err)
{
	struct http_parked_conn *pc = sock->data;
	struct http_parked *p = pc->pool;

	if (err) {
		close_parked(pc);
		return;
	}
	unpark(pc);
	h2o_socket_read_stop(sock);
	p->ready(p->arg, sock);
}

void http_parked_add(struct http_parked *p, h2o_socket_t *sock, uint64_t now_ns)
{
	struct http_parked_conn *pc = calloc(1, sizeof(*pc));

	if (!pc) {
		h2o_socket_close(sock);
		return;
	}
	if (p->n >= HTTP_MAX_PARKED)
		close_parked(oldest(p));
	pc->pool = p;
	pc->sock = sock;
	pc->since_ns = now_ns;
	http_waiting_add(&p->list, &pc->node);
	p->n++;
	sock->data = pc;
	h2o_socket_read_start(sock, on_first_bytes);
}

void http_parked_expire(struct http_parked *p, uint64_t now_ns)
{
	while (oldest(p) && now_ns - oldest(p)->since_ns >= (uint64_t)HTTP_PARKED_MS * 1000000u)
		close_parked(oldest(p));
}

void http_parked_close_all(struct http_parked *p)
{
	while (oldest(p))
		close_parked(oldest(p));
}
