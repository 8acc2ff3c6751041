/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * zernel: the command-line client.  `zernel watch` shows the exporter's
 * WebSocket feed live in the terminal (or once, or as JSON lines).  It needs
 * no privilege and reads nothing but the feed.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/explain.h"
#include "cli/trace.h"
#include "cli/url.h"
#include "cli/watch.h"
#include "common/log.h"
#include "common/util.h"

#define EXIT_USAGE 2

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zernel watch [--url ws://HOST:PORT] [--once | --json [--count N]]\n"
		"                    [--timeout-ms MS] [--ascii] [--no-color]\n"
		"       zernel explain [--url http://HOST:PORT] [--pid PID] [--since 60s] [--json]\n"
		"       zernel trace [--url http://HOST:PORT] [--seconds N] -o FILE\n"
		"       zernel --help | --version\n"
		"\n"
		"watch      live view of a zernel-exporter's WebSocket feed (default %s)\n"
		"  --url URL        the feed, ws://HOST[:PORT][/PATH] (port 9092 when left out)\n"
		"  --once           print one snapshot as plain text and exit\n"
		"  --json           print each snapshot as one line of JSON\n"
		"  --count N        with --json: exit after N snapshots\n"
		"  --timeout-ms MS  exit 1 when no snapshot comes within MS (default %u with --once)\n"
		"  --ascii          no Unicode block characters\n"
		"  --no-color       no colour (NO_COLOR=1 in the environment does the same)\n"
		"\n"
		"In the live view: q or Ctrl-C quits, Ctrl-L redraws.\n"
		"\n"
		"explain    where each training process's time went, its top stall sites\n"
		"           (file:line in function), a verdict and a recommendation, from\n"
		"           zernel-exporter's /api/stalls (default " CLI_EXPLAIN_URL_DEFAULT ")\n"
		"  --pid PID        only this process\n"
		"  --since 60s      only the last span: 60, 60s, 5m or 1h (the exporter keeps\n"
		"                   its last 10 minutes; default: the collector's --window)\n"
		"  --json           one JSON document instead of text\n"
		"\n"
		"trace      the recent stalls and NCCL calls per thread, in Chrome's trace\n"
		"           format (Perfetto, chrome://tracing), from /api/trace\n"
		"  --seconds N      how far back, 1..3600 (default 30)\n"
		"  -o FILE          where to write it (- for standard output)\n"
		"ZERNEL_LOG=debug|info|warn|error sets the log level (logs go to stderr).\n",
		CLI_URL_DEFAULT, CLI_WATCH_ONCE_TIMEOUT_MS);
}

/* A command line the subcommand cannot take: says why, exits 2. */
static int misuse(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int misuse(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "zernel %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_USAGE;
}

/* The last cases of every option switch: --help, or an option not taken. */
static int help_or_usage(int c)
{
	usage(c == 'h' ? stdout : stderr);
	return c == 'h' ? EXIT_SUCCESS : EXIT_USAGE;
}

static int cmd_watch(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "once", no_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "count", required_argument, NULL, 'c' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "ascii", no_argument, NULL, 'a' },
		{ "no-color", no_argument, NULL, 'C' },
		{ "no-colour", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_watch_opts o = { .url_text = CLI_URL_DEFAULT };
	int once = 0, json = 0, timeout_set = 0, count_set = 0, c;
	const char *why = NULL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+u:ojc:t:aCh", opts, NULL)) != -1) {
		switch (c) {
		case 'u':
			o.url_text = optarg;
			break;
		case 'o':
			once = 1;
			break;
		case 'j':
			json = 1;
			break;
		case 'c':
			if (parse_u64(optarg, 1, UINT32_MAX, &o.count) < 0)
				return misuse("watch", "--count wants a number from 1 to %u, not \"%s\"",
					UINT32_MAX, optarg);
			count_set = 1;
			break;
		case 't':
			if (parse_u64(optarg, 1, 86400000, &o.timeout_ms) < 0)
				return misuse("watch", "--timeout-ms wants milliseconds from 1 to "
					      "86400000, not \"%s\"", optarg);
			timeout_set = 1;
			break;
		case 'a':
			o.force_ascii = 1;
			break;
		case 'C':
			o.force_no_color = 1;
			break;
		default:
			return help_or_usage(c);
		}
	}
	if (optind < argc)
		return misuse("watch", "unexpected argument \"%s\"", argv[optind]);
	if (cli_url_parse(o.url_text, &o.url, &why) < 0)
		return misuse("watch", "bad --url \"%s\": %s", o.url_text, why);
	if (count_set && !json)
		return misuse("watch", "--count goes with --json");
	if (json) {
		o.mode = CLI_WATCH_JSON;
		if (once)
			o.count = 1;	/* --json --once: one line */
	} else if (once) {
		o.mode = CLI_WATCH_ONCE;
		if (!timeout_set)
			o.timeout_ms = CLI_WATCH_ONCE_TIMEOUT_MS;
	}
	if (json && once && !timeout_set)
		o.timeout_ms = CLI_WATCH_ONCE_TIMEOUT_MS;
	return cli_watch(&o);
}

