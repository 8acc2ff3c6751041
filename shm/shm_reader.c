/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reader side of the segment: maps it read-only, copies consistent snapshots
 * out under the seqlock and follows collector restarts.  Runs unprivileged
 * (zernel-exporter after it dropped to nobody); never writes the segment.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm/shm_clock.h"
#include "shm/shm_name.h"
#include "shm/shm_reader.h"

#define SHM_READER_DEFAULT_RETRIES	64u
#define SHM_READER_DEFAULT_STALE	3u
#define SHM_READER_MAX_BACKOFF_NS	500000L		/* 0.5 ms */
/* publish_interval_ms the stale limit falls back to when the header's is 0. */
#define SHM_READER_FALLBACK_INTERVAL_MS	1000u
#define SHM_READER_MAX_INTERVAL_MS	3600000u	/* 1 h */

static void say(char *reason, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *reason, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!reason || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(reason, len, fmt, ap);
	va_end(ap);
}

void shm_reader_init(struct shm_reader *r, const char *name)
{
	memset(r, 0, sizeof(*r));
	/* An over-long name is kept truncated; shm_name_check rejects it later. */
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "");
	if (name && strlen(name) >= sizeof(r->name))
		r->name[0] = '\0';
	r->fd = -1;
	r->max_retries = SHM_READER_DEFAULT_RETRIES;
	r->stale_intervals = SHM_READER_DEFAULT_STALE;
}

static void reader_unmap(struct shm_reader *r)
{
	if (r->map)
		munmap((void *)r->map, r->map_size);
	if (r->fd >= 0)
		close(r->fd);
	r->map = NULL;
	r->map_size = 0;
	r->fd = -1;
	r->dev = 0;
	r->ino = 0;
	r->stuck_seq = 0;
	r->handed = NULL;
}

void shm_reader_close(struct shm_reader *r)
{
	if (!r)
		return;
	reader_unmap(r);
	free(r->scratch);
	r->scratch = NULL;
	r->scratch_cap = 0;
	r->generation = 0;
	free(r->handed_header);
	r->handed_header = NULL;
}

static enum shm_read_status reader_map(struct shm_reader *r, char *reason, size_t len)
{
	const char *problem = shm_name_problem(r->name);
	struct stat st;
	void *map;
	int fd;

	if (problem) {
		say(reason, len, "%s", problem);
		return SHM_READ_INVALID;
	}
	fd = shm_open(r->name, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0) {
		int e = errno;

		say(reason, len, "shm segment %s: %s", r->name, strerror(e));
		return e == ENOENT ? SHM_READ_MISSING : SHM_READ_INVALID;
	}
	if (fstat(fd, &st) < 0) {
		say(reason, len, "shm segment %s: fstat: %s", r->name, strerror(errno));
		goto invalid;
	}
	if (!S_ISREG(st.st_mode)) {
		say(reason, len, "shm segment %s is not a regular file", r->name);
		goto invalid;
	}
	if ((uint64_t)st.st_size < SHM_HEADER_SIZE) {
		say(reason, len, "shm segment %s is %lld bytes, smaller than the %u-byte header",
		    r->name, (long long)st.st_size, SHM_HEADER_SIZE);
		goto invalid;
	}
	if ((uint64_t)st.st_size > SHM_LIMIT_TOTAL_SIZE) {
		say(reason, len, "shm segment %s is %lld bytes, above the %llu-byte limit",
		    r->name, (long long)st.st_size, (unsigned long long)SHM_LIMIT_TOTAL_SIZE);
		goto invalid;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		say(reason, len, "shm segment %s: mmap: %s", r->name, strerror(errno));
		goto invalid;
	}
	r->fd = fd;
	r->map = map;
	r->map_size = (uint64_t)st.st_size;
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	return SHM_READ_OK;

invalid:
	close(fd);
	return SHM_READ_INVALID;
}

/*
 * Whether the mapping still is the segment under our name.  A collector
 * restart unlinks the old name before creating the new segment, so the
 * inode we hold drops to zero links; a size change would make the copy
 * read past the end of the file (SIGBUS), so it forces a remap too.
 */
static int reader_mapping_current(struct shm_reader *r)
{
	struct stat st;

	if (fstat(r->fd, &st) < 0)
		return 0;
	return st.st_nlink > 0 && (uint64_t)st.st_size == r->map_size;
}

/*
 * Rows past a table's count are never copied, and never read: the
 * validator and every reader stop at count.  So the buffer is not cleared
 * and its pages past the rows in use are never touched: a segment sized
 * for many rows (64 workloads of 61 kB) costs each copy only the rows in
 * use.  Its old contents need no keeping either.
 */
static int scratch_reserve(struct shm_reader *r, size_t size)
{
	void *p;

	if (r->scratch_cap >= size)
		return 0;
	p = malloc(size);
	if (!p)
		return -ENOMEM;
	free(r->scratch);
	r->scratch = p;
	r->scratch_cap = size;
	return 0;
}

/*
 * Copies the header, then only the rows in use of each table as the copied
 * header describes them.  The header may be torn or hostile: every range is
 * clipped to the mapping here, and judged by shm_validate() afterwards.
 */
