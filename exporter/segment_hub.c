/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exporter's one reader of the segment (segment_hub.h).  The reader
 * hands its copies over for keeping (shm_reader_share_copies): the hub
 * wraps each new one in a hub_copy holding one reference of its own,
 * dropped when a newer publish replaces it; a thread's look adds one.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/segment_hub.h"

struct segment_hub {
	pthread_mutex_t lock;		/* the reader, work, current */
	struct shm_reader reader;
	struct shm_snapshot work;	/* the reader's view of the newest copy */
	struct hub_copy *current;	/* that copy, shared; NULL before the first */
	uint64_t copies;
	unsigned int users;		/* under hubs_lock */
	struct segment_hub *next;
	char name[256];
};

static pthread_mutex_t hubs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct segment_hub *hubs;

struct segment_hub *segment_hub_get(const char *name)
{
	struct segment_hub *h;

	pthread_mutex_lock(&hubs_lock);
	for (h = hubs; h && strcmp(h->name, name) != 0; h = h->next)
		;
	if (!h && (h = calloc(1, sizeof(*h)))) {
		pthread_mutex_init(&h->lock, NULL);
		shm_reader_init(&h->reader, name);
		shm_reader_share_copies(&h->reader);
		/* Any thread may be the one that reads: none sleeps on a stuck writer. */
		shm_reader_never_sleep(&h->reader);
		strncpy(h->name, name, sizeof(h->name) - 1);
		h->next = hubs;
		hubs = h;
	}
	if (h)
		h->users++;
	pthread_mutex_unlock(&hubs_lock);
	return h;
}

/* The hub's own reference to its newest copy, dropped (hub locked). */
static void drop_current(struct segment_hub *h);

void segment_hub_put(struct segment_hub *h)
{
	struct segment_hub **p;

	if (!h)
		return;
	pthread_mutex_lock(&hubs_lock);
	if (--h->users > 0) {
		pthread_mutex_unlock(&hubs_lock);
		return;
	}
	for (p = &hubs; *p != h; p = &(*p)->next)
		;
	*p = h->next;
	pthread_mutex_unlock(&hubs_lock);
	pthread_mutex_lock(&h->lock);
	drop_current(h);
	pthread_mutex_unlock(&h->lock);
	shm_reader_close(&h->reader);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* A copy's last user is done: its buffer goes back to the reader (hub locked). */
static void copy_free(struct hub_copy *c)
{
	shm_reader_take_back(&c->hub->reader, c->snap.buf, c->snap.cap);
	free(c);
}

static void drop_current(struct segment_hub *h)
{
	struct hub_copy *c = h->current;

	h->current = NULL;
	/* The work view shares the copy's buffer: it goes with the copy. */
	memset(&h->work, 0, sizeof(h->work));
	if (c && atomic_fetch_sub(&c->refs, 1) == 1)
		copy_free(c);
}

void hub_copy_release(struct hub_copy *c)
{
	struct segment_hub *h;

	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	h = c->hub;
	pthread_mutex_lock(&h->lock);
	copy_free(c);
	pthread_mutex_unlock(&h->lock);
}

void segment_hub_read(struct segment_hub *h, struct hub_read *out, char *reason, size_t len)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&h->lock);
	out->status = shm_reader_snapshot(&h->reader, &h->work, reason, len);
	if (out->status == SHM_READ_OK || out->status == SHM_READ_STALE) {
		/* A new buffer is a new publish: wrap it, and let the one before go. */
		if (!h->current || h->current->snap.buf != h->work.buf) {
			struct hub_copy *c = calloc(1, sizeof(*c));

			if (!c) {
				out->status = SHM_READ_INVALID;
				pthread_mutex_unlock(&h->lock);
				return;
			}
			c->snap = h->work;
			c->hub = h;
			atomic_init(&c->refs, 1);
			if (h->current && atomic_fetch_sub(&h->current->refs, 1) == 1)
				copy_free(h->current);
			h->current = c;
			h->copies++;
		}
		atomic_fetch_add(&h->current->refs, 1);
		out->copy = h->current;
		out->published_ns = h->work.published_ns;
	}
	pthread_mutex_unlock(&h->lock);
}

int segment_hub_current(struct segment_hub *h, const struct hub_copy *c)
{
	const union shm_header *map;
	int same;

	pthread_mutex_lock(&h->lock);
	map = h->reader.map;
	same = c && map && c->snap.hdr &&
	       __atomic_load_n(&map->h.seq, __ATOMIC_ACQUIRE) == c->snap.hdr->seq;
	pthread_mutex_unlock(&h->lock);
	return same;
}

uint64_t segment_hub_copies(struct segment_hub *h)
{
	uint64_t n;

	pthread_mutex_lock(&h->lock);
	n = h->copies;
	pthread_mutex_unlock(&h->lock);
	return n;
}
