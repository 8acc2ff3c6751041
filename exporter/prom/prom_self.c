/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Prometheus text of the exporter's own view (see prom.h): whether the
 * collector is up and why not, and the exporter's counters, all catalog
 * entries.  Rendered at every scrape, fresh segment or not.
 */
#include <string.h>

#include "common/utf8.h"
#include "exporter/prom/prom.h"

int prom_render_self(struct prom_out *o, const struct cat_status *st,
		     const struct exporter_stats *s)
{
	struct cat_input in = { .status = st, .stats = s->v };
	char reason[512];

	if (st->status != SHM_READ_OK && st->reason && *st->reason) {
		/* A comment line: one line, whatever the reason text holds. */
		utf8_sanitize(reason, sizeof(reason), st->reason, strlen(st->reason));
		for (char *c = reason; *c; c++)
			if (*c == '\n')
				*c = ' ';
		prom_comment(o, "zernel collector not fresh, segment data omitted: ", reason);
	}
	return prom_render_catalog(o, &in, 0);
}
