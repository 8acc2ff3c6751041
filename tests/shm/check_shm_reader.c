/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The reader against hostile segments: every broken rule is rejected with a
 * reason that names it, a random-byte fuzz never crashes it, and a real
 * reader follows a segment that goes missing, goes stale or is recreated.
 * Also run under AddressSanitizer/UBSan (make test-asan).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "shm/shm_hist.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

static void small_opts(struct shm_writer_opts *o, const char *name, uint32_t interval_ms)
{
	tu_shm_opts(o, name, (struct shm_capacity){ 6, 8, 2, 3 });
	o->mode = SHM_MODE_BPF;
	o->publish_interval_ms = interval_ms;
}

/* A series with n samples, all in bucket b, window quantiles q. */
static void fill_latency(struct shm_latency *l, uint64_t n, unsigned int b, uint64_t q)
{
	memset(l, 0, sizeof(*l));
	l->count = n;
	l->sum_ns = n * q;
	l->bucket[b] = n;
	l->window_count = n;
	l->window_p50_ns = q;
	l->window_p90_ns = q;
	l->window_p99_ns = q + 1;
	l->window_max_ns = q + 2;
}

#define NO_WALL_STAMP	INT64_MIN

/*
 * Publishes rows derived from k into every table, heartbeat now on a clock
 * off_ns ahead of ours (a writer in another time namespace), and the wall
 * clock's now plus real_off_ns as its wall-clock stamp (none for
 * NO_WALL_STAMP).
 */
static void publish_on(struct shm_writer *w, uint64_t k, int64_t off_ns, int64_t real_off_ns)
{
	struct shm_header_fields *h = &w->base->h;
	struct shm_proc *p = shm_writer_table(w, SHM_TABLE_PROCS);
	struct shm_gpu_mem *m = shm_writer_table(w, SHM_TABLE_GPU_MEM);
	struct shm_gpu *g = shm_writer_table(w, SHM_TABLE_GPUS);
	struct shm_nccl_op *ops = shm_writer_table(w, SHM_TABLE_NCCL_OPS);
	struct shm_nccl_comm *c = shm_writer_table(w, SHM_TABLE_NCCL_COMMS);
	uint32_t np = h->table[SHM_TABLE_PROCS].capacity / 2 + 1;

	shm_writer_begin(w);
	for (uint32_t i = 0; i < np; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		p[i].pid = 1000 + i;
		p[i].ppid = 1;
		p[i].watch_reason = SHM_WATCH_CUDA | SHM_WATCH_NCCL;
		snprintf(p[i].comm, sizeof(p[i].comm), "python%u", i % 100);
		for (uint32_t f = 0; f < SHM_FAMILY_COUNT; f++)
			fill_latency(&p[i].lat[f], k + i, f % SHM_LAT_BUCKETS, 1000 * (f + 1));
	}
	h->table[SHM_TABLE_PROCS].count = np;
	{
		struct shm_identity *id = shm_writer_table(w, SHM_TABLE_IDENTITY);

		for (uint32_t i = 0; i < np; i++) {
			memset(&id[i], 0, sizeof(id[i]));
			id[i].pid = 1000 + i;
			id[i].flags = SHM_ID_F_READ;
			id[i].rank = (int32_t)i;
			id[i].local_rank = id[i].world_size = id[i].group_rank = -1;
			snprintf(id[i].pod, sizeof(id[i].pod), "trainer-%u", i);
		}
		h->table[SHM_TABLE_IDENTITY].count = np;
	}
	for (uint32_t i = 0; i < 3; i++) {
		memset(&m[i], 0, sizeof(m[i]));
		m[i].pid = 1000 + i;
		m[i].gpu_id = i;
		m[i].used_bytes = k << 20;
		m[i].peak_bytes = (k + 1) << 20;
	}
	h->table[SHM_TABLE_GPU_MEM].count = 3;
	memset(g, 0, 2 * sizeof(*g));
	g[0].gpu_id = 0;
	g[0].total_source = SHM_TOTAL_SIMULATED;
	g[1].gpu_id = 1;
	h->table[SHM_TABLE_GPUS].count = 2;
	for (uint32_t i = 0; i < SHM_NCCL_OP_COUNT; i++) {
		ops[i].calls = k;
		fill_latency(&ops[i].duration, k, 10, 50000);
		fill_latency(&ops[i].wait, k, 12, 700000);
	}
	c[0].pid = 1000;
	c[0].rank = 0;
	c[0].nranks = 2;
	h->table[SHM_TABLE_NCCL_COMMS].count = 1;
	for (uint32_t f = 0; f < SHM_FAMILY_COUNT; f++)
		fill_latency(&h->node[f], k * 3, 5, 3000);
	/* Workloads: the node's and one pod, k samples of 3 us in every family. */
	if (h->table[SHM_TABLE_WORKLOADS].capacity >= 2) {
		struct shm_workload *wl = shm_writer_table(w, SHM_TABLE_WORKLOADS);

		memset(wl, 0, 2 * sizeof(*wl));
		wl[1].kind = SHM_WORKLOAD_POD;
		wl[1].processes = np;
		snprintf(wl[1].namespace, sizeof(wl[1].namespace), "ml");
		snprintf(wl[1].name, sizeof(wl[1].name), "trainer-0");
		for (uint32_t f = 0; f < SHM_FAMILY_COUNT; f++) {
			struct shm_workload_latency *l = &wl[1].lat[f];

			l->count = k;
			l->sum_ns = 3000 * k;
			l->bucket[4] = k;		/* (2.5 us, 5 us] */
			l->fine[hist_bucket_index(3000)] = k;
		}
		h->table[SHM_TABLE_WORKLOADS].count = 2;
	}
	h->stats.publishes = k;
	h->heartbeat_mono_ns = now_mono_ns() + (uint64_t)off_ns;
	h->heartbeat_real_ns = real_off_ns == NO_WALL_STAMP ? 0 :
			       now_real_ns() + (uint64_t)real_off_ns;
	shm_writer_end(w);
}

