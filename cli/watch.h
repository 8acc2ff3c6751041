/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `zernel watch`: the main loop around the feed client.  Three outputs:
 * the full-screen live view, one plain-text report (--once), or the raw
 * snapshots as JSON lines (--json).
 */
#ifndef ZERNEL_CLI_WATCH_H
#define ZERNEL_CLI_WATCH_H

#include <stdint.h>

#include "cli/url.h"

#define CLI_WATCH_ONCE_TIMEOUT_MS	10000u

enum cli_watch_mode { CLI_WATCH_VIEW = 0, CLI_WATCH_ONCE, CLI_WATCH_JSON };

struct cli_watch_opts {
	enum cli_watch_mode mode;
	const char *url_text;
	struct url url;
	uint64_t count;			/* --json: stop after this many; 0 = never */
	uint64_t timeout_ms;		/* give up without a snapshot; 0 = never */
	int force_ascii;
	int force_no_color;
};

/* Runs until done or interrupted; returns the process exit status. */
int cli_watch(const struct cli_watch_opts *o);

#endif /* ZERNEL_CLI_WATCH_H */
