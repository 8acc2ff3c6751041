/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-thread segment view (see source.h).  Unprivileged: the segment is
 * mapped read-only by the hub's reader.
 */
#include <stdio.h>
#include <string.h>

#include "exporter/source.h"

void source_init(struct source *s, const char *shm_name)
{
	memset(s, 0, sizeof(*s));
	s->hub = segment_hub_get(shm_name);
	s->status = SHM_READ_MISSING;
	snprintf(s->reason, sizeof(s->reason), "not read yet");
}

enum shm_read_status source_refresh(struct source *s)
{
	char reason[sizeof(s->reason)] = "";
	struct hub_read rd = { .status = SHM_READ_INVALID };
	enum shm_read_status st;

	if (s->hub)
		segment_hub_read(s->hub, s->copy, &rd, reason, sizeof(reason));
	else
		snprintf(reason, sizeof(reason), "no memory for a reader");
	st = rd.status;
	s->status = st;
	/* The last look's copy is given up, as a private copy was overwritten. */
	s->copy = rd.copy;
	/* A segment that was never published has no heartbeat to report. */
	if (rd.copy && rd.copy->snap.hdr->heartbeat_mono_ns) {
		const struct shm_header_fields *h = rd.copy->snap.hdr;

		s->seen = 1;
		s->generation = h->generation;
		s->heartbeat_mono_ns = h->heartbeat_mono_ns;
		s->published_ns = rd.published_ns;
		s->heartbeat_real_ns = h->heartbeat_real_ns;
	}
	if (st == SHM_READ_OK) {
		s->reason[0] = '\0';
		s->refreshes++;
	} else {
		snprintf(s->reason, sizeof(s->reason), "%s: %s",
			 shm_read_status_name(st), reason[0] ? reason : "no detail");
	}
	return st;
}

const struct shm_snapshot *source_fresh(const struct source *s)
{
	return s->status == SHM_READ_OK && s->copy ? &s->copy->snap : NULL;
}

int source_current(const struct source *s)
{
	return s->hub && s->copy && segment_hub_current(s->hub, s->copy);
}

uint64_t source_age_ns(const struct source *s, uint64_t now_mono_ns)
{
	if (!s->seen || now_mono_ns < s->published_ns)
		return 0;
	return now_mono_ns - s->published_ns;
}

void source_status(const struct source *s, uint64_t now_mono_ns, struct cat_status *st)
{
	st->status = s->status;
	st->reason = s->reason;
	st->seen = s->seen;
	st->generation = s->generation;
	st->age_ns = source_age_ns(s, now_mono_ns);
	st->last_update_real_ns = s->heartbeat_real_ns;
}

void source_close(struct source *s)
{
	hub_copy_release(s->copy);
	s->copy = NULL;
	segment_hub_put(s->hub);
	s->hub = NULL;
}
