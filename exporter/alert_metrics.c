/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The alertable metrics (see alert_metrics.h).  Unprivileged; reads only a
 * private, validated snapshot.  The catalogue is built once, from the
 * segment's family and NCCL op tables, so a new family there needs one
 * line here.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "exporter/alert_metrics.h"
#include "common/utf8.h"
#include "exporter/text.h"

enum metric_kind {
	MK_GPU_RATIO,
	MK_GPU_USED,
	MK_GPU_TOTAL,
	MK_NCCL,	/* sub: 0 duration, 1 wait */
	MK_NODE,	/* sub: enum shm_family */
	MK_PROC,	/* sub: enum shm_family */
	MK_UP,
	MK_AGE,
};

enum quantile { Q_P50, Q_P90, Q_P99, Q_MAX, Q_COUNT };

struct metric {
	char name[ALERT_METRIC_NAME_MAX];
	enum metric_kind kind;
	unsigned int sub;
	enum quantile q;
};

/* Names of the families as rules spell them (runq_delay reads better this way). */
static const char *const family_names[SHM_FAMILY_COUNT] = {
	"cuda_launch", "cuda_graph_launch", "dataloader_wait",
	"futex_wait", "barrier_wait", "sched_runqueue",
};
static const char *const q_names[Q_COUNT] = { "p50", "p90", "p99", "max" };

#define N_METRICS (3 + 2 * Q_COUNT + 2 * SHM_FAMILY_COUNT * Q_COUNT + 2)

static struct metric metrics[N_METRICS];
static unsigned int n_metrics;
static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;

static const char *const labels_none[] = { NULL };
static const char *const labels_gpu[] = { "gpu_id" };
static const char *const labels_op[] = { "op" };
static const char *const labels_pid[] = { "pid", "comm" };

static void add(enum metric_kind kind, unsigned int sub, enum quantile q, const char *fmt,
		const char *a, const char *b)
{
	struct metric *m = &metrics[n_metrics++];

	snprintf(m->name, sizeof(m->name), fmt, a, b);
	m->kind = kind;
	m->sub = sub;
	m->q = q;
}

static void metrics_init(void)
{
	add(MK_GPU_RATIO, 0, 0, "gpu_memory_used_ratio%s%s", "", "");
	add(MK_GPU_USED, 0, 0, "gpu_memory_used_bytes%s%s", "", "");
	add(MK_GPU_TOTAL, 0, 0, "gpu_memory_total_bytes%s%s", "", "");
	for (unsigned int q = 0; q < Q_COUNT; q++) {
		add(MK_NCCL, 0, q, "nccl_collective_%s_seconds%s", q_names[q], "");
		add(MK_NCCL, 1, q, "nccl_wait_%s_seconds%s", q_names[q], "");
	}
	for (unsigned int f = 0; f < SHM_FAMILY_COUNT; f++) {
		for (unsigned int q = 0; q < Q_COUNT; q++) {
			add(MK_NODE, f, q, "%s_%s_seconds", family_names[f], q_names[q]);
			add(MK_PROC, f, q, "process_%s_%s_seconds", family_names[f], q_names[q]);
		}
	}
	add(MK_UP, 0, 0, "collector_up%s%s", "", "");
	add(MK_AGE, 0, 0, "collector_publish_age_seconds%s%s", "", "");
}

static const struct metric *get(unsigned int id)
{
	pthread_once(&metrics_once, metrics_init);
	return id < n_metrics ? &metrics[id] : NULL;
}

unsigned int alert_metric_count(void)
{
	pthread_once(&metrics_once, metrics_init);
	return n_metrics;
}

const char *alert_metric_name(unsigned int id)
{
	const struct metric *m = get(id);

	return m ? m->name : NULL;
}

int alert_metric_lookup(const char *name, unsigned int *id)
{
	for (unsigned int i = 0; i < alert_metric_count(); i++) {
		if (strcmp(metrics[i].name, name) == 0) {
			*id = i;
			return 0;
		}
	}
	return -ENOENT;
}

const char *const *alert_metric_labels(unsigned int id, unsigned int *n)
{
	const struct metric *m = get(id);

	*n = 0;
	if (!m)
		return labels_none;
	switch (m->kind) {
	case MK_GPU_RATIO:
	case MK_GPU_USED:
	case MK_GPU_TOTAL:
		*n = 1;
		return labels_gpu;
	case MK_NCCL:
		*n = 1;
		return labels_op;
	case MK_PROC:
		*n = 2;
		return labels_pid;
	default:
		return labels_none;
	}
}

void alert_metric_range(unsigned int id, double *min, double *max)
{
	const struct metric *m = get(id);

	*min = 0.0;
	*max = INFINITY;
	if (m && (m->kind == MK_GPU_RATIO || m->kind == MK_UP))
		*max = 1.0;
}

const char *alert_metric_help(unsigned int id)
{
	const struct metric *m = get(id);

	if (!m)
		return "";
	switch (m->kind) {
	case MK_GPU_RATIO:	return "GPU memory used / total per GPU (0..1)";
	case MK_GPU_USED:	return "GPU memory used per GPU, bytes";
	case MK_GPU_TOTAL:	return "GPU memory total per GPU, bytes";
	case MK_NCCL:		return "NCCL latency per op over the summary window, seconds";
	case MK_NODE:		return "latency of every watched process over the summary window, seconds";
	case MK_PROC:		return "latency per process over the summary window, seconds";
	case MK_UP:		return "1 while the collector's segment is fresh, else 0";
	case MK_AGE:		return "seconds since the collector's last publish";
	}
	return "";
}

