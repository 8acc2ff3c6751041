/* SPDX-License-Identifier: BSD-2-Clause */
/* The aggregation suites' fixture; see tu_agg.h. */
#include <check.h>
#include <string.h>

#include "common/util.h"
#include "tests/collector/tu_agg.h"
#include "tests/support/testutil.h"

void tu_agg_open(struct tu_agg *fx, struct shm_capacity cap, uint32_t mode)
{
	struct shm_writer_opts wo;
	struct agg_opts ao;

	memset(fx, 0, sizeof(*fx));
	memset(&ao, 0, sizeof(ao));
	ao.cap = cap;
	ao.window_ns = 60 * NSEC_PER_SEC;
	fx->a = agg_new(&ao);
	ck_assert_ptr_nonnull(fx->a);
	tu_unique_shm_name(fx->name, sizeof(fx->name));
	memset(&wo, 0, sizeof(wo));
	wo.name = fx->name;
	wo.cap = ao.cap;
	wo.mode = mode;
	wo.publish_interval_ms = 1000;
	wo.window_ns = ao.window_ns;
	ck_assert_int_eq(shm_writer_create(&fx->w, &wo), 0);
	fx->created = 1;
	shm_reader_init(&fx->r, fx->name);
}

void tu_agg_close(struct tu_agg *fx)
{
	shm_snapshot_free(&fx->snap);
	shm_reader_close(&fx->r);
	if (fx->created)
		shm_writer_close(&fx->w, 1);
	agg_free(fx->a);
	memset(fx, 0, sizeof(*fx));
}

const struct shm_header_fields *tu_agg_publish(struct tu_agg *fx, const char *scenario)
{
	char why[256] = "";
	enum shm_read_status st;

	agg_publish(fx->a, &fx->w, now_mono_ns(), now_real_ns(), scenario);
	st = shm_reader_snapshot(&fx->r, &fx->snap, why, sizeof(why));
	ck_assert_msg(st == SHM_READ_OK, "snapshot: %s: %s", shm_read_status_name(st), why);
	return fx->snap.hdr;
}

const struct shm_gpu_mem *tu_agg_mem(const struct tu_agg *fx, uint32_t pid, uint32_t gpu)
{
	uint32_t n;
	const struct shm_gpu_mem *m = shm_snapshot_gpu_mem(&fx->snap, &n);

	for (uint32_t i = 0; m && i < n; i++)
		if (m[i].pid == pid && m[i].gpu_id == gpu)
			return &m[i];
	return NULL;
}

const struct shm_proc *tu_agg_proc(const struct tu_agg *fx, uint32_t pid)
{
	uint32_t n;
	const struct shm_proc *p = shm_snapshot_procs(&fx->snap, &n);

	for (uint32_t i = 0; p && i < n; i++)
		if (p[i].pid == pid)
			return &p[i];
	return NULL;
}

const struct shm_gpu *tu_agg_gpu(const struct tu_agg *fx, uint32_t gpu)
{
	uint32_t n;
	const struct shm_gpu *g = shm_snapshot_gpus(&fx->snap, &n);

	for (uint32_t i = 0; g && i < n; i++)
		if (g[i].gpu_id == gpu)
			return &g[i];
	return NULL;
}

const struct shm_workload *tu_agg_workload(const struct tu_agg *fx, uint32_t kind,
					   const char *name)
{
	uint32_t n;
	const struct shm_workload *w = shm_snapshot_rows(&fx->snap, SHM_TABLE_WORKLOADS, &n);

	for (uint32_t i = 0; w && i < n; i++)
		if (w[i].kind == kind && strcmp(w[i].name, name) == 0)
			return &w[i];
	return NULL;
}
