/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Per-thread segment view (see source.h).  Unprivileged: it only maps the
 * segment read-only through shm_reader.
 */
#include <stdio.h>
#include <string.h>

#include "exporter/source.h"

void source_init(struct source *s, const char *shm_name)
{
	memset(s, 0, sizeof(*s));
	shm_reader_init(&s->reader, shm_name);
	s->status = SHM_READ_MISSING;
	snprintf(s->reason, sizeof(s->reason), "not read yet");
}

enum shm_read_status source_refresh(struct source *s)
{
	char reason[sizeof(s->reason)] = "";
	enum shm_read_status st;

	st = shm_reader_snapshot(&s->reader, &s->snap, reason, sizeof(reason));
	s->status = st;
	/* A segment that was never published has no heartbeat to report. */
	if ((st == SHM_READ_OK || st == SHM_READ_STALE) && s->snap.hdr->heartbeat_mono_ns) {
		s->seen = 1;
		s->generation = s->snap.hdr->generation;
		s->heartbeat_mono_ns = s->snap.hdr->heartbeat_mono_ns;
		s->published_ns = s->snap.published_ns;
		s->heartbeat_real_ns = s->snap.hdr->heartbeat_real_ns;
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
	return s->status == SHM_READ_OK && s->snap.hdr ? &s->snap : NULL;
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
	shm_reader_close(&s->reader);
	shm_snapshot_free(&s->snap);
}
