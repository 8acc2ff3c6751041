/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Probe records to aggregation calls (see decode.h): each record type's
 * handler is its family's (probe_family.h), found through one table built
 * from every family's decoders, which also holds each record's size.
 * Records come from our own BPF programs or the simulator, but their sizes
 * and enums are still checked before use.  Runs in the collector's main
 * loop.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "bpf/probe_abi.h"
#include "collector/probes/decode.h"
#include "collector/probes/probe_family.h"
#include "common/log.h"

_Static_assert(SHM_COMM_LEN == 16, "the kernel's TASK_COMM_LEN");

void decode_proc_seen(struct decode *d, uint32_t pid, uint32_t ppid, uint32_t reasons,
		      const char *comm, uint64_t start_ns, int is_exec)
{
	uint64_t known = 0;
	int watched = agg_proc_start_time(d->agg, pid, &known) == 0;

	if (watched && (is_exec || (start_ns && known && known != start_ns))) {
		if (d->ops.proc_reset)
			d->ops.proc_reset(d->ops.ctx, pid);
		decode_proc_gone(d, pid);
	}
	/* A full table is counted by the aggregation. */
	agg_proc_watch(d->agg, pid, ppid, reasons, comm, start_ns);
}

/* Every family's decoders by record type; -EEXIST when two claim one type. */
static struct probe_decoder decoders[ZEV_TYPE_COUNT];
static int decoders_err;
static pthread_once_t decoders_once = PTHREAD_ONCE_INIT;

static void build_decoders(void)
{
	for (size_t f = 0; f < PROBE_OBJ_COUNT; f++) {
		const struct probe_family *fam = probe_families[f];

		for (size_t i = 0; i < fam->n_decoders; i++) {
			const struct probe_decoder *dec = &fam->decoders[i];

			if (dec->type >= ZEV_TYPE_COUNT || decoders[dec->type].handle) {
				log_error("probe family %s: record type %u is out of range or "
					  "another family's", fam->object.name, dec->type);
				decoders_err = -EEXIST;
				continue;
			}
			decoders[dec->type] = *dec;
		}
	}
}

int decode_init(struct decode *d, struct agg *agg, const struct decode_ops *ops)
{
	pthread_once(&decoders_once, build_decoders);
	if (decoders_err)
		return decoders_err;
	memset(d, 0, sizeof(*d));
	d->agg = agg;
	if (ops)
		d->ops = *ops;
	for (size_t f = 0; f < PROBE_OBJ_COUNT; f++) {
		const struct probe_family *fam = probe_families[f];

		if (fam->state && !(d->state[f] = fam->state->make(agg)))
			return -ENOMEM;	/* the caller's decode_destroy frees the others */
	}
	return 0;
}

void decode_destroy(struct decode *d)
{
	for (size_t f = 0; f < PROBE_OBJ_COUNT; f++)
		if (d->state[f])
			probe_families[f]->state->free(d->state[f]);
	memset(d, 0, sizeof(*d));
}

/* What each family keeps that has gone unused for long, at ts_ns of event time. */
static void expire(struct decode *d, uint64_t ts_ns)
{
	for (size_t f = 0; f < PROBE_OBJ_COUNT; f++)
		if (d->state[f] && probe_families[f]->state->expire)
			probe_families[f]->state->expire(d->state[f], ts_ns);
}

int decode_event(struct decode *d, const void *rec, size_t size)
{
	const struct zev_hdr *h = rec;
	uint32_t type;

	if (size < sizeof(*h)) {
		type = 0;
		goto refuse;
	}
	type = h->type;
	if (type >= ZEV_TYPE_COUNT || !decoders[type].handle || size != decoders[type].size)
		goto refuse;
	d->events++;
	agg_count_events(d->agg, 1);
	if (h->ts_ns >= d->next_expire_ns) {
		/* Once a second of event time. */
		expire(d, h->ts_ns);
		d->next_expire_ns = h->ts_ns + 1000000000ull;
	}
	return decoders[type].handle(d, rec);

refuse:
	/* Our own programs sent it: once is enough to say the two disagree. */
	if (d->refused++ == 0)
		log_warnx("probe record of type %u and %zu bytes refused (ABI mismatch?)", type, size);
	return -EINVAL;
}

int decode_ringbuf(void *ctx, void *data, size_t size)
{
	decode_event(ctx, data, size);
	/* Never stop the drain: a refused record is counted and skipped. */
	return 0;
}

void decode_proc_gone(struct decode *d, uint32_t pid)
{
	for (size_t f = 0; f < PROBE_OBJ_COUNT; f++)
		if (d->state[f])
			probe_families[f]->state->proc_gone(d->state[f], pid);
	agg_proc_exit(d->agg, pid);
}