/* The same, heartbeat on our clock. */
static void publish(struct shm_writer *w, uint64_t k)
{
	publish_on(w, k, 0, 0);
}

/* A valid image in private, exactly-sized, 8-aligned memory. */
static void *valid_image(size_t *size)
{
	struct shm_writer w;
	struct shm_writer_opts o;
	char name[64];
	void *img;

	tu_unique_shm_name(name, sizeof(name));
	small_opts(&o, name, 100);
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	publish(&w, 5);
	img = malloc(w.size);
	ck_assert_ptr_nonnull(img);
	memcpy(img, w.base, w.size);
	*size = w.size;
	shm_writer_close(&w, 1);
	return img;
}

static struct shm_header_fields *H(void *img)
{
	return &((union shm_header *)img)->h;
}

static void *rows_of(void *img, enum shm_table_id id)
{
	return (char *)img + H(img)->table[id].offset;
}

#define PROC(img, i)	(((struct shm_proc *)rows_of(img, SHM_TABLE_PROCS))[i])
#define OP(img, i)	(((struct shm_nccl_op *)rows_of(img, SHM_TABLE_NCCL_OPS))[i])
#define GPU(img, i)	(((struct shm_gpu *)rows_of(img, SHM_TABLE_GPUS))[i])
#define MEM(img, i)	(((struct shm_gpu_mem *)rows_of(img, SHM_TABLE_GPU_MEM))[i])
#define IDENT(img, i)	(((struct shm_identity *)rows_of(img, SHM_TABLE_IDENTITY))[i])
#define COMM(img, i)	(((struct shm_nccl_comm *)rows_of(img, SHM_TABLE_NCCL_COMMS))[i])
#define WL(img, i)	(((struct shm_workload *)rows_of(img, SHM_TABLE_WORKLOADS))[i])

/* Applies one corruption to a fresh copy and expects a reason containing want. */
#define EXPECT_REJECT(mutation, want)						\
	do {									\
		size_t sz_;							\
		void *img = valid_image(&sz_);					\
		size_t size = sz_;						\
		char why_[256] = "";						\
		mutation;							\
		ck_assert_int_eq(shm_validate(img, size, why_, sizeof(why_)), -EINVAL); \
		ck_assert_msg(strstr(why_, want) != NULL,			\
			      "reason \"%s\" lacks \"%s\"", why_, want);	\
		free(img);							\
	} while (0)

