/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Alert rules: the model, the built-in defaults and the JSON configuration
 * file (json-c).  Loading runs unprivileged (at start and on SIGHUP) and
 * is strict: an unknown field, an unknown metric or a bad value refuses the
 * whole file with one message naming the file, the rule (index and name)
 * and the field.  docs/alerts.example.json documents the format:
 *
 *   { "rules": [ { "name": "GpuOomWarning",
 *                  "metric": "gpu_memory_used_ratio",
 *                  "comparison": ">", "threshold": 0.95,
 *                  "scope": { "gpu_id": "0" },            optional
 *                  "for": "10s",                          optional, default 0
 *                  "severity": "warning",
 *                  "summary": "GPU {{ $labels.gpu_id }} at {{ $value }}",
 *                  "description": "...",                  optional
 *                  "labels": { "team": "ml" },           optional
 *                  "comment": "..." } ] }                 optional, ignored
 *
 * A top-level "comment" string is allowed too; any other field is an error.
 *
 * Templates in summary and description: see alert_template.h.
 */
#ifndef ZERNEL_ALERT_RULES_H
#define ZERNEL_ALERT_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "exporter/alerts/alert_metrics.h"

#define ALERT_MAX_RULES		256u
#define ALERT_MAX_SCOPE		4u
#define ALERT_MAX_EXTRA_LABELS	8u
#define ALERT_NAME_MAX		64u
#define ALERT_SEVERITY_MAX	32u
#define ALERT_TEXT_MAX		512u
#define ALERT_FILE_MAX		(1u << 20)	/* larger config files are refused */
#define ALERT_FOR_MAX_NS	(7ull * 86400ull * 1000000000ull)	/* one week */

enum alert_cmp { ALERT_GT, ALERT_GE, ALERT_LT, ALERT_LE, ALERT_EQ, ALERT_NE };

struct alert_label {
	char name[ALERT_NAME_MAX];
	char value[ALERT_LABEL_VALUE_MAX];
};

struct alert_rule {
	char name[ALERT_NAME_MAX];		/* alertname: [A-Za-z_][A-Za-z0-9_]* */
	unsigned int metric;			/* alert_metrics.h id */
	enum alert_cmp cmp;
	double threshold;
	struct alert_label scope[ALERT_MAX_SCOPE];	/* series must have these */
	unsigned int n_scope;
	uint64_t for_ns;
	char severity[ALERT_SEVERITY_MAX];
	char summary[ALERT_TEXT_MAX];
	char description[ALERT_TEXT_MAX];
	struct alert_label labels[ALERT_MAX_EXTRA_LABELS];	/* added to the alert */
	unsigned int n_labels;
};

struct alert_ruleset {
	struct alert_rule *rules;
	size_t n;
	char origin[256];	/* the file, or "built-in defaults" */
};

/* Thresholds of the built-in defaults. */
#define ALERT_DEFAULT_OOM_RATIO		0.95
#define ALERT_DEFAULT_OOM_FOR_NS	(10ull * 1000000000ull)
#define ALERT_DEFAULT_NCCL_P99_S	0.5
#define ALERT_DEFAULT_DATALOADER_P99_S	1.0
#define ALERT_DEFAULT_SLOW_FOR_NS	(60ull * 1000000000ull)
#define ALERT_DEFAULT_DOWN_FOR_NS	(30ull * 1000000000ull)

/*
 * The rules used when no file is given: GpuOomWarning, NcclAllReduceSlow,
 * DataLoaderWaitHigh, CollectorDown (values above).  Returns 0 or -ENOMEM.
 */
int alert_rules_default(struct alert_ruleset *out);

/*
 * Parses a configuration held in memory; origin names it in messages.
 * Returns 0, or -EINVAL with a one-line message in err ("FILE: rule 2
 * (NcclSlow): field \"threshold\": ..."); out is untouched on failure.
 */
int alert_rules_parse(const char *text, size_t len, const char *origin,
		      struct alert_ruleset *out, char *err, size_t errlen);

/* Reads and parses a file; -errno (with err filled in) on failure. */
int alert_rules_load(const char *path, struct alert_ruleset *out, char *err, size_t errlen);

void alert_ruleset_free(struct alert_ruleset *rs);

/* ">", ">=", ...  */
const char *alert_cmp_text(enum alert_cmp c);
/* Whether value compared with threshold holds (NaN never does). */
int alert_cmp_holds(enum alert_cmp c, double value, double threshold);

/* Parses "10s", "1m30s", "500ms", "2h" or a plain number of seconds. */
int alert_duration_parse(const char *s, uint64_t *ns);

#endif /* ZERNEL_ALERT_RULES_H */
