/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Escaping of segment text for the exporter's outputs (see text.h).  Pure
 * functions, no privilege.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "exporter/text.h"

int text_prom_escape(struct sbuf *b, const char *s)
{
	const char *run = s;
	int err = 0;

	for (; *s && !err; s++) {
		const char *esc = NULL;

		if (*s == '\\')
			esc = "\\\\";
		else if (*s == '"')
			esc = "\\\"";
		else if (*s == '\n')
			esc = "\\n";
		if (!esc)
			continue;
		err = sbuf_append(b, run, (size_t)(s - run));
		if (!err)
			err = sbuf_append(b, esc, 2);
		run = s + 1;
	}
	if (!err)
		err = sbuf_append(b, run, (size_t)(s - run));
	return err;
}

void text_watch_reasons(char *buf, size_t len, uint32_t bits)
{
	static const char *const names[] = {
		"cuda", "nccl", "descendant", "pid", "comm", "simulated",
	};
	size_t o = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]) && o < len; i++)
		if (bits & (1u << i))
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "," : "", names[i]);
}
