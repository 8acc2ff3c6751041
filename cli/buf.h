/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A growable text buffer with a hard size limit for the zernel client: a
 * frame of the terminal view or a received WebSocket message is built in
 * one and written or parsed in one go.  Past the limit appends fail and
 * the error sticks, so input from the network cannot grow memory unbounded.
 */
#ifndef ZERNEL_CLI_BUF_H
#define ZERNEL_CLI_BUF_H

#include <stddef.h>

struct cli_buf {
	char *data;		/* NUL-terminated when len > 0 or after an append */
	size_t len;
	size_t cap;
	size_t limit;
	int error;		/* first -errno; appends are no-ops after it */
};

void cli_buf_init(struct cli_buf *b, size_t limit);
void cli_buf_reset(struct cli_buf *b);
void cli_buf_free(struct cli_buf *b);
int cli_buf_append(struct cli_buf *b, const void *p, size_t n);
int cli_buf_puts(struct cli_buf *b, const char *s);
int cli_buf_printf(struct cli_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* ZERNEL_CLI_BUF_H */
