/* SPDX-License-Identifier: BSD-2-Clause */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testutil.h"
#include "tests/deploy/tu_deploy.h"

double td_metric(const char *body, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return NAN;
}

char *td_capture(int *st, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return tu_capture(cmd, st);
}

/* The value of "Key:\t..." in a /proc status text, up to the line's end. */
static const char *status_field(const char *text, const char *key, char *buf, size_t len)
{
	char want[64];
	const char *p, *e;

	snprintf(want, sizeof(want), "\n%s:\t", key);
	p = strstr(text, want);
	if (!p)
		return "";
	p += strlen(want);
	e = strchr(p, '\n');
	snprintf(buf, len, "%.*s", (int)(e ? e - p : (long)strlen(p)), p);
	return buf;
}

int td_exporter_sandboxed(pid_t pid, char *why, size_t len)
{
	static const struct { const char *key, *want; } fields[] = {
		{ "Uid", "65534\t65534\t65534\t65534" },
		{ "CapInh", "0000000000000000" }, { "CapPrm", "0000000000000000" },
		{ "CapEff", "0000000000000000" }, { "CapBnd", "0000000000000000" },
		{ "CapAmb", "0000000000000000" },
		{ "NoNewPrivs", "1" }, { "Seccomp", "2" },
	};
	char path[64], buf[128], *status, *maps, *text;
	int shared = 0, ok = 0;

	why[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	status = tu_read_file(path, NULL);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = tu_read_file(path, NULL);
	if (!status || !maps) {
		snprintf(why, len, "pid %d: /proc unreadable", (int)pid);
		goto out;
	}
	/* A leading newline so that the first field matches like the others. */
	text = malloc(strlen(status) + 2);
	if (!text)
		goto out;
	sprintf(text, "\n%s", status);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		status_field(text, fields[i].key, buf, sizeof(buf));
		if (strcmp(buf, fields[i].want) != 0) {
			snprintf(why, len, "pid %d: %s is \"%s\", not \"%s\"", (int)pid,
				 fields[i].key, buf, fields[i].want);
			free(text);
			goto out;
		}
	}
	free(text);
	for (char *l = strtok(maps, "\n"); l; l = strtok(NULL, "\n")) {
		if (!strstr(l, "/dev/shm/zernel"))
			continue;
		if (strncmp(strchr(l, ' ') + 1, "r--s ", 5) != 0) {
			snprintf(why, len, "pid %d maps the segment as: %s", (int)pid, l);
			goto out;
		}
		shared++;
	}
	if (!shared)
		snprintf(why, len, "pid %d does not map /dev/shm/zernel", (int)pid);
	ok = shared > 0;
out:
	free(status);
	free(maps);
	return ok ? 0 : -1;
}
