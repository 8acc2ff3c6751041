/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A frame of the live view being built: lines of text with their SGR
 * styles, each clipped to the terminal's width as it is written and tagged
 * with a priority, then cut to the terminal's height (least important lines
 * first) and emitted as one write's worth of escape sequences.  No terminal
 * state is touched here.
 */
#ifndef ZERNEL_CLI_FRAME_H
#define ZERNEL_CLI_FRAME_H

#include <stddef.h>

#include "common/sbuf.h"

#define CLI_LINE_BYTES	2048
#define CLI_FRAME_LINES	500

/* Priorities: MUST lines are cut only when even they do not fit. */
enum cli_prio { CLI_P_MUST = 0, CLI_P_HIGH, CLI_P_MID, CLI_P_LOW };

struct cli_line {
	char b[CLI_LINE_BYTES];
	size_t len;
	int cols;			/* columns used */
	int prio;
	int styled;			/* needs a reset at its end */
};

struct cli_frame {
	struct cli_line *lines;
	int n;
	int width;
	int color;
};

/* Returns 0 or -ENOMEM. */
int cli_frame_init(struct cli_frame *fr, int width, int color);
void cli_frame_free(struct cli_frame *fr);

/* A new empty line, or NULL when the frame is full (every call below takes NULL). */
struct cli_line *cli_frame_line(struct cli_frame *fr, int prio);
/* Switches style (SGR parameters, e.g. "1;31"); nothing without colour. */
void cli_line_style(struct cli_frame *fr, struct cli_line *l, const char *sgr);
/* One glyph of one column (ASCII or one UTF-8 sequence). */
void cli_line_glyph(struct cli_frame *fr, struct cli_line *l, const char *g);
/* ASCII text. */
void cli_line_text(struct cli_frame *fr, struct cli_line *l, const char *s);
void cli_line_printf(struct cli_frame *fr, struct cli_line *l, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Blanks up to column col. */
void cli_line_pad(struct cli_frame *fr, struct cli_line *l, int col);

/*
 * Fits the frame to rows (the last line, the footer, stays on the last row)
 * and appends it to out: cursor home, each line cleared to its end, the
 * rest of the screen cleared.  Returns 0 or out's error.
 */
int cli_frame_emit(struct cli_frame *fr, int rows, struct sbuf *out);

#endif /* ZERNEL_CLI_FRAME_H */