static void copy_in_use(struct shm_reader *r)
{
	const char *src = r->map;
	char *dst = r->scratch;
	const struct shm_header_fields *h = r->scratch;

	memcpy(dst, src, SHM_HEADER_SIZE);
	for (int i = 0; i < SHM_TABLE_COUNT; i++) {
		uint64_t off = h->table[i].offset;
		uint64_t len = (uint64_t)h->table[i].count * h->table[i].entry_size;

		if (off >= r->map_size)
			continue;
		if (len > r->map_size - off)
			len = r->map_size - off;
		memcpy(dst + off, src + off, (size_t)len);
	}
}

void shm_reader_share_copies(struct shm_reader *r)
{
	r->shares_copies = 1;
}

void shm_reader_take_back(struct shm_reader *r, void *buf, size_t cap)
{
	if (!r->scratch) {
		r->scratch = buf;
		r->scratch_cap = cap;
	} else {
		free(buf);
	}
}

void shm_reader_never_sleep(struct shm_reader *r)
{
	r->never_sleep = 1;
	r->max_retries = SHM_READER_NOSLEEP_RETRIES;
}

static void backoff(const struct shm_reader *r, unsigned int attempt)
{
	struct timespec ts = { 0, 0 };
	long ns;

	if (r->never_sleep)
		return;		/* the caller spins (wait_even) instead */
	if (attempt < 4) {
		sched_yield();
		return;
	}
	ns = (long)attempt * 10000L;	/* 10 us more per attempt */
	ts.tv_nsec = ns < SHM_READER_MAX_BACKOFF_NS ? ns : SHM_READER_MAX_BACKOFF_NS;
	nanosleep(&ts, NULL);
}

/*
 * The read half of the seqlock (see shm_writer.c for the pairing): acquire
 * load of seq, copy, acquire fence, load seq again; equal and even means no
 * publish overlapped the copy, so the counts that chose which rows to copy
 * belong to the same publish as the rows.  Returns 0, or -EBUSY after max_retries.
 */
static uint64_t mono_ns(void);

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/*
 * A never-sleeping reader's wait for an even seq: it spins for at most
 * SHM_READER_SPIN_NS, once per stuck value.  A seq that stayed odd that
 * long belongs to a writer that stopped mid-publish; every later request
 * sees the same odd value and answers at once, until the writer moves.
 */
static uint64_t wait_even(struct shm_reader *r, const uint64_t *seq)
{
	uint64_t s = __atomic_load_n(seq, __ATOMIC_ACQUIRE), t0 = 0;

	if (!(s & 1)) {
		r->stuck_seq = 0;
		return s;
	}
	if (s == r->stuck_seq)
		return s;
	for (unsigned int i = 1; s & 1; i++) {
		/* Past a short spin, give the CPU to the writer: it may share ours. */
		if (i < 64)
			cpu_relax();
		else
			sched_yield();
		if (i % 64 == 0) {
			uint64_t now = mono_ns();

			if (!t0)
				t0 = now;
			else if (now - t0 > SHM_READER_SPIN_NS) {
				r->stuck_seq = s;
				return s;
			}
		}
		s = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
	}
	r->stuck_seq = 0;
	return s;
}

static int copy_consistent(struct shm_reader *r, unsigned int *attempts)
{
	const uint64_t *seq = &((const union shm_header *)r->map)->h.seq;
	unsigned int max = r->max_retries ? r->max_retries : 1;

	for (unsigned int i = 0; i < max; i++) {
		uint64_t s1, s2;

		*attempts = i + 1;
		s1 = r->never_sleep ? wait_even(r, seq) : __atomic_load_n(seq, __ATOMIC_ACQUIRE);
		if (s1 & 1) {
			if (r->never_sleep)
				return -EBUSY;
			backoff(r, i);
			continue;
		}
		copy_in_use(r);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(seq, __ATOMIC_RELAXED);
		if (s1 == s2)
			return 0;
		backoff(r, i);
	}
	return -EBUSY;
}

/*
 * Whether snap holds the copy last handed over and the segment's header,
 * read consistently into the scratch buffer, is byte for byte the one that
 * copy was made from: then no publish happened since (each one moves the
 * seqlock word), and the copy is current.
 */
