/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The `zernel watch` loop (see watch.h): poll(2) on the feed thread's wake
 * pipe, the signal pipe and the keyboard; parse each new snapshot on this
 * thread; redraw on news, on resize and once a second (ages and retry
 * countdowns move even when nothing arrives).  No privilege.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sbuf.h"
#include "cli/feed.h"
#include "cli/term.h"
#include "cli/text.h"
#include "cli/view.h"
#include "cli/watch.h"
#include "cli/ws_client.h"
#include "common/log.h"
#include "common/util.h"

#define TICK_MS		1000
#define FRAME_LIMIT	(4u << 20)

struct watch {
	const struct cli_watch_opts *o;
	struct cli_ws *ws;
	int wake[2];
	int sig_fd;
	struct cli_feed *feed, *scratch;
	int have_feed;
	uint64_t printed;
	uint64_t bad;
	int quit;
	int exit_code;
};

static void drain(int fd)
{
	char junk[256];

	while (read(fd, junk, sizeof(junk)) > 0)
		;
}

/* Parses msg into scratch; on success scratch becomes the current feed. */
static int take_snapshot(struct watch *w, const char *msg, size_t len)
{
	struct cli_feed *t;
	int err = cli_feed_parse(msg, len, w->scratch);

	if (err) {
		w->bad++;
		log_debug("feed: ignored a message that is not a snapshot (%s)", strerror(-err));
		return err;
	}
	t = w->feed;
	w->feed = w->scratch;
	w->scratch = t;
	w->have_feed = 1;
	return 0;
}

/* --json: one line per snapshot, the feed's own text, newlines folded. */
static void print_json(struct watch *w, char *msg, size_t len)
{
	if (take_snapshot(w, msg, len) < 0) {
		log_warnx("skipping a feed message that is not a snapshot (%zu bytes)", len);
		return;
	}
	/*
	 * One line per snapshot, and no raw control character (which valid
	 * JSON never holds, but a lenient parser lets through) reaches the
	 * terminal: each becomes a blank.
	 */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)msg[i] < 0x20 || msg[i] == 0x7f)
			msg[i] = ' ';
	if (cli_write_all(STDOUT_FILENO, msg, len) < 0 || cli_write_all(STDOUT_FILENO, "\n", 1) < 0) {
		w->quit = 1;	/* reader went away (pipe closed) */
		return;
	}
	w->printed++;
	if (w->o->count && w->printed >= w->o->count)
		w->quit = 1;
}

static void print_once(struct watch *w, const char *msg, size_t len)
{
	struct sbuf out;

	if (take_snapshot(w, msg, len) < 0)
		return;
	sbuf_init(&out, FRAME_LIMIT, 0);
	if (cli_text_report(&out, w->feed, w->o->url_text) == 0 &&
	    cli_write_all(STDOUT_FILENO, out.data, out.len) == 0)
		w->exit_code = 0;
	else
		log_warnx("cannot write the report");
	sbuf_free(&out);
	w->quit = 1;
}

static void draw(struct watch *w, struct cli_view *v, struct sbuf *frame)
{
	struct cli_view_input in = {
		.feed = w->have_feed ? w->feed : NULL,
		.url = w->o->url_text,
		.now_mono_ns = now_mono_ns(),
	};

	cli_ws_get_status(w->ws, &in.ws);
	cli_term_size(&in.rows, &in.cols);
	sbuf_reset(frame);
	if (cli_view_render(v, &in, frame) == 0)
		cli_write_all(STDOUT_FILENO, frame->data, frame->len);
}

static void on_key(struct watch *w, int *redraw_all)
{
	char keys[64];
	ssize_t n = read(STDIN_FILENO, keys, sizeof(keys));

	for (ssize_t i = 0; i < n; i++) {
		if (keys[i] == 'q' || keys[i] == 'Q' || keys[i] == 3 /* ^C */ || keys[i] == 4 /* ^D */)
			w->quit = 1;
		else if (keys[i] == 12)	/* ^L */
			*redraw_all = 1;
	}
	if (n == 0 && !isatty(STDIN_FILENO))
		w->quit = 1;	/* stdin at end of file: nobody can press q */
}

static void on_signals(struct watch *w, int *resized)
{
	unsigned char sigs[32];
	ssize_t n;

	while ((n = read(w->sig_fd, sigs, sizeof(sigs))) > 0)
		for (ssize_t i = 0; i < n; i++) {
			if (sigs[i] == SIGWINCH)
				*resized = 1;
			else
				w->quit = 1;
		}
}

