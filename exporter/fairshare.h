/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A fair share of a server's connections, decided at accept: a global
 * limit, a per-address limit well below it, and a reserve (the last
 * slots) that only addresses holding at most FAIRSHARE_RESERVE_HOLD
 * connections may take, so that a scraper that opens one connection at a
 * time always gets in while others hold everything they are allowed.
 * IPv6 addresses count per /64 (what one host can easily spread over).
 * One per server, used by its own thread only; unprivileged.
 */
#ifndef ZERNEL_FAIRSHARE_H
#define ZERNEL_FAIRSHARE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define FAIRSHARE_RESERVE_HOLD	1u	/* holding this many or fewer: the reserve is open */

struct fairshare_addr {
	uint8_t key[16];	/* IPv4 mapped into IPv6; IPv6 cut to its /64 */
	uint32_t n;		/* connections open; 0 = free slot */
};

struct fairshare {
	unsigned int max_total;
	unsigned int max_per_addr;
	unsigned int reserve;
	unsigned int total;
	struct fairshare_addr *addrs;	/* max_total slots */
};

/* A connection's claim, to give back when it closes. */
struct fairshare_ticket {
	uint8_t key[16];
};

enum fairshare_verdict {
	FAIRSHARE_OK = 0,
	FAIRSHARE_FULL,		/* the global limit */
	FAIRSHARE_PER_ADDR,	/* this address holds its share */
	FAIRSHARE_RESERVED,	/* only the reserve is left, and this address holds more */
};

/* 0 or -ENOMEM; reserve < max_total, max_per_addr <= max_total. */
int fairshare_init(struct fairshare *f, unsigned int max_total, unsigned int max_per_addr,
		   unsigned int reserve);
void fairshare_free(struct fairshare *f);

/* Admits a connection from sa (counted, ticket filled) or says why not. */
enum fairshare_verdict fairshare_take(struct fairshare *f, const struct sockaddr *sa,
				      socklen_t len, struct fairshare_ticket *t);
/* The connection of ticket t closed. */
void fairshare_give(struct fairshare *f, const struct fairshare_ticket *t);

/* Connections open now from the address of ticket t. */
unsigned int fairshare_held(const struct fairshare *f, const struct fairshare_ticket *t);

const char *fairshare_verdict_name(enum fairshare_verdict v);

#endif /* ZERNEL_FAIRSHARE_H */
