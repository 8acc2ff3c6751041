/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Flag parsing for zernel-exporter.  Runs first, before anything is bound
 * or opened; every bad value is a clear message and exit status 2.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "common/url.h"
#include "common/util.h"
#include "exporter/options.h"
#include "shm/shm_layout.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zernel-exporter [--shm NAME] [--metrics-listen ADDR:PORT]\n"
		"                       [--ws-listen ADDR:PORT] [--ws-interval MS]\n"
		"                       [--user NAME] [--no-sandbox]\n"
		"\n"
		"Serves the collector's shared-memory segment: Prometheus text on\n"
		"http://ADDR:PORT/metrics and a JSON snapshot over WebSocket.\n"
		"\n"
		"  --shm NAME               segment name (default %s)\n"
		"  --metrics-listen A:P     HTTP address (default %s)\n"
		"  --ws-listen A:P          WebSocket address (default %s)\n"
		"  --ws-interval MS         WebSocket push interval, %u..%u ms (default %u)\n"
		"  --user NAME              user to become when started as root (default nobody)\n"
		"  --no-sandbox             debugging only: no user change, no seccomp (warned)\n"
		"  --per-pid-histograms     one latency histogram per process, not per\n"
		"                           workload (pod, container, job or node)\n"
		"%s"
		"  --help, --version\n"
		"\n"
		"Environment: ZERNEL_LOG=debug|info|warn|error\n",
		SHM_DEFAULT_NAME, EXPORTER_DEFAULT_METRICS, EXPORTER_DEFAULT_WS,
		EXPORTER_MIN_WS_INTERVAL, EXPORTER_MAX_WS_INTERVAL, EXPORTER_DEFAULT_WS_INTERVAL,
		alerts_usage);
}

static int set_listen(const char *flag, const char *val, char *host, size_t hlen, uint16_t *port)
{
	if (url_listen_parse(val, host, hlen, port, NULL) < 0) {
		fprintf(stderr, "zernel-exporter: %s %s: expected ADDR:PORT, [V6ADDR]:PORT "
			"or :PORT with PORT in 1..65535\n", flag, val);
		return -EINVAL;
	}
	return 0;
}

static int set_shm(struct exporter_options *o, const char *val)
{
	size_t n = strlen(val);

	/* A POSIX shm name: "/" then 1..254 characters, no further "/". */
	if (n < 2 || n >= sizeof(o->shm_name) || val[0] != '/' || strchr(val + 1, '/')) {
		fprintf(stderr, "zernel-exporter: --shm %s: expected /NAME (one leading slash, "
			"no other, at most %zu characters)\n", val, sizeof(o->shm_name) - 1);
		return -EINVAL;
	}
	memcpy(o->shm_name, val, n + 1);
	return 0;
}

enum options_result options_parse(struct exporter_options *o, int argc, char **argv)
{
	enum { OPT_SHM = 256, OPT_METRICS, OPT_WS, OPT_INTERVAL, OPT_HELP, OPT_VERSION,
	       OPT_USER, OPT_NO_SANDBOX, OPT_PER_PID_HIST, OPT_ALERTS_BASE };
	static const struct option longopts[] = {
		{ "shm", required_argument, NULL, OPT_SHM },
		{ "metrics-listen", required_argument, NULL, OPT_METRICS },
		{ "ws-listen", required_argument, NULL, OPT_WS },
		{ "ws-interval", required_argument, NULL, OPT_INTERVAL },
		{ "user", required_argument, NULL, OPT_USER },
		{ "no-sandbox", no_argument, NULL, OPT_NO_SANDBOX },
		{ "per-pid-histograms", no_argument, NULL, OPT_PER_PID_HIST },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		ALERTS_LONGOPTS(OPT_ALERTS_BASE),
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	snprintf(o->shm_name, sizeof(o->shm_name), "%s", SHM_DEFAULT_NAME);
	url_listen_parse(EXPORTER_DEFAULT_METRICS, o->metrics_host, sizeof(o->metrics_host),
			 &o->metrics_port, NULL);
	url_listen_parse(EXPORTER_DEFAULT_WS, o->ws_host, sizeof(o->ws_host), &o->ws_port, NULL);
	o->ws_interval_ms = EXPORTER_DEFAULT_WS_INTERVAL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_SHM:
			if (set_shm(o, optarg) < 0)
				return OPTIONS_EXIT_USAGE;
			break;
		case OPT_METRICS:
			if (set_listen("--metrics-listen", optarg, o->metrics_host,
				       sizeof(o->metrics_host), &o->metrics_port) < 0)
				return OPTIONS_EXIT_USAGE;
			break;
		case OPT_WS:
			if (set_listen("--ws-listen", optarg, o->ws_host, sizeof(o->ws_host),
				       &o->ws_port) < 0)
				return OPTIONS_EXIT_USAGE;
			break;
		case OPT_INTERVAL:
			if (parse_u64(optarg, EXPORTER_MIN_WS_INTERVAL, EXPORTER_MAX_WS_INTERVAL, &v) < 0) {
				fprintf(stderr, "zernel-exporter: --ws-interval %s: expected a whole "
					"number of milliseconds in %u..%u\n", optarg,
					EXPORTER_MIN_WS_INTERVAL, EXPORTER_MAX_WS_INTERVAL);
				return OPTIONS_EXIT_USAGE;
			}
			o->ws_interval_ms = (uint32_t)v;
			break;
		case OPT_USER:
			if (optarg[0] == '\0' || strlen(optarg) >= sizeof(o->user)) {
				fprintf(stderr, "zernel-exporter: --user %s: expected a user name "
					"of 1..%zu characters\n", optarg, sizeof(o->user) - 1);
				return OPTIONS_EXIT_USAGE;
			}
			snprintf(o->user, sizeof(o->user), "%s", optarg);
			break;
		case OPT_PER_PID_HIST:
			o->per_pid_histograms = 1;
			break;
		case OPT_NO_SANDBOX:
			o->no_sandbox = 1;
			break;
		case OPT_HELP:
			usage(stdout);
			return OPTIONS_EXIT_OK;
		case OPT_VERSION:
			printf("zernel-exporter %s\n", ZERNEL_VERSION);
			return OPTIONS_EXIT_OK;
		case ':':
			fprintf(stderr, "zernel-exporter: %s needs a value\n", argv[optind - 1]);
			usage(stderr);
			return OPTIONS_EXIT_USAGE;
		case OPT_ALERTS_BASE + ALERTS_OPT_ALERTS:
		case OPT_ALERTS_BASE + ALERTS_OPT_WEBHOOK:
		case OPT_ALERTS_BASE + ALERTS_OPT_CHECK:
			if (alerts_options_set(&o->alerts, c - OPT_ALERTS_BASE, optarg, stderr) < 0)
				return OPTIONS_EXIT_USAGE;
			break;
		default:
			fprintf(stderr, "zernel-exporter: unknown flag %s\n", argv[optind - 1]);
			usage(stderr);
			return OPTIONS_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "zernel-exporter: unexpected argument %s\n", argv[optind]);
		usage(stderr);
		return OPTIONS_EXIT_USAGE;
	}
	return OPTIONS_RUN;
}
