/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The driver's memory figures in the aggregation (collector/agg/agg_driver.c)
 * against ground truth: figures fed as NVML would give them, published
 * into a real segment and read back through shm_reader, which validates
 * every row.  Unprivileged.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "collector/agg/agg.h"
#include "common/util.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/collector/tu_agg.h"
#include "tests/support/testutil.h"

static struct tu_agg fx;

static void fx_open(uint32_t gpu_mem)
{
	tu_agg_open(&fx, (struct shm_capacity){ .procs = 16, .gpu_mem = gpu_mem, .gpus = 4,
						.nccl_comms = 4 },
		    SHM_MODE_BPF);
	for (uint32_t pid = 100; pid < 104; pid++)
		ck_assert_int_eq(agg_proc_watch(fx.a, pid, 1, SHM_WATCH_CUDA, "train", 7), 0);
}

static void setup(void)
{
	fx_open(32);
}

static void teardown(void)
{
	tu_agg_close(&fx);
}

static const struct shm_header_fields *publish_and_read(void)
{
	return tu_agg_publish(&fx, NULL);
}

static const struct shm_gpu_mem *find_mem(uint32_t pid, uint32_t gpu)
{
	return tu_agg_mem(&fx, pid, gpu);
}

static const struct shm_gpu *find_gpu(uint32_t id)
{
	return tu_agg_gpu(&fx, id);
}

START_TEST(figures_land_on_the_probes_rows_and_on_rows_of_their_own)
{
	const struct agg_driver_proc list[] = { { 100, 300 << 20 }, { 101, 50 << 20 } };
	const struct shm_gpu_mem *m;

	ck_assert_int_eq(agg_gpu_alloc(fx.a, 100, 0, 100 << 20), 0);
	ck_assert_int_eq(agg_gpu_driver_procs(fx.a, 0, list, 2, 1), 2);
	publish_and_read();

	/* The probes' row keeps its figures and gains the driver's. */
	m = find_mem(100, 0);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->used_bytes, 100u << 20);
	ck_assert_uint_eq(m->driver_used_bytes, 300u << 20);
	ck_assert_uint_eq(m->flags, SHM_GPU_MEM_F_FROM_START | SHM_GPU_MEM_F_DRIVER);
	ck_assert_uint_eq(m->gpu_map, SHM_GPU_MAP_ORDINAL);
	/* Memory the probes never saw (before the collector started): a row of its own. */
	m = find_mem(101, 0);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->used_bytes, 0);
	ck_assert_uint_eq(m->alloc_calls, 0);
	ck_assert_uint_eq(m->driver_used_bytes, 50u << 20);
	ck_assert_uint_eq(m->flags, SHM_GPU_MEM_F_DRIVER | SHM_GPU_MEM_F_DRIVER_ROW);
	ck_assert_uint_eq(m->gpu_map, SHM_GPU_MAP_DRIVER);
	ck_assert_uint_eq(m->cuda_device, SHM_GPU_UNKNOWN);
	ck_assert_str_eq(shm_gpu_map_name(m->gpu_map), "driver");
	/* Both hold memory on GPU 0; its used memory is still the rows' sum. */
	ck_assert_uint_eq(find_gpu(0)->processes, 2);
	ck_assert_uint_eq(find_gpu(0)->used_bytes, 100u << 20);
	ck_assert_uint_eq(find_gpu(0)->used_source, SHM_USED_PROCESSES);
}
END_TEST

START_TEST(unwatched_unavailable_and_repeated_processes)
{
	const struct agg_driver_proc list[] = {
		{ 100, 10 }, { 100, 5 },		/* two MIG instances of one GPU */
		{ 101, AGG_DRIVER_NOT_AVAILABLE },	/* no permission, WDDM */
		{ 999, 70 },				/* not watched: left out */
	};
	const struct shm_header_fields *h;

	ck_assert_int_eq(agg_gpu_driver_procs(fx.a, 1, list, 4, 1), 1);
	h = publish_and_read();
	ck_assert_uint_eq(find_mem(100, 1)->driver_used_bytes, 15);
	ck_assert_ptr_null(find_mem(101, 1));
	ck_assert_ptr_null(find_mem(999, 1));
	ck_assert_uint_eq(h->table[SHM_TABLE_GPU_MEM].count, 1);
	ck_assert_uint_eq(h->table[SHM_TABLE_PROCS].count, 4);
	/* An unmapped GPU key is the probes' alone. */
	ck_assert_int_eq(agg_gpu_driver_procs(fx.a, AGG_GPU_UNMAPPED | 1, list, 1, 1), -EINVAL);
	ck_assert_int_eq(agg_gpu_device_used(fx.a, AGG_GPU_UNMAPPED | 1, 1, 1), -EINVAL);
}
END_TEST

START_TEST(a_process_no_longer_listed_loses_its_figure)
{
	const struct agg_driver_proc both[] = { { 100, 300 }, { 101, 50 } };
	const struct agg_driver_proc one[] = { { 100, 320 } };

	ck_assert_int_eq(agg_gpu_alloc(fx.a, 100, 0, 100), 0);
	ck_assert_int_eq(agg_gpu_driver_procs(fx.a, 0, both, 2, 1), 2);
	ck_assert_int_eq(agg_gpu_driver_procs(fx.a, 0, one, 1, 1), 1);
	publish_and_read();
	ck_assert_uint_eq(find_mem(100, 0)->driver_used_bytes, 320);
	/* Its row was the figure's alone: it goes with it. */
	ck_assert_ptr_null(find_mem(101, 0));

	/* A list that could not be read: no figure at all, the probes' rows stay. */
	ck_assert_int_eq(agg_gpu_driver_procs(fx.a, 0, one, 1, 0), 0);
	publish_and_read();
	ck_assert_uint_eq(find_mem(100, 0)->driver_used_bytes, 0);
	ck_assert_uint_eq(find_mem(100, 0)->flags, SHM_GPU_MEM_F_FROM_START);
	ck_assert_uint_eq(find_mem(100, 0)->used_bytes, 100);
	/* Another GPU's list leaves this one's figures alone. */
	ck_assert_int_eq(agg_gpu_driver_procs(fx.a, 0, one, 1, 1), 1);
	ck_assert_int_eq(agg_gpu_driver_procs(fx.a, 1, NULL, 0, 1), 0);
	publish_and_read();
	ck_assert_uint_eq(find_mem(100, 0)->driver_used_bytes, 320);
}
END_TEST

