/* SPDX-License-Identifier: BSD-2-Clause */
/* Command-line flags of zernel-exporter. */
#ifndef ZERNEL_EXPORTER_OPTIONS_H
#define ZERNEL_EXPORTER_OPTIONS_H

#include <stdint.h>

#include "exporter/alerts/alerts.h"

#define EXPORTER_DEFAULT_METRICS	"0.0.0.0:9091"
#define EXPORTER_DEFAULT_WS		"0.0.0.0:9092"
#define EXPORTER_DEFAULT_WS_INTERVAL	1000u
#define EXPORTER_MIN_WS_INTERVAL	100u
#define EXPORTER_MAX_WS_INTERVAL	60000u

struct exporter_options {
	char shm_name[256];
	char metrics_host[256];
	uint16_t metrics_port;
	char ws_host[256];
	uint16_t ws_port;
	uint32_t ws_interval_ms;
	struct alerts_options alerts;	/* --alerts, --webhook, --check-config */
	char user[64];			/* --user NAME; "" means nobody */
	int no_sandbox;			/* --no-sandbox: debugging only */
	int per_pid_histograms;		/* --per-pid-histograms */
};

enum options_result {
	OPTIONS_RUN = 0,	/* go on */
	OPTIONS_EXIT_OK,	/* --help or --version printed */
	OPTIONS_EXIT_USAGE,	/* bad flag or value; message printed; exit 2 */
};

enum options_result options_parse(struct exporter_options *o, int argc, char **argv);

#endif /* ZERNEL_EXPORTER_OPTIONS_H */
