/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The full-screen `zernel watch` in a real terminal: tmux (private socket,
 * no user config) runs it in a shell against a simulated collector and the
 * real exporter; capture-pane shows what a person would see.  GPU rows and
 * the OOM mark, q and Ctrl-C restoring the terminal (alternate screen left,
 * cursor shown, stty settings as before), the exporter going away and
 * coming back, resizes, and NO_COLOR.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

static char sock[64];
static char session[32] = "zw";
static char zernel[1024];

static int usable(const char *test)
{
	if (tu_system("command -v tmux >/dev/null 2>&1") != 0) {
		tu_skip_missing("%s: tmux is not installed\n", test);
		return 0;
	}
	if (!tu_have_binary("zernel") || !tu_have_binary("zernel-collector") ||
	    !tu_have_binary("zernel-exporter")) {
		tu_skip_missing("%s: zernel, zernel-collector or zernel-exporter is not built\n", test);
		return 0;
	}
	tu_build_path(zernel, sizeof(zernel), "zernel");
	return 1;
}

static int tmux(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int tmux(const char *fmt, ...)
{
	char args[3072];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	return tu_system("tmux -L %s -f /dev/null %s", sock, args);
}

/* The pane's text (escapes too when with_escapes). */
static char *capture(int with_escapes)
{
	char cmd[256];
	int st;

	snprintf(cmd, sizeof(cmd), "tmux -L %s capture-pane -p %s -t %s 2>/dev/null", sock,
		 with_escapes ? "-e" : "", session);
	return tu_capture(cmd, &st);
}

static char *display(const char *format)
{
	char cmd[256];
	int st;

	snprintf(cmd, sizeof(cmd), "tmux -L %s display -p -t %s '%s' 2>/dev/null", sock, session, format);
	return tu_capture(cmd, &st);
}

/* Waits until the pane shows text; returns the capture then (caller frees) or NULL. */
static char *wait_for(const char *text, int timeout_ms)
{
	for (int waited = 0; waited <= timeout_ms; waited += 100) {
		char *c = capture(0);

		if (c && strstr(c, text))
			return c;
		free(c);
		tu_sleep_ms(100);
	}
	return NULL;
}

static void must_see(const char *text, int timeout_ms)
{
	char *c = wait_for(text, timeout_ms);

	if (!c) {
		char *last = capture(0);

		ck_abort_msg("the pane never showed \"%s\"; it shows:\n%s", text, last ? last : "(nothing)");
	}
	free(c);
}

/*
 * A shell in a w x h tmux window, which runs the view and then says how it
 * ended; stty settings before and after go to files for comparison.
 */
static void start_view(const struct tu_stack *st, int w, int h, const char *env)
{
	tmux("kill-server 2>/dev/null");	/* what a failed test may have left */
	ck_assert_int_eq(tmux("new-session -d -s %s -x %d -y %d /bin/sh", session, w, h), 0);
	tu_sleep_ms(200);
	ck_assert_int_eq(tmux("send-keys -t %s 'stty -g > %s/tests/stty.before; %s %s watch --url "
			      "ws://127.0.0.1:%u; echo ZW-EXIT=$?; stty -g > %s/tests/stty.after; "
			      "echo ZW-STTY-$((1+1))' Enter",
			      session, tu_build_dir(), env, zernel, st->ws_port, tu_build_dir()), 0);
}

static void stop_tmux(void)
{
	tmux("kill-server 2>/dev/null");
}

/* After the view ended: normal screen, cursor on, tty settings as before. */
static void assert_terminal_restored(void)
{
	char before[1024], after[1024], *a, *b, *alt, *cur;

	must_see("ZW-EXIT=0", 5000);
	alt = display("#{alternate_on}");
	cur = display("#{cursor_flag}");
	ck_assert_str_eq(alt, "0\n");
	ck_assert_str_eq(cur, "1\n");
	free(alt);
	free(cur);
	/* The shell writes stty.after next, then says so ("$((1+1))" as typed). */
	must_see("ZW-STTY-2", 5000);
	snprintf(before, sizeof(before), "%s/tests/stty.before", tu_build_dir());
	snprintf(after, sizeof(after), "%s/tests/stty.after", tu_build_dir());
	b = tu_read_file(before, NULL);
	a = tu_read_file(after, NULL);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_gt(strlen(b), 10);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
}

START_TEST(test_view_shows_gpus_and_q_restores_the_terminal)
{
	struct tu_stack st;
	char *alt, *esc;

	if (!usable("test_view_shows_gpus_and_q_restores_the_terminal"))
		return;
	ck_assert_int_eq(tu_stack_start(&st, NULL, 200, 200), 0);
	start_view(&st, 100, 30, "unset NO_COLOR;");
	for (int g = 0; g < 4; g++) {
		char row[16];

		snprintf(row, sizeof(row), " gpu%d ", g);
		must_see(row, 10000);
	}
	must_see("[live]", 5000);
	must_see("CUDA launch", 1000);
	must_see("DataLoader wait", 1000);
	must_see("all_reduce", 1000);
	must_see("collector up", 1000);
	alt = display("#{alternate_on}");
	ck_assert_str_eq(alt, "1\n");
	free(alt);
	/* Colour: the bars are drawn with SGR colours. */
	esc = capture(1);
	ck_assert_msg(strstr(esc, "\x1b[32m") || strstr(esc, ";32m"), "no colour in:\n%s", esc);
	free(esc);

	ck_assert_int_eq(tmux("send-keys -t %s q", session), 0);
	assert_terminal_restored();
	stop_tmux();
	tu_stack_stop(&st);
}
END_TEST

START_TEST(test_ctrl_c_restores_the_terminal_and_no_color_is_respected)
{
	struct tu_stack st;
	char *esc;

	if (!usable("test_ctrl_c_restores_the_terminal_and_no_color_is_respected"))
		return;
	ck_assert_int_eq(tu_stack_start(&st, NULL, 200, 200), 0);
	start_view(&st, 100, 30, "NO_COLOR=1");
	must_see(" gpu0 ", 10000);
	must_see("[live]", 5000);
	esc = capture(1);
	/* Whatever tmux adds, no colour (SGR 30-47) comes from the view. */
	for (int c = 30; c <= 47; c++) {
		char a[16], b[16];

		snprintf(a, sizeof(a), "\x1b[%dm", c);
		snprintf(b, sizeof(b), ";%dm", c);
		ck_assert_msg(!strstr(esc, a) && !strstr(esc, b), "colour %d with NO_COLOR:\n%s", c, esc);
	}
	free(esc);
	ck_assert_int_eq(tmux("send-keys -t %s C-c", session), 0);
	assert_terminal_restored();
	stop_tmux();
	tu_stack_stop(&st);
}
END_TEST

START_TEST(test_exporter_gone_shows_disconnected_and_reconnects)
{
	struct tu_stack st;

	if (!usable("test_exporter_gone_shows_disconnected_and_reconnects"))
		return;
	ck_assert_int_eq(tu_stack_start(&st, NULL, 200, 200), 0);
	start_view(&st, 100, 30, "");
	must_see("[live]", 10000);
	must_see(" gpu0 ", 5000);

	tu_stack_stop_exporter(&st);
	must_see("disconnected, retrying in", 5000);
	must_see("[DISCONNECTED]", 1000);
	/* The last figures stay on screen, marked as old. */
	must_see("figures below are the last snapshot", 1000);
	must_see(" gpu0 ", 1000);

	ck_assert_int_eq(tu_stack_start_exporter(&st), 0);
	must_see("[live]", 10000);
	must_see("reconnects 1", 3000);
	ck_assert_int_eq(tmux("send-keys -t %s q", session), 0);
	assert_terminal_restored();
	stop_tmux();
	tu_stack_stop(&st);
}
END_TEST

/* Lines of the pane and the widest one (in characters). */
static void pane_shape(const char *c, int *lines, int *widest, int *last_has_footer)
{
	const char *line = c;

	*lines = 0;
	*widest = 0;
	*last_has_footer = 0;
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		int chars = 0;

		for (size_t i = 0; i < len; i++)
			chars += ((unsigned char)line[i] & 0xc0) != 0x80;
		*widest = chars > *widest ? chars : *widest;
		*last_has_footer = memmem(line, len, "q quit", 6) != NULL;
		(*lines)++;
		line = end ? end + 1 : NULL;
	}
}

