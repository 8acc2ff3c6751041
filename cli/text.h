/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The plain-text report of one snapshot (`zernel watch --once`): every
 * section of the live view, untruncated, no colour, no escape sequences,
 * exact byte counts next to the human units, for scripts and bug reports.
 */
#ifndef ZERNEL_CLI_TEXT_H
#define ZERNEL_CLI_TEXT_H

#include "common/sbuf.h"
#include "cli/feed.h"

/* Appends the report; source names the feed (its URL). */
int cli_text_report(struct sbuf *out, const struct cli_feed *f, const char *source);

#endif /* ZERNEL_CLI_TEXT_H */
