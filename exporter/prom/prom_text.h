/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The text encoder of the series model (prom_write.h): Prometheus text
 * format 0.0.4, appended to b.
 */
#ifndef ZERNEL_PROM_TEXT_H
#define ZERNEL_PROM_TEXT_H

#include "exporter/prom/prom_write.h"

void prom_text_family(struct sbuf *b, const char *name, enum prom_type type, const char *help);
void prom_text_u64(struct sbuf *b, const char *name, const char *labels, uint64_t v);
void prom_text_sec(struct sbuf *b, const char *name, const char *labels, uint64_t ns);
void prom_text_summary(struct sbuf *b, const char *name, const char *labels,
		       const struct shm_latency *l);
void prom_text_histogram(struct sbuf *b, const char *name, const char *labels,
			 const struct shm_latency *l);

#endif /* ZERNEL_PROM_TEXT_H */
