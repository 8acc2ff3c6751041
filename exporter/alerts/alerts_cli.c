/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exporter's alerting flags: --alerts FILE, --webhook URL (repeatable)
 * and --check-config FILE.  Runs first, before anything is bound; a bad
 * value is one line on stderr and exit status 2.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "exporter/alerts/alert_rules.h"
#include "exporter/alerts/alerts.h"

const char alerts_usage[] =
	"  --alerts FILE            alert rules (JSON; see docs/alerts.example.json);\n"
	"                           default: built-in GpuOomWarning, NcclAllReduceSlow,\n"
	"                           DataLoaderWaitHigh, CollectorDown; SIGHUP reloads\n"
	"  --webhook URL            send firing/resolved notifications to this http://\n"
	"                           URL in Alertmanager's webhook format (repeatable)\n"
	"  --check-config FILE      check an alert rules file and exit (0 valid, 2 not)\n";

int alerts_options_set(struct alerts_options *o, int which, const char *arg, FILE *err)
{
	struct url u;
	char why[1024];

	switch (which) {
	case ALERTS_OPT_ALERTS:
	case ALERTS_OPT_CHECK:
		if (!*arg) {
			fprintf(err, "zernel-exporter: --%s needs a file name\n",
				which == ALERTS_OPT_ALERTS ? "alerts" : "check-config");
			return -EINVAL;
		}
		if (which == ALERTS_OPT_ALERTS)
			o->rules_path = arg;
		else
			o->check_path = arg;
		return 0;
	case ALERTS_OPT_WEBHOOK:
		if (o->n_webhooks >= WEBHOOK_MAX_TARGETS) {
			fprintf(err, "zernel-exporter: --webhook %s: at most %u webhooks\n", arg,
				WEBHOOK_MAX_TARGETS);
			return -EINVAL;
		}
		if (webhook_url_parse(arg, &u, why, sizeof(why)) < 0) {
			fprintf(err, "zernel-exporter: --webhook: %s\n", why);
			return -EINVAL;
		}
		o->webhooks[o->n_webhooks++] = arg;
		return 0;
	default:
		return -EINVAL;
	}
}

static void print_duration(FILE *out, uint64_t ns)
{
	if (ns % NSEC_PER_SEC)
		fprintf(out, "%llums", (unsigned long long)(ns / NSEC_PER_MSEC));
	else
		fprintf(out, "%llus", (unsigned long long)(ns / NSEC_PER_SEC));
}

int alerts_check_config(const char *path, FILE *out, FILE *err)
{
	struct alert_ruleset rs;
	char why[1024];

	if (alert_rules_load(path, &rs, why, sizeof(why)) < 0) {
		fprintf(err, "zernel-exporter: %s\n", why);
		return 2;
	}
	fprintf(out, "%s: %zu rule%s OK\n", path, rs.n, rs.n == 1 ? "" : "s");
	for (size_t i = 0; i < rs.n; i++) {
		const struct alert_rule *r = &rs.rules[i];

		fprintf(out, "  %s: %s", r->name, alert_metric_name(r->metric));
		for (unsigned int k = 0; k < r->n_scope; k++)
			fprintf(out, "%s%s=\"%s\"%s", k ? "," : "{", r->scope[k].name,
				r->scope[k].value, k + 1 == r->n_scope ? "}" : "");
		fprintf(out, " %s %g for ", alert_cmp_text(r->cmp), r->threshold);
		print_duration(out, r->for_ns);
		fprintf(out, ", severity %s\n", r->severity);
	}
	alert_ruleset_free(&rs);
	return 0;
}