START_TEST(valid_image_passes)
{
	size_t size;
	void *img = valid_image(&size);
	char why[256] = "x";

	ck_assert_msg(shm_validate(img, size, why, sizeof(why)) == 0, "%s", why);
	ck_assert_str_eq(why, "");
	ck_assert_int_eq(shm_validate(NULL, size, why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(shm_validate((char *)img + 4, size - 4, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "aligned"));
	free(img);
}
END_TEST

START_TEST(rejects_truncated_and_size_mismatch)
{
	EXPECT_REJECT(size = 100, "smaller than the 4096-byte header");
	EXPECT_REJECT(size = SHM_HEADER_SIZE, "header says");
	EXPECT_REJECT(size -= 64, "header says");
	EXPECT_REJECT(H(img)->total_size += 64, "header says");
}
END_TEST

START_TEST(rejects_bad_magic_version_header_size_mode)
{
	EXPECT_REJECT(H(img)->magic ^= 1, "bad magic");
	EXPECT_REJECT(H(img)->layout_version = SHM_LAYOUT_VERSION + 1, "layout version");
	EXPECT_REJECT(H(img)->header_size = 2048, "header size 2048");
	EXPECT_REJECT(H(img)->mode = 0, "unknown mode 0");
}
END_TEST

START_TEST(rejects_counts_and_capacities)
{
	EXPECT_REJECT(H(img)->table[SHM_TABLE_PROCS].count = 7, "table procs: count 7 exceeds capacity 6");
	EXPECT_REJECT(H(img)->table[SHM_TABLE_NCCL_COMMS].count = UINT32_MAX, "nccl_comms: count");
	EXPECT_REJECT(H(img)->table[SHM_TABLE_GPUS].capacity = SHM_LIMIT_GPUS + 1, "exceeds the limit");
	EXPECT_REJECT(H(img)->table[SHM_TABLE_NCCL_OPS].capacity = 8, "nccl_ops: capacity 8, expected 10");
	/* A capacity within the limit but past the end of the segment. */
	EXPECT_REJECT(H(img)->table[SHM_TABLE_GPU_MEM].capacity = SHM_LIMIT_GPU_MEM, "run past");
}
END_TEST

START_TEST(rejects_bad_offsets_and_entry_sizes)
{
	EXPECT_REJECT(H(img)->table[SHM_TABLE_NCCL_COMMS].offset = 1ull << 40, "run past");
	EXPECT_REJECT(H(img)->table[SHM_TABLE_NCCL_COMMS].offset = UINT64_MAX - 63, "run past");
	EXPECT_REJECT(H(img)->table[SHM_TABLE_GPUS].offset += 8, "not aligned");
	EXPECT_REJECT(H(img)->table[SHM_TABLE_PROCS].offset = 0, "overlaps the header");
	EXPECT_REJECT(H(img)->table[SHM_TABLE_GPUS].offset = H(img)->table[SHM_TABLE_GPU_MEM].offset,
		      "tables gpu_mem and gpus overlap");
	EXPECT_REJECT(H(img)->table[SHM_TABLE_PROCS].entry_size -= 8, "procs: entry size");
	EXPECT_REJECT(H(img)->table[SHM_TABLE_GPU_MEM].entry_size = 0, "gpu_mem: entry size 0");
}
END_TEST

START_TEST(rejects_broken_histograms)
{
	EXPECT_REJECT(PROC(img, 2).lat[SHM_FAMILY_CUDA_LAUNCH].count++,
		      "procs[2] (pid 1002) cuda_launch: buckets add up to");
	EXPECT_REJECT(PROC(img, 0).lat[SHM_FAMILY_RUNQ_DELAY].bucket[SHM_LAT_BUCKETS - 1] = UINT64_MAX,
		      "runq_delay: bucket counts overflow");
	EXPECT_REJECT(PROC(img, 1).lat[SHM_FAMILY_FUTEX_WAIT].window_p99_ns = 1,
		      "futex_wait: window quantiles out of order");
	EXPECT_REJECT(PROC(img, 1).lat[SHM_FAMILY_DATALOADER_WAIT].window_max_ns = 0,
		      "dataloader_wait: window quantiles out of order");
	EXPECT_REJECT(H(img)->node[SHM_FAMILY_CUDA_GRAPH_LAUNCH].bucket[0] = 1,
		      "node cuda_graph_launch: buckets add up to");
	EXPECT_REJECT(H(img)->node[SHM_FAMILY_BARRIER_WAIT].window_p50_ns = UINT64_MAX,
		      "node barrier_wait: window quantiles");
	EXPECT_REJECT(OP(img, SHM_NCCL_RECV).wait.count = 0,
		      "nccl recv wait: buckets");
	EXPECT_REJECT(OP(img, 0).duration.window_p90_ns = 0,
		      "nccl all_reduce duration: window quantiles");
	/* Log-linear buckets: none at all, or adding up to the count. */
	EXPECT_REJECT(OP(img, 2).wait_fine[100] = 1,
		      "nccl reduce_scatter wait: log-linear buckets add up to 1");
	EXPECT_REJECT(OP(img, 1).duration_fine[HIST_BUCKETS - 1] = UINT64_MAX - 1,
		      "nccl all_gather duration: log-linear buckets add up to");
}
END_TEST

START_TEST(rejects_bad_enums_and_row_invariants)
{
	EXPECT_REJECT(PROC(img, 3).watch_reason = 0x40,
		      "procs[3] (pid 1003): unknown watch reason 0x40");
	EXPECT_REJECT(GPU(img, 1).total_source = SHM_TOTAL_MAX_SOURCE + 1,
		      "gpus[1] (gpu 1): unknown total source 4");
	EXPECT_REJECT(OP(img, 4).op = 3,
		      "nccl_ops[4]: holds op 3");
	EXPECT_REJECT(MEM(img, 2).peak_bytes = 0,
		      "gpu_mem[2] (pid 1002, gpu 2): peak 0 below used");
	/* Identity rows: the collector's own fields and the texts' shape. */
	EXPECT_REJECT(IDENT(img, 2).pid = 1003, "identity[2]: pid 1003, procs[2] is pid 1002");
	EXPECT_REJECT(IDENT(img, 2).runtime = SHM_ID_RUNTIME_MAX + 1, "identity[2] (pid 1002): unknown runtime");
	EXPECT_REJECT(IDENT(img, 2).rank = -2, "identity[2] (pid 1002): a rank outside");
	EXPECT_REJECT(IDENT(img, 2).world_size = SHM_ID_RANK_MAX + 1, "identity[2] (pid 1002): a rank outside");
	EXPECT_REJECT(IDENT(img, 2).slurm_job_id = SHM_ID_SLURM_JOB_MAX + 1, "identity[2] (pid 1002): Slurm job");
	EXPECT_REJECT(memset(IDENT(img, 2).pod, 'a', SHM_ID_POD_LEN),
		      "identity[2] (pid 1002): pod is not a terminated");
	EXPECT_REJECT(IDENT(img, 2).namespace[SHM_ID_NAMESPACE_LEN - 1] = 'x',
		      "identity[2] (pid 1002): namespace is not a terminated");
	EXPECT_REJECT(H(img)->table[SHM_TABLE_IDENTITY].count = H(img)->table[SHM_TABLE_PROCS].count + 1,
		      "identity: ");
}
END_TEST

/* Workload rows: kinds and their texts, buckets that add up, one row a workload. */
START_TEST(rejects_bad_workload_rows)
{
	EXPECT_REJECT(WL(img, 1).kind = SHM_WORKLOAD_KIND_COUNT, "workloads[1]: kind 6");
	EXPECT_REJECT(WL(img, 0).name[0] = 'x', "workloads[0]: kind 0");
	EXPECT_REJECT(WL(img, 1).name[0] = '\0', "workloads[1]: kind 1");
	EXPECT_REJECT((WL(img, 1).kind = SHM_WORKLOAD_RUN), "workloads[1]: kind 5");
	EXPECT_REJECT(memset(WL(img, 1).name, 'a', SHM_ID_POD_LEN), "workloads[1]: kind 1");
	EXPECT_REJECT(WL(img, 1).processes = SHM_LIMIT_PROCS + 1, "processes");
	EXPECT_REJECT(WL(img, 1).lat[SHM_FAMILY_CUDA_SYNC].fine[0]++,
		      "workloads[1] cuda_sync: buckets add up to");
	EXPECT_REJECT(WL(img, 1).lat[SHM_FAMILY_CUDA_LAUNCH].bucket[0]++,
		      "workloads[1] cuda_launch: buckets add up to");
	EXPECT_REJECT(WL(img, 1).lat[SHM_FAMILY_RUNQ_DELAY].fine[HIST_BUCKETS - 1] = UINT64_MAX,
		      "log-linear bucket counts overflow");
	EXPECT_REJECT((WL(img, 0) = WL(img, 1)), "workloads[0] and [1]: the same workload");
}
END_TEST

/* One series per identity: a repeated one would make the whole scrape invalid. */
START_TEST(rejects_rows_with_the_same_identity)
{
	EXPECT_REJECT((PROC(img, 3).pid = 1001, IDENT(img, 3).pid = 1001),
		      "table procs: two rows with the same identity");
	EXPECT_REJECT((MEM(img, 2).pid = 1000, MEM(img, 2).gpu_id = 0),
		      "table gpu_mem: two rows with the same identity");
	EXPECT_REJECT(GPU(img, 1).gpu_id = 0, "table gpus: two rows with the same identity");
	EXPECT_REJECT((COMM(img, 1) = COMM(img, 0), H(img)->table[SHM_TABLE_NCCL_COMMS].count = 2),
		      "table nccl_comms: two rows with the same identity");
	/* The same pid on another GPU, or another pid on the same GPU, is fine. */
	{
		size_t size;
		void *img = valid_image(&size);
		char why[256];

		MEM(img, 2).pid = 1000;
		MEM(img, 1).gpu_id = 2;
		/* Two ranks of one communicator in one process (ncclCommInitAll). */
		COMM(img, 1) = COMM(img, 0);
		COMM(img, 1).rank = 1;
		H(img)->table[SHM_TABLE_NCCL_COMMS].count = 2;
		ck_assert_msg(shm_validate(img, size, why, sizeof(why)) == 0, "%s", why);
		free(img);
	}
}
END_TEST

/* Row i as the collector writes a row of the driver's figure alone. */
static void driver_row(void *img, uint32_t i)
{
	struct shm_gpu_mem *m = &MEM(img, i);

	m->used_bytes = m->peak_bytes = 0;
	m->cuda_device = SHM_GPU_UNKNOWN;
	m->gpu_map = SHM_GPU_MAP_DRIVER;
	m->flags = SHM_GPU_MEM_F_DRIVER | SHM_GPU_MEM_F_DRIVER_ROW;
	m->driver_used_bytes = 5ull << 20;
}

START_TEST(accepts_the_driver_figure)
{
	size_t size;
	void *img = valid_image(&size);
	char why[256] = "";

	/* Known on a row of the probes', on a row of its own, and the GPU's from the driver. */
	MEM(img, 0).flags = SHM_GPU_MEM_F_FROM_START | SHM_GPU_MEM_F_DRIVER;
	MEM(img, 0).driver_used_bytes = UINT64_MAX - 1;
	driver_row(img, 2);
	GPU(img, 1).used_source = SHM_USED_DRIVER;
	ck_assert_msg(shm_validate(img, size, why, sizeof(why)) == 0, "%s", why);
	free(img);
}
END_TEST

START_TEST(rejects_a_driver_figure_out_of_its_rules)
{
	EXPECT_REJECT(MEM(img, 1).driver_used_bytes = 1,
		      "gpu_mem[1] (pid 1001, gpu 1): driver figure 1 without its flag");
	EXPECT_REJECT((MEM(img, 1).flags = SHM_GPU_MEM_F_DRIVER,
		       MEM(img, 1).driver_used_bytes = UINT64_MAX),
		      "gpu_mem[1] (pid 1001, gpu 1): driver figure is NVML's \"not available\"");
	EXPECT_REJECT(MEM(img, 1).flags = 0x8, "gpu_mem[1] (pid 1001): unknown flags 0x8");
	EXPECT_REJECT(MEM(img, 1).gpu_map = SHM_GPU_MAP_DRIVER,
		      "gpu_mem[1] (pid 1001, gpu 1): gpu map 17 with flags 0x0");
	EXPECT_REJECT(MEM(img, 1).gpu_map = SHM_GPU_MAP_COUNT, "gpu map 18");
	/* A row of the figure alone: nothing of the probes', no ordinal, always known. */
	EXPECT_REJECT((driver_row(img, 1), MEM(img, 1).gpu_map = SHM_GPU_MAP_PCI_ORDER),
		      "gpu_mem[1] (pid 1001, gpu 1): gpu map 2 with flags 0x6");
	EXPECT_REJECT((driver_row(img, 1), MEM(img, 1).cuda_device = 0),
		      "gpu_mem[1] (pid 1001): cuda device 0");
	EXPECT_REJECT((driver_row(img, 1), MEM(img, 1).cuda_device = SHM_GPU_UNKNOWN,
		       MEM(img, 0).cuda_device = SHM_GPU_UNKNOWN),
		      "gpu_mem[0] (pid 1000): cuda device 4294967295");
	EXPECT_REJECT((driver_row(img, 1), MEM(img, 1).alloc_calls = 1),
		      "gpu_mem[1] (pid 1001, gpu 1): a row of the driver's figure alone");
	EXPECT_REJECT((driver_row(img, 1), MEM(img, 1).used_bytes = MEM(img, 1).peak_bytes = 1),
		      "a row of the driver's figure alone");
	EXPECT_REJECT((driver_row(img, 1), MEM(img, 1).flags |= SHM_GPU_MEM_F_FROM_START),
		      "a row of the driver's figure alone with flags 0x7");
	EXPECT_REJECT((driver_row(img, 1), MEM(img, 1).flags = SHM_GPU_MEM_F_DRIVER_ROW,
		       MEM(img, 1).driver_used_bytes = 0),
		      "a row of the driver's figure alone with flags 0x4");
	EXPECT_REJECT(GPU(img, 1).used_source = SHM_USED_MAX_SOURCE + 1,
		      "gpus[1] (gpu 1): unknown used source 2");
}
END_TEST

START_TEST(rows_past_count_are_not_judged)
{
	size_t size;
	void *img = valid_image(&size);
	struct shm_proc *p = rows_of(img, SHM_TABLE_PROCS);
	uint32_t n = H(img)->table[SHM_TABLE_PROCS].count;
	char why[256];

	/* Garbage beyond count is unused space, and comm is never judged. */
	ck_assert_uint_lt(n, H(img)->table[SHM_TABLE_PROCS].capacity);
	p[n].watch_reason = 0xffffffffu;
	p[n].lat[0].count = 12345;
	memset(p[0].comm, 0xff, sizeof(p[0].comm));
	ck_assert_msg(shm_validate(img, size, why, sizeof(why)) == 0, "%s", why);
	free(img);
}
END_TEST

/*
 * Random byte flips over a valid image, biased towards the header and the
 * table descriptors where most decisions are made.  Whatever validate says
 * must be safe to act on: on success every row of every table is read
 * (AddressSanitizer catches a read past the exactly-sized buffer).
 */
START_TEST(fuzz_byte_flips_never_crash)
{
	enum { ITERATIONS = 20000, MAX_FLIPS = 6 };
	size_t size;
	void *img = valid_image(&size);
	void *orig = malloc(size);
	unsigned int seed = 12345, accepted = 0, rejected = 0;
	uint64_t checksum = 0;

	ck_assert_ptr_nonnull(orig);
	memcpy(orig, img, size);
	for (int it = 0; it < ITERATIONS; it++) {
		size_t where[MAX_FLIPS];
		int flips = 1 + rand_r(&seed) % MAX_FLIPS;
		struct shm_snapshot snap = { 0 };
		char why[256];
		uint32_t n;

		for (int f = 0; f < flips; f++) {
			int zone = rand_r(&seed) % 4;

			if (zone == 0)	/* fixed header fields */
				where[f] = (size_t)rand_r(&seed) % 64;
			else if (zone == 1)	/* table descriptors and the rest of the header */
				where[f] = offsetof(struct shm_header_fields, table) +
					   (size_t)rand_r(&seed) % (SHM_HEADER_SIZE -
					   offsetof(struct shm_header_fields, table));
			else
				where[f] = (size_t)rand_r(&seed) % size;
			((uint8_t *)img)[where[f]] ^= (uint8_t)(1 + rand_r(&seed) % 255);
		}
		if (shm_validate(img, size, why, sizeof(why)) == 0) {
			const struct shm_proc *p;
			const struct shm_gpu_mem *m;
			const struct shm_gpu *g;
			const struct shm_nccl_op *o;
			const struct shm_nccl_comm *c;

			accepted++;
			snap.buf = img;
			snap.size = size;
			snap.hdr = img;
			p = shm_snapshot_procs(&snap, &n);
			for (uint32_t i = 0; i < n; i++)
				checksum += p[i].pid + p[i].lat[SHM_FAMILY_COUNT - 1].count + p[i].reserved1[2];
			m = shm_snapshot_gpu_mem(&snap, &n);
			for (uint32_t i = 0; i < n; i++)
				checksum += m[i].used_bytes + m[i].driver_used_bytes;
			g = shm_snapshot_gpus(&snap, &n);
			for (uint32_t i = 0; i < n; i++)
				checksum += g[i].total_bytes + g[i].used_source;
			o = shm_snapshot_nccl_ops(&snap, &n);
			for (uint32_t i = 0; i < n; i++)
				checksum += o[i].wait.window_max_ns;
			c = shm_snapshot_nccl_comms(&snap, &n);
			for (uint32_t i = 0; i < n; i++)
				checksum += c[i].comm_id;
		} else {
			rejected++;
			ck_assert_msg(why[0] != '\0', "rejection without a reason");
		}
		for (int f = flips - 1; f >= 0; f--)
			((uint8_t *)img)[where[f]] = ((uint8_t *)orig)[where[f]];
	}
	fprintf(stderr, "shm fuzz: %d iterations, %u accepted, %u rejected (checksum %llx)\n",
		ITERATIONS, accepted, rejected, (unsigned long long)checksum);
	/* Both outcomes happened: the fuzz reached decisions, not only the magic. */
	ck_assert_uint_gt(rejected, ITERATIONS / 10);
	ck_assert_uint_gt(accepted, ITERATIONS / 10);
	ck_assert_int_eq(memcmp(img, orig, size), 0);
	free(orig);
	free(img);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Through a real /dev/shm segment and a long-lived reader.            */

static enum shm_read_status read_once(struct shm_reader *r, struct shm_snapshot *s,
				      char *why, size_t len)
{
	enum shm_read_status st = shm_reader_snapshot(r, s, why, len);

	if (st != SHM_READ_OK)
		fprintf(stderr, "  reader: %s: %s\n", shm_read_status_name(st), why);
	return st;
}

START_TEST(missing_segment_and_bad_name)
{
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	char name[64], why[256];

	tu_unique_shm_name(name, sizeof(name));
	shm_reader_init(&r, name);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_MISSING);
	ck_assert_ptr_nonnull(strstr(why, name));
	ck_assert_ptr_null(s.hdr);
	shm_reader_close(&r);

	shm_reader_init(&r, "zernel");
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_INVALID);
	ck_assert_ptr_nonnull(strstr(why, "must start with '/'"));
	shm_reader_close(&r);
	ck_assert_str_eq(shm_read_status_name(SHM_READ_BUSY), "busy");
	ck_assert_str_eq(shm_read_status_name((enum shm_read_status)99), "unknown");
}
END_TEST

START_TEST(mapped_corruption_is_rejected_then_recovered)
{
	struct shm_writer w;
	struct shm_writer_opts o;
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	char name[64], why[256];
	const void *buf_before;
	uint64_t gen;
	uint32_t n;

	tu_unique_shm_name(name, sizeof(name));
	small_opts(&o, name, 1000);
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	shm_reader_init(&r, name);

	/* Created but never published: valid, but stale. */
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_STALE);
	ck_assert_ptr_nonnull(strstr(why, "not published yet"));

	publish(&w, 9);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	gen = s.hdr->generation;
	ck_assert_uint_eq(gen, w.base->h.generation);
	ck_assert_uint_eq(s.hdr->stats.publishes, 9);
	ck_assert_uint_eq(shm_snapshot_procs(&s, &n)[0].pid, 1000);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(shm_snapshot_procs(&s, &n)[1].comm, "python1");

	/* A failed read leaves the previous snapshot as it was. */
	buf_before = s.buf;
	w.base->h.layout_version = 99;
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_INVALID);
	ck_assert_ptr_nonnull(strstr(why, "layout version 99"));
	ck_assert_ptr_eq(s.buf, buf_before);
	ck_assert_uint_eq(s.hdr->stats.publishes, 9);
	ck_assert_uint_eq(s.hdr->layout_version, SHM_LAYOUT_VERSION);
	w.base->h.layout_version = SHM_LAYOUT_VERSION;

	shm_writer_begin(&w);
	((struct shm_proc *)shm_writer_table(&w, SHM_TABLE_PROCS))[0].lat[2].bucket[3]++;
	shm_writer_end(&w);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_INVALID);
	ck_assert_ptr_nonnull(strstr(why, "dataloader_wait: buckets add up to"));

	/* A comm filling all 16 bytes comes out bounded. */
	publish(&w, 10);
	shm_writer_begin(&w);
	memset(((struct shm_proc *)shm_writer_table(&w, SHM_TABLE_PROCS))[0].comm, 'x', SHM_COMM_LEN);
	memset(w.base->h.scenario, 'y', sizeof(w.base->h.scenario));
	shm_writer_end(&w);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	ck_assert_uint_eq(strlen(shm_snapshot_procs(&s, &n)[0].comm), SHM_COMM_LEN - 1);
	ck_assert_uint_eq(strlen(s.hdr->scenario), sizeof(s.hdr->scenario) - 1);
	ck_assert_uint_eq(s.hdr->stats.publishes, 10);
	ck_assert_uint_eq(s.hdr->generation, gen);

	shm_snapshot_free(&s);
	shm_reader_close(&r);
	shm_writer_close(&w, 1);
}
END_TEST

