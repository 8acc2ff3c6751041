/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NVML (collector/gpu/nvml.c, nvml_procs.c, nvml_poll.c) against a fake
 * libnvidia-ml.so.1 with the real symbols, ABI and return codes whose
 * devices come from the environment and whose processes come from a file
 * the test rewrites: totals read, every failure reported with its reason
 * and never fatal, NVML shut down after use; the driver's figures (device
 * and per-process used memory) read with each documented error, through
 * each process-list call a driver may have, and handed to the aggregation
 * with one log line per change.  Unprivileged (the collector's own run:
 * check_nvml_collector.c).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/agg/agg.h"
#include "collector/gpu/nvml.h"
#include "collector/gpu/nvml_poll.h"
#include "common/util.h"
#include "shm/shm_reader.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

static char lib[512], lib_nomem[512], lib_v1[512], lib_cc[512], logpath[256], statepath[256];

static void setup(void)
{
	tu_build_path(lib, sizeof(lib), "tests/fakes/nvml/libnvidia-ml.so.1");
	tu_build_path(lib_nomem, sizeof(lib_nomem), "tests/fakes/nvml-nomem/libnvidia-ml.so.1");
	tu_build_path(lib_v1, sizeof(lib_v1), "tests/fakes/nvml-v1/libnvidia-ml.so.1");
	tu_build_path(lib_cc, sizeof(lib_cc), "tests/fakes/nvml-cc/libnvidia-ml.so.1");
	ck_assert_msg(access(lib, R_OK) == 0, "%s missing: build it with `make tests-build`", lib);
	snprintf(logpath, sizeof(logpath), "/tmp/zernel-nvml-%d.log", (int)getpid());
	snprintf(statepath, sizeof(statepath), "/tmp/zernel-nvml-state-%d", (int)getpid());
	unlink(logpath);
	unlink(statepath);
	setenv("FAKE_NVML_LOG", logpath, 1);
	setenv("FAKE_NVML_STATE", statepath, 1);
	unsetenv("FAKE_NVML_INIT_FAIL");
	unsetenv("FAKE_NVML_BAD_DEVICE");
	unsetenv("FAKE_NVML_USED");
}

static void teardown(void)
{
	unlink(logpath);
	unlink(statepath);
}

