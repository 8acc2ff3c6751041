/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A short history of one figure (one point per snapshot) and its sparkline:
 * the trend of a p99 at a glance.  Fixed size, no allocation.
 */
#ifndef ZERNEL_CLI_SPARK_H
#define ZERNEL_CLI_SPARK_H

#include <stddef.h>

#define CLI_SPARK_POINTS 240u

struct cli_spark {
	double v[CLI_SPARK_POINTS];	/* ring */
	size_t head;			/* next write */
	size_t n;
};

void cli_spark_reset(struct cli_spark *s);
/* Negative or non-finite values (unknown) are skipped. */
void cli_spark_push(struct cli_spark *s, double v);
/*
 * Writes the last `width` points (fewer if fewer are known) as one glyph
 * each, scaled between their min and max: U+2581..U+2588 when utf8, else
 * " .:-=+*#".  Returns the number of glyphs written; dst gets a NUL.
 */
size_t cli_spark_render(const struct cli_spark *s, size_t width, int utf8,
			char *dst, size_t len);

#endif /* ZERNEL_CLI_SPARK_H */
