/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Cost of the segment: its size at default capacities, a reader's snapshot
 * (seqlock copy + validation) and a writer's publish, with a typical load
 * and with every table full.  Prints figures; judges nothing.  Unprivileged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shm/shm_reader.h"
#include "shm/shm_writer.h"

#define BENCH_ITERATIONS	2000

struct load {
	const char *label;
	uint32_t procs, gpu_mem, gpus, comms;	/* rows in use */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *ns, size_t n)
{
	qsort(ns, n, sizeof(*ns), cmp_u64);
	printf("  %-34s median %9.1f us   p99 %9.1f us\n", what,
	       (double)ns[n / 2] / 1e3, (double)ns[n * 99 / 100] / 1e3);
}

static void fill_latency(struct shm_latency *l, uint64_t seed)
{
	memset(l, 0, sizeof(*l));
	for (uint32_t b = 0; b < SHM_LAT_BUCKETS; b++) {
		l->bucket[b] = (seed + b) % 7;
		l->count += l->bucket[b];
	}
	l->sum_ns = l->count * 1000;
	l->window_count = l->count;
	l->window_p50_ns = 1000;
	l->window_p90_ns = 5000;
	l->window_p99_ns = 9000;
	l->window_max_ns = 12000;
}

/* What the collector's publish does: rewrite every row in use and the header. */
static void publish(struct shm_writer *w, const struct load *ld, uint64_t k)
{
	struct shm_header_fields *h = &w->base->h;
	struct shm_proc *p = shm_writer_table(w, SHM_TABLE_PROCS);
	struct shm_gpu_mem *m = shm_writer_table(w, SHM_TABLE_GPU_MEM);
	struct shm_gpu *g = shm_writer_table(w, SHM_TABLE_GPUS);
	struct shm_nccl_op *o = shm_writer_table(w, SHM_TABLE_NCCL_OPS);
	struct shm_nccl_comm *c = shm_writer_table(w, SHM_TABLE_NCCL_COMMS);

	shm_writer_begin(w);
	for (uint32_t i = 0; i < ld->procs; i++) {
		p[i].pid = 1000 + i;
		p[i].watch_reason = SHM_WATCH_CUDA;
		memcpy(p[i].comm, "python3", 8);
		for (uint32_t f = 0; f < SHM_FAMILY_COUNT; f++)
			fill_latency(&p[i].lat[f], k + i + f);
		p[i].voluntary_switches = k;
	}
	h->table[SHM_TABLE_PROCS].count = ld->procs;
	for (uint32_t i = 0; i < ld->gpu_mem; i++) {
		m[i].pid = 1000 + i / 8;
		m[i].gpu_id = i % 8;
		m[i].used_bytes = k << 20;
		m[i].peak_bytes = (k + 1) << 20;
	}
	h->table[SHM_TABLE_GPU_MEM].count = ld->gpu_mem;
	for (uint32_t i = 0; i < ld->gpus; i++) {
		g[i].gpu_id = i;
		g[i].total_source = SHM_TOTAL_NVML;
		g[i].total_bytes = 80ull << 30;
	}
	h->table[SHM_TABLE_GPUS].count = ld->gpus;
	for (uint32_t i = 0; i < SHM_NCCL_OP_COUNT; i++) {
		o[i].calls = k;
		fill_latency(&o[i].duration, k + i);
		fill_latency(&o[i].wait, k + i + 1);
	}
	for (uint32_t i = 0; i < ld->comms; i++) {
		c[i].pid = 1000 + i;
		c[i].nranks = (int32_t)ld->comms;
		c[i].rank = (int32_t)i;
		c[i].comm_id = 0x7f0000000000ull + i;
	}
	h->table[SHM_TABLE_NCCL_COMMS].count = ld->comms;
	for (uint32_t f = 0; f < SHM_FAMILY_COUNT; f++)
		fill_latency(&h->node[f], k + f);
	h->stats.publishes = k;
	h->heartbeat_mono_ns = mono_ns();
	shm_writer_end(w);
}

