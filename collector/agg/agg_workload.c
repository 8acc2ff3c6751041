/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Workload histograms (struct shm_workload): every latency sample of a
 * process is counted a second time in its workload's row, the narrowest
 * group its identity names.  The rows live here, not in the exporter,
 * for two reasons:
 *   - they outlive their processes: a sum over the live processes would
 *     fall each time a DataLoader worker exits (every epoch, by default),
 *     and Prometheus reads a counter that falls as a reset;
 *   - they carry the log-linear buckets (1/64 to 1/32 of a value wide),
 *     which per process would cost 8 KiB a family in the segment.
 * Rows are kept packed (row i < n_workloads), so they are published as
 * they are.  A process takes its row at its first sample or when its
 * identity is read, whichever comes first.  A row with no process left
 * lingers SHM_WORKLOAD_LINGER_NS, then goes; a full table gives up the
 * row empty the longest, else counts an overflow (once a process) and
 * leaves the newcomer out of every row until a later identity read finds
 * one free.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "collector/agg/agg_impl.h"
#include "collector/agg/hist.h"
#include "common/idtext.h"

/* A row emptied by an exit, which has no clock: dated at the next publish. */
#define EMPTIED_UNDATED	UINT64_MAX

/*
 * A text of the identity that names a workload: set and readable (the
 * identity scan keeps only those, but a workload's label must never read
 * "unknown" for two different ones).
 */
static int names(const char *field, size_t len)
{
	size_t n = strnlen(field, len);

	return n > 0 && n < len && idtext_printable_utf8(field, n);
}

/* What tells one workload row from another (a row is 61 kB: keys are compared, not rows). */
struct wl_key {
	uint32_t kind;
	char namespace[SHM_ID_NAMESPACE_LEN];
	char name[SHM_ID_POD_LEN];
};

/* The workload p's identity names (shm_layout.h lists the kinds' texts). */
static void workload_key(const struct agg_proc *p, struct wl_key *k)
{
	const struct shm_identity *id = &p->id;

	memset(k, 0, sizeof(*k));
	if (!p->id_set_ns)
		return;		/* not read yet: the node's */
	if (names(id->pod, sizeof(id->pod)) && names(id->namespace, sizeof(id->namespace))) {
		k->kind = SHM_WORKLOAD_POD;
		snprintf(k->namespace, sizeof(k->namespace), "%s", id->namespace);
		snprintf(k->name, sizeof(k->name), "%s", id->pod);
	} else if (names(id->pod_uid, sizeof(id->pod_uid))) {
		k->kind = SHM_WORKLOAD_POD_UID;
		snprintf(k->name, sizeof(k->name), "%s", id->pod_uid);
	} else if (names(id->container_id, sizeof(id->container_id))) {
		k->kind = SHM_WORKLOAD_CONTAINER;
		snprintf(k->name, sizeof(k->name), "%s", id->container_id);
	} else if (id->slurm_job_id) {
		k->kind = SHM_WORKLOAD_SLURM_JOB;
		snprintf(k->name, sizeof(k->name), "%" PRIu64, id->slurm_job_id);
	} else if (names(id->run_id, sizeof(id->run_id))) {
		k->kind = SHM_WORKLOAD_RUN;
		snprintf(k->name, sizeof(k->name), "%s", id->run_id);
	}
}

static int is_workload(const struct shm_workload *w, const struct wl_key *k)
{
	return w->kind == k->kind && strcmp(w->name, k->name) == 0 &&
	       strcmp(w->namespace, k->namespace) == 0;
}

/* Row i goes; the last row takes its place (and its processes follow it). */
static void drop_row(struct agg *a, uint32_t i)
{
	uint32_t last = --a->n_workloads;

	if (i != last) {
		a->workloads[i] = a->workloads[last];
		a->wl_empty_since[i] = a->wl_empty_since[last];
		for (uint32_t s = 0; s < keyindex_top(&a->proc_idx); s++)
			if (keyindex_live(&a->proc_idx, s) && a->procs[s].workload == (int32_t)last)
				a->procs[s].workload = (int32_t)i;
	}
	memset(&a->workloads[last], 0, sizeof(a->workloads[last]));
	a->wl_empty_since[last] = 0;
}

/* A row for k: its own, a new one, or -1 when none can be had. */
static int32_t row_for(struct agg *a, const struct wl_key *k)
{
	uint32_t oldest = UINT32_MAX;
	struct shm_workload *w;

	for (uint32_t i = 0; i < a->n_workloads; i++)
		if (is_workload(&a->workloads[i], k))
			return (int32_t)i;
	if (a->n_workloads == SHM_WORKLOADS_FOR(a->opts.cap.procs)) {
		for (uint32_t i = 0; i < a->n_workloads; i++)
			if (!a->workloads[i].processes &&
			    (oldest == UINT32_MAX ||
			     a->wl_empty_since[i] < a->wl_empty_since[oldest]))
				oldest = i;
		if (oldest == UINT32_MAX)
			return -1;
		drop_row(a, oldest);
	}
	/* Rows past n_workloads are zero (drop_row clears the one it frees). */
	w = &a->workloads[a->n_workloads];
	w->kind = k->kind;
	memcpy(w->namespace, k->namespace, sizeof(w->namespace));
	memcpy(w->name, k->name, sizeof(w->name));
	a->wl_empty_since[a->n_workloads] = 0;
	return (int32_t)a->n_workloads++;
}