/* What the fake driver has from now on (FAKE_NVML_STATE), replaced whole. */
static void driver_state(const char *text)
{
	char tmp[300];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", statepath);
	f = fopen(tmp, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(rename(tmp, statepath), 0);
}

static char *calls(void)
{
	static char buf[256];
	char *t = tu_read_file(logpath, NULL);

	snprintf(buf, sizeof(buf), "%s", t ? t : "");
	free(t);
	return buf;
}

START_TEST(nvml_reads_every_device_total)
{
	uint64_t t[8];
	size_t n = 99;
	char why[256];

	setenv("FAKE_NVML_TOTALS", "85899345920,42949672960,1", 1);
	ck_assert_int_eq(nvml_gpu_totals(lib, t, 8, &n, why, sizeof(why)), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(t[0], 85899345920ull);
	ck_assert_uint_eq(t[1], 42949672960ull);
	ck_assert_uint_eq(t[2], 1);
	ck_assert_str_eq(why, "");
	ck_assert_str_eq(calls(), "init\nshutdown\n");

	/* More devices than room: the first ones, and a word about the rest. */
	ck_assert_int_eq(nvml_gpu_totals(lib, t, 2, &n, why, sizeof(why)), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_ptr_nonnull(strstr(why, "3 devices, only the first 2 kept"));
}
END_TEST

START_TEST(nvml_failures_are_reported_not_fatal)
{
	uint64_t t[8];
	size_t n = 99;
	char why[256];

	ck_assert_int_eq(nvml_gpu_totals("/nonexistent/libnvidia-ml.so.1", t, 8, &n, why,
					 sizeof(why)), -ENOENT);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_nonnull(strstr(why, "/nonexistent/libnvidia-ml.so.1"));

	setenv("FAKE_NVML_TOTALS", "100", 1);
	ck_assert_int_eq(nvml_gpu_totals(lib_nomem, t, 8, &n, why, sizeof(why)), -ENOSYS);
	ck_assert_ptr_nonnull(strstr(why, "has no nvmlDeviceGetMemoryInfo"));
	ck_assert_str_eq(calls(), "");	/* not initialised when unusable */

	setenv("FAKE_NVML_INIT_FAIL", "1", 1);
	ck_assert_int_eq(nvml_gpu_totals(lib, t, 8, &n, why, sizeof(why)), -EIO);
	ck_assert_str_eq(why, "nvmlInit_v2: Driver Not Loaded");
	unsetenv("FAKE_NVML_INIT_FAIL");

	/* A lost device keeps total 0 (unknown); the others are read, NVML shut down. */
	unlink(logpath);
	setenv("FAKE_NVML_TOTALS", "100,200,300", 1);
	setenv("FAKE_NVML_BAD_DEVICE", "1", 1);
	ck_assert_int_eq(nvml_gpu_totals(lib, t, 8, &n, why, sizeof(why)), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(t[0], 100);
	ck_assert_uint_eq(t[1], 0);
	ck_assert_uint_eq(t[2], 300);
	ck_assert_str_eq(why, "device 1: GPU is lost");
	ck_assert_str_eq(calls(), "init\nshutdown\n");
}
END_TEST

START_TEST(driver_figures_are_read_as_the_driver_has_them)
{
	struct nvml_proc procs[8];
	struct nvml_device_figures f;
	struct nvml *nv;
	char why[256];

	setenv("FAKE_NVML_TOTALS", "1000,2000", 1);
	driver_state("# device 0: two processes, one whose memory the driver does not give\n"
		     "used 0 700\n0 111 300\n0 222 na\n"
		     "1 333 50\nfail memory 1 4\n");
	ck_assert_int_eq(nvml_open(lib, &nv, why, sizeof(why)), 0);
	ck_assert_str_eq(nvml_procs_call(nv), "nvmlDeviceGetComputeRunningProcesses_v3");
	ck_assert_uint_eq(nvml_devices(nv), 2);

	ck_assert_int_eq(nvml_read_device(nv, 0, procs, 8, &f), 0);
	ck_assert_int_eq(f.mem_ret, NVML_RET_SUCCESS);
	ck_assert_uint_eq(f.used_bytes, 700);
	ck_assert_uint_eq(f.total_bytes, 1000);
	ck_assert_int_eq(f.procs_ret, NVML_RET_SUCCESS);
	ck_assert_uint_eq(f.n_procs, 2);
	ck_assert_uint_eq(procs[0].pid, 111);
	ck_assert_uint_eq(procs[0].used_bytes, 300);
	ck_assert_uint_eq(procs[1].pid, 222);
	ck_assert_uint_eq(procs[1].used_bytes, NVML_USED_NOT_AVAILABLE);
	/* Device 1: its memory call refused, its process list read all the same. */
	ck_assert_int_eq(nvml_read_device(nv, 1, procs, 8, &f), 0);
	ck_assert_int_eq(f.mem_ret, NVML_RET_NO_PERMISSION);
	ck_assert_str_eq(nvml_strerror(nv, f.mem_ret), "Insufficient Permissions");
	ck_assert_int_eq(f.procs_ret, NVML_RET_SUCCESS);
	ck_assert_uint_eq(f.n_procs, 1);
	ck_assert_uint_eq(procs[0].used_bytes, 50);
	ck_assert_int_eq(nvml_read_device(nv, 2, procs, 8, &f), -EINVAL);

	/* Read again, the figures follow the driver; a process gone is gone. */
	driver_state("used 0 900\n0 111 512\n");
	ck_assert_int_eq(nvml_read_device(nv, 0, procs, 8, &f), 0);
	ck_assert_uint_eq(f.used_bytes, 900);
	ck_assert_uint_eq(f.n_procs, 1);
	ck_assert_uint_eq(procs[0].used_bytes, 512);
	driver_state("");
	ck_assert_int_eq(nvml_read_device(nv, 0, procs, 8, &f), 0);
	ck_assert_int_eq(f.procs_ret, NVML_RET_SUCCESS);
	ck_assert_uint_eq(f.n_procs, 0);
	ck_assert_uint_eq(f.used_bytes, 250);	/* the fake's default: a quarter */
	nvml_close(nv);
	ck_assert_str_eq(calls(), "init\nshutdown\n");
}
END_TEST

START_TEST(driver_errors_come_with_nvmls_codes)
{
	struct nvml_proc procs[2];
	struct nvml_device_figures f;
	struct nvml *nv;
	char why[256];

	setenv("FAKE_NVML_TOTALS", "1000", 1);
	ck_assert_int_eq(nvml_open(lib, &nv, why, sizeof(why)), 0);
	driver_state("0 1 1\nfail procs 0 3\n");
	ck_assert_int_eq(nvml_read_device(nv, 0, procs, 2, &f), 0);
	ck_assert_int_eq(f.procs_ret, NVML_RET_NOT_SUPPORTED);
	ck_assert_str_eq(nvml_strerror(nv, f.procs_ret), "Not Supported");
	ck_assert_uint_eq(f.n_procs, 0);
	ck_assert_int_eq(f.mem_ret, NVML_RET_SUCCESS);
	driver_state("fail procs 0 4\nfail memory 0 15\n");
	ck_assert_int_eq(nvml_read_device(nv, 0, procs, 2, &f), 0);
	ck_assert_int_eq(f.procs_ret, NVML_RET_NO_PERMISSION);
	ck_assert_int_eq(f.mem_ret, 15);
	ck_assert_str_eq(nvml_strerror(nv, f.mem_ret), "GPU is lost");
	/* More processes than room: none of them, and how many there are. */
	driver_state("0 1 1\n0 2 2\n0 3 3\n");
	ck_assert_int_eq(nvml_read_device(nv, 0, procs, 2, &f), 0);
	ck_assert_int_eq(f.procs_ret, NVML_RET_INSUFFICIENT_SIZE);
	ck_assert_str_eq(nvml_strerror(nv, f.procs_ret), "Insufficient Size");
	ck_assert_uint_eq(f.needed, 3);
	ck_assert_uint_eq(f.n_procs, 0);
	nvml_close(nv);
}
END_TEST

/*
 * A driver sets memory aside on each GPU for itself: nvmlMemory_v2_t gives
 * it apart, and the used memory of GPU 0 is what its allocations hold, as
 * nvidia-smi shows it; an older driver (no _v2) counts the reserve in used,
 * and a _v2 the driver refuses for its version falls back to the old call.
 * A failure of the device itself is still said with its code.
 */
START_TEST(device_used_memory_leaves_out_the_drivers_reserve)
{
	struct nvml_proc procs[2];
	struct nvml_device_figures f;
	struct nvml_gpu gpus[2];
	struct nvml *nv;
	char why[256];
	size_t n;

	setenv("FAKE_NVML_TOTALS", "81920,40960", 1);
	driver_state("used 0 30000\nreserved 0 600\nused 1 100\nreserved 1 500\n");
	ck_assert_int_eq(nvml_open(lib, &nv, why, sizeof(why)), 0);
	ck_assert_int_eq(nvml_read_device(nv, 0, procs, 2, &f), 0);
	ck_assert_int_eq(f.mem_ret, NVML_RET_SUCCESS);
	ck_assert_uint_eq(f.used_bytes, 30000);
	ck_assert_uint_eq(f.total_bytes, 81920);
	ck_assert_int_eq(nvml_read_gpus(nv, gpus, 2, &n, why, sizeof(why)), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(gpus[1].used, 100);
	ck_assert_uint_eq(gpus[1].total, 40960);
	/* _v2 refused for its version on GPU 0: the unversioned call's figure. */
	driver_state("used 0 30000\nreserved 0 600\nfail memory_v2 0 25\n");
	ck_assert_int_eq(nvml_read_device(nv, 0, procs, 2, &f), 0);
	ck_assert_int_eq(f.mem_ret, NVML_RET_SUCCESS);
	ck_assert_uint_eq(f.used_bytes, 30600);
	/* The GPU lost: the code, no figure. */
	driver_state("fail memory 0 15\n");
	ck_assert_int_eq(nvml_read_device(nv, 0, procs, 2, &f), 0);
	ck_assert_int_eq(f.mem_ret, 15);
	ck_assert_uint_eq(f.used_bytes, 0);
	nvml_close(nv);

	/* A driver before _v2: its used holds the reserve, as it reports it. */
	driver_state("used 0 30000\nreserved 0 600\n");
	ck_assert_int_eq(nvml_open(lib_v1, &nv, why, sizeof(why)), 0);
	ck_assert_int_eq(nvml_read_device(nv, 0, procs, 2, &f), 0);
	ck_assert_int_eq(f.mem_ret, NVML_RET_SUCCESS);
	ck_assert_uint_eq(f.used_bytes, 30600);
	nvml_close(nv);
}
END_TEST

/* Reads three processes of GPU 0 through library path; checks each entry. */
static void read_three(const char *path, const char *call)
{
	struct nvml_proc procs[8];
	struct nvml_device_figures f;
	struct nvml *nv;
	char why[256];

	setenv("FAKE_NVML_TOTALS", "1000", 1);
	driver_state("0 101 1000001\n0 202 na\n0 303 3000003\n");
	ck_assert_int_eq(nvml_open(path, &nv, why, sizeof(why)), 0);
	ck_assert_str_eq(nvml_procs_call(nv), call);
	ck_assert_int_eq(nvml_read_device(nv, 0, procs, 8, &f), 0);
	ck_assert_int_eq(f.procs_ret, NVML_RET_SUCCESS);
	ck_assert_uint_eq(f.n_procs, 3);
	ck_assert_uint_eq(procs[0].pid, 101);
	ck_assert_uint_eq(procs[0].used_bytes, 1000001);
	ck_assert_uint_eq(procs[1].pid, 202);
	ck_assert_uint_eq(procs[1].used_bytes, NVML_USED_NOT_AVAILABLE);
	ck_assert_uint_eq(procs[2].pid, 303);
	ck_assert_uint_eq(procs[2].used_bytes, 3000003);
	nvml_close(nv);
}

START_TEST(every_process_list_call_is_read_with_its_own_entry)
{
	read_three(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
	/* An older driver: the unversioned call and its 16-byte entry. */
	read_three(lib_v1, "nvmlDeviceGetComputeRunningProcesses");
	/* A 535.43 to 535.86 driver: _v3 writes 32-byte entries. */
	read_three(lib_cc, "nvmlDeviceGetComputeRunningProcesses_v3");
}
END_TEST

/* ---- the reader at its cadence, into the aggregation -------------------- */

static struct {
	char name[64];
	struct shm_writer w;
	struct agg *a;
	struct shm_reader r;
	struct shm_snapshot snap;
	struct nvml *nv;
	struct nvml_poll *poll;
	char errpath[256];
	int saved_err;
} px;

/* An aggregation and its segment, NVML on the fake, stderr into a file. */
static void poll_open(const char *totals, uint32_t interval_ms)
{
	struct shm_writer_opts wo;
	struct agg_opts ao;
	char why[256];
	int fd;

	memset(&px, 0, sizeof(px));
	memset(&ao, 0, sizeof(ao));
	ao.cap = (struct shm_capacity){ .procs = 8, .gpu_mem = 16, .gpus = 4, .nccl_comms = 4 };
	ao.window_ns = 60 * NSEC_PER_SEC;
	px.a = agg_new(&ao);
	ck_assert_ptr_nonnull(px.a);
	tu_unique_shm_name(px.name, sizeof(px.name));
	memset(&wo, 0, sizeof(wo));
	wo.name = px.name;
	wo.cap = ao.cap;
	wo.mode = SHM_MODE_BPF;
	wo.publish_interval_ms = 1000;
	wo.window_ns = ao.window_ns;
	ck_assert_int_eq(shm_writer_create(&px.w, &wo), 0);
	shm_reader_init(&px.r, px.name);
	setenv("FAKE_NVML_TOTALS", totals, 1);
	ck_assert_int_eq(nvml_open(lib, &px.nv, why, sizeof(why)), 0);
	px.poll = nvml_poll_new(px.nv, interval_ms);
	ck_assert_ptr_nonnull(px.poll);
	snprintf(px.errpath, sizeof(px.errpath), "/tmp/zernel-nvml-err-%d", (int)getpid());
	fd = open(px.errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	px.saved_err = dup(2);
	dup2(fd, 2);
	close(fd);
}

static void poll_close(void)
{
	dup2(px.saved_err, 2);
	close(px.saved_err);
	unlink(px.errpath);
	nvml_poll_free(px.poll);
	nvml_close(px.nv);
	shm_snapshot_free(&px.snap);
	shm_reader_close(&px.r);
	shm_writer_close(&px.w, 1);
	agg_free(px.a);
}

static void poll_publish(void)
{
	char why[256] = "";
	enum shm_read_status st;

	agg_publish(px.a, &px.w, now_mono_ns(), now_real_ns(), NULL);
	st = shm_reader_snapshot(&px.r, &px.snap, why, sizeof(why));
	ck_assert_msg(st == SHM_READ_OK, "snapshot: %s: %s", shm_read_status_name(st), why);
}

static const struct shm_gpu_mem *poll_mem(uint32_t pid, uint32_t gpu)
{
	uint32_t n;
	const struct shm_gpu_mem *m = shm_snapshot_gpu_mem(&px.snap, &n);

	for (uint32_t i = 0; i < n; i++)
		if (m[i].pid == pid && m[i].gpu_id == gpu)
			return &m[i];
	return NULL;
}

static const struct shm_gpu *poll_gpu(uint32_t id)
{
	uint32_t n;
	const struct shm_gpu *g = shm_snapshot_gpus(&px.snap, &n);

	for (uint32_t i = 0; i < n; i++)
		if (g[i].gpu_id == id)
			return &g[i];
	return NULL;
}

/* Lines of what the reader logged that hold needle. */
static int logged(const char *needle)
{
	char *t = tu_read_file(px.errpath, NULL);
	int n = 0;

	for (const char *p = t; p && (p = strstr(p, needle)); p++)
		n++;
	free(t);
	return n;
}

START_TEST(poll_hands_the_figures_over_and_logs_each_change_once)
{
	uint64_t t = now_mono_ns();

	poll_open("1000,2000", 1000);
	ck_assert_int_eq(agg_proc_watch(px.a, 111, 1, SHM_WATCH_CUDA, "train", 1), 0);
	ck_assert_int_eq(agg_proc_watch(px.a, 222, 1, SHM_WATCH_CUDA, "train", 1), 0);
	ck_assert_int_eq(agg_gpu_alloc(px.a, 111, 0, 100), 0);
	driver_state("used 0 700\n0 111 300\n0 222 400\n0 999 5\n");
	ck_assert_int_eq(nvml_poll_run(px.poll, px.a, t), 1);
	/* Not due again before the interval. */
	ck_assert_int_eq(nvml_poll_run(px.poll, px.a, t + 999 * NSEC_PER_MSEC), 0);
	poll_publish();
	ck_assert_uint_eq(poll_mem(111, 0)->used_bytes, 100);
	ck_assert_uint_eq(poll_mem(111, 0)->driver_used_bytes, 300);
	ck_assert_uint_eq(poll_mem(222, 0)->driver_used_bytes, 400);
	ck_assert_uint_eq(poll_mem(222, 0)->flags, SHM_GPU_MEM_F_DRIVER | SHM_GPU_MEM_F_DRIVER_ROW);
	ck_assert_ptr_null(poll_mem(999, 0));
	ck_assert_uint_eq(poll_gpu(0)->used_bytes, 700);
	ck_assert_uint_eq(poll_gpu(0)->used_source, SHM_USED_DRIVER);
	ck_assert_uint_eq(poll_gpu(1)->used_bytes, 500);
	ck_assert_uint_eq(poll_gpu(1)->used_source, SHM_USED_DRIVER);
	ck_assert_int_eq(logged(": NVML: "), 0);

	/* 222 leaves, GPU 1's list is refused, 111's figure is not given. */
	driver_state("used 0 800\n0 111 na\nfail procs 1 4\n");
	for (int i = 1; i <= 3; i++)
		ck_assert_int_eq(nvml_poll_run(px.poll, px.a, t + (uint64_t)i * NSEC_PER_SEC), 1);
	poll_publish();
	ck_assert_uint_eq(poll_mem(111, 0)->flags & SHM_GPU_MEM_F_DRIVER, 0);
	ck_assert_uint_eq(poll_mem(111, 0)->driver_used_bytes, 0);
	ck_assert_ptr_null(poll_mem(222, 0));
	ck_assert_uint_eq(poll_gpu(0)->used_bytes, 800);
	ck_assert_int_eq(logged("NVML: GPU 1: nvmlDeviceGetComputeRunningProcesses_v3: "
				"Insufficient Permissions; its processes have no driver figure"), 1);
	ck_assert_int_eq(logged("NVML: GPU 0: nvmlDeviceGetComputeRunningProcesses_v3 gives no "
				"used memory of its processes (NVML_VALUE_NOT_AVAILABLE)"), 1);
	ck_assert_int_eq(logged(": NVML: "), 2);

	/* GPU 0 lost: its used memory is the rows' sum again; then all comes back. */
	driver_state("fail memory 0 15\nfail procs 0 15\n");
	ck_assert_int_eq(nvml_poll_run(px.poll, px.a, t + 4 * NSEC_PER_SEC), 1);
	poll_publish();
	ck_assert_uint_eq(poll_gpu(0)->used_bytes, 100);
	ck_assert_uint_eq(poll_gpu(0)->used_source, SHM_USED_PROCESSES);
	ck_assert_int_eq(logged("NVML: GPU 0: nvmlDeviceGetMemoryInfo: GPU is lost; its used "
				"memory is the watched processes' sum"), 1);
	ck_assert_int_eq(logged("NVML: GPU 0: nvmlDeviceGetComputeRunningProcesses_v3: GPU is "
				"lost"), 1);
	driver_state("used 0 600\n0 111 310\n");
	ck_assert_int_eq(nvml_poll_run(px.poll, px.a, t + 5 * NSEC_PER_SEC), 1);
	ck_assert_int_eq(nvml_poll_run(px.poll, px.a, t + 6 * NSEC_PER_SEC), 1);
	poll_publish();
	ck_assert_uint_eq(poll_mem(111, 0)->driver_used_bytes, 310);
	ck_assert_uint_eq(poll_gpu(0)->used_bytes, 600);
	ck_assert_int_eq(logged("NVML: GPU 0: used memory read again"), 1);
	ck_assert_int_eq(logged("NVML: GPU 0: the driver's per-process used memory is read again"), 1);
	ck_assert_int_eq(logged("NVML: GPU 1: the driver's per-process used memory is read again"), 1);
	ck_assert_int_eq(logged(": NVML: "), 7);
	poll_close();
}
END_TEST

START_TEST(a_slow_driver_spaces_the_reads_out)
{
	uint64_t t = now_mono_ns();

	poll_open("1000", 100);
	driver_state("slow 0 60\n");
	ck_assert_int_eq(nvml_poll_run(px.poll, px.a, t), 1);
	/* 60 ms or more, at most a twentieth of the time: 1.2 s apart at least. */
	ck_assert_int_eq(nvml_poll_run(px.poll, px.a, t + 200 * NSEC_PER_MSEC), 0);
	ck_assert_int_eq(nvml_poll_run(px.poll, px.a, t + 1100 * NSEC_PER_MSEC), 0);
	ck_assert_int_eq(logged("the next reads are"), 1);
	driver_state("");
	ck_assert_int_eq(nvml_poll_run(px.poll, px.a, t + 10 * NSEC_PER_SEC), 1);
	ck_assert_int_eq(nvml_poll_run(px.poll, px.a, t + 10100 * NSEC_PER_MSEC), 1);
	poll_close();
}
END_TEST

Suite *nvml_suite(void);

Suite *nvml_suite(void)
{
	Suite *s = suite_create("nvml");
	TCase *tc = tcase_create("library");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, nvml_reads_every_device_total);
	tcase_add_test(tc, nvml_failures_are_reported_not_fatal);
	tcase_add_test(tc, driver_figures_are_read_as_the_driver_has_them);
	tcase_add_test(tc, driver_errors_come_with_nvmls_codes);
	tcase_add_test(tc, device_used_memory_leaves_out_the_drivers_reserve);
	tcase_add_test(tc, every_process_list_call_is_read_with_its_own_entry);
	tcase_add_test(tc, poll_hands_the_figures_over_and_logs_each_change_once);
	tcase_add_test(tc, a_slow_driver_spaces_the_reads_out);
	suite_add_tcase(s, tc);
	return s;
}