START_TEST(mapped_truncation_and_odd_files_are_rejected)
{
	struct shm_writer w;
	struct shm_writer_opts o;
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	char name[64], why[256], path[128];
	int fd;

	tu_unique_shm_name(name, sizeof(name));
	small_opts(&o, name, 1000);
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	publish(&w, 3);
	shm_reader_init(&r, name);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);

	/* Shorter than total_size: the mapped reader notices the size change. */
	ck_assert_int_eq(ftruncate(w.fd, (off_t)(w.size - 64)), 0);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_INVALID);
	ck_assert_ptr_nonnull(strstr(why, "header says"));
	/* Longer than total_size. */
	ck_assert_int_eq(ftruncate(w.fd, (off_t)(w.size + 4096)), 0);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_INVALID);
	ck_assert_ptr_nonnull(strstr(why, "header says"));
	/* Smaller than the header. */
	ck_assert_int_eq(ftruncate(w.fd, 100), 0);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_INVALID);
	ck_assert_ptr_nonnull(strstr(why, "smaller than the 4096-byte header"));
	/* Larger than any segment may be (sparse, costs nothing). */
	ck_assert_int_eq(ftruncate(w.fd, (off_t)SHM_LIMIT_TOTAL_SIZE + 4096), 0);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_INVALID);
	ck_assert_ptr_nonnull(strstr(why, "above the"));
	/* The snapshot taken before all this is intact. */
	ck_assert_uint_eq(s.hdr->stats.publishes, 3);
	/* The writer's mapping now extends past EOF: drop it without touching it. */
	shm_writer_close(&w, 1);

	/* Zero-filled, as between the writer's ftruncate and its header. */
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 3 * SHM_HEADER_SIZE), 0);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_BUSY);
	ck_assert_ptr_nonnull(strstr(why, "not initialised"));
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_INVALID);
	close(fd);
	shm_unlink(name);

	/* A directory squatting on the name. */
	snprintf(path, sizeof(path), "/dev/shm%s", name);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_INVALID);
	ck_assert_ptr_nonnull(strstr(why, "not a regular file"));
	rmdir(path);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_MISSING);

	shm_snapshot_free(&s);
	shm_reader_close(&r);
}
END_TEST

