/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Validation of a private copy of the segment.  Runs in the unprivileged
 * exporter on bytes it does not trust: nothing here dereferences a row before
 * the table that holds it has been checked against the copy's size.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/shm_reader.h"

static int fail(char *reason, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *reason, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (reason && len) {
		va_start(ap, fmt);
		vsnprintf(reason, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const uint32_t table_entry_size[SHM_TABLE_COUNT] = {
	sizeof(struct shm_proc), sizeof(struct shm_gpu_mem), sizeof(struct shm_gpu),
	sizeof(struct shm_nccl_op), sizeof(struct shm_nccl_comm), sizeof(struct shm_identity),
	sizeof(struct shm_py_proc), sizeof(struct shm_stall_site), sizeof(struct shm_proc_recent),
	sizeof(struct shm_trace_event), sizeof(struct shm_workload),
};

static const uint32_t table_limit[SHM_TABLE_COUNT] = {
	SHM_LIMIT_PROCS, SHM_LIMIT_GPU_MEM, SHM_LIMIT_GPUS,
	SHM_NCCL_OP_COUNT, SHM_LIMIT_NCCL_COMMS, SHM_LIMIT_PROCS,
	SHM_PY_PROCS, SHM_STALL_SITES, SHM_LIMIT_PROCS, SHM_TRACE_EVENTS, SHM_WORKLOADS,
};

/*
 * The invariants the collector guarantees for every series: buckets add up
 * to count (each sample lands in exactly one bucket) and the window
 * quantiles come from one histogram, so they are ordered and bounded by its
 * maximum.  Says what is wrong in bad; the caller names the series, only
 * on failure, since a full segment holds thousands of series.
 */
/* The collector's own series: the window is part of the whole, and empty means zero. */
static int window_fits(const struct shm_latency *l)
{
	if (l->window_count > l->count || (l->count == 0 && l->sum_ns != 0))
		return 0;
	return l->window_count != 0 ||
	       (l->window_p50_ns | l->window_p90_ns | l->window_p99_ns | l->window_max_ns) == 0;
}

static int check_latency(const struct shm_latency *l, char *bad, size_t len)
{
	uint64_t sum = 0;

	for (uint32_t b = 0; b < SHM_LAT_BUCKETS; b++) {
		if (__builtin_add_overflow(sum, l->bucket[b], &sum))
			return fail(bad, len, "bucket counts overflow");
	}
	if (sum != l->count)
		return fail(bad, len, "buckets add up to %llu but count is %llu",
			    (unsigned long long)sum, (unsigned long long)l->count);
	if (l->window_p50_ns > l->window_p90_ns || l->window_p90_ns > l->window_p99_ns ||
	    l->window_p99_ns > l->window_max_ns)
		return fail(bad, len, "window quantiles out of order "
			    "(p50 %llu, p90 %llu, p99 %llu, max %llu)",
			    (unsigned long long)l->window_p50_ns,
			    (unsigned long long)l->window_p90_ns,
			    (unsigned long long)l->window_p99_ns,
			    (unsigned long long)l->window_max_ns);
	return 0;
}

/* The sum of HIST_BUCKETS log-linear counts into *sum; -1 when it overflows. */
static int fine_sum(const uint64_t *fine, uint64_t *sum)
{
	*sum = 0;
	for (uint32_t b = 0; b < HIST_BUCKETS; b++)
		if (__builtin_add_overflow(*sum, fine[b], sum))
			return -1;
	return 0;
}

/* A series' log-linear buckets where they may be absent: all zero, or adding up to count. */
static int check_fine_or_none(const uint64_t *fine, uint64_t count, char *bad, size_t len)
{
	uint64_t sum;

	if (fine_sum(fine, &sum) < 0)
		return fail(bad, len, "log-linear bucket counts overflow");
	if (sum && sum != count)
		return fail(bad, len, "log-linear buckets add up to %llu but count is %llu",
			    (unsigned long long)sum, (unsigned long long)count);
	return 0;
}

/* Both sets of a workload's buckets add up to its count. */
static int check_workload_latency(const struct shm_workload_latency *l, char *bad, size_t len)
{
	uint64_t sum = 0, fine;

	for (uint32_t b = 0; b < SHM_LAT_BUCKETS; b++)
		if (__builtin_add_overflow(sum, l->bucket[b], &sum))
			return fail(bad, len, "bucket counts overflow");
	if (fine_sum(l->fine, &fine) < 0)
		return fail(bad, len, "log-linear bucket counts overflow");
	if (sum != l->count || fine != l->count)
		return fail(bad, len, "buckets add up to %llu and %llu but count is %llu",
			    (unsigned long long)sum, (unsigned long long)fine,
			    (unsigned long long)l->count);
	if (l->count == 0 && l->sum_ns != 0)
		return fail(bad, len, "a sum without samples");
	return 0;
}

static int check_header(const struct shm_header_fields *h, size_t size,
			char *reason, size_t len)
{
	if (h->magic != SHM_MAGIC)
		return fail(reason, len, "bad magic 0x%016llx (not a Zernel segment)",
			    (unsigned long long)h->magic);
	if (h->layout_version != SHM_LAYOUT_VERSION)
		return fail(reason, len, "layout version %u, this reader knows %u",
			    h->layout_version, SHM_LAYOUT_VERSION);
	if (h->header_size != SHM_HEADER_SIZE)
		return fail(reason, len, "header size %u, expected %u",
			    h->header_size, SHM_HEADER_SIZE);
	if (h->total_size != size)
		return fail(reason, len, "header says %llu bytes but the segment has %zu",
			    (unsigned long long)h->total_size, size);
	if (h->mode != SHM_MODE_BPF && h->mode != SHM_MODE_SIMULATE)
		return fail(reason, len, "unknown mode %u", h->mode);
	return 0;
}

/* Places every table inside the segment, past the header, apart from the others. */
static int check_tables(const struct shm_header_fields *h, size_t size,
			char *reason, size_t len)
{
	uint64_t start[SHM_TABLE_COUNT], end[SHM_TABLE_COUNT];

	for (int i = 0; i < SHM_TABLE_COUNT; i++) {
		const struct shm_table *t = &h->table[i];
		const char *n = shm_table_name(i);

		if (t->entry_size != table_entry_size[i])
			return fail(reason, len, "table %s: entry size %u, expected %u",
				    n, t->entry_size, table_entry_size[i]);
		if (i == SHM_TABLE_NCCL_OPS && t->capacity != SHM_NCCL_OP_COUNT)
			return fail(reason, len, "table %s: capacity %u, expected %u",
				    n, t->capacity, SHM_NCCL_OP_COUNT);
		if (t->capacity > table_limit[i])
			return fail(reason, len, "table %s: capacity %u exceeds the limit %u",
				    n, t->capacity, table_limit[i]);
		if (t->count > t->capacity)
			return fail(reason, len, "table %s: count %u exceeds capacity %u",
				    n, t->count, t->capacity);
		if (t->offset % SHM_TABLE_ALIGN)
			return fail(reason, len, "table %s: offset %llu not aligned to %u",
				    n, (unsigned long long)t->offset, SHM_TABLE_ALIGN);
		if (t->offset < SHM_HEADER_SIZE)
			return fail(reason, len, "table %s: offset %llu overlaps the header",
				    n, (unsigned long long)t->offset);
		/* Bounded above: no overflow once entry size and capacity are known. */
		start[i] = t->offset;
		end[i] = (uint64_t)t->entry_size * t->capacity;
		if (t->offset > size || end[i] > size - t->offset)
			return fail(reason, len, "table %s: %llu bytes at offset %llu "
				    "run past the %zu-byte segment", n,
				    (unsigned long long)end[i],
				    (unsigned long long)t->offset, size);
		end[i] += start[i];
	}
	for (int i = 0; i < SHM_TABLE_COUNT; i++) {
		for (int j = i + 1; j < SHM_TABLE_COUNT; j++) {
			if (start[i] == end[i] || start[j] == end[j])
				continue;
			if (start[i] < end[j] && start[j] < end[i])
				return fail(reason, len, "tables %s and %s overlap",
					    shm_table_name(i), shm_table_name(j));
		}
	}
	return 0;
}

static const void *rows(const void *buf, const struct shm_header_fields *h,
			enum shm_table_id id)
{
	return (const char *)buf + h->table[id].offset;
}

/*
 * The Python, recent and trace rows.  Their numbers come with bounds a
 * real row keeps (times no later than the heartbeat, durations within
 * what their window allows, counts no larger than their time), their
 * texts are printable and NUL-padded, and every pid is one of the procs
 * table's: so a corrupted word is told from a real row most of the time.
 */
#define RECENT_MAX_THREADS	4096u	/* waits of more threads than this: not plausible */
/* Events stamped after the heartbeat (the simulator's end in the step ahead): at most this. */
#define LATER_THAN_HEARTBEAT_NS	10000000000ull

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

static int known_pid(const uint32_t *pids, uint32_t n, uint32_t pid)
{
	return bsearch(&pid, pids, n, sizeof(*pids), cmp_u32) != NULL;
}

/* NUL-terminated within len, printable before, zero after. */
static int clean_text(const char *t, size_t len)
{
	size_t n = strnlen(t, len);

	if (n == len)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)t[i] < 32 || (unsigned char)t[i] > 126)
			return 0;
	for (size_t i = n; i < len; i++)
		if (t[i])
			return 0;
	return 1;
}

static int check_sites(const void *buf, const struct shm_header_fields *h, const uint32_t *pids,
		       uint32_t n_pids, char *reason, size_t len)
{
	const struct shm_stall_site *site = rows(buf, h, SHM_TABLE_STALL_SITES);
	const struct shm_py_proc *py = rows(buf, h, SHM_TABLE_PY_PROCS);

	for (uint32_t i = 0; i < h->table[SHM_TABLE_PY_PROCS].count; i++) {
		if (py[i].status > SHM_PY_MAX_STATUS || py[i].major > 255 || py[i].minor > 255 ||
		    !known_pid(pids, n_pids, py[i].pid) || py[i].unsampled_stalls > py[i].unsampled_ns)
			return fail(reason, len, "py_procs[%u] (pid %u): not a real row", i, py[i].pid);
	}
	for (uint32_t i = 0; i < h->table[SHM_TABLE_STALL_SITES].count; i++) {
		const struct shm_stall_site *r = &site[i];

		if (r->state >= SHM_STALL_STATE_COUNT)
			return fail(reason, len, "stall_sites[%u] (pid %u): unknown state %u",
				    i, r->pid, r->state);
		if (r->max_ns > r->total_ns)
			return fail(reason, len, "stall_sites[%u] (pid %u): longest stall "
				    "above their total", i, r->pid);
		if (!known_pid(pids, n_pids, r->pid) || r->stalls == 0 || r->stalls > r->total_ns ||
		    r->last_mono_ns > h->heartbeat_mono_ns + LATER_THAN_HEARTBEAT_NS ||
		    r->native_stack < -1 ||
		    (r->flags & ~SHM_SITE_TRUNCATED) ||
		    !clean_text(r->file, sizeof(r->file)) || !clean_text(r->func, sizeof(r->func)) ||
		    !clean_text(r->leaf_file, sizeof(r->leaf_file)) ||
		    !clean_text(r->leaf_func, sizeof(r->leaf_func)))
			return fail(reason, len, "stall_sites[%u] (pid %u): not a real row", i, r->pid);
	}
	return 0;
}

static int check_recent(const void *buf, const struct shm_header_fields *h, const uint32_t *pids,
			uint32_t n_pids, char *reason, size_t len)
{
	const struct shm_proc_recent *r = rows(buf, h, SHM_TABLE_PROC_RECENT);

	for (uint32_t i = 0; i < h->table[SHM_TABLE_PROC_RECENT].count; i++) {
		uint64_t c = r[i].covered_ns, most = c * RECENT_MAX_THREADS;
		const uint64_t waits[] = { r[i].input_wait_ns, r[i].futex_wait_ns,
					   r[i].barrier_wait_ns, r[i].collective_wait_ns, r[i].runq_ns,
					   r[i].blocked_ns, r[i].preempted_ns };
		uint64_t stalls = 0;
		int bad = !known_pid(pids, n_pids, r[i].pid) || r[i].reserved0 ||
			  c > h->window_ns + h->window_ns / 4 ||
			  r[i].involuntary_switches > c || r[i].failed_allocs > c;

		for (size_t k = 0; k < sizeof(waits) / sizeof(waits[0]); k++)
			bad |= waits[k] > most;
		for (uint32_t st = 0; st < SHM_STALL_STATE_COUNT; st++) {
			/* One thread's: a stall that began before the window counts whole. */
			bad |= r[i].stall_ns[st] > c + h->window_ns;
			stalls += r[i].stall_ns[st];
		}
		bad |= r[i].stall_sites_ns > stalls;
		for (uint32_t st = 0; st < SHM_STATE_COUNT; st++)
			bad |= r[i].thread_state_ns[st] > most;
		if (bad)
			return fail(reason, len, "proc_recent[%u] (pid %u): not a real row", i,
				    r[i].pid);
	}
	return 0;
}

static int check_trace(const void *buf, const struct shm_header_fields *h, const uint32_t *pids,
		       uint32_t n_pids, char *reason, size_t len)
{
	const struct shm_trace_event *ev = rows(buf, h, SHM_TABLE_TRACE);

	for (uint32_t i = 0; i < h->table[SHM_TABLE_TRACE].count; i++) {
		const struct shm_trace_event *e = &ev[i];
		uint32_t details = e->kind == SHM_TRACE_STALL ? SHM_STALL_STATE_COUNT
							      : SHM_NCCL_OP_COUNT;

		if (e->kind >= SHM_TRACE_KIND_COUNT)
			return fail(reason, len, "trace[%u] (pid %u): unknown kind %u", i,
				    e->pid, e->kind);
		if (e->dur_ns > e->end_mono_ns ||
		    e->end_mono_ns > h->heartbeat_mono_ns + LATER_THAN_HEARTBEAT_NS ||
		    e->detail >= details || e->tid == 0 || !known_pid(pids, n_pids, e->pid) ||
		    !clean_text(e->name, sizeof(e->name)))
			return fail(reason, len, "trace[%u] (pid %u): not a real event", i, e->pid);
	}
	return 0;
}

static int check_python(const void *buf, const struct shm_header_fields *h,
			char *reason, size_t len)
{
	const struct shm_proc *procs = rows(buf, h, SHM_TABLE_PROCS);
	uint32_t n = h->table[SHM_TABLE_PROCS].count;
	uint32_t *pids = malloc((n ? n : 1) * sizeof(*pids));
	int err;

	if (!pids)
		return fail(reason, len, "no memory to check the Python rows");
	for (uint32_t i = 0; i < n; i++)
		pids[i] = procs[i].pid;
	qsort(pids, n, sizeof(*pids), cmp_u32);
	err = check_sites(buf, h, pids, n, reason, len);
	if (!err)
		err = check_recent(buf, h, pids, n, reason, len);
	if (!err)
		err = check_trace(buf, h, pids, n, reason, len);
	free(pids);
	return err;
}

/* A row's identity: what names its series. */
struct row_key {
	uint64_t a, b, c;
};

static int cmp_key(const void *x, const void *y)
{
	const struct row_key *p = x, *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b < q->b ? -1 : 1;
	return p->c < q->c ? -1 : p->c > q->c;
}

/*
 * Two rows with one identity would print the same series twice, and
 * Prometheus rejects a scrape with a duplicate series whole: the collector
 * keeps one row per identity, so the copy must too.  Returns the index of
 * a row whose identity repeats, or -1.
 */
static long find_duplicate(const struct shm_header_fields *h, const void *buf,
			   enum shm_table_id id, struct row_key *keys)
{
	const char *rows = (const char *)buf + h->table[id].offset;
	uint32_t n = h->table[id].count;

	for (uint32_t i = 0; i < n; i++) {
		const char *r = rows + (size_t)i * h->table[id].entry_size;

		switch (id) {
		case SHM_TABLE_PROCS:
			keys[i] = (struct row_key){ ((const struct shm_proc *)r)->pid, 0, 0 };
			break;
		case SHM_TABLE_GPU_MEM:
			keys[i] = (struct row_key){ ((const struct shm_gpu_mem *)r)->pid,
						    ((const struct shm_gpu_mem *)r)->gpu_id, 0 };
			break;
		case SHM_TABLE_GPUS:
			keys[i] = (struct row_key){ ((const struct shm_gpu *)r)->gpu_id, 0, 0 };
			break;
		case SHM_TABLE_NCCL_COMMS:
			/* Its series' labels: one process may hold several ranks of one. */
			keys[i] = (struct row_key){ ((const struct shm_nccl_comm *)r)->pid,
						    ((const struct shm_nccl_comm *)r)->comm_id,
						    (uint32_t)((const struct shm_nccl_comm *)r)->rank };
			break;
		default:
			return -1;	/* nccl_ops: row i is op i, checked apart */
		}
	}
	qsort(keys, n, sizeof(*keys), cmp_key);
	for (uint32_t i = 1; i < n; i++)
		if (cmp_key(&keys[i - 1], &keys[i]) == 0)
			return (long)i;
	return -1;
}

static int check_unique(const void *buf, const struct shm_header_fields *h,
			char *reason, size_t len)
{
	uint32_t most = 0;
	struct row_key *keys;
	int err = 0;

	for (int i = 0; i < SHM_TABLE_COUNT; i++)
		most = h->table[i].count > most ? h->table[i].count : most;
	keys = malloc((most ? most : 1) * sizeof(*keys));
	if (!keys)
		return fail(reason, len, "no memory to check row identities");
	for (int i = 0; i < SHM_TABLE_COUNT && !err; i++) {
		if (find_duplicate(h, buf, (enum shm_table_id)i, keys) >= 0)
			err = fail(reason, len, "table %s: two rows with the same identity",
				   shm_table_name(i));
	}
	free(keys);
	return err;
}

/* 1 when f[0..n) is a string terminated inside it with only zeros after. */
static int padded_text(const char *f, size_t n)
{
	size_t l = strnlen(f, n);

	if (l == n)
		return 0;
	for (size_t i = l; i < n; i++)
		if (f[i])
			return 0;
	return 1;
}

static int rank_ok(int32_t r)
{
	return r >= -1 && r <= SHM_ID_RANK_MAX;
}

/* The name of the first identity text that is not padded_text, or NULL. */
static const char *identity_bad_text(const struct shm_identity *id)
{
#define TEXT(field)	{ #field, id->field, sizeof(id->field) }
	const struct { const char *name; const char *f; size_t n; } t[] = {
		TEXT(slurm_step), TEXT(container_id), TEXT(pod_uid), TEXT(namespace),
		TEXT(pod), TEXT(container), TEXT(run_id),
	};
#undef TEXT

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!padded_text(t[i].f, t[i].n))
			return t[i].name;
	return NULL;
}

