/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection fair share (see fairshare.h).  A flat table with one slot per
 * possible connection: lookups scan at most max_total slots of 20 bytes,
 * done once per accept and once per close, which is far below the cost of
 * the accept itself.  Unprivileged, one thread.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/fairshare.h"

int fairshare_init(struct fairshare *f, unsigned int max_total, unsigned int max_per_addr,
		   unsigned int reserve)
{
	memset(f, 0, sizeof(*f));
	if (!max_total || reserve >= max_total || !max_per_addr || max_per_addr > max_total)
		return -EINVAL;
	f->addrs = calloc(max_total, sizeof(*f->addrs));
	if (!f->addrs)
		return -ENOMEM;
	f->max_total = max_total;
	f->max_per_addr = max_per_addr;
	f->reserve = reserve;
	return 0;
}

void fairshare_free(struct fairshare *f)
{
	free(f->addrs);
	memset(f, 0, sizeof(*f));
}

/* The key of an address; unknown families (a UNIX socket) share one key. */
static void key_of(const struct sockaddr *sa, socklen_t len, uint8_t key[16])
{
	memset(key, 0, 16);
	if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6 &&
		   len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

		/* A v4-mapped address is the IPv4 host; any other counts per /64. */
		memcpy(key, a, memcmp(a, mapped, 12) == 0 ? 16 : 8);
	}
}

static struct fairshare_addr *find(const struct fairshare *f, const uint8_t key[16])
{
	for (unsigned int i = 0; i < f->max_total; i++)
		if (f->addrs[i].n && memcmp(f->addrs[i].key, key, 16) == 0)
			return &f->addrs[i];
	return NULL;
}

enum fairshare_verdict fairshare_take(struct fairshare *f, const struct sockaddr *sa,
				      socklen_t len, struct fairshare_ticket *t)
{
	struct fairshare_addr *a;
	unsigned int held;

	key_of(sa, len, t->key);
	if (f->total >= f->max_total)
		return FAIRSHARE_FULL;
	a = find(f, t->key);
	held = a ? a->n : 0;
	if (held >= f->max_per_addr)
		return FAIRSHARE_PER_ADDR;
	if (f->total >= f->max_total - f->reserve && held > FAIRSHARE_RESERVE_HOLD - 1)
		return FAIRSHARE_RESERVED;
	if (!a) {
		/* total < max_total, so some slot is free. */
		for (unsigned int i = 0; i < f->max_total && !a; i++)
			if (!f->addrs[i].n)
				a = &f->addrs[i];
		memcpy(a->key, t->key, 16);
	}
	a->n++;
	f->total++;
	return FAIRSHARE_OK;
}

void fairshare_give(struct fairshare *f, const struct fairshare_ticket *t)
{
	struct fairshare_addr *a = find(f, t->key);

	if (!a)
		return;
	a->n--;
	f->total--;
}

unsigned int fairshare_held(const struct fairshare *f, const struct fairshare_ticket *t)
{
	const struct fairshare_addr *a = find(f, t->key);

	return a ? a->n : 0;
}

const char *fairshare_verdict_name(enum fairshare_verdict v)
{
	switch (v) {
	case FAIRSHARE_OK:		return "admitted";
	case FAIRSHARE_FULL:		return "connection limit";
	case FAIRSHARE_PER_ADDR:	return "per-address limit";
	case FAIRSHARE_RESERVED:	return "reserve kept for light clients";
	}
	return "unknown";
}
