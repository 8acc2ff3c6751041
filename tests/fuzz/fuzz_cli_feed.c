/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: one feed message as `zernel watch` receives it from
 * the network.  Whatever it parses must stay within its tables, and the
 * text it keeps must be valid UTF-8 for the terminal.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/feed.h"
#include "common/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cli_feed f;

	cli_feed_parse((const char *)data, size, &f);
	if (f.n_gpu > CLI_FEED_MAX_GPUS || f.n_mem > CLI_FEED_MAX_MEM ||
	    f.n_proc > CLI_FEED_MAX_PROCS || f.n_nccl > CLI_FEED_MAX_NCCL ||
	    f.n_alert > CLI_FEED_MAX_ALERTS || f.n_telemetry > CLI_FEED_MAX_TELEMETRY)
		abort();
	if (!utf8_valid(f.stale_reason, strnlen(f.stale_reason, sizeof(f.stale_reason))) ||
	    !utf8_valid(f.scenario, strnlen(f.scenario, sizeof(f.scenario))))
		abort();
	cli_feed_firing(&f);
	cli_feed_clear(&f);
	return 0;
}
