/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `zernel trace --seconds N -o trace.json`: the exporter's recent notable
 * events (Python stalls with their site, NCCL calls and waits) in
 * Chrome's trace event format, for Perfetto or chrome://tracing.  Reads
 * /api/trace; needs no privilege.
 */
#ifndef ZERNEL_CLI_TRACE_H
#define ZERNEL_CLI_TRACE_H

#include <stdint.h>

struct cli_trace_opts {
	const char *url_text;		/* http://HOST:PORT of the exporter */
	uint32_t seconds;
	const char *out;		/* a file, or "-" for stdout */
	int timeout_ms;
};

/* Writes the trace; returns the process's exit status. */
int cli_trace(const struct cli_trace_opts *o);

#endif /* ZERNEL_CLI_TRACE_H */
