/* SPDX-License-Identifier: BSD-2-Clause */
/* Line-by-line frame building for the live view (see frame.h).  Pure. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/frame.h"

int cli_frame_init(struct cli_frame *fr, int width, int color)
{
	memset(fr, 0, sizeof(*fr));
	fr->width = width;
	fr->color = color;
	fr->lines = malloc(sizeof(*fr->lines) * CLI_FRAME_LINES);
	return fr->lines ? 0 : -ENOMEM;
}

void cli_frame_free(struct cli_frame *fr)
{
	free(fr->lines);
	fr->lines = NULL;
	fr->n = 0;
}

struct cli_line *cli_frame_line(struct cli_frame *fr, int prio)
{
	struct cli_line *l;

	if (fr->n == CLI_FRAME_LINES)
		return NULL;
	l = &fr->lines[fr->n++];
	l->len = 0;
	l->cols = 0;
	l->prio = prio;
	l->styled = 0;
	l->b[0] = '\0';
	return l;
}

static void line_raw(struct cli_line *l, const char *s, size_t n)
{
	if (l->len + n + 16 >= sizeof(l->b))	/* room for the final reset */
		return;
	memcpy(l->b + l->len, s, n);
	l->len += n;
	l->b[l->len] = '\0';
}

void cli_line_style(struct cli_frame *fr, struct cli_line *l, const char *sgr)
{
	char esc[32];
	int n;

	if (!l || !fr->color)
		return;
	n = snprintf(esc, sizeof(esc), "\x1b[0;%sm", sgr);
	line_raw(l, esc, (size_t)n);
	l->styled = 1;
}

void cli_line_glyph(struct cli_frame *fr, struct cli_line *l, const char *g)
{
	if (!l || l->cols >= fr->width)
		return;
	line_raw(l, g, strlen(g));
	l->cols++;
}

void cli_line_text(struct cli_frame *fr, struct cli_line *l, const char *s)
{
	for (; l && *s && l->cols < fr->width; s++) {
		line_raw(l, s, 1);
		l->cols++;
	}
}

void cli_line_printf(struct cli_frame *fr, struct cli_line *l, const char *fmt, ...)
{
	char tmp[CLI_LINE_BYTES];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	cli_line_text(fr, l, tmp);
}

void cli_line_pad(struct cli_frame *fr, struct cli_line *l, int col)
{
	while (l && l->cols < col && l->cols < fr->width)
		cli_line_glyph(fr, l, " ");
}

/* Drops the least important lines (the last of them first) until n fit. */
static void fit(struct cli_frame *fr, int rows)
{
	for (int prio = CLI_P_LOW; prio > CLI_P_MUST && fr->n > rows; prio--) {
		for (int i = fr->n - 1; i >= 0 && fr->n > rows; i--) {
			if (fr->lines[i].prio != prio)
				continue;
			memmove(&fr->lines[i], &fr->lines[i + 1],
				(size_t)(fr->n - i - 1) * sizeof(fr->lines[0]));
			fr->n--;
		}
	}
	/* Still too many: essentials past the height are cut, the footer stays. */
	if (fr->n > rows) {
		fr->lines[rows - 1] = fr->lines[fr->n - 1];
		fr->n = rows;
	}
}

int cli_frame_emit(struct cli_frame *fr, int rows, struct sbuf *out)
{
	if (fr->n == 0)
		return 0;
	fit(fr, rows);
	sbuf_puts(out, "\x1b[H");
	for (int i = 0; i < fr->n; i++) {
		struct cli_line *l = &fr->lines[i];
		int last = i == fr->n - 1 && fr->n == rows;

		if (i == fr->n - 1 && fr->n < rows) {
			/* The footer goes to the bottom row, the rows between are cleared. */
			sbuf_puts(out, "\x1b[J");
			sbuf_printf(out, "\x1b[%d;1H", rows);
			last = 1;
		}
		sbuf_append(out, l->b, l->len);
		if (l->styled)
			sbuf_puts(out, "\x1b[0m");
		sbuf_puts(out, "\x1b[K");
		if (!last)
			sbuf_puts(out, "\r\n");
	}
	return out->error;
}
