/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * zernel-exporter: the only networked Zernel program.  It reads the
 * collector's shared-memory segment (read-only, treated as untrusted) and
 * serves it as Prometheus text over HTTP (h2o) and as a JSON feed over
 * WebSocket (libwebsockets); with --webhook, a second process of its own
 * sends the alert webhooks (alerts/webhook_sender.h), one thread per
 * webhook.
 *
 * Threading model of the serving process: four threads.
 *   - main: start-up, then waits for SIGINT/SIGTERM (shut down) and SIGHUP
 *     (reload the alert rules);
 *   - http: h2o's event loop (http.c), with its own segment reader and
 *     private snapshot copy, taken per request;
 *   - feed: libwebsockets' event loop (ws.c), with its own segment reader
 *     and private snapshot copy, taken once per interval;
 *   - alerts: its own segment reader; evaluates the alert engine on every
 *     new publish (alerts.h) and hands its notifications to the sender.
 * The threads share the atomic counters of stats.h and the alert engine,
 * which http and feed render under the engine's mutex (alert_engine.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "exporter/alerts/alerts.h"
#include "exporter/feed/ws.h"
#include "exporter/http/http.h"
#include "exporter/http/listen.h"
#include "exporter/options.h"
#include "exporter/prom/prom.h"
#include "exporter/sandbox/sandbox.h"
#include "exporter/source.h"
#include "exporter/stats.h"

#define EXPORTER_FD_LIMIT	65536u	/* enough for WS_MAX_CLIENTS + HTTP */

/* Raises the soft descriptor limit so that many feed clients fit. */
static unsigned int raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < EXPORTER_FD_LIMIT)
		rl.rlim_cur = rl.rlim_max;
	else
		rl.rlim_cur = EXPORTER_FD_LIMIT;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		getrlimit(RLIMIT_NOFILE, &rl);
	return (unsigned int)rl.rlim_cur;
}

/* http://HOST:PORT of /metrics for notifications; the host name when bound to all addresses. */
static void exporter_external_url(const struct exporter_options *o, char *buf, size_t len)
{
	char host[256];

	snprintf(host, sizeof(host), "%s", o->metrics_host);
	if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0) {
		if (gethostname(host, sizeof(host)) < 0)
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
	}
	snprintf(buf, len, strchr(host, ':') ? "http://[%.200s]:%u" : "http://%.200s:%u", host,
		 (unsigned int)o->metrics_port);
}

int main(int argc, char **argv)
{
	struct exporter_options opt;
	struct http_server *http = NULL;
	struct ws_server *ws = NULL;
	struct source probe;
	struct alerts *alerts = NULL;
	char external_url[300];
	unsigned int fd_limit;
	int http_fd = -1, ws_fd = -1, sig = 0, err, ret = 1;
	sigset_t sigs;

	/* 1. Flags. */
	log_init("zernel-exporter");
	switch (options_parse(&opt, argc, argv)) {
	case OPTIONS_RUN:
		break;
	case OPTIONS_EXIT_OK:
		return 0;
	case OPTIONS_EXIT_USAGE:
		return 2;
	}
	if (opt.alerts.check_path)
		return alerts_check_config(opt.alerts.check_path, stdout, stderr);
	stats_set(CAT_STAT_START_REAL_NS, now_real_ns());

	/*
	 * Signals are taken synchronously by main (sigwait below); blocking
	 * them first makes every thread created later inherit the mask.
	 * SIGPIPE: a client that goes away must not kill the server.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);	/* reloads the alert rules */
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* 2. Bind both listening sockets: the last step that may need privilege. */
	fd_limit = raise_fd_limit();
	http_fd = listen_tcp("metrics", opt.metrics_host, opt.metrics_port);
	if (http_fd < 0)
		goto cleanup;
	ws_fd = listen_tcp("feed", opt.ws_host, opt.ws_port);
	if (ws_fd < 0)
		goto cleanup;

	/* 3. Open the segment and prepare both servers (they take the fds). */
	source_init(&probe, opt.shm_name);
	if (source_refresh(&probe) != SHM_READ_OK)
		log_info("segment %s: %s; serving zernel_collector_up 0 until it is fresh",
			 opt.shm_name, probe.reason);
	source_close(&probe);
	prom_set_per_pid_histograms(opt.per_pid_histograms);
	err = http_server_new(&http, http_fd, opt.shm_name, opt.ws_port);
	if (err < 0) {
		log_warnx("http: %s", strerror(-err));
		goto cleanup;
	}
	http_fd = -1;
	err = ws_server_new(&ws, ws_fd, opt.shm_name, opt.ws_interval_ms, fd_limit);
	ws_fd = -1;
	if (err < 0)
		goto cleanup;

	/* Alerting: rules file and webhook URLs are read and checked before the sandbox. */
	exporter_external_url(&opt, external_url, sizeof(external_url));
	err = alerts_new(&alerts, &opt.alerts, opt.shm_name, external_url);
	if (err < 0) {
		ret = 2;
		goto cleanup;
	}

	/*
	 * 4. Sandbox: nobody, no capabilities, NO_NEW_PRIVS, rlimits, seccomp
	 * allowlist.  Everything above may need privilege; nothing below does,
	 * and every thread starts below so that it inherits the filter.  The
	 * webhook sender is forked first: it enters a sandbox of its own, the
	 * only one that may connect.
	 */
	{
		struct sandbox_opts so = {
			.user = opt.user[0] ? opt.user : NULL,
			.max_fds = fd_limit,
			.role = SANDBOX_ROLE_SERVE,
		};

		err = alerts_fork_sender(alerts, opt.no_sandbox ? NULL : &so);
		if (err < 0) {
			log_warnx("cannot start the webhook sender: %s",
				  err == -ECHILD ? "it did not start (its line above says why)" :
				  strerror(-err));
			goto cleanup;
		}
		if (opt.no_sandbox)
			sandbox_warn_disabled();
		else if (sandbox_enter(&so) < 0)
			goto cleanup;	/* fail closed; the failed step is logged */
	}

	/* 5. Start the servers. */
	err = http_server_start(http, alerts);
	if (!err)
		err = ws_server_start(ws, alerts);
	if (!err)
		err = alerts_start(alerts);
	if (err) {
		log_warnx("cannot start a server thread: %s", strerror(-err));
		goto cleanup;
	}
	log_info("serving %s: metrics on http://%s:%u/metrics, feed on ws://%s:%u every %u ms",
		 opt.shm_name, opt.metrics_host, (unsigned int)opt.metrics_port,
		 opt.ws_host, (unsigned int)opt.ws_port, opt.ws_interval_ms);

	/* 6. Wait for SIGINT or SIGTERM. */
	for (;;) {
		if (sigwait(&sigs, &sig) != 0)
			continue;
		if (sig != SIGHUP)
			break;
		alerts_reload(alerts);
	}
	log_info("%s: shutting down", strsignal(sig));
	ret = 0;

	/* 7. Clean shutdown: stop both loops, then free. */
cleanup:
	ws_server_free(ws);
	http_server_free(http);
	alerts_free(alerts);	/* after the servers: they render its state */
	if (http_fd >= 0)
		close(http_fd);
	if (ws_fd >= 0)
		close(ws_fd);
	return ret;
}
