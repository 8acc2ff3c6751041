/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Prometheus text of the exporter's own view (see prom.h): whether the
 * collector is up and why not, and the exporter's counters.  Rendered at
 * every scrape, fresh segment or not.
 */
#include <stddef.h>
#include <string.h>

#include "common/util.h"
#include "exporter/prom.h"
#include "exporter/prom_write.h"
#include "common/utf8.h"
#include "exporter/text.h"
#include "shm/shm_reader.h"

/* The exporter's counters (stats.h), one unlabelled series each. */
struct self_counter {
	const char *name;
	const char *type;
	const char *help;
	size_t offset;		/* in struct exporter_stats */
};

#define SELF(name, type, field, help) { name, type, help, offsetof(struct exporter_stats, field) }

static const struct self_counter self_counters[] = {
	SELF("zernel_exporter_scrapes_total", "counter", scrapes,
	     "Requests for /metrics answered."),
	SELF("zernel_exporter_http_requests_total", "counter", http_requests,
	     "HTTP requests answered, every path."),
	SELF("zernel_exporter_http_connections", "gauge", http_connections,
	     "HTTP connections open now."),
	SELF("zernel_exporter_http_rejected_total", "counter", http_rejected,
	     "HTTP connections refused at the connection limit."),
	SELF("zernel_exporter_ws_clients", "gauge", ws_clients,
	     "WebSocket clients connected now."),
	SELF("zernel_exporter_ws_connections_total", "counter", ws_connections,
	     "WebSocket clients accepted since start."),
	SELF("zernel_exporter_ws_frames_sent_total", "counter", ws_frames_sent,
	     "Snapshots sent to WebSocket clients."),
	SELF("zernel_exporter_ws_frames_dropped_total", "counter", ws_frames_dropped,
	     "Snapshots skipped for a WebSocket client that had not taken the previous one."),
	SELF("zernel_exporter_ws_stalled_closed_total", "counter", ws_stalled_closed,
	     "WebSocket clients closed for staying stalled."),
	SELF("zernel_exporter_ws_rejected_total", "counter", ws_rejected,
	     "WebSocket connections refused at the connection limit."),
	SELF("zernel_exporter_ws_bad_input_total", "counter", ws_bad_input,
	     "WebSocket clients closed for what they sent (protocol errors, binary, oversized or invalid UTF-8 messages)."),
	SELF("zernel_exporter_ws_snapshot_bytes", "gauge", ws_feed_bytes,
	     "Size of the last WebSocket snapshot, bytes."),
};

int prom_render_self(struct sbuf *out, const struct source_status *st,
		     const struct exporter_stats *s)
{
	char reason[512];

	if (st->status != SHM_READ_OK && st->reason && *st->reason) {
		/* A comment line: one line, whatever the reason text holds. */
		utf8_sanitize(reason, sizeof(reason), st->reason, strlen(st->reason));
		for (char *c = reason; *c; c++)
			if (*c == '\n')
				*c = ' ';
		sbuf_puts(out, "# zernel collector not fresh, segment data omitted: ");
		sbuf_puts(out, reason);
		sbuf_append(out, "\n", 1);
	}
	prom_single_u64(out, "zernel_collector_up", "gauge",
		   "1 when the collector's segment is present, valid and fresh; 0 otherwise (then no segment data is exported).",
		   st->status == SHM_READ_OK);
	prom_family(out, "zernel_collector_status", "gauge",
	       "Always 1; label status: ok, stale (heartbeat older than 3 publish intervals), busy (no consistent copy), missing or invalid.");
	sbuf_puts(out, "zernel_collector_status{status=\"");
	sbuf_puts(out, shm_read_status_name(st->status));
	sbuf_puts(out, "\"} 1\n");
	if (st->seen) {
		prom_family(out, "zernel_collector_last_publish_age_seconds", "gauge",
		       "Seconds since the collector's last publish that this exporter saw.");
		prom_series_sec(out, "zernel_collector_last_publish_age_seconds", "", "", st->age_ns);
		prom_family(out, "zernel_collector_last_publish_timestamp_seconds", "gauge",
		       "Wall-clock time of the collector's last publish that this exporter saw, seconds since the Unix epoch.");
		prom_series_sec(out, "zernel_collector_last_publish_timestamp_seconds", "", "",
			   st->last_update_real_ns);
		prom_single_u64(out, "zernel_segment_generation", "gauge",
			   "Generation of the segment last read; changes at every collector start.",
			   st->generation);
	}

	prom_family(out, "zernel_exporter_build_info", "gauge", "Always 1; label version: the exporter's version.");
	sbuf_puts(out, "zernel_exporter_build_info{version=\"" ZERNEL_VERSION "\"} 1\n");
	prom_family(out, "zernel_exporter_start_time_seconds", "gauge",
	       "When the exporter started, seconds since the Unix epoch.");
	prom_series_sec(out, "zernel_exporter_start_time_seconds", "", "", stats_get(&s->start_real_ns));
	for (size_t i = 0; i < ARRAY_SIZE(self_counters); i++) {
		const struct self_counter *c = &self_counters[i];

		prom_single_u64(out, c->name, c->type, c->help,
				stats_get((const _Atomic uint64_t *)((const char *)s + c->offset)));
	}
	return sbuf_error(out);
}
