/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The probe loader's plain-C parts, no BPF: the live-allocation table
 * (bounds, replacement, eviction), the memory pools' model, library names, and symbol offsets read
 * from ELF files (good and bad ones, and libc's symbol versions).
 * Unprivileged.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/parser/elfsyms.h"
#include "collector/probes/gpu_mem/mempool.h"
#include "collector/probes/gpu_mem/memtrack.h"
#include "collector/probes/discovery.h"
#include "tests/support/testutil.h"
#include "tests/collector/tu_probes.h"

/* Remembers bytes on gpu (from pool, or none) at (pid, space, addr); 0, 1 or -errno. */
static int mt_add(struct memtrack *mt, uint32_t pid, uint32_t space, uint64_t addr, uint32_t gpu,
		  uint64_t bytes, uint64_t pool, struct memtrack_alloc *old)
{
	struct memtrack_alloc a = { .bytes = bytes, .pool = pool, .gpu = gpu };

	return memtrack_add(mt, pid, space, addr, &a, old);
}

START_TEST(test_memtrack_pairs_frees_with_their_allocation)
{
	struct memtrack *mt = memtrack_new(8);
	struct memtrack_alloc a, old;

	ck_assert_ptr_nonnull(mt);
	ck_assert_int_eq(mt_add(mt, 10, 0, 0x7000, 2, 4096, 0xb00, &old), 0);
	/* Same address in another process, and as a VMM handle: distinct. */
	ck_assert_int_eq(mt_add(mt, 11, 0, 0x7000, 1, 100, 0, &old), 0);
	ck_assert_int_eq(mt_add(mt, 10, 1, 0x7000, 3, 7, 0, &old), 0);
	ck_assert_int_eq(memtrack_take(mt, 10, 0, 0x7000, &a), 0);
	ck_assert_uint_eq(a.gpu, 2);
	ck_assert_uint_eq(a.bytes, 4096);
	ck_assert_uint_eq(a.pool, 0xb00);
	ck_assert_int_eq(memtrack_take(mt, 10, 0, 0x7000, &a), -ENOENT);
	ck_assert_int_eq(memtrack_take(mt, 10, 1, 0x7000, &a), 0);
	ck_assert_uint_eq(a.bytes, 7);
	ck_assert_int_eq(memtrack_take(mt, 11, 0, 0x7000, &a), 0);
	ck_assert_uint_eq(a.gpu, 1);
	ck_assert_uint_eq(a.pool, 0);
	ck_assert_uint_eq(memtrack_count(mt), 0);
	memtrack_free(mt);
}
END_TEST

START_TEST(test_memtrack_reused_address_returns_the_old_one)
{
	struct memtrack *mt = memtrack_new(8);
	struct memtrack_alloc a, old = { .bytes = 99, .gpu = 99 };

	ck_assert_int_eq(mt_add(mt, 1, 0, 0x1000, 0, 500, 0, &old), 0);
	ck_assert_int_eq(mt_add(mt, 1, 0, 0x1000, 4, 800, 0, &old), 1);
	ck_assert_uint_eq(old.gpu, 0);
	ck_assert_uint_eq(old.bytes, 500);
	ck_assert_uint_eq(memtrack_count(mt), 1);
	ck_assert_int_eq(memtrack_take(mt, 1, 0, 0x1000, &a), 0);
	ck_assert_uint_eq(a.gpu, 4);
	ck_assert_uint_eq(a.bytes, 800);
	memtrack_free(mt);
}
END_TEST

START_TEST(test_memtrack_is_bounded_and_evicts_by_pid)
{
	struct memtrack *mt = memtrack_new(1000);
	struct memtrack_alloc a, old;

	for (uint64_t i = 0; i < 1000; i++)
		ck_assert_int_eq(mt_add(mt, (uint32_t)(i % 3), 0, 0x100000 * i, 0, i, 0, &old), 0);
	ck_assert_int_eq(mt_add(mt, 7, 0, 1, 0, 1, 0, &old), -ENOSPC);
	ck_assert_uint_eq(memtrack_evict_pid(mt, 1), 333);
	ck_assert_uint_eq(memtrack_count(mt), 667);
	ck_assert_int_eq(memtrack_take(mt, 1, 0, 0x100000, &a), -ENOENT);
	ck_assert_int_eq(memtrack_take(mt, 2, 0, 0x200000, &a), 0);
	ck_assert_uint_eq(a.bytes, 2);
	/* Room again after the eviction. */
	ck_assert_int_eq(mt_add(mt, 7, 0, 1, 0, 1, 0, &old), 0);
	memtrack_free(mt);
}
END_TEST

/* What the pools gave back, per (pid, gpu), as the decoder's callback sees it. */
struct released {
	uint32_t pid, gpu;
	uint64_t bytes;
	int calls;
};

static void note_release(void *ctx, uint32_t pid, uint32_t gpu, uint64_t bytes)
{
	struct released *r = ctx;

	r->pid = pid;
	r->gpu = gpu;
	r->bytes += bytes;
	r->calls++;
}

/*
 * A pool keeps what its allocations free until a synchronisation gives
 * back what is above its threshold (0 by default), or a trim what is above
 * the bytes kept; never what is in use.
 */
START_TEST(test_mempool_keeps_freed_memory_until_a_sync_or_trim)
{
	struct mempool *mp = mempool_new(8);
	struct released r = { 0 };
	uint64_t grown, key, key2;

	ck_assert_ptr_nonnull(mp);
	/* cudaMallocAsync before the process named its pool: device 0's default. */
	ck_assert_int_eq(mempool_alloc(mp, 5, 0, 3, 0, 1000, &grown, &key), 0);
	ck_assert_uint_eq(grown, 1000);
	ck_assert_int_eq(mempool_alloc(mp, 5, 0, 3, 0, 500, &grown, &key2), 0);
	ck_assert_uint_eq(grown, 500);
	ck_assert_uint_eq(key, key2);
	mempool_freed(mp, 5, key, 1000, note_release, &r);
	/* Reused from what the pool kept: nothing more from the driver. */
	ck_assert_int_eq(mempool_alloc(mp, 5, 0, 3, 0, 700, &grown, &key), 0);
	ck_assert_uint_eq(grown, 0);
	mempool_freed(mp, 5, key, 700, note_release, &r);
	/* Another process's sync settles nothing of this one. */
	mempool_sync(mp, 6, note_release, &r);
	ck_assert_int_eq(r.calls, 0);
	/* Threshold 0: a sync gives back all but the 500 in use, on the pool's gpu. */
	mempool_sync(mp, 5, note_release, &r);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_uint_eq(r.pid, 5);
	ck_assert_uint_eq(r.gpu, 3);
	ck_assert_uint_eq(r.bytes, 1000);
	ck_assert_int_eq(mempool_alloc(mp, 5, 0, 3, 0, 100, &grown, &key), 0);
	ck_assert_uint_eq(grown, 100);
	mempool_freed(mp, 5, key, 600, note_release, &r);

	/* Named now, and given PyTorch's threshold: syncs keep everything. */
	ck_assert_int_eq(mempool_named(mp, 5, ZMEM_POOL_DEFAULT, 0, 0xa000, 0, note_release, &r),
			 0);
	ck_assert_uint_eq(mempool_count(mp), 1);
	ck_assert_int_eq(mempool_named(mp, 5, ZMEM_POOL_THRESHOLD, 0, 0xa000, UINT64_MAX,
				       note_release, &r), 0);
	r = (struct released){ 0 };
	mempool_sync(mp, 5, note_release, &r);
	ck_assert_int_eq(r.calls, 0);
	/* The key handed out before the name still finds the pool. */
	ck_assert_int_eq(mempool_alloc(mp, 5, 0, 3, 0xa000, 4000, &grown, &key2), 0);
	ck_assert_uint_eq(grown, 4000 - 600);
	ck_assert_uint_eq(key2, 0xa000);
	mempool_freed(mp, 5, key2, 3000, note_release, &r);
	/* A trim keeps what is asked, but never less than what is in use (1000). */
	ck_assert_int_eq(mempool_named(mp, 5, ZMEM_POOL_TRIM, 0, 0xa000, 2500, note_release, &r),
			 0);
	ck_assert_uint_eq(r.bytes, 4000 - 2500);
	ck_assert_int_eq(mempool_named(mp, 5, ZMEM_POOL_TRIM, 0, 0xa000, 0, note_release, &r), 0);
	ck_assert_uint_eq(r.bytes, 4000 - 1000);
	ck_assert_int_eq(mempool_named(mp, 5, ZMEM_POOL_OP_COUNT, 0, 0xa000, 0, note_release, &r),
			 -EINVAL);
	ck_assert_uint_eq(mempool_evict_pid(mp, 5), 1);
	ck_assert_uint_eq(mempool_count(mp), 0);
	mempool_free(mp);
}
END_TEST

/*
 * A pool set current on a device takes that device's cuMemAllocAsync; a
 * default pool named after allocations went to it merges with what the
 * handle had; a full table says so.
 */
START_TEST(test_mempool_follows_current_pools_and_merges_a_named_default)
{
	struct mempool *mp = mempool_new(3);
	struct released r = { 0 };
	uint64_t grown, key;

	ck_assert_int_eq(mempool_alloc(mp, 9, 1, 1, 0, 100, &grown, &key), 0);
	ck_assert_int_eq(mempool_alloc(mp, 9, 1, 1, 0xd1, 50, &grown, &key), 0);
	/* cuDeviceGetMemPool before any set: the current pool is the default. */
	ck_assert_int_eq(mempool_named(mp, 9, ZMEM_POOL_CURRENT, 1, 0xd1, 0, note_release, &r), 0);
	ck_assert_uint_eq(mempool_count(mp), 1);
	ck_assert_int_eq(mempool_named(mp, 9, ZMEM_POOL_SET, 1, 0xc2, 0, note_release, &r), 0);
	ck_assert_int_eq(mempool_alloc(mp, 9, 1, 1, 0, 70, &grown, &key), 0);
	ck_assert_uint_eq(key, 0xc2);
	ck_assert_uint_eq(mempool_count(mp), 2);
	/* Both pools give back at the sync: 150 and 70, none in use. */
	mempool_freed(mp, 9, 0xd1, 150, note_release, &r);
	mempool_freed(mp, 9, 0xc2, 70, note_release, &r);
	mempool_sync(mp, 9, note_release, &r);
	ck_assert_uint_eq(r.bytes, 220);
	ck_assert_int_eq(r.calls, 2);
	/* Full: the allocation counts as not pooled. */
	ck_assert_int_eq(mempool_alloc(mp, 10, 0, 0, 0xe1, 8, &grown, &key), 0);
	ck_assert_int_eq(mempool_alloc(mp, 11, 0, 0, 0xe1, 8, &grown, &key), -ENOSPC);
	ck_assert_uint_eq(grown, 8);
	ck_assert_uint_eq(key, 0);
	ck_assert_ptr_null(mempool_new(0));
	mempool_free(mp);
}
END_TEST

/*
 * A destroyed pool gives back at once all but what its live allocations
 * use, the rest as they are freed, and is gone with the last; one process
 * holds MEMPOOL_PER_PROC pools at most.
 */
START_TEST(test_mempool_destroyed_gives_back_as_its_allocations_go)
{
	struct mempool *mp = mempool_new(256);
	struct released r = { 0 };
	uint64_t grown, key;

	ck_assert_int_eq(mempool_alloc(mp, 3, 0, 2, 0xe0, 100, &grown, &key), 0);
	ck_assert_int_eq(mempool_alloc(mp, 3, 0, 2, 0xe0, 50, &grown, &key), 0);
	mempool_freed(mp, 3, 0xe0, 50, note_release, &r);
	ck_assert_int_eq(r.calls, 0);
	ck_assert_int_eq(mempool_named(mp, 3, ZMEM_POOL_DESTROY, 0, 0xe0, 0, note_release, &r), 0);
	ck_assert_uint_eq(r.bytes, 50);
	ck_assert_uint_eq(r.gpu, 2);
	ck_assert_uint_eq(mempool_count(mp), 1);
	mempool_freed(mp, 3, 0xe0, 100, note_release, &r);
	ck_assert_uint_eq(r.bytes, 150);
	ck_assert_uint_eq(mempool_count(mp), 0);
	/* A pool never seen, destroyed: nothing to do. */
	ck_assert_int_eq(mempool_named(mp, 3, ZMEM_POOL_DESTROY, 0, 0xe1, 0, note_release, &r), 0);
	for (uint64_t h = 1; h <= MEMPOOL_PER_PROC; h++)
		ck_assert_int_eq(mempool_alloc(mp, 4, 0, 0, h << 12, 8, &grown, &key), 0);
	ck_assert_int_eq(mempool_alloc(mp, 4, 0, 0, 0xfff000, 8, &grown, &key), -ENOSPC);
	ck_assert_int_eq(mempool_alloc(mp, 5, 0, 0, 0xfff000, 8, &grown, &key), 0);
	mempool_free(mp);
}
END_TEST

START_TEST(test_library_kind_by_name)
{
	ck_assert_uint_eq(discovery_lib_kind("/usr/lib/x86_64-linux-gnu/libcuda.so.1"), PROBE_LIB_CUDA);
	ck_assert_uint_eq(discovery_lib_kind("libcuda.so"), PROBE_LIB_CUDA);
	ck_assert_uint_eq(discovery_lib_kind("/x/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12"),
			  PROBE_LIB_CUDART);
	ck_assert_uint_eq(discovery_lib_kind("/opt/nccl/lib/libnccl.so.2.21.5"), PROBE_LIB_NCCL);
	ck_assert_uint_eq(discovery_lib_kind("/usr/lib/libcudnn.so.9"), 0);
	ck_assert_uint_eq(discovery_lib_kind("/usr/lib/libcuda_fake.so"), 0);
	ck_assert_uint_eq(discovery_lib_kind("/usr/lib/libnccl-net.so"), 0);
	/* Zernel's own NCCL profiler plugin, which NCCL loads from where it is told. */
	ck_assert_uint_eq(discovery_lib_kind("/usr/lib/zernel/libzernel-nccl-profiler.so"),
			  PROBE_LIB_NCCL_PROFILER);
	ck_assert_uint_eq(discovery_lib_kind("/libcuda.so/other.so"), 0);
	ck_assert_uint_eq(discovery_lib_kind(""), 0);
	/* The dynamic loader, whose _dl_debug_state reports each library load. */
	ck_assert_uint_eq(discovery_lib_kind("/lib64/ld-linux-x86-64.so.2"), PROBE_LIB_LOADER);
	ck_assert_uint_eq(discovery_lib_kind("/usr/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1"),
			  PROBE_LIB_LOADER);
	ck_assert_uint_eq(discovery_lib_kind("/usr/lib/ld-linux-helper"), 0);
	/* Where pthread_barrier_wait lives: libc since glibc 2.34, libpthread before. */
	ck_assert_uint_eq(discovery_lib_kind("/usr/lib/x86_64-linux-gnu/libc.so.6"), PROBE_LIB_LIBC);
	ck_assert_uint_eq(discovery_lib_kind("/lib/libpthread.so.0"), PROBE_LIB_LIBC);
	ck_assert_uint_eq(discovery_lib_kind("/lib64/libc-2.28.so"), PROBE_LIB_LIBC);
	ck_assert_uint_eq(discovery_lib_kind("/lib64/libpthread-2.28.so"), PROBE_LIB_LIBC);
	ck_assert_uint_eq(discovery_lib_kind("/usr/lib/libc.so"), 0);
	ck_assert_uint_eq(discovery_lib_kind("/usr/lib/libcrypt.so.1"), 0);
}
END_TEST

/* Offsets against binutils' view of the fake driver (.text at its file offset). */
START_TEST(test_elf_symbols_resolve_to_file_offsets)
{
	const char *names[] = { "cuMemAlloc_v2", "cuLaunchKernel", "cuNoSuchCall", "cuMemCreate" };
	uint64_t off[4];
	char lib[512], cmd[1024], *out;
	unsigned long long want;
	size_t len;

	tp_fake(lib, sizeof(lib), "libcuda.so.1");
	ck_assert_int_eq(elfsyms_resolve(lib, names, 4, off), 3);
	ck_assert(off[0] && off[1] && off[3]);
	ck_assert_uint_eq(off[2], 0);
	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s' | awk '$3==\"cuLaunchKernel\"{print $1}' "
		 "> /tmp/zernel-nm-%d", lib, (int)getpid());
	ck_assert_int_eq(tu_system("%s", cmd), 0);
	snprintf(cmd, sizeof(cmd), "/tmp/zernel-nm-%d", (int)getpid());
	out = tu_read_file(cmd, &len);
	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(sscanf(out, "%llx", &want), 1);
	ck_assert_uint_eq(off[1], want);
	free(out);
	unlink(cmd);
}
END_TEST

