/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The full-screen live view of `zernel watch`, rendered as one frame of
 * plain ANSI text for a rows x cols terminal.  Every section has a
 * priority: at 80x24 the essentials fit (GPU bars, CUDA/NCCL/DataLoader
 * figures, scheduler stalls, firing alerts, collector health); more room
 * shows per-process memory, every NCCL op and a process table.  Pure: it
 * draws into a buffer and touches no terminal state (term.h does that).
 */
#ifndef ZERNEL_CLI_VIEW_H
#define ZERNEL_CLI_VIEW_H

#include <stdint.h>

#include "common/sbuf.h"
#include "cli/feed.h"
#include "cli/spark.h"
#include "cli/ws_client.h"

#define CLI_VIEW_MIN_ROWS	24
#define CLI_VIEW_MIN_COLS	80
#define CLI_VIEW_MAX_ROWS	500
#define CLI_VIEW_MAX_COLS	400
#define CLI_VIEW_OOM_FRACTION	0.95

struct cli_view {
	int color;
	int utf8;
	struct cli_spark cuda_p99;
	struct cli_spark nccl_p99;
	struct cli_spark dataloader_p99;
	uint64_t snapshots;
};

struct cli_view_input {
	const struct cli_feed *feed;	/* NULL until the first snapshot */
	const char *url;
	struct cli_ws_status ws;
	uint64_t now_mono_ns;
	int rows, cols;
};

void cli_view_init(struct cli_view *v, int color, int utf8);
/* Records a new snapshot in the trends. */
void cli_view_push(struct cli_view *v, const struct cli_feed *f);
/*
 * Appends one frame: cursor home, every line cleared to its end, the rest
 * of the screen cleared.  Returns 0 or the buffer's error.
 */
int cli_view_render(struct cli_view *v, const struct cli_view_input *in, struct sbuf *out);

#endif /* ZERNEL_CLI_VIEW_H */