/*
 * The driver's figure of a memory row: known (a value the driver gave,
 * never NVML's "not available") or 0; a row of the driver's figure alone
 * holds nothing the probes counted and names its GPU from the driver's list.
 */
static int check_driver_figure(const struct shm_gpu_mem *m, char *bad, size_t len)
{
	int known = (m->flags & SHM_GPU_MEM_F_DRIVER) != 0;

	if (!known && m->driver_used_bytes)
		return fail(bad, len, "driver figure %llu without its flag",
			    (unsigned long long)m->driver_used_bytes);
	if (known && m->driver_used_bytes == UINT64_MAX)
		return fail(bad, len, "driver figure is NVML's \"not available\"");
	if ((m->gpu_map == SHM_GPU_MAP_DRIVER) != !!(m->flags & SHM_GPU_MEM_F_DRIVER_ROW))
		return fail(bad, len, "gpu map %u with flags 0x%x", m->gpu_map, m->flags);
	if (!(m->flags & SHM_GPU_MEM_F_DRIVER_ROW))
		return 0;
	if (!known || (m->flags & SHM_GPU_MEM_F_FROM_START) ||
	    (m->used_bytes | m->peak_bytes | m->alloc_calls | m->free_calls | m->failed_calls))
		return fail(bad, len, "a row of the driver's figure alone with flags 0x%x "
			    "or probe counts", m->flags);
	return 0;
}