static int copy_current(struct shm_reader *r, const struct shm_snapshot *snap)
{
	const uint64_t *seq = &((const union shm_header *)r->map)->h.seq;
	uint64_t s1, s2;

	if (!r->handed || snap->buf != r->handed || snap->size != r->map_size)
		return 0;
	s1 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
	if (s1 & 1)
		return 0;
	memcpy(r->scratch, r->map, SHM_HEADER_SIZE);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	s2 = __atomic_load_n(seq, __ATOMIC_RELAXED);
	return s1 == s2 && memcmp(r->scratch, r->handed_header, SHM_HEADER_SIZE) == 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Strings in the private copy get a terminator whatever the writer put there. */
static void bound_strings(void *buf)
{
	struct shm_header_fields *h = buf;
	struct shm_proc *p = (struct shm_proc *)((char *)buf + h->table[SHM_TABLE_PROCS].offset);

	h->scenario[sizeof(h->scenario) - 1] = '\0';
	for (uint32_t i = 0; i < h->table[SHM_TABLE_PROCS].count; i++)
		p[i].comm[SHM_COMM_LEN - 1] = '\0';
}

static uint64_t interval_ns(const struct shm_header_fields *h)
{
	uint64_t interval = h->publish_interval_ms;

	if (interval == 0)
		interval = SHM_READER_FALLBACK_INTERVAL_MS;
	if (interval > SHM_READER_MAX_INTERVAL_MS)
		interval = SHM_READER_MAX_INTERVAL_MS;
	return interval * 1000000ull;
}

static uint64_t stale_limit_ns(const struct shm_reader *r, const struct shm_header_fields *h)
{
	uint64_t n = r->stale_intervals ? r->stale_intervals : SHM_READER_DEFAULT_STALE;

	if (n > 1000)
		n = 1000;
	return n * interval_ns(h);
}

enum shm_read_status shm_reader_snapshot(struct shm_reader *r,
					 struct shm_snapshot *snap,
					 char *reason, size_t reason_len)
{
	const struct shm_header_fields *h;
	enum shm_read_status st;
	unsigned int attempts = 0;
	uint64_t now, limit;
	char why[256];
	void *tmp;
	size_t tcap;

	if (reason && reason_len)
		reason[0] = '\0';
	if (!r || !snap) {
		say(reason, reason_len, "no reader or snapshot");
		return SHM_READ_INVALID;
	}

	/* 1. Map, or follow the name to a new segment after a restart. */
	if (r->map && !reader_mapping_current(r))
		reader_unmap(r);
	if (!r->map) {
		st = reader_map(r, reason, reason_len);
		if (st != SHM_READ_OK)
			return st;
	}
	if (scratch_reserve(r, r->map_size) < 0) {
		say(reason, reason_len, "no memory for a %llu-byte snapshot",
		    (unsigned long long)r->map_size);
		return SHM_READ_INVALID;
	}

	/* 2. The caller's copy when nothing was published since, else a new one. */
	if (copy_current(r, snap))
		goto freshness;
	if (copy_consistent(r, &attempts) < 0) {
		say(reason, reason_len, "shm segment %s: no consistent copy after %u attempts "
		    "(writer stuck or dead mid-publish)", r->name, attempts);
		return SHM_READ_BUSY;
	}

	/* 3. Validate the copy; only then does anyone look at it. */
	h = r->scratch;
	if (h->magic == 0) {
		say(reason, reason_len, "shm segment %s is not initialised yet", r->name);
		return SHM_READ_BUSY;
	}
	if (shm_validate(r->scratch, r->map_size, why, sizeof(why)) < 0) {
		say(reason, reason_len, "shm segment %s is invalid: %s", r->name, why);
		/* Map afresh next time: the collector may replace it. */
		reader_unmap(r);
		return SHM_READ_INVALID;
	}
	if (!r->handed_header)
		r->handed_header = malloc(SHM_HEADER_SIZE);
	if (r->handed_header)
		memcpy(r->handed_header, r->scratch, SHM_HEADER_SIZE);
	bound_strings(r->scratch);

	/* 4. Hand the copy over; the caller's old buffer becomes our scratch, or stays its. */
	tmp = r->shares_copies ? NULL : snap->buf;
	tcap = r->shares_copies ? 0 : snap->cap;
	snap->buf = r->scratch;
	snap->cap = r->scratch_cap;
	snap->size = r->map_size;
	snap->hdr = snap->buf;
	r->scratch = tmp;
	r->scratch_cap = tmp ? tcap : 0;
	r->generation = snap->hdr->generation;
	r->handed = r->handed_header ? snap->buf : NULL;

	/*
	 * 5. Freshness, on our clock: the writer's CLOCK_MONOTONIC may count
	 * from another base (shm_clock.h), so a heartbeat ahead of ours is
	 * not refused; like any other, it goes stale once it stops changing.
	 */
freshness:
	now = mono_ns();
	h = snap->hdr;
	snap->published_ns = 0;
	snap->age_ns = now;
	if (h->heartbeat_mono_ns == 0) {
		say(reason, reason_len, "shm segment %s: the collector has not published yet",
		    r->name);
		return SHM_READ_STALE;
	}
	limit = stale_limit_ns(r, h);
	snap->published_ns = shm_clock_observe(&r->clock, h->generation, h->heartbeat_mono_ns,
					       (int64_t)(real_ns() - h->heartbeat_real_ns), now,
					       interval_ns(h), limit);
	snap->age_ns = now - snap->published_ns;
	if (snap->age_ns > limit) {
		say(reason, reason_len, "shm segment %s: last publish %.3f s ago, "
		    "limit %.3f s (collector pid %u stopped?)", r->name,
		    (double)snap->age_ns / 1e9, (double)limit / 1e9, h->writer_pid);
		return SHM_READ_STALE;
	}
	return SHM_READ_OK;
}