START_TEST(test_resize_redraws_to_the_new_size)
{
	struct tu_stack st;
	int lines, widest, footer;
	char *c;

	if (!usable("test_resize_redraws_to_the_new_size"))
		return;
	ck_assert_int_eq(tu_stack_start(&st, NULL, 200, 200), 0);
	start_view(&st, 160, 50, "");
	must_see("launch99", 10000);	/* room for the process table */

	ck_assert_int_eq(tmux("resize-window -t %s -x 80 -y 24", session), 0);
	/*
	 * A capture may catch the view between two of its writes (a busy
	 * machine stretches a redraw): the first whole frame is the one whose
	 * footer, GPUs and panels are all there.
	 */
	c = NULL;
	for (int waited = 0; waited < 10000; waited += 100) {
		free(c);
		c = capture(0);
		pane_shape(c, &lines, &widest, &footer);
		if (c && !strstr(c, "launch99") && footer && strstr(c, " gpu3 ") &&
		    strstr(c, "CUDA launch") && strstr(c, "Scheduler"))
			break;
		tu_sleep_ms(100);
	}
	ck_assert_msg(c && !strstr(c, "launch99") && footer && strstr(c, " gpu3 ") &&
		      strstr(c, "CUDA launch") && strstr(c, "Scheduler"),
		      "no whole frame at 80x24 in 10 s; the last capture:\n%s", c ? c : "(none)");
	ck_assert_int_eq(lines, 24);
	ck_assert_int_le(widest, 80);
	free(c);

	ck_assert_int_eq(tmux("resize-window -t %s -x 140 -y 45", session), 0);
	must_see("launch99", 5000);
	ck_assert_int_eq(tmux("send-keys -t %s q", session), 0);
	assert_terminal_restored();
	stop_tmux();
	tu_stack_stop(&st);
}
END_TEST