/*
 * Hostile headers through the real reader: its copy follows the header's
 * own table descriptors, so they must be clipped before they are judged.
 */
START_TEST(mapped_fuzz_of_header_never_crashes)
{
	enum { ITERATIONS = 3000 };
	struct shm_writer w;
	struct shm_writer_opts o;
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	union shm_header good;
	char name[64], why[256];
	unsigned int seed = 777, ok = 0, invalid = 0, other = 0;
	uint8_t *hdr;

	tu_unique_shm_name(name, sizeof(name));
	small_opts(&o, name, 60000);
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	publish(&w, 4);
	memcpy(&good, w.base, sizeof(good));
	hdr = (uint8_t *)w.base;
	shm_reader_init(&r, name);
	/* The descriptors first: offsets and counts that point anywhere. */
	w.base->h.table[SHM_TABLE_GPUS].offset = UINT64_MAX - 63;
	w.base->h.table[SHM_TABLE_PROCS].count = UINT32_MAX;
	w.base->h.table[SHM_TABLE_GPU_MEM].entry_size = UINT32_MAX;
	ck_assert_int_eq(shm_reader_snapshot(&r, &s, why, sizeof(why)), SHM_READ_INVALID);
	memcpy(w.base, &good, sizeof(good));
	for (int it = 0; it < ITERATIONS; it++) {
		size_t at = (size_t)rand_r(&seed) % sizeof(struct shm_header_fields);
		enum shm_read_status st;

		if (at >= offsetof(struct shm_header_fields, seq) &&
		    at < offsetof(struct shm_header_fields, seq) + 8)
			continue;	/* an odd seq only means busy */
		hdr[at] ^= (uint8_t)(1 + rand_r(&seed) % 255);
		if (rand_r(&seed) % 2)
			w.base->h.table[rand_r(&seed) % SHM_TABLE_COUNT].count =
				(uint32_t)rand_r(&seed) % 64;
		st = shm_reader_snapshot(&r, &s, why, sizeof(why));
		ok += st == SHM_READ_OK;
		invalid += st == SHM_READ_INVALID;
		other += st != SHM_READ_OK && st != SHM_READ_INVALID;
		memcpy(w.base, &good, sizeof(good));
	}
	fprintf(stderr, "shm mapped fuzz: %u ok, %u invalid, %u other\n", ok, invalid, other);
	ck_assert_uint_gt(ok, 0);
	ck_assert_uint_gt(invalid, ITERATIONS / 4);
	/* Restored, the same reader is fine. */
	ck_assert_int_eq(shm_reader_snapshot(&r, &s, why, sizeof(why)), SHM_READ_OK);
	ck_assert_uint_eq(s.hdr->stats.publishes, 4);
	shm_snapshot_free(&s);
	shm_reader_close(&r);
	shm_writer_close(&w, 1);
}
END_TEST