START_TEST(probes_take_over_a_row_of_the_figure_alone)
{
	const struct agg_driver_proc list[] = { { 102, 4096 } };
	const struct shm_gpu_mem *m;

	ck_assert_int_eq(agg_gpu_driver_procs(fx.a, 2, list, 1, 1), 1);
	/* Not the probes' row: the decoder still asks whether it was tracked from the start. */
	ck_assert_int_eq(agg_gpu_has(fx.a, 102, 2), 0);
	ck_assert_int_eq(agg_gpu_from_start(fx.a, 102, 2, 0), 0);
	ck_assert_int_eq(agg_gpu_has(fx.a, 102, 2), 1);
	ck_assert_int_eq(agg_gpu_mapped(fx.a, 102, 2, 1, SHM_GPU_MAP_PCI_ORDER), 0);
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 102, 2, 1000), 0);
	publish_and_read();
	m = find_mem(102, 2);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->used_bytes, 1000);
	ck_assert_uint_eq(m->alloc_calls, 1);
	ck_assert_uint_eq(m->cuda_device, 1);
	ck_assert_uint_eq(m->gpu_map, SHM_GPU_MAP_PCI_ORDER);
	/* It keeps the figure, which is now beside the probes'. */
	ck_assert_uint_eq(m->flags, SHM_GPU_MEM_F_DRIVER);
	ck_assert_uint_eq(m->driver_used_bytes, 4096);
	/* Unlisted now, it stays: the probes' figures are still its own. */
	ck_assert_int_eq(agg_gpu_driver_procs(fx.a, 2, NULL, 0, 1), 0);
	publish_and_read();
	ck_assert_uint_eq(find_mem(102, 2)->flags, 0);
	ck_assert_uint_eq(find_mem(102, 2)->used_bytes, 1000);
	/* The driver's own mapping is not one a caller may give. */
	ck_assert_int_eq(agg_gpu_mapped(fx.a, 102, 2, 1, SHM_GPU_MAP_DRIVER), -EINVAL);
}
END_TEST

START_TEST(device_used_is_the_drivers_when_known_else_the_rows_sum)
{
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 100, 0, 100), 0);
	ck_assert_int_eq(agg_gpu_alloc(fx.a, 101, 0, 20), 0);
	ck_assert_int_eq(agg_gpu_device_used(fx.a, 0, 1, 5000), 0);
	publish_and_read();
	ck_assert_uint_eq(find_gpu(0)->used_bytes, 5000);
	ck_assert_uint_eq(find_gpu(0)->used_source, SHM_USED_DRIVER);
	ck_assert_uint_eq(find_gpu(0)->processes, 2);
	/* A GPU no process touched is a row of its own. */
	ck_assert_int_eq(agg_gpu_device_used(fx.a, 3, 1, 7), 0);
	publish_and_read();
	ck_assert_uint_eq(find_gpu(3)->used_bytes, 7);
	ck_assert_uint_eq(find_gpu(3)->processes, 0);
	/* NVML lost the device: back to the sum, at once. */
	ck_assert_int_eq(agg_gpu_device_used(fx.a, 0, 0, 5000), 0);
	publish_and_read();
	ck_assert_uint_eq(find_gpu(0)->used_bytes, 120);
	ck_assert_uint_eq(find_gpu(0)->used_source, SHM_USED_PROCESSES);
}
END_TEST

START_TEST(rows_of_the_figure_alone_count_against_the_table)
{
	const struct agg_driver_proc list[] = { { 100, 1 }, { 101, 2 }, { 102, 3 } };
	const struct shm_header_fields *h;

	teardown();
	fx_open(2);
	ck_assert_int_eq(agg_gpu_driver_procs(fx.a, 0, list, 3, 1), 2);
	h = publish_and_read();
	ck_assert_uint_eq(h->table[SHM_TABLE_GPU_MEM].count, 2);
	ck_assert_uint_eq(h->table[SHM_TABLE_GPU_MEM].overflows, 1);
	/* Evicted with their process, like any row. */
	agg_proc_exit(fx.a, 100);
	h = publish_and_read();
	ck_assert_uint_eq(h->table[SHM_TABLE_GPU_MEM].count, 1);
	ck_assert_ptr_nonnull(find_mem(101, 0));
}
END_TEST

Suite *agg_driver_suite(void);

Suite *agg_driver_suite(void)
{
	Suite *s = suite_create("agg_driver");
	TCase *tc = tcase_create("driver");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, figures_land_on_the_probes_rows_and_on_rows_of_their_own);
	tcase_add_test(tc, unwatched_unavailable_and_repeated_processes);
	tcase_add_test(tc, a_process_no_longer_listed_loses_its_figure);
	tcase_add_test(tc, probes_take_over_a_row_of_the_figure_alone);
	tcase_add_test(tc, device_used_is_the_drivers_when_known_else_the_rows_sum);
	tcase_add_test(tc, rows_of_the_figure_alone_count_against_the_table);
	suite_add_tcase(s, tc);
	return s;
}
