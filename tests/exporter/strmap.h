/* SPDX-License-Identifier: BSD-2-Clause */
/* A string-keyed hash map to indices, for the Prometheus text checker. */
#ifndef ZERNEL_STRMAP_H
#define ZERNEL_STRMAP_H

#include <stddef.h>

struct strmap {
	char **keys;		/* owned copies; NULL for an empty slot */
	size_t *vals;
	size_t cap, n;		/* cap is 0 or a power of two */
};

/* 1 and *val when key is present, 0 when not. */
int strmap_get(const struct strmap *m, const char *key, size_t *val);
/* Adds or replaces key; 0 or -ENOMEM. */
int strmap_put(struct strmap *m, const char *key, size_t val);
void strmap_free(struct strmap *m);

#endif /* ZERNEL_STRMAP_H */