/*
 * Reads between two publishes hand the same copy again, neither copied nor
 * validated anew; a publish, or a header that changed without one, is read
 * afresh.
 */
START_TEST(an_unchanged_segment_is_handed_again)
{
	struct shm_writer w;
	struct shm_writer_opts o;
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	char name[64], why[256];
	const void *first;

	tu_unique_shm_name(name, sizeof(name));
	small_opts(&o, name, 1000);
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	shm_reader_init(&r, name);
	publish(&w, 1);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	first = s.buf;
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
		ck_assert_ptr_eq(s.buf, first);
	}
	publish(&w, 2);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	ck_assert_ptr_ne(s.buf, first);
	ck_assert_uint_eq(s.hdr->stats.publishes, 2);
	first = s.buf;
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	ck_assert_ptr_eq(s.buf, first);
	/* Written without the seqlock: the header no longer matches the copy. */
	w.base->h.layout_version = 99;
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_INVALID);
	w.base->h.layout_version = SHM_LAYOUT_VERSION;
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	ck_assert_uint_eq(s.hdr->stats.publishes, 2);
	shm_snapshot_free(&s);
	shm_reader_close(&r);
	shm_writer_close(&w, 1);
}
END_TEST

/*
 * Intervals of 200 ms: a read right after a publish stays fresh (under
 * 600 ms old) however long a busy machine keeps the test off its CPU in
 * between, within reason; a stale one is read 700 ms after.
 */