/* "60", "60s", "5m", "1h": seconds, 1 s to a day. */
static int parse_span(const char *s, uint64_t *out)
{
	static const struct { char unit; uint64_t s; } units[] = {
		{ '\0', 1 }, { 's', 1 }, { 'm', 60 }, { 'h', 3600 },
	};
	uint64_t v;
	char *end;

	/* strtoull would take a sign or leading blanks: digits only. */
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || v == 0 || v > 86400 || (*end && end[1]))
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (*end == units[i].unit && v * units[i].s <= 86400) {
			*out = v * units[i].s;
			return 0;
		}
	}
	return -1;
}

static int cmd_explain(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "pid", required_argument, NULL, 'p' },
		{ "since", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_explain_opts o = { .url_text = CLI_EXPLAIN_URL_DEFAULT, .timeout_ms = 5000 };
	uint64_t v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+u:p:s:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'u':
			o.url_text = optarg;
			break;
		case 'p':
			if (parse_u64(optarg, 1, 4194304, &v) < 0)
				return misuse("explain", "--pid wants a process id, not \"%s\"", optarg);
			o.pid = (uint32_t)v;
			break;
		case 's':
			if (parse_span(optarg, &o.since_s) < 0)
				return misuse("explain", "--since wants a span such as 60, 60s, 5m "
					"or 1h (at most a day), not \"%s\"", optarg);
			break;
		case 'j':
			o.json = 1;
			break;
		default:
			return help_or_usage(c);
		}
	}
	if (optind < argc)
		return misuse("explain", "unexpected argument \"%s\"", argv[optind]);
	return cli_explain(&o);
}

static int cmd_trace(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "seconds", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_trace_opts o = { .url_text = CLI_EXPLAIN_URL_DEFAULT, .seconds = 30,
				    .timeout_ms = 10000 };
	uint64_t v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+u:s:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'u':
			o.url_text = optarg;
			break;
		case 's':
			if (parse_u64(optarg, 1, 3600, &v) < 0)
				return misuse("trace", "--seconds wants 1 to 3600, not \"%s\"",
					optarg);
			o.seconds = (uint32_t)v;
			break;
		case 'o':
			o.out = optarg;
			break;
		default:
			return help_or_usage(c);
		}
	}
	if (optind < argc || !o.out)
		return misuse("trace", "%s", optind < argc ? "unexpected argument" :
			"-o FILE is required (- for standard output)");
	return cli_trace(&o);
}

int main(int argc, char **argv)
{
	/* Only the character set: numbers keep their C-locale decimal point. */
	setlocale(LC_CTYPE, "");
	log_init("zernel");

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return EXIT_SUCCESS;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0 ||
	    strcmp(argv[1], "version") == 0) {
		printf("zernel %s\n", ZERNEL_VERSION);
		return EXIT_SUCCESS;
	}
	if (strcmp(argv[1], "watch") == 0)
		return cmd_watch(argc - 1, argv + 1);
	if (strcmp(argv[1], "explain") == 0)
		return cmd_explain(argc - 1, argv + 1);
	if (strcmp(argv[1], "trace") == 0)
		return cmd_trace(argc - 1, argv + 1);
	fprintf(stderr, "zernel: unknown command \"%s\" (try zernel --help)\n", argv[1]);
	return EXIT_USAGE;
}