static int check_rows(const void *buf, const struct shm_header_fields *h,
		      char *reason, size_t len)
{
	const struct shm_proc *procs = rows(buf, h, SHM_TABLE_PROCS);
	const struct shm_gpu_mem *mem = rows(buf, h, SHM_TABLE_GPU_MEM);
	const struct shm_gpu *gpus = rows(buf, h, SHM_TABLE_GPUS);
	const struct shm_nccl_op *ops = rows(buf, h, SHM_TABLE_NCCL_OPS);
	const struct shm_nccl_comm *comms = rows(buf, h, SHM_TABLE_NCCL_COMMS);
	const struct shm_identity *ids = rows(buf, h, SHM_TABLE_IDENTITY);
	char bad[160];

	for (uint32_t f = 0; f < SHM_FAMILY_COUNT; f++) {
		if (check_latency(&h->node[f], bad, sizeof(bad)) < 0)
			return fail(reason, len, "node %s: %s", shm_family_name(f), bad);
	}
	/* comm is whatever a process named itself: bounded by the reader, never judged. */
	for (uint32_t i = 0; i < h->table[SHM_TABLE_PROCS].count; i++) {
		const struct shm_proc *p = &procs[i];

		if (p->watch_reason & ~SHM_WATCH_ALL_BITS)
			return fail(reason, len, "procs[%u] (pid %u): unknown watch reason 0x%x",
				    i, p->pid, p->watch_reason);
		for (uint32_t f = 0; f < SHM_FAMILY_COUNT; f++) {
			if (check_latency(&p->lat[f], bad, sizeof(bad)) < 0)
				return fail(reason, len, "procs[%u] (pid %u) %s: %s", i,
					    p->pid, shm_family_name(f), bad);
		}
	}
	/*
	 * Identity: what the collector decides (pid, enums, ranks) and the
	 * texts' shape (terminated inside the field, zero after); their
	 * content is a workload's choice, judged where it is read (cat_ident.c).
	 */
	if (h->table[SHM_TABLE_IDENTITY].count > h->table[SHM_TABLE_PROCS].count)
		return fail(reason, len, "identity: %u rows for %u processes",
			    h->table[SHM_TABLE_IDENTITY].count, h->table[SHM_TABLE_PROCS].count);
	for (uint32_t i = 0; i < h->table[SHM_TABLE_IDENTITY].count; i++) {
		const char *bad_text = identity_bad_text(&ids[i]);

		if (ids[i].pid != procs[i].pid)
			return fail(reason, len, "identity[%u]: pid %u, procs[%u] is pid %u",
				    i, ids[i].pid, i, procs[i].pid);
		if (ids[i].runtime > SHM_ID_RUNTIME_MAX || (ids[i].flags & ~SHM_ID_F_ALL_BITS) ||
		    ids[i].reserved0)
			return fail(reason, len, "identity[%u] (pid %u): unknown runtime %u, flags "
				    "0x%x or reserved bits", i, ids[i].pid, ids[i].runtime, ids[i].flags);
		if (!rank_ok(ids[i].rank) || !rank_ok(ids[i].local_rank) ||
		    !rank_ok(ids[i].world_size) || !rank_ok(ids[i].group_rank))
			return fail(reason, len, "identity[%u] (pid %u): a rank outside -1..%d",
				    i, ids[i].pid, SHM_ID_RANK_MAX);
		if (ids[i].slurm_job_id > SHM_ID_SLURM_JOB_MAX)
			return fail(reason, len, "identity[%u] (pid %u): Slurm job %llu", i,
				    ids[i].pid, (unsigned long long)ids[i].slurm_job_id);
		if (bad_text)
			return fail(reason, len, "identity[%u] (pid %u): %s is not a terminated, "
				    "zero-padded text", i, ids[i].pid, bad_text);
	}
	for (uint32_t i = 0; i < h->table[SHM_TABLE_GPU_MEM].count; i++) {
		int driver_row = (mem[i].flags & SHM_GPU_MEM_F_DRIVER_ROW) != 0;

		if (mem[i].reserved0 ||
		    (driver_row ? mem[i].cuda_device != SHM_GPU_UNKNOWN
				: mem[i].cuda_device >= SHM_LIMIT_GPUS))
			return fail(reason, len, "gpu_mem[%u] (pid %u): cuda device %u", i,
				    mem[i].pid, mem[i].cuda_device);
		if (mem[i].flags & ~SHM_GPU_MEM_F_ALL_BITS)
			return fail(reason, len, "gpu_mem[%u] (pid %u): unknown flags 0x%x", i,
				    mem[i].pid, mem[i].flags);
		if (check_driver_figure(&mem[i], bad, sizeof(bad)) < 0)
			return fail(reason, len, "gpu_mem[%u] (pid %u, gpu %u): %s", i,
				    mem[i].pid, mem[i].gpu_id, bad);
		if (mem[i].gpu_map >= SHM_GPU_MAP_COUNT ||
		    shm_gpu_map_resolved(mem[i].gpu_map) != (mem[i].gpu_id != SHM_GPU_UNKNOWN))
			return fail(reason, len, "gpu_mem[%u] (pid %u, gpu %u): gpu map %u",
				    i, mem[i].pid, mem[i].gpu_id, mem[i].gpu_map);
		if (mem[i].peak_bytes < mem[i].used_bytes)
			return fail(reason, len, "gpu_mem[%u] (pid %u, gpu %u): peak %llu below used %llu",
				    i, mem[i].pid, mem[i].gpu_id,
				    (unsigned long long)mem[i].peak_bytes,
				    (unsigned long long)mem[i].used_bytes);
	}
	for (uint32_t i = 0; i < h->table[SHM_TABLE_GPUS].count; i++) {
		if (gpus[i].total_source > SHM_TOTAL_MAX_SOURCE)
			return fail(reason, len, "gpus[%u] (gpu %u): unknown total source %u",
				    i, gpus[i].gpu_id, gpus[i].total_source);
		if (gpus[i].used_source > SHM_USED_MAX_SOURCE)
			return fail(reason, len, "gpus[%u] (gpu %u): unknown used source %u",
				    i, gpus[i].gpu_id, gpus[i].used_source);
		if (!padded_text(gpus[i].uuid, sizeof(gpus[i].uuid)) ||
		    !padded_text(gpus[i].model_name, sizeof(gpus[i].model_name)))
			return fail(reason, len, "gpus[%u] (gpu %u): a text not zero-padded",
				    i, gpus[i].gpu_id);
	}
	for (uint32_t i = 0; i < h->table[SHM_TABLE_NCCL_OPS].count; i++) {
		if (ops[i].op != i)
			return fail(reason, len, "nccl_ops[%u]: holds op %u", i, ops[i].op);
		if (check_latency(&ops[i].duration, bad, sizeof(bad)) < 0)
			return fail(reason, len, "nccl %s duration: %s", shm_nccl_op_name(i), bad);
		if (check_latency(&ops[i].wait, bad, sizeof(bad)) < 0)
			return fail(reason, len, "nccl %s wait: %s", shm_nccl_op_name(i), bad);
		if (check_fine_or_none(ops[i].duration_fine, ops[i].duration.count, bad,
				       sizeof(bad)) < 0)
			return fail(reason, len, "nccl %s duration: %s", shm_nccl_op_name(i), bad);
		if (check_fine_or_none(ops[i].wait_fine, ops[i].wait.count, bad, sizeof(bad)) < 0)
			return fail(reason, len, "nccl %s wait: %s", shm_nccl_op_name(i), bad);
	}
	for (uint32_t i = 0; i < h->table[SHM_TABLE_NCCL_COMMS].count; i++) {
		const struct shm_nccl_comm *c = &comms[i];

		if (c->origin >= SHM_NCCL_ORIGIN_COUNT)
			return fail(reason, len, "nccl_comms[%u] (pid %u): unknown origin %u", i,
				    c->pid, c->origin);
		if (c->rank < -1 || c->nranks < -1 || c->nranks > SHM_NCCL_MAX_RANKS ||
		    (c->nranks > 0 && c->rank >= c->nranks))
			return fail(reason, len, "nccl_comms[%u] (pid %u): rank %d of %d", i,
				    c->pid, c->rank, c->nranks);
		/* Counts no job reaches in decades: beyond them the row is corrupt. */
		if ((c->flags & ~SHM_NCCL_COMM_LOCAL_ID) ||
		    (c->parent_id && c->origin != SHM_NCCL_ORIGIN_SPLIT &&
		     c->origin != SHM_NCCL_ORIGIN_SHRINK) ||
		    !window_fits(&c->wait) || !window_fits(&c->gap) || !window_fits(&c->gpu) ||
		    c->calls > SHM_NCCL_MAX_CALLS || c->bytes > SHM_NCCL_MAX_BYTES ||
		    c->pending > c->calls || c->stalled_ns > SHM_NCCL_MAX_STALL_NS ||
		    c->wait.count > c->calls || c->gap.count > c->calls ||
		    c->gpu.count > SHM_NCCL_MAX_CALLS)
			return fail(reason, len, "nccl_comms[%u] (pid %u): inconsistent counts", i,
				    c->pid);
		if (check_latency(&c->wait, bad, sizeof(bad)) < 0 ||
		    check_latency(&c->gap, bad, sizeof(bad)) < 0 ||
		    check_latency(&c->gpu, bad, sizeof(bad)) < 0)
			return fail(reason, len, "nccl_comms[%u] (pid %u): %s", i, c->pid, bad);
	}
	return check_python(buf, h, reason, len);
}

