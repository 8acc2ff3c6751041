/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reading an entry's value where the catalog says it lives (see
 * catalog.h): rows of a validated snapshot, the exporter's status and
 * counters.  Pure; every output (Prometheus, feed, alerts) reads values
 * through here, so they agree.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "catalog/catalog.h"

static const struct shm_latency zero_latency;

void cat_rowset(unsigned int rows, const struct cat_input *in, struct cat_rowset *out)
{
	const struct shm_snapshot *s = in->snap;
	const void *base = NULL;
	uint32_t n = 0;

	memset(out, 0, sizeof(*out));
	switch (rows) {
	case CAT_ROWS_HEADER:
		base = s ? s->hdr : NULL;
		n = 1;
		break;
	case CAT_ROWS_TABLES:
		base = s ? s->hdr->table : NULL;
		n = SHM_TABLE_COUNT;
		out->stride = sizeof(struct shm_table);
		break;
	case CAT_ROWS_PROCS:
		base = s ? shm_snapshot_procs(s, &n) : NULL;
		out->stride = sizeof(struct shm_proc);
		break;
	case CAT_ROWS_GPU_MEM:
		base = s ? shm_snapshot_gpu_mem(s, &n) : NULL;
		out->stride = sizeof(struct shm_gpu_mem);
		break;
	case CAT_ROWS_GPUS:
		base = s ? shm_snapshot_gpus(s, &n) : NULL;
		out->stride = sizeof(struct shm_gpu);
		break;
	case CAT_ROWS_NCCL_OPS:
		base = s ? shm_snapshot_nccl_ops(s, &n) : NULL;
		out->stride = sizeof(struct shm_nccl_op);
		break;
	case CAT_ROWS_NCCL_COMMS:
		base = s ? shm_snapshot_nccl_comms(s, &n) : NULL;
		out->stride = sizeof(struct shm_nccl_comm);
		break;
	case CAT_ROWS_STATUS:
		base = in->status;
		n = 1;
		break;
	case CAT_ROWS_EXPORTER:
		base = in->stats;
		n = 1;
		break;
	default:
		break;	/* alerts and webhooks: their owners write them */
	}
	if (base) {
		out->base = base;
		out->n = n;
	}
}

static int unseen(const struct cat_metric *m, const struct cat_input *in)
{
	return (m->flags & CAT_F_SEEN) && (!in->status || !in->status->seen);
}

uint64_t cat_value(const struct cat_metric *m, const struct cat_input *in, const void *row)
{
	const char *p = (const char *)row + m->off;

	if (unseen(m, in))
		return 0;
	if (m->get)
		return m->get(in, row);
	if (m->kind == CAT_INFO)
		return 1;
	if (m->rows == CAT_ROWS_EXPORTER)
		return atomic_load_explicit(&in->stats[m->off], memory_order_relaxed);
	if (m->width == 4) {
		uint32_t v;

		memcpy(&v, p, sizeof(v));
		return v;
	}
	if (m->width == 8) {
		uint64_t v;

		memcpy(&v, p, sizeof(v));
		return v;
	}
	return 0;
}

const struct shm_latency *cat_latency(const struct cat_metric *m, const struct cat_input *in,
				      const void *row)
{
	const struct shm_latency *l;

	if (m->get_latency)
		l = m->get_latency(in, row);
	else
		l = (const struct shm_latency *)((const char *)row + m->off);
	return l ? l : &zero_latency;
}

const uint64_t *cat_fine_buckets(const struct cat_metric *m, const void *row)
{
	if (m->kind != CAT_LATENCY || !m->fine_off)
		return NULL;
	return (const uint64_t *)((const char *)row + m->fine_off);
}

int cat_proc_latency_family(const struct cat_metric *m)
{
	size_t first = offsetof(struct shm_proc, lat);

	if (m->rows != CAT_ROWS_PROCS || m->kind != CAT_LATENCY || m->get_latency ||
	    m->off < first || (m->off - first) % sizeof(struct shm_latency) ||
	    (m->off - first) / sizeof(struct shm_latency) >= SHM_FAMILY_COUNT)
		return -1;
	return (int)((m->off - first) / sizeof(struct shm_latency));
}

uint64_t cat_latency_quantile(const struct shm_latency *l, enum cat_quantile q)
{
	if (!l->window_count)
		return 0;
	switch (q) {
	case CAT_Q_P50: return l->window_p50_ns;
	case CAT_Q_P90: return l->window_p90_ns;
	case CAT_Q_P99: return l->window_p99_ns;
	default:	return l->window_max_ns;
	}
}

int cat_alert_value(const struct cat_metric *m, enum cat_quantile q,
		    const struct cat_input *in, const void *row, double *v)
{
	uint64_t x;

	if (m->kind == CAT_LATENCY) {
		const struct shm_latency *l = cat_latency(m, in, row);

		/* No sample in the window: like NaN, no series to compare. */
		if (!l->window_count)
			return -ENOENT;
		*v = (double)cat_latency_quantile(l, q) / 1e9;
		return 0;
	}
	if (unseen(m, in) || (m->known && !m->known(in, row)))
		return -ENOENT;
	x = cat_value(m, in, row);
	if (m->per) {
		uint64_t den;

		memcpy(&den, (const char *)row + m->per, sizeof(den));
		if (!den)
			return -ENOENT;
		*v = (double)x / (double)den;
		return 0;
	}
	if (!x && (m->flags & CAT_F_KNOWN))
		return -ENOENT;
	*v = m->unit == CAT_UNIT_NS ? (double)x / 1e9 :
	     m->unit == CAT_UNIT_MS ? (double)x / 1e3 : (double)x;
	return 0;
}

int cat_text(const struct cat_metric *m, const struct cat_input *in, const void *row,
	     char *buf, size_t len)
{
	buf[0] = '\0';
	return m->get_text ? m->get_text(buf, len, in, row) : -ENOENT;
}

int64_t cat_label_int(const struct cat_label *l, const void *row)
{
	const char *p = (const char *)row + l->off;
	uint32_t u;
	int32_t i;

	switch (l->type) {
	case CAT_L_I32:
		memcpy(&i, p, sizeof(i));
		return i;
	case CAT_L_U32:
	case CAT_L_GPU:
		memcpy(&u, p, sizeof(u));
		return u;
	default:
		return 0;
	}
}

int cat_label_text(const struct cat_label *l, const struct cat_input *in, const void *row,
		   char *buf, size_t len, int *known)
{
	uint64_t x;

	*known = 1;
	buf[0] = '\0';
	switch (l->type) {
	case CAT_L_TEXT:
		return l->text(buf, len, in, row);
	case CAT_L_HEX64:
		memcpy(&x, (const char *)row + l->off, sizeof(x));
		snprintf(buf, len, "0x%" PRIx64, x);
		return 0;
	case CAT_L_GPU:
		if (cat_label_int(l, row) == UINT32_MAX) {
			*known = 0;
			return 0;
		}
		/* fall through */
	default:
		snprintf(buf, len, "%" PRId64, cat_label_int(l, row));
		return 0;
	}
}
