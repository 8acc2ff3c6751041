/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `zernel explain`: for each training process the exporter knows, where
 * its wall time went (the states of its training threads), its top stall
 * sites as file:line in function, a verdict with the evidence behind it
 * and a one-line recommendation.  Reads the exporter's /api/stalls;
 * needs no privilege.
 */
#ifndef ZERNEL_CLI_EXPLAIN_H
#define ZERNEL_CLI_EXPLAIN_H

#include <stdint.h>

#define CLI_EXPLAIN_URL_DEFAULT	"http://localhost:9091"

struct cli_explain_opts {
	const char *url_text;
	uint32_t pid;			/* 0: every training process */
	uint64_t since_s;		/* 0: the collector's window; else the exporter's history */
	int json;
	int timeout_ms;
};

/* Prints the explanation; returns the process's exit status. */
int cli_explain(const struct cli_explain_opts *o);

#endif /* ZERNEL_CLI_EXPLAIN_H */
