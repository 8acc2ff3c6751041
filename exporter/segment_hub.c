/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exporter's one reader of the segment (segment_hub.h).  The reader
 * hands its copies over for keeping (shm_reader_share_copies): the hub
 * wraps each new one in a hub_copy holding one reference of its own,
 * dropped when a newer publish replaces it; a thread's look adds one.
 *
 * The buffers copies are made in are kept, never freed while the segment
 * keeps its size: a spare goes back to the reader for the next copy, the
 * oldest spare first so that each is written as often as the others.
 * There are as many as can be in use at once, made at once: memory does
 * not grow with how the users' looks happen to fall between publishes.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/segment_hub.h"

#define HUB_SPARES	16

struct hub_buffer {
	void *buf;
	size_t cap;
};

struct segment_hub {
	pthread_mutex_t lock;		/* the reader, work, current, spares */
	struct shm_reader reader;
	struct shm_snapshot work;	/* the reader's view of the newest copy */
	struct hub_copy *current;	/* that copy, shared; NULL before the first */
	uint64_t copies;
	unsigned int live;		/* copies not yet freed */
	struct hub_buffer spare[HUB_SPARES];	/* a queue: oldest at first */
	unsigned int first, n_spare;
	unsigned int users;		/* under hubs_lock */
	struct segment_hub *next;
	char name[256];
};

static pthread_mutex_t hubs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct segment_hub *hubs;

static void spare_push(struct segment_hub *h, void *buf, size_t cap)
{
	h->spare[(h->first + h->n_spare++) % HUB_SPARES] = (struct hub_buffer){ buf, cap };
}

static struct hub_buffer spare_pop(struct segment_hub *h)
{
	struct hub_buffer b = h->spare[h->first];

	h->first = (h->first + 1) % HUB_SPARES;
	h->n_spare--;
	return b;
}

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
	while (h->n_spare)
		free(spare_pop(h).buf);
	pthread_mutex_unlock(&h->lock);
	shm_reader_close(&h->reader);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* A buffer no copy uses: the reader's next, a spare, or freed when too small or too many. */
static void buffer_back(struct segment_hub *h, void *buf, size_t cap)
{
	if (cap < h->reader.map_size)
		free(buf);
	else if (!h->reader.scratch)
		shm_reader_take_back(&h->reader, buf, cap);
	else if (h->n_spare < HUB_SPARES)
		spare_push(h, buf, cap);
	else
		free(buf);
}

/* The reader's next copy goes into the oldest spare (hub locked). */
static void buffer_for_reader(struct segment_hub *h)
{
	if (!h->reader.scratch && h->n_spare) {
		struct hub_buffer b = spare_pop(h);

		shm_reader_take_back(&h->reader, b.buf, b.cap);
	}
}

/*
 * As many buffers as can be in use at once (hub locked): a copy each user
 * holds (the newest publish is always one of them: it was copied for a
 * user's look, and that user holds it until it looks again) and the
 * reader's next.
 */
static void buffers_enough(struct segment_hub *h)
{
	unsigned int have = h->live + h->n_spare + (h->reader.scratch != NULL), want;

	pthread_mutex_lock(&hubs_lock);
	want = h->users + 1;
	pthread_mutex_unlock(&hubs_lock);
	while (have < want && h->n_spare < HUB_SPARES && h->reader.map_size) {
		void *buf = malloc(h->reader.map_size);

		if (!buf)
			return;
		spare_push(h, buf, h->reader.map_size);
		have++;
	}
}

/* A copy's last user is done: its buffer goes back (hub locked). */
static void copy_free(struct hub_copy *c)
{
	struct segment_hub *h = c->hub;

	h->live--;
	buffer_back(h, c->snap.buf, c->snap.cap);
	free(c);
}

/* One reference to c (or NULL) fewer, freeing it with the last (hub locked). */
static void copy_put_locked(struct hub_copy *c)
{
	if (c && atomic_fetch_sub(&c->refs, 1) == 1)
		copy_free(c);
}

static void drop_current(struct segment_hub *h)
{
	struct hub_copy *c = h->current;

	h->current = NULL;
	/* The work view shares the copy's buffer: it goes with the copy. */
	memset(&h->work, 0, sizeof(h->work));
	copy_put_locked(c);
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

void segment_hub_read(struct segment_hub *h, struct hub_copy *held, struct hub_read *out,
		      char *reason, size_t len)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&h->lock);
	/* Given up first: its buffer may be the one this look copies into. */
	copy_put_locked(held);
	buffer_for_reader(h);
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
			copy_put_locked(h->current);
			h->current = c;
			h->copies++;
			h->live++;
			buffers_enough(h);
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

void segment_hub_counts(struct segment_hub *h, struct hub_counts *out)
{
	pthread_mutex_lock(&h->lock);
	out->copies = h->copies;
	out->buffers = h->live + h->n_spare + (h->reader.scratch != NULL);
	pthread_mutex_unlock(&h->lock);
}