static int loop(struct watch *w)
{
	const struct cli_watch_opts *o = w->o;
	int view = o->mode == CLI_WATCH_VIEW, keyboard = view && isatty(STDIN_FILENO);
	uint64_t start = now_mono_ns(), next_tick = start;
	struct cli_ws_status last = { 0 };
	struct sbuf frame;
	struct cli_view v;

	sbuf_init(&frame, FRAME_LIMIT, 0);
	cli_view_init(&v, view && !o->force_no_color && cli_term_color_ok(),
		      !o->force_ascii && cli_term_utf8());
	if (view && cli_term_enter() < 0)
		log_warn("cannot set up the terminal");

	while (!w->quit) {
		struct pollfd p[3] = {
			{ .fd = w->wake[0], .events = POLLIN },
			{ .fd = w->sig_fd, .events = POLLIN },
			{ .fd = keyboard ? STDIN_FILENO : -1, .events = POLLIN },
		};
		int redraw = 0, clear = 0, timeout;
		uint64_t now = now_mono_ns();
		struct cli_ws_status st;
		char *msg;
		size_t len;

		if (o->timeout_ms && !w->printed && !w->have_feed &&
		    now - start > o->timeout_ms * NSEC_PER_MSEC) {
			cli_ws_get_status(w->ws, &st);
			cli_term_leave();
			log_warnx("no snapshot from %s within %llu ms%s%s", o->url_text,
				  (unsigned long long)o->timeout_ms, st.error[0] ? ": " : "", st.error);
			break;
		}
		if (now >= next_tick) {
			redraw = 1;
			next_tick = now + (uint64_t)TICK_MS * NSEC_PER_MSEC;
		}
		timeout = (int)((next_tick - now) / NSEC_PER_MSEC) + 1;
		if (poll(p, 3, timeout) < 0 && errno != EINTR) {
			log_warn("poll");
			break;
		}
		if (p[1].revents)
			on_signals(w, &clear);
		if (p[2].revents)
			on_key(w, &clear);
		if (p[0].revents)
			drain(w->wake[0]);
		while (!w->quit && cli_ws_take(w->ws, &msg, &len)) {
			if (o->mode == CLI_WATCH_JSON)
				print_json(w, msg, len);
			else if (o->mode == CLI_WATCH_ONCE)
				print_once(w, msg, len);
			else if (take_snapshot(w, msg, len) == 0)
				cli_view_push(&v, w->feed);
			free(msg);
			redraw = 1;
		}
		cli_ws_get_status(w->ws, &st);
		if (st.state != last.state || st.failures != last.failures) {
			if (!view && st.state == CLI_WS_WAITING && st.failures != last.failures)
				log_warnx("%s; retrying", st.error);
			redraw = 1;
		}
		last = st;
		if (view && !w->quit && (redraw || clear)) {
			if (clear)
				cli_write_all(STDOUT_FILENO, "\x1b[2J", 4);
			draw(w, &v, &frame);
		}
	}
	if (view)
		cli_term_leave();
	sbuf_free(&frame);
	return 0;
}

int cli_watch(const struct cli_watch_opts *o)
{
	struct watch w = { .o = o, .wake = { -1, -1 }, .sig_fd = -1, .exit_code = 1 };

	/* 1. Signals and the wake pipe, before the feed thread exists. */
	w.sig_fd = cli_term_signals();
	if (w.sig_fd < 0) {
		log_warnx("cannot install signal handlers: %s", strerror(-w.sig_fd));
		goto cleanup;
	}
	if (pipe2(w.wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		log_warn("pipe");
		goto cleanup;
	}
	w.feed = malloc(sizeof(*w.feed));
	w.scratch = malloc(sizeof(*w.scratch));
	if (!w.feed || !w.scratch) {
		log_warnx("out of memory");
		goto cleanup;
	}
	cli_feed_clear(w.feed);

	/* 2. The feed client. */
	w.ws = cli_ws_start(&o->url, w.wake[1]);
	if (!w.ws) {
		log_warn("cannot start the WebSocket client");
		goto cleanup;
	}

	/* 3. Run until done, q, or a signal. */
	loop(&w);
	if (o->mode == CLI_WATCH_VIEW)
		w.exit_code = 0;
	else if (o->mode == CLI_WATCH_JSON)
		w.exit_code = w.printed > 0 && (!o->count || w.printed >= o->count) ? 0 : 1;

cleanup:
	cli_ws_stop(w.ws);
	if (w.wake[0] >= 0)
		close(w.wake[0]);
	if (w.wake[1] >= 0)
		close(w.wake[1]);
	free(w.feed);
	free(w.scratch);
	return w.exit_code;
}