START_TEST(test_elf_symbols_refuse_bad_files)
{
	const char *names[] = { "cuMemAlloc_v2" };
	uint64_t off[1];
	char path[64];
	FILE *f;

	ck_assert_int_eq(elfsyms_resolve("/nonexistent/libcuda.so.1", names, 1, off), -ENOENT);
	snprintf(path, sizeof(path), "/tmp/zernel-notelf-%d", (int)getpid());
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("\177ELF but not really an ELF file at all", f);
	fclose(f);
	ck_assert_int_lt(elfsyms_resolve(path, names, 1, off), 0);
	/* Truncated real library: an error, not a crash. */
	ck_assert_int_eq(tu_system("head -c 3000 '%s' > '%s'",
				   tp_fake((char[512]){ 0 }, 512, "libcuda.so.1"), path), 0);
	ck_assert_int_le(elfsyms_resolve(path, names, 1, off), 0);
	ck_assert_uint_eq(off[0], 0);
	unlink(path);
}
END_TEST

/*
 * libc exports pthread_barrier_wait under two symbol versions at one
 * address; the resolver takes it like any other symbol, at nm's address
 * (libc's code is mapped at its file offset).
 */
START_TEST(test_elf_symbols_take_libc_versioned_barrier)
{
	const char *names[] = { "pthread_barrier_wait" };
	char *out, cmd[1024], libc[512] = "";
	unsigned long long want = 0;
	uint64_t off[1];
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[1024];
	int status, versions = 0;

	ck_assert_ptr_nonnull(maps);
	while (fgets(line, sizeof(line), maps) && !libc[0]) {
		char *path = strchr(line, '/');

		if (path && strstr(path, "/libc.so.6")) {
			path[strcspn(path, "\n")] = '\0';
			snprintf(libc, sizeof(libc), "%s", path);
		}
	}
	fclose(maps);
	ck_assert_msg(libc[0], "no libc.so.6 mapped");
	ck_assert_int_eq(elfsyms_resolve(libc, names, 1, off), 1);
	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s' | grep ' pthread_barrier_wait@'", libc);
	out = tu_capture(cmd, &status);
	ck_assert_ptr_nonnull(out);
	for (char *s = out; (s = strstr(s, "pthread_barrier_wait@")) != NULL; s++)
		versions++;
	ck_assert_int_eq(sscanf(out, "%llx", &want), 1);
	free(out);
	ck_assert_uint_eq(off[0], want);
	if (versions < 2)
		fprintf(stderr, "note: this libc has %d version(s) of pthread_barrier_wait\n",
			versions);
}
END_TEST

Suite *probes_unit_suite(void);
Suite *probes_unit_suite(void)
{
	Suite *s = suite_create("probes_unit");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_memtrack_pairs_frees_with_their_allocation);
	tcase_add_test(tc, test_memtrack_reused_address_returns_the_old_one);
	tcase_add_test(tc, test_memtrack_is_bounded_and_evicts_by_pid);
	tcase_add_test(tc, test_mempool_keeps_freed_memory_until_a_sync_or_trim);
	tcase_add_test(tc, test_mempool_follows_current_pools_and_merges_a_named_default);
	tcase_add_test(tc, test_mempool_destroyed_gives_back_as_its_allocations_go);
	tcase_add_test(tc, test_library_kind_by_name);
	tcase_add_test(tc, test_elf_symbols_resolve_to_file_offsets);
	tcase_add_test(tc, test_elf_symbols_refuse_bad_files);
	tcase_add_test(tc, test_elf_symbols_take_libc_versioned_barrier);
	suite_add_tcase(s, tc);
	return s;
}
