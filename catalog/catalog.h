/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The metric catalog: every family Zernel exports is written once, in the
 * table of catalog/catalog.c.  An entry says where its value lives (a row
 * source and the field in that row, or a function for the few derived
 * values), what it is (kind, unit) and what each output calls it: the
 * Prometheus family and help, the feed key with its unit spelling, the
 * alert metric name.  Everything that prints a metric is generated from
 * the table: the Prometheus text (exporter/prom/prom.c), the WebSocket feed
 * (exporter/feed/feed_json.c) and its JSON schema (catalog/cat_schema.c,
 * docs/feed.schema.json), the alert metrics (exporter/alerts/alert_metrics.c),
 * the parser of `zernel watch` (cli/feed.c) and the metrics reference
 * (catalog/cat_doc.c, docs/metrics.md).
 *
 * Decisions, written down here because every output follows them:
 *   - Table order is Prometheus order.  Consecutive entries with the same
 *     Prometheus name are one family (offcpu's reason="preempted" and
 *     reason="blocked"; dist_sync's kind="futex" and kind="barrier"): one
 *     HELP/TYPE, then for each row each entry's series.
 *   - A latency entry (a struct shm_latency) is two families: a summary
 *     (quantiles 0.5 and 0.99 over the window, cumulative _sum, _count)
 *     and a classic histogram under its own name.  Its help is the
 *     histogram's; the summary's adds that quantiles cover the window.
 *   - The feed's key order is each entry's feed_pos within its object
 *     (the feed predates the catalog and keeps its byte layout); a latency
 *     writes stem_p50_<unit>, stem_p99_<unit>, stem_count as its parts say.
 *   - An alert metric of a latency entry is stem_<q>_seconds for q in p50,
 *     p90, p99, max; of any other entry, its alert name.  Series labels
 *     come from the row source (a process adds its comm).
 *   - Process and NCCL op names, table names: shm/ spells them
 *     (shm_nccl_op_name, shm_table_name), the catalog uses them.
 *
 * Pure data and functions over validated snapshots; no privilege.
 */
#ifndef ZERNEL_CATALOG_H
#define ZERNEL_CATALOG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/shm_snapshot.h"

/* Where an entry's rows come from, and so which labels its series carry. */
enum cat_rows {
	CAT_ROWS_HEADER = 0,	/* the segment header: one row, no label */
	CAT_ROWS_TABLES,	/* header.table[]: label table */
	CAT_ROWS_PROCS,		/* struct shm_proc: label pid */
	CAT_ROWS_GPU_MEM,	/* struct shm_gpu_mem: labels pid, gpu_id */
	CAT_ROWS_GPUS,		/* struct shm_gpu: label gpu_id */
	CAT_ROWS_NCCL_OPS,	/* struct shm_nccl_op: label op */
	CAT_ROWS_NCCL_COMMS,	/* struct shm_nccl_comm: the info entry's labels */
	CAT_ROWS_STATUS,	/* struct cat_status: one row, known at every scrape */
	CAT_ROWS_EXPORTER,	/* the exporter's own counters: one row */
	CAT_ROWS_ALERTS,	/* written by the alert engine (exporter/alerts/alert_engine.c) */
	CAT_ROWS_WEBHOOKS,	/* written by the webhooks (exporter/alerts/webhook.c) */
	CAT_ROWS_STALL_SITES,	/* a process's, written by exporter/explain/stall_sites.c */
	CAT_ROWS_COUNT
};

/* Rows read from the segment exist only with a fresh snapshot. */
static inline int cat_rows_segment(unsigned int r)
{
	return r <= CAT_ROWS_NCCL_COMMS;
}

enum cat_kind {
	CAT_COUNTER = 0,	/* cumulative */
	CAT_GAUGE,		/* a value now */
	CAT_INFO,		/* a gauge that is always 1: the facts are its labels */
	CAT_LATENCY,		/* a struct shm_latency: summary + histogram */
	CAT_TEXT,		/* feed only: a string */
};

enum cat_unit {
	CAT_UNIT_PLAIN = 0,	/* a count */
	CAT_UNIT_BYTES,
	CAT_UNIT_NS,		/* nanoseconds; Prometheus and alerts say seconds */
	CAT_UNIT_MS,		/* milliseconds; Prometheus says seconds */
	CAT_UNIT_RATIO,		/* 0..1 */
	CAT_UNIT_BOOL,		/* 0 or 1 */
};

/* Flags of an entry. */
#define CAT_F_KNOWN	0x1u	/* 0 means unknown: no series (Prometheus, alerts) */
#define CAT_F_SEEN	0x2u	/* status: no series before a segment was seen */
#define CAT_F_SAMPLED	0x4u	/* latency: a row without a sample has no series */
#define CAT_F_SPARSE	0x8u	/* counter: no Prometheus series while 0 (the feed keeps it) */

/* The feed's objects.  The root holds the others. */
enum cat_obj {
	CAT_OBJ_ROOT = 0,
	CAT_OBJ_GPU_MEM,	/* "gpu_utilization": one per (pid, gpu) */
	CAT_OBJ_GPUS,		/* "gpus": one per device */
	CAT_OBJ_PROCS,		/* "processes" */
	CAT_OBJ_NCCL,		/* "nccl": one per op */
	CAT_OBJ_COMMS,		/* "nccl_comms" */
	CAT_OBJ_TELEMETRY,	/* "telemetry" */
	CAT_OBJ_OVERFLOWS,	/* "telemetry.table_overflows": table name -> count */
	CAT_OBJ_ALERTS,		/* "alerts": pending and firing alerts */
	CAT_OBJ_STALL_SITES,	/* "processes[].stall_sites": its top Python stall sites */
	CAT_OBJ_COUNT
};

enum cat_shape {
	CAT_SHAPE_OBJECT = 0,	/* one object; each key reads the first row of its rows */
	CAT_SHAPE_ARRAY,	/* an array of one object per row */
	CAT_SHAPE_MAP,		/* an object: row label -> the one entry's value */
};

/*
 * The feed pushes the top processes only (every client, every interval);
 * the whole table is served on request (GET /snapshot on the metrics port).
 */
#define CAT_FEED_TOP_PROCS	32
/*
 * Each pushed process carries its few longest stall sites, not all of
 * them: the first three answer "where does it wait", which is what a live
 * view shows (the page's Explain pane, three a process), and keep a push
 * small; GET /snapshot and /api/stalls carry every site.
 */
#define CAT_FEED_TOP_SITES	3
#define CAT_STR_(x)		#x
#define CAT_STR(x)		CAT_STR_(x)

struct cat_obj_def {
	const char *key;		/* in the parent; NULL for the root */
	unsigned char parent;		/* enum cat_obj */
	unsigned char pos;		/* place among the parent's keys */
	unsigned char shape;		/* enum cat_shape */
	unsigned char rows;		/* enum cat_rows of an array or map */
	unsigned char segment_only;	/* segment keys left out without a fresh snapshot */
	unsigned int max_rows;		/* an array's bound; 0: none */
	const char *help;
};

extern const struct cat_obj_def cat_objs[CAT_OBJ_COUNT];

/* How a value is written in the feed. */
enum cat_fmt {
	CAT_FMT_INT = 0,	/* the integer as it is */
	CAT_FMT_BOOL,		/* true when not 0 */
	CAT_FMT_INT_MS,		/* nanoseconds as whole milliseconds (floor) */
	CAT_FMT_S,		/* nanoseconds as a number of seconds */
	CAT_FMT_MS,		/* ... milliseconds */
	CAT_FMT_US,		/* ... microseconds */
	CAT_FMT_TEXT,		/* a string */
	CAT_FMT_NUMBER,		/* a number the writer computes (alerts) */
	CAT_FMT_TEXT_MAP,	/* an object of strings (alert labels) */
};

/* Parts of a latency in the feed (and quantiles of its alert metrics). */
#define CAT_PART_P50	0x1u
#define CAT_PART_P99	0x2u
#define CAT_PART_COUNT	0x4u

enum cat_quantile { CAT_Q_P50 = 0, CAT_Q_P90, CAT_Q_P99, CAT_Q_MAX, CAT_Q_COUNT };

/*
 * Ids of the entries and labels code refers to by name (the views of
 * zernel watch, the alert engine's feed objects, the exporter's counters'
 * users).  An entry nobody refers to needs none: adding a family is one
 * entry in catalog.c.
 */
enum cat_id {
	CAT_ID_NONE = 0,
	/* root */
	CAT_ID_CUDA_LATENCY, CAT_ID_NCCL_ALLREDUCE, CAT_ID_DATALOADER_WAIT,
	CAT_ID_LAST_UPDATE, CAT_ID_COLLECTOR_UP, CAT_ID_STATUS, CAT_ID_STALE_REASON,
	CAT_ID_GENERATION, CAT_ID_AGE,
	/* gpu_utilization */
	CAT_ID_MEM_KEY, CAT_ID_MEM_PID, CAT_ID_MEM_GPU, CAT_ID_MEM_USED, CAT_ID_MEM_PEAK,
	/* gpus */
	CAT_ID_GPU_ID, CAT_ID_GPU_TOTAL, CAT_ID_GPU_USED, CAT_ID_GPU_PROCESSES,
	/* processes */
	CAT_ID_PROC_PID, CAT_ID_PROC_PPID, CAT_ID_PROC_COMM, CAT_ID_PROC_GPU_BYTES,
	CAT_ID_PROC_CUDA_LAUNCH, CAT_ID_PROC_DATALOADER, CAT_ID_PROC_FUTEX,
	CAT_ID_PROC_BARRIER, CAT_ID_PROC_RUNQ, CAT_ID_PROC_PREEMPTED, CAT_ID_PROC_BLOCKED,
	CAT_ID_PROC_INVOLUNTARY, CAT_ID_PROC_VOLUNTARY, CAT_ID_PROC_MIGRATIONS,
	CAT_ID_PROC_POD, CAT_ID_PROC_NAMESPACE, CAT_ID_PROC_CONTAINER, CAT_ID_PROC_RANK,
	CAT_ID_PROC_LOCAL_RANK, CAT_ID_PROC_WORLD_SIZE, CAT_ID_PROC_SLURM_JOB,
	/* in enum shm_thread_state order */
	CAT_ID_PROC_STATE_ONCPU, CAT_ID_PROC_STATE_RUNQ, CAT_ID_PROC_STATE_INPUT,
	CAT_ID_PROC_STATE_GPU, CAT_ID_PROC_STATE_COLLECTIVE, CAT_ID_PROC_STATE_LOCK,
	CAT_ID_PROC_STATE_SLEEP, CAT_ID_PROC_STATE_OTHER,
	/* nccl */
	CAT_ID_NCCL_OP, CAT_ID_NCCL_CALLS, CAT_ID_NCCL_BYTES, CAT_ID_NCCL_ERRORS,
	CAT_ID_NCCL_DURATION, CAT_ID_NCCL_WAIT,
	/* telemetry */
	CAT_ID_MODE, CAT_ID_SCENARIO, CAT_ID_EVENTS, CAT_ID_EVENTS_DROPPED,
	CAT_ID_PROCESSES_TRACKED, CAT_ID_TABLE_OVERFLOWS,
	/* alerts */
	CAT_ID_ALERT_NAME, CAT_ID_ALERT_SEVERITY, CAT_ID_ALERT_STATE, CAT_ID_ALERT_SUMMARY,
	CAT_ID_ALERT_LABELS, CAT_ID_ALERT_STARTS, CAT_ID_ALERT_ACTIVE, CAT_ID_ALERT_VALUE,
	/* Prometheus families written by the alert engine and the webhooks */
	CAT_ID_ALERT_FIRING, CAT_ID_ALERT_PENDING, CAT_ID_ALERT_TRANSITIONS,
	CAT_ID_ALERT_RULES, CAT_ID_ALERT_RELOADS, CAT_ID_ALERT_RELOAD_OK,
	CAT_ID_ALERT_DROPPED, CAT_ID_WEBHOOK_INFO, CAT_ID_WEBHOOK_SENT,
	CAT_ID_WEBHOOK_FAILURES, CAT_ID_WEBHOOK_RETRIES, CAT_ID_WEBHOOK_DROPPED,
	CAT_ID_WEBHOOK_QUEUE,
	/* a process's stall sites (processes[].stall_sites, /api/stalls) */
	CAT_ID_PROC_STALL_SITES, CAT_ID_SITE_STATE, CAT_ID_SITE_FILE, CAT_ID_SITE_LINE,
	CAT_ID_SITE_FUNCTION, CAT_ID_SITE_STALLS, CAT_ID_SITE_SECONDS, CAT_ID_SITE_SHARE,
	CAT_ID_COUNT
};

/*
 * The exporter's own counters: exporter/stats.h keeps one atomic per id,
 * the catalog says how each is exported.
 */
enum cat_stat {
	CAT_STAT_START_REAL_NS = 0,	/* CLOCK_REALTIME at start */
	CAT_STAT_SCRAPES,		/* GET/HEAD /metrics answered */
	CAT_STAT_SCRAPES_WAITED,	/* of those, waited for the segment's render */
	CAT_STAT_HTTP_REQUESTS,		/* every HTTP request answered */
	CAT_STAT_HTTP_CONNECTIONS,	/* open now */
	CAT_STAT_HTTP_REJECTED,		/* refused at the connection limit */
	CAT_STAT_HTTP_EVICTED,		/* waiting for a request, closed for a newcomer */
	CAT_STAT_WS_CLIENTS,		/* connected now */
	CAT_STAT_WS_CONNECTIONS,	/* accepted since start */
	CAT_STAT_WS_FRAMES_SENT,	/* snapshots handed to a client */
	CAT_STAT_WS_FRAMES_DROPPED,	/* skipped: client had not taken the last */
	CAT_STAT_WS_STALLED_CLOSED,	/* clients closed for staying stalled */
	CAT_STAT_WS_REJECTED,		/* refused at the connection limit */
	CAT_STAT_WS_BAD_INPUT,		/* clients closed for what they sent */
	CAT_STAT_WS_FEED_BYTES,		/* size of the last snapshot */
	CAT_STAT_COUNT
};

/* What the exporter knows of the collector, fresh data or not. */
struct cat_status {
	enum shm_read_status status;	/* SHM_READ_OK: the data is fresh */
	const char *reason;		/* why not fresh; "" when fresh */
	int seen;			/* the fields below are known */
	uint64_t generation;		/* of the last valid snapshot */
	uint64_t age_ns;		/* since the last publish seen */
	uint64_t last_update_real_ns;	/* wall-clock time of that publish */
};

/* Everything a value can be read from. */
struct cat_input {
	const struct shm_snapshot *snap;	/* fresh and validated, or NULL */
	const struct cat_status *status;	/* or NULL */
	const _Atomic uint64_t *stats;		/* CAT_STAT_COUNT counters, or NULL */
};

enum cat_label_type {
	CAT_L_U32 = 0,		/* uint32_t at off: a decimal, a feed integer */
	CAT_L_I32,		/* int32_t at off */
	CAT_L_GPU,		/* uint32_t at off, UINT32_MAX unknown: "" and null */
	CAT_L_HEX64,		/* uint64_t at off as 0x...: a feed string */
	CAT_L_TEXT,		/* text: a feed string */
};

struct cat_label {
	unsigned char id;		/* enum cat_id, or CAT_ID_NONE */
	unsigned char type;		/* enum cat_label_type */
	unsigned char feed_pos;
	const char *name;		/* Prometheus label; NULL: feed only */
	const char *feed;		/* feed key; NULL: not in the feed */
	size_t off;
	/* CAT_L_TEXT: writes the value; -ENOENT when the row has none (no series). */
	int (*text)(char *buf, size_t len, const struct cat_input *in, const void *row);
	const char *help;
};

/* The labels of a row source, and what alerts add to them. */
struct cat_rows_def {
	const struct cat_label *labels;
	unsigned int n_labels;
	const struct cat_label *alert_labels;
	unsigned int n_alert_labels;
};

extern const struct cat_rows_def cat_rows_defs[CAT_ROWS_COUNT];

struct cat_metric {
	unsigned char id;		/* enum cat_id, or CAT_ID_NONE */
	unsigned char rows;		/* enum cat_rows */
	unsigned char kind;		/* enum cat_kind */
	unsigned char unit;		/* enum cat_unit */
	unsigned short width;		/* bytes of the field at off (8 or 4 for a number) */
	unsigned char flags;		/* CAT_F_* */
	size_t off;			/* the field in the row (a latency: its struct) */
	size_t fine_off;		/* a latency's log-linear buckets in the row; 0: none */
	/* Instead of off: a value derived from the row and the snapshot. */
	uint64_t (*get)(const struct cat_input *in, const void *row);
	const struct shm_latency *(*get_latency)(const struct cat_input *in, const void *row);
	/* A row for which it returns 0 has no value: no series (Prometheus, alerts). */
	int (*known)(const struct cat_input *in, const void *row);
	int (*get_text)(char *buf, size_t len, const struct cat_input *in, const void *row);
	size_t per;			/* a ratio: divided by the uint64_t at per (0: unknown) */

	const char *prom;		/* Prometheus family; NULL: not exported there */
	const char *prom_hist;		/* a latency's histogram family; NULL: summary only */
	const char *prom_labels;	/* fixed labels after the row's: "reason=\"preempted\"" */
	const struct cat_label *labels;	/* an info entry's labels, after the row's */
	unsigned int n_labels;
	const char *help;		/* a sentence with the unit; a latency: the histogram's */
	/* Labels the alert engine or a webhook writes (its rows have none here): the reference's. */
	const char *doc_labels;

	const char *feed;		/* feed key, a latency's stem; NULL: not in the feed */
	unsigned char feed_obj;		/* enum cat_obj */
	unsigned char feed_pos;		/* place among the object's keys */
	unsigned char feed_fmt;		/* enum cat_fmt; a latency: its quantiles' */
	unsigned char feed_parts;	/* a latency: CAT_PART_* */
	const char *feed_values;	/* a text's possible values, "a|b|c"; NULL: any */

	const char *alert;		/* alert metric (a latency: the stem); NULL: none */
};

extern const struct cat_metric cat_metrics[];
extern const size_t cat_metrics_count;

/* ---- lookups (catalog.c) ------------------------------------------------ */

/* The entry of id, or NULL (a label id, or none). */
const struct cat_metric *cat_metric(enum cat_id id);
/*
 * How many entries from index i on make one Prometheus family: consecutive
 * entries with entry i's name (1 for an entry with none).
 */
size_t cat_family_size(size_t i);
/* The label of id, or NULL. */
const struct cat_label *cat_label(enum cat_id id);

/* Short name of a quantile: "p50", "p90", "p99", "max". */
const char *cat_quantile_name(enum cat_quantile q);

/* ---- values (cat_value.c) ----------------------------------------------- */

/* The rows of a source in an input: n is 0 when the input lacks them. */
struct cat_rowset {
	const char *base;
	size_t stride;
	uint32_t n;
};

void cat_rowset(unsigned int rows, const struct cat_input *in, struct cat_rowset *out);

static inline const void *cat_row(const struct cat_rowset *rs, uint32_t i)
{
	return rs->base + (size_t)i * rs->stride;
}

/* The integer value of a counter, gauge or info entry in a row. */
uint64_t cat_value(const struct cat_metric *m, const struct cat_input *in, const void *row);
/* A latency entry's series in a row (a zero series when absent). */
const struct shm_latency *cat_latency(const struct cat_metric *m, const struct cat_input *in,
				      const void *row);
/* A window quantile in ns; 0 when the window holds no sample. */
uint64_t cat_latency_quantile(const struct shm_latency *l, enum cat_quantile q);
/*
 * The value in the unit alerts compare (seconds for ns, the ratio, the
 * plain number); 0 with *v when it exists, -ENOENT when the row has none
 * (unknown, unseen, an empty window).
 */
int cat_alert_value(const struct cat_metric *m, enum cat_quantile q,
		    const struct cat_input *in, const void *row, double *v);
/* A text entry's value. */
int cat_text(const struct cat_metric *m, const struct cat_input *in, const void *row,
	     char *buf, size_t len);
/*
 * A label's value as text: 0, or -ENOENT when the row has none (then it
 * has no series).  *known is 0 for an unknown GPU (empty text, feed null).
 */
int cat_label_text(const struct cat_label *l, const struct cat_input *in, const void *row,
		   char *buf, size_t len, int *known);
/* A numeric label's value (CAT_L_U32, CAT_L_I32, CAT_L_GPU). */
int64_t cat_label_int(const struct cat_label *l, const void *row);

/*
 * The labels of a workload row (cat_ident.c), named as on
 * zernel_process_info so that a workload's histograms join its processes:
 * namespace and pod, pod_uid, container_id, slurm_job or
 * torchelastic_run_id, none for the node.  Label i (from 0): its name
 * and, in text, its value checked as an identity's texts are.  Returns 0,
 * or -1 past the last.
 */
int cat_workload_label(const struct shm_workload *w, unsigned int i, const char **name,
		       char *text, size_t len);

/* A latency's log-linear buckets in row (HIST_BUCKETS), or NULL when the row has none. */
const uint64_t *cat_fine_buckets(const struct cat_metric *m, const void *row);

/* The family of a process latency entry (its shm_proc.lat index), or -1. */
int cat_proc_latency_family(const struct cat_metric *m);

/* ---- the feed's layout (cat_feed.c) ------------------------------------- */

/* One key of a feed object: an entry's (a latency part), a label's or a nested object. */
struct cat_field {
	const struct cat_metric *m;	/* the entry; a label's info entry; NULL for a row label */
	const struct cat_label *label;	/* a label's key */
	unsigned char part;		/* a latency: CAT_PART_P50, _P99 or _COUNT */
	unsigned char child;		/* a nested object's enum cat_obj, or CAT_OBJ_COUNT */
	char key[48];
};

/* The keys of an object in feed order; *n receives the count. */
const struct cat_field *cat_feed_fields(enum cat_obj obj, size_t *n);
/* The field whose entry or label has id (part for a latency), or NULL. */
const struct cat_field *cat_feed_field(enum cat_id id, unsigned int part);
/* Its key, or "" when id is not in the feed. */
const char *cat_feed_key(enum cat_id id, unsigned int part);
/* Nanoseconds in one feed unit of a field (1e3 for _us); 1 for plain values. */
double cat_feed_ns(const struct cat_field *f);
/* The field is a number (integer or not), a bool, a text or nested. */
int cat_feed_is_number(const struct cat_field *f);

/* ---- the feed's JSON schema (cat_schema.c) ------------------------------ */

struct sbuf;

/* Appends docs/feed.schema.json: every object and key, from the catalog. */
int cat_schema_write(struct sbuf *out);

/* ---- the metrics reference (cat_doc.c) ---------------------------------- */

/* Appends docs/metrics.md: every Prometheus family and alert metric, from the catalog. */
int cat_doc_write(struct sbuf *out);

#endif /* ZERNEL_CATALOG_H */
