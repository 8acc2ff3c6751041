/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit formatting for the zernel client (see fmt.h).  Pure functions. */
#include <math.h>
#include <stdio.h>

#include "cli/fmt.h"

/* Three significant digits at most: 1.23, 12.3, 123. */
static const char *prec_fmt(double v)
{
	if (v < 10.0)
		return "%.2f %s";
	if (v < 100.0)
		return "%.1f %s";
	return "%.0f %s";
}

char *cli_fmt_bytes(char *buf, size_t len, double bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	unsigned int u = 0;

	if (!isfinite(bytes) || bytes < 0) {
		snprintf(buf, len, "-");
		return buf;
	}
	while (bytes >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		bytes /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f B", bytes);
	else
		snprintf(buf, len, prec_fmt(bytes), bytes, units[u]);
	return buf;
}

char *cli_fmt_dur(char *buf, size_t len, double ns)
{
	if (!isfinite(ns) || ns < 0) {
		snprintf(buf, len, "-");
		return buf;
	}
	if (ns < 1000.0)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, prec_fmt(ns / 1e3), ns / 1e3, "us");
	else if (ns < 1e9)
		snprintf(buf, len, prec_fmt(ns / 1e6), ns / 1e6, "ms");
	else
		snprintf(buf, len, prec_fmt(ns / 1e9), ns / 1e9, "s");
	return buf;
}

char *cli_fmt_count(char *buf, size_t len, double n)
{
	if (!isfinite(n) || n < 0)
		snprintf(buf, len, "-");
	else if (n < 1e4)
		snprintf(buf, len, "%.0f", n);
	else if (n < 1e6)
		snprintf(buf, len, "%.1fk", n / 1e3);
	else if (n < 1e9)
		snprintf(buf, len, "%.2fM", n / 1e6);
	else
		snprintf(buf, len, "%.2fG", n / 1e9);
	return buf;
}