void agg_workload_leave(struct agg *a, struct agg_proc *p)
{
	struct shm_workload *w;

	if (p->workload < 0)
		return;
	w = &a->workloads[p->workload];
	if (w->processes && --w->processes == 0)
		a->wl_empty_since[p->workload] = EMPTIED_UNDATED;
	p->workload = -1;
}

void agg_workload_join(struct agg *a, struct agg_proc *p)
{
	struct wl_key k;
	int32_t r;

	workload_key(p, &k);
	if (p->workload >= 0 && is_workload(&a->workloads[p->workload], &k))
		return;
	agg_workload_leave(a, p);
	r = row_for(a, &k);
	if (r < 0) {
		if (!p->wl_refused)
			a->overflows[SHM_TABLE_WORKLOADS]++;
		p->wl_refused = 1;
		return;
	}
	a->workloads[r].processes++;
	a->wl_empty_since[r] = 0;
	p->workload = r;
	p->wl_refused = 0;
}

/* p's row for a sample, taken now if it has none yet (NULL: none to be had). */
static struct shm_workload_latency *series_of(struct agg *a, struct agg_proc *p,
					      enum shm_family family)
{
	if ((unsigned int)family >= SHM_FAMILY_COUNT)
		return NULL;
	if (p->workload < 0 && !p->wl_refused)
		agg_workload_join(a, p);
	return p->workload < 0 ? NULL : &a->workloads[p->workload].lat[family];
}

static void add_sat(uint64_t *x, uint64_t v)
{
	if (__builtin_add_overflow(*x, v, x))
		*x = UINT64_MAX;
}

void agg_workload_record(struct agg *a, struct agg_proc *p, enum shm_family family,
			 uint64_t value_ns)
{
	struct shm_workload_latency *l = series_of(a, p, family);

	if (!l)
		return;
	add_sat(&l->count, 1);
	add_sat(&l->sum_ns, value_ns);
	add_sat(&l->bucket[latency_bucket_of(value_ns)], 1);
	add_sat(&l->fine[hist_bucket_index(value_ns)], 1);
}

/*
 * A batch from an in-kernel histogram.  Its two sets of buckets are read
 * together from per-CPU values, so a sample being recorded as they are
 * read can be in one and not yet in the other: the log-linear counts are
 * brought to the batch's count at their top bucket (the next batch gives
 * the difference back), so that each set always adds up to count.
 */
void agg_workload_record_batch(struct agg *a, struct agg_proc *p, enum shm_family family,
			       const uint64_t *hist_counts, const uint64_t *prom_counts,
			       uint64_t count, uint64_t sum_ns, uint64_t max_ns)
{
	struct shm_workload_latency *l = series_of(a, p, family);
	uint64_t n = 0;
	size_t top = hist_bucket_index(max_ns);

	if (!l)
		return;
	add_sat(&l->count, count);
	add_sat(&l->sum_ns, sum_ns);
	for (unsigned int i = 0; i < SHM_LAT_BUCKETS; i++)
		add_sat(&l->bucket[i], prom_counts[i]);
	for (size_t i = 0; hist_counts && i < HIST_BUCKETS; i++) {
		if (!hist_counts[i])
			continue;
		add_sat(&l->fine[i], hist_counts[i]);
		add_sat(&n, hist_counts[i]);
		top = i;
	}
	if (n < count) {
		add_sat(&l->fine[top], count - n);
		return;
	}
	/* More than count: taken back from the top down, never below zero. */
	for (size_t i = top + 1; n > count && i-- > 0;) {
		uint64_t take = l->fine[i] < n - count ? l->fine[i] : n - count;

		l->fine[i] -= take;
		n -= take;
	}
}

uint32_t agg_workload_stage(struct agg *a, uint64_t now_ns)
{
	for (uint32_t i = 0; i < a->n_workloads;) {
		uint64_t *since = &a->wl_empty_since[i];

		if (a->workloads[i].processes || !*since) {
			i++;
			continue;
		}
		if (*since == EMPTIED_UNDATED)
			*since = now_ns;
		if (now_ns >= *since && now_ns - *since >= SHM_WORKLOAD_LINGER_NS)
			drop_row(a, i);		/* row i is now another: look again */
		else
			i++;
	}
	return a->n_workloads;
}