START_TEST(stale_heartbeat_is_reported_with_a_valid_snapshot)
{
	struct shm_writer w;
	struct shm_writer_opts o;
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	char name[64], why[256];

	tu_unique_shm_name(name, sizeof(name));
	small_opts(&o, name, 200);		/* stale after 3 x 200 ms */
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	shm_reader_init(&r, name);
	publish(&w, 1);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	ck_assert_uint_lt(s.age_ns, 600ull * 1000000ull);
	tu_sleep_ms(700);
	ck_assert_int_eq(shm_reader_snapshot(&r, &s, why, sizeof(why)), SHM_READ_STALE);
	ck_assert_ptr_nonnull(strstr(why, "last publish"));
	ck_assert_ptr_nonnull(s.hdr);
	ck_assert_uint_ge(s.age_ns, 700ull * 1000000ull);
	ck_assert_uint_eq(s.hdr->stats.publishes, 1);
	/* A fresh publish makes it OK again; a larger allowance too. */
	publish(&w, 2);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	tu_sleep_ms(700);
	r.stale_intervals = 50;
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	r.stale_intervals = 3;
	/*
	 * A heartbeat from the future (a writer whose clock is ahead) is fresh
	 * when it appears, and goes stale like any other when it stops changing.
	 */
	shm_writer_begin(&w);
	w.base->h.heartbeat_mono_ns = now_mono_ns() + 3600ull * 1000000000ull;
	shm_writer_end(&w);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	ck_assert_uint_eq(s.age_ns, 0);
	tu_sleep_ms(700);
	ck_assert_int_eq(shm_reader_snapshot(&r, &s, why, sizeof(why)), SHM_READ_STALE);
	ck_assert_ptr_nonnull(strstr(why, "last publish"));
	ck_assert_uint_ge(s.age_ns, 700ull * 1000000ull);
	/* Publish interval 0 falls back to 1 s: 3 s allowance. */
	publish(&w, 3);
	w.base->h.publish_interval_ms = 0;
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	shm_snapshot_free(&s);
	shm_reader_close(&r);
	shm_writer_close(&w, 1);
}
END_TEST

/*
 * A writer whose CLOCK_MONOTONIC is an hour behind or ahead of ours (a
 * collector in another time namespace) is fresh from its first publish,
 * which the wall clocks date, with ages on the reader's clock, and stale
 * again when it stops.  Without a wall-clock stamp, one behind is stale
 * until the reader sees a publish happen.
 */