static int bench_load(const struct load *ld, const struct shm_capacity *cap, uint64_t *ns)
{
	struct shm_writer_opts o = {
		.cap = *cap, .mode = SHM_MODE_BPF, .publish_interval_ms = 1000,
		.window_ns = 60ull * 1000000000ull,
	};
	struct shm_writer w;
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	char name[64], why[256];
	int err;

	snprintf(name, sizeof(name), "/zernel-bench-%d", (int)getpid());
	o.name = name;
	err = shm_writer_create(&w, &o);
	if (err < 0) {
		fprintf(stderr, "bench_shm: cannot create %s: %s\n", name, strerror(-err));
		return err;
	}
	shm_reader_init(&r, name);
	printf("%s: %u procs, %u gpu_mem rows, %u gpus, %u comms (segment %.1f KiB)\n",
	       ld->label, ld->procs, ld->gpu_mem, ld->gpus, ld->comms, (double)w.size / 1024);

	for (int i = 0; i < BENCH_ITERATIONS; i++) {
		uint64_t t0 = mono_ns();

		publish(&w, ld, (uint64_t)i + 1);
		ns[i] = mono_ns() - t0;
	}
	report("writer publish (all rows in use)", ns, BENCH_ITERATIONS);

	for (int i = 0; i < BENCH_ITERATIONS; i++) {
		uint64_t t0 = mono_ns();
		enum shm_read_status st = shm_reader_snapshot(&r, &s, why, sizeof(why));

		ns[i] = mono_ns() - t0;
		if (st != SHM_READ_OK) {
			fprintf(stderr, "bench_shm: snapshot: %s: %s\n",
				shm_read_status_name(st), why);
			err = -EIO;
			goto out;
		}
	}
	report("reader snapshot (copy + validate)", ns, BENCH_ITERATIONS);

	for (int i = 0; i < BENCH_ITERATIONS; i++) {
		uint64_t t0 = mono_ns();

		err = shm_validate(s.buf, s.size, why, sizeof(why));
		ns[i] = mono_ns() - t0;
		if (err < 0) {
			fprintf(stderr, "bench_shm: validate: %s\n", why);
			goto out;
		}
	}
	report("  of which validate", ns, BENCH_ITERATIONS);
out:
	shm_snapshot_free(&s);
	shm_reader_close(&r);
	shm_writer_close(&w, 1);
	return err;
}

int main(void)
{
	struct shm_capacity def, lim = {
		SHM_LIMIT_PROCS, SHM_LIMIT_GPU_MEM, SHM_LIMIT_GPUS, SHM_LIMIT_NCCL_COMMS,
	};
	struct load typical = { "typical (8 GPUs, 64 processes)", 64, 128, 8, 64 };
	struct load full;
	uint64_t *ns = calloc(BENCH_ITERATIONS, sizeof(*ns));
	int err = 1;

	if (!ns)
		return 1;
	shm_capacity_default(&def);
	full = (struct load){ "full (every table at default capacity)",
			      def.procs, def.gpu_mem, def.gpus, def.nccl_comms };
	printf("row sizes: shm_proc %zu B, shm_gpu_mem %zu B, shm_nccl_op %zu B\n",
	       sizeof(struct shm_proc), sizeof(struct shm_gpu_mem), sizeof(struct shm_nccl_op));
	printf("segment size at default capacities (%u procs, %u gpu_mem, %u gpus, %u comms): "
	       "%llu bytes (%.2f MiB)\n", def.procs, def.gpu_mem, def.gpus, def.nccl_comms,
	       (unsigned long long)shm_segment_size(&def), (double)shm_segment_size(&def) / 1048576);
	printf("segment size at the reader's limits: %.1f MiB\n\n",
	       (double)shm_segment_size(&lim) / 1048576);
	if (bench_load(&typical, &def, ns) < 0 || bench_load(&full, &def, ns) < 0)
		goto out;
	err = 0;
out:
	free(ns);
	return err;
}
