/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * When to render ahead of steady scrapers (see scrape_forecast.h).  Pure
 * arithmetic on the render thread's figures: no clock, no state.
 */
#include "exporter/http/scrape_forecast.h"

int scrape_forecast_window(const struct scrape_forecast_input *in,
			   struct scrape_forecast_window *w)
{
	const uint64_t *t = in->asked_ns;	/* t[0] the last */
	uint64_t period, prev_period, jitter, lead, expected;

	w->from_ns = w->until_ns = 0;
	if (!t[3] || !in->publish_ns || t[0] <= t[1] || t[1] <= t[2] || t[2] <= t[3])
		return 0;
	period = t[0] - t[2];
	prev_period = t[1] - t[3];
	jitter = period > prev_period ? period - prev_period : prev_period - period;
	if (jitter * SCRAPE_FORECAST_STEADY > period)
		return 0;
	lead = 2 * in->render_ns + 2 * in->poll_ns + jitter;
	if (lead > in->publish_ns / 2 || 2 * lead >= period)
		return 0;
	expected = t[1] + period;	/* after t[0]: t[1] > t[2] */
	w->from_ns = expected - lead;
	w->until_ns = expected + lead;
	return 1;
}
