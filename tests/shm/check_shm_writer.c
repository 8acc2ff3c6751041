/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Segment creation: names, permissions, table layout, generations.  Uses
 * real POSIX shm segments under unique test names.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

static void small_opts(struct shm_writer_opts *o, const char *name)
{
	tu_shm_opts(o, name, (struct shm_capacity){ 8, 16, 2, 4 });
	o->publish_interval_ms = 100;
}

static int stat_shm(const char *name, struct stat *st)
{
	char path[300];

	snprintf(path, sizeof(path), "/dev/shm%s", name);
	return stat(path, st);
}

START_TEST(create_gives_mode_0644_even_with_umask_077)
{
	struct shm_writer w;
	struct shm_writer_opts o;
	struct stat st;
	char name[64];
	mode_t old;

	tu_unique_shm_name(name, sizeof(name));
	small_opts(&o, name);
	old = umask(077);
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	umask(old);
	ck_assert_int_eq(stat_shm(name, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	ck_assert_uint_eq((uint64_t)st.st_size, shm_segment_size(&o.cap));
	shm_writer_close(&w, 1);
	ck_assert_int_ne(stat_shm(name, &st), 0);
}
END_TEST

START_TEST(create_rejects_bad_names)
{
	static const char *const bad[] = {
		"", "zernel", "/", "/a/b", "//zernel", "/.", "/..", NULL,
	};
	struct shm_writer w;
	struct shm_writer_opts o;
	char longname[300];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		small_opts(&o, bad[i]);
		ck_assert_msg(shm_writer_create(&w, &o) == -EINVAL, "name %zu accepted", i);
		ck_assert_int_eq(w.fd, -1);
		ck_assert_ptr_null(w.base);
	}
	longname[0] = '/';
	memset(longname + 1, 'a', 255);
	longname[256] = '\0';
	small_opts(&o, longname);
	ck_assert_int_eq(shm_writer_create(&w, &o), -EINVAL);
}
END_TEST

START_TEST(create_rejects_capacities_past_limits_and_bad_mode)
{
	struct shm_writer w;
	struct shm_writer_opts o;
	char name[64];

	tu_unique_shm_name(name, sizeof(name));
	small_opts(&o, name);
	o.cap.procs = SHM_LIMIT_PROCS + 1;
	ck_assert_int_eq(shm_writer_create(&w, &o), -EINVAL);
	small_opts(&o, name);
	o.cap.gpus = SHM_LIMIT_GPUS + 1;
	ck_assert_int_eq(shm_writer_create(&w, &o), -EINVAL);
	small_opts(&o, name);
	o.mode = 7;
	ck_assert_int_eq(shm_writer_create(&w, &o), -EINVAL);
	/* Nothing was created under the name. */
	ck_assert_int_lt(shm_open(name, O_RDONLY, 0), 0);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

START_TEST(layout_is_aligned_disjoint_and_valid)
{
	struct shm_writer w;
	struct shm_writer_opts o;
	struct shm_capacity def;
	const struct shm_header_fields *h;
	const struct shm_nccl_op *ops;
	char name[64], why[256];
	uint64_t prev_end = SHM_HEADER_SIZE;

	tu_unique_shm_name(name, sizeof(name));
	small_opts(&o, name);
	shm_capacity_default(&def);
	o.cap = def;
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	h = &w.base->h;
	ck_assert_uint_eq(h->magic, SHM_MAGIC);
	ck_assert_uint_eq(h->layout_version, SHM_LAYOUT_VERSION);
	ck_assert_uint_eq(h->total_size, w.size);
	ck_assert_uint_eq(h->writer_pid, (uint32_t)getpid());
	ck_assert_uint_eq(h->publish_interval_ms, 100);
	ck_assert_uint_eq(h->seq, 0);
	ck_assert_uint_eq(h->table[SHM_TABLE_PROCS].capacity, SHM_DEFAULT_MAX_PROCS);
	ck_assert_uint_eq(h->table[SHM_TABLE_PROCS].entry_size, sizeof(struct shm_proc));
	ck_assert_uint_eq(h->table[SHM_TABLE_GPU_MEM].capacity, SHM_DEFAULT_MAX_GPU_MEM);
	ck_assert_uint_eq(h->table[SHM_TABLE_GPUS].capacity, SHM_DEFAULT_MAX_GPUS);
	ck_assert_uint_eq(h->table[SHM_TABLE_NCCL_COMMS].capacity, SHM_DEFAULT_MAX_NCCL_COMMS);
	ck_assert_uint_eq(h->table[SHM_TABLE_NCCL_OPS].capacity, SHM_NCCL_OP_COUNT);
	for (int i = 0; i < SHM_TABLE_COUNT; i++) {
		const struct shm_table *t = &h->table[i];

		ck_assert_uint_eq(t->offset % SHM_TABLE_ALIGN, 0);
		ck_assert_uint_ge(t->offset, prev_end);
		prev_end = t->offset + (uint64_t)t->entry_size * t->capacity;
		ck_assert_uint_le(prev_end, w.size);
	}
	/* NCCL op rows exist from the start, one per op, in op order. */
	ops = shm_writer_table(&w, SHM_TABLE_NCCL_OPS);
	ck_assert_uint_eq(h->table[SHM_TABLE_NCCL_OPS].count, SHM_NCCL_OP_COUNT);
	for (uint32_t i = 0; i < SHM_NCCL_OP_COUNT; i++)
		ck_assert_uint_eq(ops[i].op, i);
	ck_assert_ptr_null(shm_writer_table(&w, SHM_TABLE_COUNT));
	ck_assert_msg(shm_validate(w.base, w.size, why, sizeof(why)) == 0, "%s", why);
	shm_writer_close(&w, 1);
}
END_TEST

START_TEST(recreate_gives_new_inode_and_generation)
{
	struct shm_writer w1, w2;
	struct shm_writer_opts o;
	struct stat st1, st2;
	char name[64];
	uint64_t g1;

	tu_unique_shm_name(name, sizeof(name));
	small_opts(&o, name);
	ck_assert_int_eq(shm_writer_create(&w1, &o), 0);
	ck_assert_int_eq(fstat(w1.fd, &st1), 0);
	g1 = w1.base->h.generation;
	ck_assert_uint_ne(g1, 0);
	/* A second collector replaces the first one's segment. */
	ck_assert_int_eq(shm_writer_create(&w2, &o), 0);
	ck_assert_int_eq(fstat(w2.fd, &st2), 0);
	ck_assert_uint_ne(w2.base->h.generation, g1);
	ck_assert(st1.st_ino != st2.st_ino);
	ck_assert_int_eq(fstat(w1.fd, &st1), 0);
	ck_assert_uint_eq(st1.st_nlink, 0);
	shm_writer_close(&w1, 0);
	shm_writer_close(&w2, 1);
}
END_TEST

START_TEST(begin_end_make_seq_odd_then_even)
{
	struct shm_writer w;
	struct shm_writer_opts o;
	char name[64];

	tu_unique_shm_name(name, sizeof(name));
	small_opts(&o, name);
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	shm_writer_begin(&w);
	ck_assert_uint_eq(w.base->h.seq, 1);
	shm_writer_end(&w);
	ck_assert_uint_eq(w.base->h.seq, 2);
	shm_writer_close(&w, 1);
	/* Closing a zeroed or already closed writer is harmless. */
	memset(&w, 0, sizeof(w));
	shm_writer_close(&w, 0);
	ck_assert_int_ne(fcntl(0, F_GETFD), -1);
}
END_TEST

START_TEST(segment_size_grows_with_capacities)
{
	struct shm_capacity c;
	uint64_t base;

	shm_capacity_default(&c);
	base = shm_segment_size(&c);
	ck_assert_uint_eq(base % SHM_TABLE_ALIGN, 0);
	ck_assert_uint_ge(base, SHM_HEADER_SIZE +
			  (uint64_t)SHM_DEFAULT_MAX_PROCS * sizeof(struct shm_proc) +
			  (uint64_t)SHM_DEFAULT_MAX_GPU_MEM * sizeof(struct shm_gpu_mem));
	c.procs++;
	ck_assert_uint_ge(shm_segment_size(&c), base + sizeof(struct shm_proc));
	c.procs = SHM_LIMIT_PROCS;
	c.gpu_mem = SHM_LIMIT_GPU_MEM;
	c.gpus = SHM_LIMIT_GPUS;
	c.nccl_comms = SHM_LIMIT_NCCL_COMMS;
	ck_assert_uint_le(shm_segment_size(&c), SHM_LIMIT_TOTAL_SIZE);
}
END_TEST

Suite *shm_writer_suite(void);
Suite *shm_writer_suite(void)
{
	Suite *s = suite_create("shm_writer");
	TCase *tc = tcase_create("create");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, create_gives_mode_0644_even_with_umask_077);
	tcase_add_test(tc, create_rejects_bad_names);
	tcase_add_test(tc, create_rejects_capacities_past_limits_and_bad_mode);
	tcase_add_test(tc, layout_is_aligned_disjoint_and_valid);
	tcase_add_test(tc, recreate_gives_new_inode_and_generation);
	tcase_add_test(tc, begin_end_make_seq_odd_then_even);
	tcase_add_test(tc, segment_size_grows_with_capacities);
	suite_add_tcase(s, tc);
	return s;
}