START_TEST(test_oom_scenario_highlights_the_gpu_and_alerts)
{
	struct tu_stack st;
	char *c, *esc;
	const char *row;

	if (!usable("test_oom_scenario_highlights_the_gpu_and_alerts"))
		return;
	ck_assert_int_eq(tu_stack_start(&st, "oom", 200, 200), 0);
	start_view(&st, 120, 40, "unset NO_COLOR;");
	must_see(" gpu0 ", 10000);
	/* The oom scenario takes one GPU past 95% within onset + climb (8 s). */
	c = wait_for("OOM RISK", 20000);
	ck_assert_msg(c != NULL, "no GPU row marked OOM RISK");
	row = strstr(c, "OOM RISK");
	while (row > c && row[-1] != '\n')
		row--;
	ck_assert_msg(strncmp(row, " gpu", 4) == 0, "OOM RISK is not on a GPU row: %.100s", row);
	free(c);
	/* Highlighted: the GPU label of that row is white on red. */
	esc = capture(1);
	ck_assert_msg(strstr(esc, "41m") != NULL, "no red highlight in:\n%s", esc);
	free(esc);

	/*
	 * The exporter's built-in GpuOomWarning fires 10 s after the GPU
	 * crossed 95%; the view shows it as a highlighted ALERT row.
	 */
	c = wait_for(" ALERT GpuOomWarning [warning]", 25000);
	ck_assert_msg(c != NULL, "GpuOomWarning never fired in the view");
	free(c);
	ck_assert_int_eq(tmux("send-keys -t %s q", session), 0);
	assert_terminal_restored();
	stop_tmux();
	tu_stack_stop(&st);
}
END_TEST

/*
 * Run by the runner itself (unchecked), whether the tests passed or not:
 * the tmux server daemonizes, out of the test's process group that the
 * runner kills, so it is stopped here by its private socket.
 */
static void setup(void)
{
	snprintf(sock, sizeof(sock), "zernel-test-%d", (int)getpid());
}

static void teardown(void)
{
	stop_tmux();
}

Suite *cli_tmux_suite(void);

Suite *cli_tmux_suite(void)
{
	Suite *s = suite_create("cli_tmux");
	TCase *tc = tcase_create("tmux");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_view_shows_gpus_and_q_restores_the_terminal);
	tcase_add_test(tc, test_ctrl_c_restores_the_terminal_and_no_color_is_respected);
	tcase_add_test(tc, test_exporter_gone_shows_disconnected_and_reconnects);
	tcase_add_test(tc, test_resize_redraws_to_the_new_size);
	tcase_add_test(tc, test_oom_scenario_highlights_the_gpu_and_alerts);
	tcase_set_timeout(tc, 90);
	suite_add_tcase(s, tc);
	return s;
}
