/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Terminal state for the full-screen view, with plain escape sequences and
 * termios (no curses): alternate screen, hidden cursor, raw keyboard input,
 * and signals turned into bytes on a pipe so that the main loop handles
 * them (SIGWINCH redraws, SIGINT/SIGTERM/SIGHUP quit).  Whatever way the
 * view ends, cli_term_leave() puts the terminal back as it was.
 */
#ifndef ZERNEL_CLI_TERM_H
#define ZERNEL_CLI_TERM_H

/*
 * Installs the handlers of SIGWINCH, SIGINT, SIGTERM, SIGHUP and ignores
 * SIGPIPE.  Returns the read end of the signal pipe (each byte is a signal
 * number), or -errno.
 */
int cli_term_signals(void);

/* Alternate screen, cursor hidden, raw input when stdin is a terminal. */
int cli_term_enter(void);
/* Undoes cli_term_enter; safe to call twice and from atexit. */
void cli_term_leave(void);

/* Terminal size, or $LINES/$COLUMNS, or 24x80. */
void cli_term_size(int *rows, int *cols);

/* Colour: stdout is a terminal, TERM is set and not "dumb", NO_COLOR unset or empty. */
int cli_term_color_ok(void);
/* The locale's character set is UTF-8 (LC_CTYPE must be set from the environment). */
int cli_term_utf8(void);

/* Writes all of buf to fd, retrying short writes; 0 or -errno. */
int cli_write_all(int fd, const char *buf, size_t len);

#endif /* ZERNEL_CLI_TERM_H */
