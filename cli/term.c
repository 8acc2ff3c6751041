/* SPDX-License-Identifier: BSD-2-Clause */
/* Terminal modes and signals of the live view (see term.h).  No privilege. */
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli/term.h"
#include "common/util.h"

#define ESC_ENTER	"\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J"
#define ESC_LEAVE	"\x1b[0m\x1b[?25h\x1b[?1049l"

static int sig_pipe[2] = { -1, -1 };
static struct termios saved_tio;
static int saved_tio_valid;
static volatile sig_atomic_t entered;

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char c = (unsigned char)sig;
	ssize_t r = write(sig_pipe[1], &c, 1);

	(void)r;
	errno = saved;
}

int cli_term_signals(void)
{
	static const int sigs[] = { SIGWINCH, SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;

	if (sig_pipe[0] < 0 && pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		if (sigaction(sigs[i], &sa, NULL) < 0)
			return -errno;
	signal(SIGPIPE, SIG_IGN);
	return sig_pipe[0];
}

int cli_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, buf, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd p = { .fd = fd, .events = POLLOUT };

				poll(&p, 1, 1000);
				continue;
			}
			return -errno;
		}
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

void cli_term_leave(void)
{
	if (!entered)
		return;
	entered = 0;
	cli_write_all(STDOUT_FILENO, ESC_LEAVE, strlen(ESC_LEAVE));
	if (saved_tio_valid)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
}

int cli_term_enter(void)
{
	static int registered;

	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_tio) == 0) {
		struct termios raw = saved_tio;

		saved_tio_valid = 1;
		/* Keys arrive one by one, unechoed; ISIG stays so Ctrl-C is SIGINT. */
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) < 0)
			return -errno;
	}
	if (!registered) {
		atexit(cli_term_leave);
		registered = 1;
	}
	entered = 1;
	return cli_write_all(STDOUT_FILENO, ESC_ENTER, strlen(ESC_ENTER));
}

static int env_int(const char *name, int lo, int hi)
{
	uint64_t v;
	const char *s = getenv(name);

	if (!s || parse_u64(s, (uint64_t)lo, (uint64_t)hi, &v) < 0)
		return 0;
	return (int)v;
}

void cli_term_size(int *rows, int *cols)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
		return;
	}
	*rows = env_int("LINES", 1, 10000);
	*cols = env_int("COLUMNS", 1, 10000);
	if (!*rows)
		*rows = 24;
	if (!*cols)
		*cols = 80;
}

int cli_term_color_ok(void)
{
	const char *term = getenv("TERM"), *no = getenv("NO_COLOR");

	if (no && *no)
		return 0;
	if (!term || !*term || strcmp(term, "dumb") == 0)
		return 0;
	return isatty(STDOUT_FILENO);
}

int cli_term_utf8(void)
{
	const char *cs = nl_langinfo(CODESET);

	return cs && (strcasecmp(cs, "UTF-8") == 0 || strcasecmp(cs, "utf8") == 0);
}