void alert_metric_list(char *buf, size_t len)
{
	size_t o = 0;

	/* The catalogue in its compact form: every name is one of these shapes. */
	o += (size_t)snprintf(buf, len, "gpu_memory_used_ratio, gpu_memory_used_bytes, "
			      "gpu_memory_total_bytes, nccl_collective_Q_seconds, "
			      "nccl_wait_Q_seconds, FAMILY_Q_seconds, process_FAMILY_Q_seconds, "
			      "collector_up, collector_publish_age_seconds; Q: ");
	for (unsigned int q = 0; q < Q_COUNT && o < len; q++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", q ? "|" : "", q_names[q]);
	for (unsigned int f = 0; f < SHM_FAMILY_COUNT && o < len; f++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", f ? "|" : "; FAMILY: ",
				      family_names[f]);
}

static int quantile_of(const struct shm_latency *l, enum quantile q, double *out)
{
	uint64_t ns;

	if (!l->window_count)
		return 0;
	switch (q) {
	case Q_P50: ns = l->window_p50_ns; break;
	case Q_P90: ns = l->window_p90_ns; break;
	case Q_P99: ns = l->window_p99_ns; break;
	default:    ns = l->window_max_ns; break;
	}
	*out = (double)ns / 1e9;
	return 1;
}

static void set_label(struct alert_series *s, unsigned int i, const char *name, const char *v)
{
	s->label_name[i] = name;
	snprintf(s->label_value[i], sizeof(s->label_value[i]), "%s", v);
}

/* Device used per GPU: the sum of the processes' rows on that GPU. */
static int collect_gpu(const struct metric *m, const struct shm_snapshot *snap,
		       alert_series_fn fn, void *arg)
{
	const struct shm_gpu_mem *mem;
	const struct shm_gpu *gpus;
	uint32_t nm = 0, ng = 0;
	char id[16];
	int r;

	mem = shm_snapshot_gpu_mem(snap, &nm);
	gpus = shm_snapshot_gpus(snap, &ng);
	if (!gpus)
		return 0;
	for (uint32_t g = 0; g < ng; g++) {
		struct alert_series s = { .n_labels = 1 };
		uint64_t used = 0;

		for (uint32_t i = 0; mem && i < nm; i++)
			if (mem[i].gpu_id == gpus[g].gpu_id)
				used += mem[i].used_bytes;
		if (m->kind != MK_GPU_USED && !gpus[g].total_bytes)
			continue;
		if (m->kind == MK_GPU_RATIO)
			s.value = (double)used / (double)gpus[g].total_bytes;
		else if (m->kind == MK_GPU_USED)
			s.value = (double)used;
		else
			s.value = (double)gpus[g].total_bytes;
		snprintf(id, sizeof(id), "%" PRIu32, gpus[g].gpu_id);
		set_label(&s, 0, "gpu_id", id);
		r = fn(arg, &s);
		if (r)
			return r;
	}
	return 0;
}

static int collect_nccl(const struct metric *m, const struct shm_snapshot *snap,
			alert_series_fn fn, void *arg)
{
	const struct shm_nccl_op *ops;
	uint32_t n = 0;
	int r;

	ops = shm_snapshot_nccl_ops(snap, &n);
	for (uint32_t i = 0; ops && i < n; i++) {
		struct alert_series s = { .n_labels = 1 };
		const char *op = shm_nccl_op_name(ops[i].op);

		if (!op || !quantile_of(m->sub ? &ops[i].wait : &ops[i].duration, m->q, &s.value))
			continue;
		set_label(&s, 0, "op", op);
		r = fn(arg, &s);
		if (r)
			return r;
	}
	return 0;
}

static int collect_proc(const struct metric *m, const struct shm_snapshot *snap,
			alert_series_fn fn, void *arg)
{
	const struct shm_proc *p;
	char comm[3 * SHM_COMM_LEN + 1], pid[16];
	uint32_t n = 0;
	int r;

	p = shm_snapshot_procs(snap, &n);
	for (uint32_t i = 0; p && i < n; i++) {
		struct alert_series s = { .n_labels = 2 };

		if (!quantile_of(&p[i].lat[m->sub], m->q, &s.value))
			continue;
		/* Any local user names a process: sanitise before it becomes a label. */
		utf8_sanitize(comm, sizeof(comm), p[i].comm, SHM_COMM_LEN);
		snprintf(pid, sizeof(pid), "%" PRIu32, p[i].pid);
		set_label(&s, 0, "pid", pid);
		set_label(&s, 1, "comm", comm);
		r = fn(arg, &s);
		if (r)
			return r;
	}
	return 0;
}

int alert_metric_collect(unsigned int id, const struct shm_snapshot *snap,
			 uint64_t age_ns, alert_series_fn fn, void *arg)
{
	const struct metric *m = get(id);
	struct alert_series s = { .n_labels = 0 };

	if (!m)
		return -EINVAL;
	switch (m->kind) {
	case MK_UP:
		s.value = snap ? 1.0 : 0.0;
		return fn(arg, &s);
	case MK_AGE:
		if (!age_ns)
			return 0;
		s.value = (double)age_ns / 1e9;
		return fn(arg, &s);
	default:
		break;
	}
	if (!snap)
		return 0;
	switch (m->kind) {
	case MK_GPU_RATIO:
	case MK_GPU_USED:
	case MK_GPU_TOTAL:
		return collect_gpu(m, snap, fn, arg);
	case MK_NCCL:
		return collect_nccl(m, snap, fn, arg);
	case MK_NODE:
		if (!quantile_of(&snap->hdr->node[m->sub], m->q, &s.value))
			return 0;
		return fn(arg, &s);
	case MK_PROC:
		return collect_proc(m, snap, fn, arg);
	default:
		return 0;
	}
}
