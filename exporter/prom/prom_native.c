/* SPDX-License-Identifier: BSD-2-Clause */
/* Native buckets from log-linear ones (see prom_native.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/prom/prom_native.h"
#include "exporter/prom/prom_proto.h"
#include "shm/shm_hist.h"

static int make_room(struct prom_natives *s)
{
	struct prom_native_hist *bigger;
	size_t cap = s->cap ? s->cap * 2 : 16;

	if (s->n < s->cap)
		return 0;
	bigger = realloc(s->h, cap * sizeof(*bigger));
	if (!bigger)
		return -ENOMEM;
	s->h = bigger;
	s->cap = cap;
	return 0;
}

static void hist_free(struct prom_native_hist *h)
{
	free(h->name);
	free(h->labels);
	free(h->index);
	free(h->counts);
}

/* The native bucket of log-linear bucket i > 0: the one holding its midpoint. */
static int32_t native_of(size_t i)
{
	double mid_ns = (double)hist_bucket_lower(i) + (double)(hist_bucket_width(i) - 1) / 2;

	return (int32_t)prom_proto_native_index(mid_ns / 1e9);
}

int prom_natives_add(struct prom_natives *s, const char *name, const char *labels,
		     uint64_t count, const uint64_t *fine)
{
	struct prom_native_hist h = { .count = count, .zero_count = fine[0] };
	int32_t index[HIST_BUCKETS];
	uint64_t counts[HIST_BUCKETS], sum = fine[0];

	/* Midpoints grow with i: a bucket joins the last native one or starts the next. */
	for (size_t i = 1; i < HIST_BUCKETS; i++) {
		int32_t k;

		if (!fine[i])
			continue;
		if (__builtin_add_overflow(sum, fine[i], &sum))
			return 0;
		k = native_of(i);
		if (h.n && index[h.n - 1] == k) {
			counts[h.n - 1] += fine[i];
			continue;
		}
		index[h.n] = k;
		counts[h.n++] = fine[i];
	}
	if (sum != count)
		return 0;
	if (make_room(s) < 0)
		return -ENOMEM;
	h.name = strdup(name);
	h.labels = strdup(labels);
	h.index = malloc((h.n ? h.n : 1) * sizeof(*h.index));
	h.counts = malloc((h.n ? h.n : 1) * sizeof(*h.counts));
	if (!h.name || !h.labels || !h.index || !h.counts) {
		hist_free(&h);
		return -ENOMEM;
	}
	memcpy(h.index, index, h.n * sizeof(*h.index));
	memcpy(h.counts, counts, h.n * sizeof(*h.counts));
	s->h[s->n++] = h;
	return 0;
}

const struct prom_native_hist *prom_natives_find(const struct prom_natives *s, size_t *cursor,
						 const char *name, size_t name_len,
						 const char *labels, size_t labels_len)
{
	for (size_t i = *cursor; s && i < s->n; i++) {
		const struct prom_native_hist *h = &s->h[i];

		if (strlen(h->name) == name_len && memcmp(h->name, name, name_len) == 0 &&
		    strlen(h->labels) == labels_len && memcmp(h->labels, labels, labels_len) == 0) {
			*cursor = i + 1;
			return h;
		}
	}
	return NULL;
}

void prom_natives_free(struct prom_natives *s)
{
	for (size_t i = 0; i < s->n; i++)
		hist_free(&s->h[i]);
	free(s->h);
	memset(s, 0, sizeof(*s));
}
