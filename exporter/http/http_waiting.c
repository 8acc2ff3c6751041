/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections waiting for their request headers (see http_waiting.h): an
 * intrusive list in the order they began to wait.  A search by address
 * walks at most the server's 256 connections, once per refused accept
 * (with a peek at each socket passed over: see http.c).
 */
#include <stddef.h>
#include <string.h>

#include "exporter/http/http_waiting.h"

void http_waiting_add(struct http_waiting *l, struct http_waiter *w)
{
	if (w->linked)
		return;
	w->next = NULL;
	w->prev = l->tail;
	if (l->tail)
		l->tail->next = w;
	else
		l->head = w;
	l->tail = w;
	w->linked = 1;
}

void http_waiting_remove(struct http_waiting *l, struct http_waiter *w)
{
	if (!w->linked)
		return;
	if (w->prev)
		w->prev->next = w->next;
	else
		l->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		l->tail = w->prev;
	w->prev = w->next = NULL;
	w->linked = 0;
}

struct http_waiter *http_waiting_oldest(const struct http_waiting *l,
					const struct fairshare_ticket *from,
					int (*arrived)(const struct http_waiter *w))
{
	for (struct http_waiter *w = l->head; w; w = w->next)
		if ((!from || memcmp(w->ticket.key, from->key, sizeof(from->key)) == 0) &&
		    !arrived(w))
			return w;
	return NULL;
}
