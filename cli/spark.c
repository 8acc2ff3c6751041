/* SPDX-License-Identifier: BSD-2-Clause */
/* Sparkline history for the live view (see spark.h).  Pure functions. */
#include <math.h>
#include <string.h>

#include "cli/spark.h"

void cli_spark_reset(struct cli_spark *s)
{
	memset(s, 0, sizeof(*s));
}

void cli_spark_push(struct cli_spark *s, double v)
{
	if (!isfinite(v) || v < 0)
		return;
	s->v[s->head] = v;
	s->head = (s->head + 1) % CLI_SPARK_POINTS;
	if (s->n < CLI_SPARK_POINTS)
		s->n++;
}

size_t cli_spark_render(const struct cli_spark *s, size_t width, int utf8,
			char *dst, size_t len)
{
	static const char *const blocks[8] = {
		"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588",
	};
	static const char ascii[8] = { '_', '.', ':', '-', '=', '+', '*', '#' };
	size_t n = s->n < width ? s->n : width, o = 0, start, i;
	double lo = INFINITY, hi = -INFINITY;

	if (len == 0)
		return 0;
	start = (s->head + CLI_SPARK_POINTS - n) % CLI_SPARK_POINTS;
	for (i = 0; i < n; i++) {
		double v = s->v[(start + i) % CLI_SPARK_POINTS];

		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	for (i = 0; i < n; i++) {
		double v = s->v[(start + i) % CLI_SPARK_POINTS];
		/* A flat series sits on the floor rather than looking like a spike. */
		int level = hi > lo ? (int)((v - lo) / (hi - lo) * 7.0 + 0.5) : 0;
		size_t need = utf8 ? 3 : 1;

		if (o + need >= len)
			break;
		if (utf8)
			memcpy(dst + o, blocks[level], 3);
		else
			dst[o] = ascii[level];
		o += need;
	}
	dst[o] = '\0';
	return i;
}