/*
 * Workload rows: a known kind with the texts it has (NODE none, POD a
 * namespace too), counts that add up, and no two rows of one workload,
 * which would print its histograms twice.
 */
static int check_workloads(const void *buf, const struct shm_header_fields *h,
			   char *reason, size_t len)
{
	const struct shm_workload *w = rows(buf, h, SHM_TABLE_WORKLOADS);
	uint32_t n = h->table[SHM_TABLE_WORKLOADS].count;
	char bad[160];

	for (uint32_t i = 0; i < n; i++) {
		int node = w[i].kind == SHM_WORKLOAD_NODE;

		if (w[i].kind >= SHM_WORKLOAD_KIND_COUNT || w[i].processes > SHM_LIMIT_PROCS ||
		    !padded_text(w[i].namespace, sizeof(w[i].namespace)) ||
		    !padded_text(w[i].name, sizeof(w[i].name)) ||
		    node != (w[i].name[0] == '\0') ||
		    (w[i].kind != SHM_WORKLOAD_POD && w[i].namespace[0]))
			return fail(reason, len, "workloads[%u]: kind %u with texts \"%.64s\", "
				    "\"%.64s\" or %u processes", i, w[i].kind,
				    padded_text(w[i].namespace, sizeof(w[i].namespace)) ?
				    w[i].namespace : "?",
				    padded_text(w[i].name, sizeof(w[i].name)) ? w[i].name : "?",
				    w[i].processes);
		for (uint32_t f = 0; f < SHM_FAMILY_COUNT; f++)
			if (check_workload_latency(&w[i].lat[f], bad, sizeof(bad)) < 0)
				return fail(reason, len, "workloads[%u] %s: %s", i,
					    shm_family_name(f), bad);
		for (uint32_t j = 0; j < i; j++)
			if (w[j].kind == w[i].kind && strcmp(w[j].name, w[i].name) == 0 &&
			    strcmp(w[j].namespace, w[i].namespace) == 0)
				return fail(reason, len, "workloads[%u] and [%u]: the same workload",
					    j, i);
	}
	return 0;
}

