/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The table of probe families (probe_family.h), made from their list
 * (PROBE_FAMILY_LIST, families.h) in load order: the first object
 * that declares a shared map owns it, and the watch family's maps are the
 * watched set every other family reads.  Root.
 */
#include <pthread.h>

#include "collector/probes/probe_family.h"

const struct probe_family *const probe_families[PROBE_OBJ_COUNT] = {
#define PROBE_FAMILY_ENTRY(id, name)	[PROBE_OBJ_##id] = &name##_family,
	PROBE_FAMILY_LIST(PROBE_FAMILY_ENTRY)
#undef PROBE_FAMILY_ENTRY
};

/* Room for every family's rows (check_probe_table counts them all in). */
#define PROBE_MAX_ATTACH	1024

static struct probe_attach rows[PROBE_MAX_ATTACH];
static size_t n_rows;
static int rows_overflow;
static pthread_once_t rows_once = PTHREAD_ONCE_INIT;

static void append(const struct probe_attach *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (n_rows == PROBE_MAX_ATTACH) {
			rows_overflow = 1;
			continue;
		}
		rows[n_rows++] = a[i];
	}
}

static void build_rows(void)
{
	for (size_t f = 0; f < PROBE_OBJ_COUNT; f++)
		append(probe_families[f]->attach_first, probe_families[f]->n_attach_first);
	for (size_t f = 0; f < PROBE_OBJ_COUNT; f++)
		append(probe_families[f]->attach, probe_families[f]->n_attach);
}

const struct probe_attach *probe_attach_rows(size_t *n)
{
	pthread_once(&rows_once, build_rows);
	if (rows_overflow) {
		*n = 0;
		return NULL;
	}
	*n = n_rows;
	return rows;
}
