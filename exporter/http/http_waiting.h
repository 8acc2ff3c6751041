/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connections waiting for their next request's headers, longest
 * waiting first.  When every slot is taken (fairshare.h), a newcomer gets
 * the slot of the connection that has waited longest: a scraper sends its
 * request as soon as it connects, while a slow client holds its slot
 * sending nothing, and with many addresses slow clients could otherwise
 * hold every slot.  A connection waits from its accept, and again from the
 * end of each response (keep-alive), until its request is complete.
 * HTTP thread only; unprivileged.
 */
#ifndef ZERNEL_HTTP_WAITING_H
#define ZERNEL_HTTP_WAITING_H

#include "exporter/fairshare.h"

struct http_waiter {
	struct http_waiter *prev, *next;
	int linked;
	struct fairshare_ticket ticket;	/* whose slot it holds */
};

struct http_waiting {
	struct http_waiter *head, *tail;	/* head: waiting longest */
};

/* w starts waiting now (the end of the list); no-op when it waits already. */
void http_waiting_add(struct http_waiting *l, struct http_waiter *w);
/* w stops waiting (its request is complete, or it closed); no-op when it does not wait. */
void http_waiting_remove(struct http_waiting *l, struct http_waiter *w);
/*
 * The connection waiting longest; from the address of from only, when
 * from is not NULL; passing over those for which arrived(w) is true (their
 * request is there, unread yet).  NULL when none waits.
 */
struct http_waiter *http_waiting_oldest(const struct http_waiting *l,
					const struct fairshare_ticket *from,
					int (*arrived)(const struct http_waiter *w));

#endif /* ZERNEL_HTTP_WAITING_H */