int shm_validate(const void *buf, size_t size, char *reason, size_t reason_len)
{
	const struct shm_header_fields *h = buf;
	int err;

	if (!buf)
		return fail(reason, reason_len, "no segment data");
	/* Rows hold uint64_t: the copy must be aligned for them. */
	if ((uintptr_t)buf % 8)
		return fail(reason, reason_len, "segment copy is not 8-byte aligned");
	if (size < SHM_HEADER_SIZE)
		return fail(reason, reason_len, "segment is %zu bytes, smaller than the %u-byte header",
			    size, SHM_HEADER_SIZE);
	if (size > SHM_LIMIT_TOTAL_SIZE)
		return fail(reason, reason_len, "segment is %zu bytes, above the %llu-byte limit",
			    size, (unsigned long long)SHM_LIMIT_TOTAL_SIZE);
	if ((err = check_header(h, size, reason, reason_len)) < 0 ||
	    (err = check_tables(h, size, reason, reason_len)) < 0 ||
	    (err = check_rows(buf, h, reason, reason_len)) < 0 ||
	    (err = check_unique(buf, h, reason, reason_len)) < 0 ||
	    (err = check_workloads(buf, h, reason, reason_len)) < 0)
		return err;
	if (reason && reason_len)
		reason[0] = '\0';
	return 0;
}
