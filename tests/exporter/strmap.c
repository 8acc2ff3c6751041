/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Open-addressing hash map from strings to indices (see strmap.h), for the
 * Prometheus text checker.  Keys are copied; the table doubles at half full.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/exporter/strmap.h"

static uint64_t strmap_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Slot of key, or of the empty slot where it would go. */
static size_t strmap_slot(const struct strmap *m, const char *key)
{
	size_t i = (size_t)strmap_hash(key) & (m->cap - 1);

	while (m->keys[i] && strcmp(m->keys[i], key) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int strmap_grow(struct strmap *m)
{
	struct strmap bigger = { .cap = m->cap ? m->cap * 2 : 1024 };

	bigger.keys = calloc(bigger.cap, sizeof(*bigger.keys));
	bigger.vals = calloc(bigger.cap, sizeof(*bigger.vals));
	if (!bigger.keys || !bigger.vals) {
		free(bigger.keys);
		free(bigger.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (m->keys[i]) {
			size_t s = strmap_slot(&bigger, m->keys[i]);

			bigger.keys[s] = m->keys[i];
			bigger.vals[s] = m->vals[i];
		}
	}
	bigger.n = m->n;
	free(m->keys);
	free(m->vals);
	*m = bigger;
	return 0;
}

/* 1 and *val when found, 0 when not. */
int strmap_get(const struct strmap *m, const char *key, size_t *val)
{
	size_t s;

	if (!m->cap)
		return 0;
	s = strmap_slot(m, key);
	if (!m->keys[s])
		return 0;
	*val = m->vals[s];
	return 1;
}

int strmap_put(struct strmap *m, const char *key, size_t val)
{
	size_t s;

	if ((m->n + 1) * 2 > m->cap && strmap_grow(m) < 0)
		return -ENOMEM;
	s = strmap_slot(m, key);
	if (!m->keys[s]) {
		m->keys[s] = strdup(key);
		if (!m->keys[s])
			return -ENOMEM;
		m->n++;
	}
	m->vals[s] = val;
	return 0;
}

void strmap_free(struct strmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
