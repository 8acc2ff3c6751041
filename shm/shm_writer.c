/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writer side of the segment: creation, table layout and the seqlock's write
 * half.  Runs inside zernel-collector (root); the only code that ever maps
 * the segment writable.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm/shm_writer.h"
#include "shm/shm_name.h"

void shm_capacity_default(struct shm_capacity *cap)
{
	cap->procs = SHM_DEFAULT_MAX_PROCS;
	cap->gpu_mem = SHM_DEFAULT_MAX_GPU_MEM;
	cap->gpus = SHM_DEFAULT_MAX_GPUS;
	cap->nccl_comms = SHM_DEFAULT_MAX_NCCL_COMMS;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static void table_geometry(const struct shm_capacity *cap, enum shm_table_id id,
			   uint32_t *entry_size, uint32_t *capacity)
{
	switch (id) {
	case SHM_TABLE_PROCS:
		*entry_size = sizeof(struct shm_proc);
		*capacity = cap->procs;
		break;
	case SHM_TABLE_GPU_MEM:
		*entry_size = sizeof(struct shm_gpu_mem);
		*capacity = cap->gpu_mem;
		break;
	case SHM_TABLE_GPUS:
		*entry_size = sizeof(struct shm_gpu);
		*capacity = cap->gpus;
		break;
	case SHM_TABLE_NCCL_OPS:
		*entry_size = sizeof(struct shm_nccl_op);
		*capacity = SHM_NCCL_OP_COUNT;
		break;
	case SHM_TABLE_IDENTITY:
		*entry_size = sizeof(struct shm_identity);
		*capacity = cap->procs;
		break;
	case SHM_TABLE_PY_PROCS:
		*entry_size = sizeof(struct shm_py_proc);
		*capacity = SHM_PY_PROCS;
		break;
	case SHM_TABLE_STALL_SITES:
		*entry_size = sizeof(struct shm_stall_site);
		*capacity = SHM_STALL_SITES;
		break;
	case SHM_TABLE_PROC_RECENT:
		*entry_size = sizeof(struct shm_proc_recent);
		*capacity = cap->procs;
		break;
	case SHM_TABLE_TRACE:
		*entry_size = sizeof(struct shm_trace_event);
		*capacity = SHM_TRACE_EVENTS;
		break;
	case SHM_TABLE_WORKLOADS:
		*entry_size = sizeof(struct shm_workload);
		*capacity = SHM_WORKLOADS_FOR(cap->procs);
		break;
	case SHM_TABLE_NCCL_COMMS:
	default:
		*entry_size = sizeof(struct shm_nccl_comm);
		*capacity = cap->nccl_comms;
		break;
	}
}

/*
 * Tables follow the header in enum order, each on a SHM_TABLE_ALIGN
 * boundary.  Fills table[] when non-NULL and returns the total size.
 */
static uint64_t layout(const struct shm_capacity *cap, struct shm_table *table)
{
	uint64_t off = SHM_HEADER_SIZE;

	for (int id = 0; id < SHM_TABLE_COUNT; id++) {
		uint32_t esz, ncap;

		table_geometry(cap, (enum shm_table_id)id, &esz, &ncap);
		off = align_up(off, SHM_TABLE_ALIGN);
		if (table) {
			memset(&table[id], 0, sizeof(table[id]));
			table[id].offset = off;
			table[id].entry_size = esz;
			table[id].capacity = ncap;
		}
		/* Capacities are uint32_t and rows a few KiB: no overflow. */
		off += (uint64_t)esz * ncap;
	}
	return align_up(off, SHM_TABLE_ALIGN);
}

uint64_t shm_segment_size(const struct shm_capacity *cap)
{
	return layout(cap, NULL);
}

static int check_opts(const struct shm_writer_opts *opts)
{
	const struct shm_capacity *c = &opts->cap;

	if (shm_name_check(opts->name) < 0)
		return -EINVAL;
	if (c->procs > SHM_LIMIT_PROCS || c->gpu_mem > SHM_LIMIT_GPU_MEM ||
	    c->gpus > SHM_LIMIT_GPUS || c->nccl_comms > SHM_LIMIT_NCCL_COMMS)
		return -EINVAL;
	if (shm_segment_size(c) > SHM_LIMIT_TOTAL_SIZE)
		return -EINVAL;
	if (opts->mode != SHM_MODE_BPF && opts->mode != SHM_MODE_SIMULATE)
		return -EINVAL;
	return 0;
}

/*
 * Unique per create: wall-clock nanoseconds, the pid in the high bits and a
 * per-process counter, so two collectors, or one creating twice within the
 * clock's resolution, never share a generation.
 */
static uint64_t new_generation(void)
{
	static uint32_t counter;
	struct timespec ts;
	uint64_t g;

	clock_gettime(CLOCK_REALTIME, &ts);
	g = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	g ^= (uint64_t)getpid() << 40;
	g += ++counter;
	return g ? g : 1;
}

/* The fields fixed at creation, kept in the writer's own memory. */
static void fill_fixed(struct shm_writer *w, const struct shm_writer_opts *opts)
{
	struct shm_header_fields *f = &w->fixed;

	memset(f, 0, sizeof(*f));
	f->magic = SHM_MAGIC;
	f->layout_version = SHM_LAYOUT_VERSION;
	f->header_size = SHM_HEADER_SIZE;
	f->total_size = w->size;
	f->generation = new_generation();
	f->writer_pid = (uint32_t)getpid();
	f->mode = opts->mode;
	f->publish_interval_ms = opts->publish_interval_ms;
	f->window_ns = opts->window_ns;
	layout(&opts->cap, f->table);
}

/*
 * Every header field that does not change between publishes, from the
 * writer's copy; magic last.  Plain stores of what we know, never a
 * read-modify-write of what is there.
 */
static void write_fixed(struct shm_writer *w)
{
	struct shm_header_fields *h = &w->base->h;
	const struct shm_header_fields *f = &w->fixed;

	h->layout_version = f->layout_version;
	h->header_size = f->header_size;
	h->total_size = f->total_size;
	h->generation = f->generation;
	h->writer_pid = f->writer_pid;
	h->mode = f->mode;
	h->publish_interval_ms = f->publish_interval_ms;
	h->reserved0 = 0;
	h->window_ns = f->window_ns;
	for (int i = 0; i < SHM_TABLE_COUNT; i++) {
		h->table[i].offset = f->table[i].offset;
		h->table[i].entry_size = f->table[i].entry_size;
		h->table[i].capacity = f->table[i].capacity;
		h->table[i].reserved0 = 0;
	}
	__atomic_store_n(&h->magic, f->magic, __ATOMIC_RELEASE);
}

static void fill_header(struct shm_writer *w, const struct shm_writer_opts *opts)
{
	struct shm_nccl_op *ops;

	fill_fixed(w, opts);
	w->seq = 0;
	/* ftruncate zero-filled the segment: seq, counts and reserved fields are zero. */
	w->base->h.seq = 0;

	/* The NCCL op table is indexed by op: its rows exist from the start. */
	ops = shm_writer_table(w, SHM_TABLE_NCCL_OPS);
	for (uint32_t i = 0; i < SHM_NCCL_OP_COUNT; i++)
		ops[i].op = i;
	w->base->h.table[SHM_TABLE_NCCL_OPS].count = SHM_NCCL_OP_COUNT;

	/*
	 * Magic last (write_fixed stores it after a release): a reader that
	 * opens the segment between ftruncate and here sees magic 0 and
	 * reports "not initialised yet" instead of judging a half-written
	 * header.
	 */
	write_fixed(w);
}

int shm_writer_create(struct shm_writer *w, const struct shm_writer_opts *opts)
{
	void *map = MAP_FAILED;
	int fd = -1, err;

	memset(w, 0, sizeof(*w));
	w->fd = -1;
	if (!opts) {
		err = -EINVAL;
		goto fail;
	}
	err = check_opts(opts);
	if (err < 0)
		goto fail;
	snprintf(w->name, sizeof(w->name), "%s", opts->name);
	w->size = shm_segment_size(&opts->cap);

	/* A previous collector's segment: readers must see a new inode. */
	if (shm_unlink(w->name) < 0 && errno != ENOENT) {
		err = -errno;
		goto fail;
	}
	fd = shm_open(w->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto fail;
	}
	/* The umask may have taken read access away from the exporter. */
	if (fchmod(fd, 0644) < 0 || ftruncate(fd, (off_t)w->size) < 0) {
		err = -errno;
		goto fail_unlink;
	}
	/*
	 * ftruncate only sets the size: on a full /dev/shm the first write to
	 * a page would kill the collector with SIGBUS.  Take the memory now,
	 * so a full /dev/shm is a clear error at start.
	 */
	err = -posix_fallocate(fd, 0, (off_t)w->size);
	if (err < 0)
		goto fail_unlink;
	map = mmap(NULL, w->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		err = -errno;
		goto fail_unlink;
	}
	w->fd = fd;
	w->base = map;
	fill_header(w, opts);
	return 0;

fail_unlink:
	shm_unlink(w->name);
fail:
	if (fd >= 0)
		close(fd);
	memset(w, 0, sizeof(*w));
	w->fd = -1;
	return err;
}

/*
 * The write half of the seqlock, as in Linux's write_seqcount_begin/end:
 *
 *   begin:  seq = odd;   release fence;   ...row stores...
 *   end:    release fence;   seq = even
 *
 * A reader copies between an acquire load of seq and an acquire fence
 * followed by a second load of seq.  If its copy saw any store made after
 * begin's fence, fence-to-fence synchronisation makes the odd seq visible
 * to its second load, so the two loads differ and the copy is thrown away.
 * If its first load saw the even value stored by end, every row store
 * before end's fence is visible to the copy.  On x86 both fences cost
 * nothing but forbid the compiler from moving the row stores across seq.
 */
void shm_writer_begin(struct shm_writer *w)
{
	uint64_t *seq = &w->base->h.seq;

	/* Odd, from our own count: a scribbled seq is simply overwritten. */
	w->seq = (w->seq | 1) + ((w->seq & 1) ? 2 : 0);
	__atomic_store_n(seq, w->seq, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

void shm_writer_end(struct shm_writer *w)
{
	uint64_t *seq = &w->base->h.seq;

	/* Inside the seqlock, so a reader never sees the header half-healed. */
	write_fixed(w);
	w->seq++;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(seq, w->seq, __ATOMIC_RELAXED);
}

const struct shm_table *shm_writer_layout(const struct shm_writer *w, enum shm_table_id id)
{
	if (!w || (unsigned int)id >= SHM_TABLE_COUNT)
		return NULL;
	return &w->fixed.table[id];
}

void *shm_writer_table(struct shm_writer *w, enum shm_table_id id)
{
	if (!w || !w->base || (unsigned int)id >= SHM_TABLE_COUNT)
		return NULL;
	return (char *)w->base + w->fixed.table[id].offset;
}

void shm_writer_set_count(struct shm_writer *w, enum shm_table_id id, uint32_t count,
			  uint64_t overflows)
{
	if (!w || !w->base || (unsigned int)id >= SHM_TABLE_COUNT)
		return;
	w->base->h.table[id].count = count;
	w->base->h.table[id].overflows = overflows;
}

void shm_writer_close(struct shm_writer *w, int unlink_name)
{
	if (!w)
		return;
	/* A never-created (zeroed) writer owns no descriptor, not even 0. */
	if (w->base) {
		munmap(w->base, w->size);
		if (w->fd >= 0)
			close(w->fd);
	}
	if (unlink_name && w->name[0])
		shm_unlink(w->name);
	memset(w, 0, sizeof(*w));
	w->fd = -1;
}