START_TEST(writer_on_another_clock_is_judged_by_its_publishes)
{
	static const struct {
		int64_t off;
		int wall;
	} cases[] = {
		{ -3600ll * 1000000000ll, 1 }, { 3600ll * 1000000000ll, 1 },
		{ -3600ll * 1000000000ll, 0 }, { 3600ll * 1000000000ll, 0 },
	};
	struct shm_writer w;
	struct shm_writer_opts o;
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	char name[64], why[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t off = cases[i].off;
		int first_stale = off < 0 && !cases[i].wall;
		enum shm_read_status want;
		uint64_t t;	/* when the last publish began */

#define PUBLISH(k) (t = now_mono_ns(), publish_on(&w, (k), off, cases[i].wall ? 0 : NO_WALL_STAMP))
		tu_unique_shm_name(name, sizeof(name));
		small_opts(&o, name, 200);		/* stale after 3 x 200 ms */
		ck_assert_int_eq(shm_writer_create(&w, &o), 0);
		shm_reader_init(&r, name);
		PUBLISH(1);
		want = first_stale ? SHM_READ_STALE : SHM_READ_OK;
		ck_assert_int_eq(shm_reader_snapshot(&r, &s, why, sizeof(why)), want);
		/* Ages on our clock: never more than the time since the publish began. */
		ck_assert_uint_le(s.age_ns, first_stale ? 3601ull * 1000000000ull : now_mono_ns() - t);
		tu_sleep_ms(10);
		for (uint64_t k = 2; k < 6; k++) {
			PUBLISH(k);
			tu_sleep_ms(5);
			ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
			ck_assert_uint_le(s.age_ns, now_mono_ns() - t);
			ck_assert_uint_le(s.published_ns, now_mono_ns());
			tu_sleep_ms(10);
		}
		/* Stopped: stale after the limit, by our clock. */
		tu_sleep_ms(700);
		ck_assert_int_eq(shm_reader_snapshot(&r, &s, why, sizeof(why)), SHM_READ_STALE);
		ck_assert_ptr_nonnull(strstr(why, "last publish"));
		ck_assert_uint_ge(s.age_ns, 700ull * 1000000ull);
		ck_assert_uint_le(s.age_ns, 2000ull * 1000000ull);
		PUBLISH(6);
		ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
#undef PUBLISH
		shm_reader_close(&r);
		shm_writer_close(&w, 1);
	}
	/* An hour old by both clocks: a collector gone, stale at first sight. */
	tu_unique_shm_name(name, sizeof(name));
	small_opts(&o, name, 200);
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	shm_reader_init(&r, name);
	publish_on(&w, 1, -3600ll * 1000000000ll, -3600ll * 1000000000ll);
	ck_assert_int_eq(shm_reader_snapshot(&r, &s, why, sizeof(why)), SHM_READ_STALE);
	ck_assert_uint_ge(s.age_ns, 3600ull * 1000000000ull);
	shm_reader_close(&r);
	shm_writer_close(&w, 1);
	shm_snapshot_free(&s);
}
END_TEST

START_TEST(reader_follows_a_recreated_segment)
{
	struct shm_writer w;
	struct shm_writer_opts o;
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	char name[64], why[256];
	uint64_t g1, g2;

	tu_unique_shm_name(name, sizeof(name));
	small_opts(&o, name, 1000);
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	publish(&w, 1);
	shm_reader_init(&r, name);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	g1 = r.generation;
	ck_assert_uint_eq(g1, w.base->h.generation);

	/* A collector restart without a clean exit: the new one replaces the segment. */
	shm_writer_close(&w, 0);
	o.cap.procs = 10;			/* another size, too */
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	publish(&w, 2);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	g2 = r.generation;
	ck_assert_uint_ne(g2, g1);
	ck_assert_uint_eq(s.hdr->generation, g2);
	ck_assert_uint_eq(s.hdr->table[SHM_TABLE_PROCS].capacity, 10);
	ck_assert_uint_eq(s.hdr->stats.publishes, 2);

	/* A clean exit removes it: missing, then back when a collector returns. */
	shm_writer_close(&w, 1);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_MISSING);
	ck_assert_uint_eq(s.hdr->generation, g2);
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	publish(&w, 3);
	ck_assert_int_eq(read_once(&r, &s, why, sizeof(why)), SHM_READ_OK);
	ck_assert_uint_ne(r.generation, g2);
	ck_assert_uint_eq(s.hdr->stats.publishes, 3);
	shm_snapshot_free(&s);
	shm_reader_close(&r);
	shm_writer_close(&w, 1);
}
END_TEST

Suite *shm_reader_suite(void);
Suite *shm_reader_suite(void)
{
	Suite *s = suite_create("shm_reader");
	TCase *tc = tcase_create("validate");
	TCase *tm = tcase_create("mapped");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, valid_image_passes);
	tcase_add_test(tc, rejects_truncated_and_size_mismatch);
	tcase_add_test(tc, rejects_bad_magic_version_header_size_mode);
	tcase_add_test(tc, rejects_counts_and_capacities);
	tcase_add_test(tc, rejects_bad_offsets_and_entry_sizes);
	tcase_add_test(tc, rejects_broken_histograms);
	tcase_add_test(tc, rejects_bad_enums_and_row_invariants);
	tcase_add_test(tc, accepts_the_driver_figure);
	tcase_add_test(tc, rejects_a_driver_figure_out_of_its_rules);
	tcase_add_test(tc, rows_past_count_are_not_judged);
	tcase_add_test(tc, rejects_rows_with_the_same_identity);
	tcase_add_test(tc, rejects_bad_workload_rows);
	tcase_add_test(tc, fuzz_byte_flips_never_crash);
	suite_add_tcase(s, tc);

	tcase_set_timeout(tm, 30);
	tcase_add_test(tm, missing_segment_and_bad_name);
	tcase_add_test(tm, mapped_corruption_is_rejected_then_recovered);
	tcase_add_test(tm, an_unchanged_segment_is_handed_again);
	tcase_add_test(tm, mapped_truncation_and_odd_files_are_rejected);
	tcase_add_test(tm, mapped_fuzz_of_header_never_crashes);
	tcase_add_test(tm, stale_heartbeat_is_reported_with_a_valid_snapshot);
	tcase_add_test(tm, reader_follows_a_recreated_segment);
	tcase_add_test(tm, writer_on_another_clock_is_judged_by_its_publishes);
	suite_add_tcase(s, tm);
	return s;
}
