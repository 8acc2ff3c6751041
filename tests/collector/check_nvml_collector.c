/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The real collector (BPF mode, root) with the fake libnvidia-ml.so.1 found
 * through the loader's search path, and the real exporter on its segment:
 * NVML totals published with --gpu-memory-total winning device by device;
 * the driver's figures of a watched process (a `sleep` named with --pid,
 * whose memory the probes never see) in the segment and in /metrics,
 * following the driver, gone when the driver no longer lists it, none for a
 * process the collector does not watch; the OOM alert firing from the
 * device's used memory while the processes' rows hold nothing; and a
 * missing NVML or a failing call said once in the log, with no figure.
 */
#include <check.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/shm_reader.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define WAIT_MS		60000	/* the collector attaches its probes first */

static struct {
	char fakes[512];		/* build/tests/fakes */
	char state[256];		/* FAKE_NVML_STATE */
	struct tu_stack st;
	int stack;
	pid_t watched, other;		/* sleeps: one named with --pid, one not */
} fx;

static void setup(void)
{
	char *sleep_argv[] = { "/bin/sleep", "600", NULL };

	memset(&fx, 0, sizeof(fx));
	tu_build_path(fx.fakes, sizeof(fx.fakes), "tests/fakes");
	snprintf(fx.state, sizeof(fx.state), "/tmp/zernel-nvml-col-state-%d", (int)getpid());
	unlink(fx.state);
	unsetenv("FAKE_NVML_LOG");
	unsetenv("FAKE_NVML_USED");
	unsetenv("FAKE_NVML_BAD_DEVICE");
	unsetenv("FAKE_NVML_INIT_FAIL");
	fx.watched = tu_spawn(sleep_argv, "/dev/null");
	fx.other = tu_spawn(sleep_argv, "/dev/null");
	ck_assert_int_gt(fx.watched, 0);
	ck_assert_int_gt(fx.other, 0);
}

static void teardown(void)
{
	if (fx.stack)
		tu_stack_stop(&fx.st);
	tu_stop(fx.watched, SIGKILL, 1000);
	tu_stop(fx.other, SIGKILL, 1000);
	unlink(fx.state);
}

/* What the fake driver has from now on, replaced whole (the collector reads it). */
static void driver_state(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void driver_state(const char *fmt, ...)
{
	char tmp[300];
	va_list ap;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", fx.state);
	f = fopen(tmp, "w");
	ck_assert_ptr_nonnull(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(rename(tmp, fx.state), 0);
}

/*
 * Starts the collector in BPF mode on the stack's segment, watching
 * fx.watched, with the fake NVML of folder variant (under
 * build/tests/fakes) and totals; extra flags after.  No exporter yet.
 */
static void start_collector(const char *variant, const char *totals, const char *extra)
{
	char exe[1024], dir[700], pid[16];
	char *argv[] = { exe, "--shm", fx.st.shm, "--publish-interval", "200",
			 "--nvml-interval", "200", "--no-node-libs", "--pid", pid,
			 (char *)extra, NULL };

	tu_stack_init(&fx.st);
	fx.stack = 1;
	tu_build_path(exe, sizeof(exe), "zernel-collector");
	snprintf(pid, sizeof(pid), "%d", (int)fx.watched);
	snprintf(dir, sizeof(dir), "%s/%s", fx.fakes, variant);
	/* The collector's own dlopen("libnvidia-ml.so.1") finds the fake here. */
	setenv("LD_LIBRARY_PATH", dir, 1);
	setenv("FAKE_NVML_TOTALS", totals, 1);
	setenv("FAKE_NVML_STATE", fx.state, 1);
	fx.st.collector = tu_spawn(argv, fx.st.col_log);
	unsetenv("LD_LIBRARY_PATH");
	ck_assert_int_gt(fx.st.collector, 0);
}

/* A fresh snapshot of the collector's segment, waited for up to WAIT_MS. */
static void snapshot(struct shm_reader *r, struct shm_snapshot *snap)
{
	char why[256] = "";

	for (int waited = 0; waited < WAIT_MS; waited += 100) {
		if (shm_reader_snapshot(r, snap, why, sizeof(why)) == SHM_READ_OK &&
		    snap->hdr->stats.publishes > 1)
			return;
		tu_sleep_ms(100);
	}
	tu_stack_dump_logs(&fx.st);
	ck_abort_msg("no fresh segment: %s", why);
}

static const struct shm_gpu_mem *row_of(const struct shm_snapshot *snap, pid_t pid, uint32_t gpu)
{
	uint32_t n = 0;
	const struct shm_gpu_mem *m = shm_snapshot_gpu_mem(snap, &n);

	for (uint32_t i = 0; m && i < n; i++)
		if (m[i].pid == (uint32_t)pid && m[i].gpu_id == gpu)
			return &m[i];
	return NULL;
}

static const struct shm_gpu *gpu_of(const struct shm_snapshot *snap, uint32_t id)
{
	uint32_t n = 0;
	const struct shm_gpu *g = shm_snapshot_gpus(snap, &n);

	for (uint32_t i = 0; g && i < n; i++)
		if (g[i].gpu_id == id)
			return &g[i];
	return NULL;
}

/* Waits until the driver's figure of (pid, gpu) is want (0: no row with one). */
static void wait_figure(struct shm_reader *r, pid_t pid, uint32_t gpu, uint64_t want)
{
	struct shm_snapshot snap;
	uint64_t got = 0;

	memset(&snap, 0, sizeof(snap));
	for (int waited = 0; waited < WAIT_MS; waited += 100) {
		const struct shm_gpu_mem *m;

		snapshot(r, &snap);
		m = row_of(&snap, pid, gpu);
		got = m && (m->flags & SHM_GPU_MEM_F_DRIVER) ? m->driver_used_bytes : 0;
		if (got == want) {
			shm_snapshot_free(&snap);
			return;
		}
		tu_sleep_ms(100);
	}
	shm_snapshot_free(&snap);
	tu_stack_dump_logs(&fx.st);
	ck_abort_msg("pid %d on GPU %u: driver figure %llu, want %llu", (int)pid, gpu,
		     (unsigned long long)got, (unsigned long long)want);
}

/* Waits until /metrics has series name{labels} equal to want, or none when absent. */
static void wait_metric(const char *name, const char *labels, int absent, double want)
{
	char *m = NULL;
	double v = -1;
	int found = 0;

	for (int waited = 0; waited < WAIT_MS; waited += 200) {
		free(m);
		m = tu_scrape(fx.st.metrics_port);
		found = m && tu_metric(m, name, labels, &v) == 0;
		if (m && (absent ? !found : found && v == want)) {
			free(m);
			return;
		}
		tu_sleep_ms(200);
	}
	free(m);
	tu_stack_dump_logs(&fx.st);
	ck_abort_msg("%s{%s}: %s %g, want %s %g", name, labels, found ? "found" : "absent", v,
		     absent ? "absent" : "found", want);
}

/* Lines of the collector's log holding needle. */
static int logged(const char *needle)
{
	char *t = tu_read_file(fx.st.col_log, NULL);
	int n = 0;

	for (const char *p = t; p && (p = strstr(p, needle)); p++)
		n++;
	free(t);
	return n;
}

START_TEST(collector_publishes_nvml_totals_flag_wins)
{
	struct shm_reader r;
	struct shm_snapshot snap;
	const struct shm_gpu *g;
	uint32_t n = 0;

	if (tu_skip_unless_root("collector_publishes_nvml_totals_flag_wins"))
		return;
	driver_state("%s", "");
	start_collector("nvml", "80000000000,40000000000,20000000000", "--gpu-memory-total=12345");
	memset(&snap, 0, sizeof(snap));
	shm_reader_init(&r, fx.st.shm);
	snapshot(&r, &snap);
	g = shm_snapshot_gpus(&snap, &n);
	ck_assert_msg(g && n == 3, "no 3 GPUs in the segment (%u); see %s", n, fx.st.col_log);
	ck_assert_uint_eq(g[0].gpu_id, 0);
	ck_assert_uint_eq(g[0].total_bytes, 12345);
	ck_assert_uint_eq(g[0].total_source, SHM_TOTAL_FLAG);
	ck_assert_uint_eq(g[1].total_bytes, 40000000000ull);
	ck_assert_uint_eq(g[1].total_source, SHM_TOTAL_NVML);
	ck_assert_uint_eq(g[2].total_bytes, 20000000000ull);
	ck_assert_uint_eq(g[2].total_source, SHM_TOTAL_NVML);
	shm_snapshot_free(&snap);
	shm_reader_close(&r);
	ck_assert_int_eq(logged("NVML: total memory of 3 GPUs read"), 1);
}
END_TEST

START_TEST(driver_figures_reach_the_segment_and_metrics_and_fire_the_oom_alert)
{
	struct shm_reader r;
	struct shm_snapshot snap;
	const struct shm_gpu_mem *m;
	char labels[64], firing[96];

	if (tu_skip_unless_root("driver_figures_reach_the_segment_and_metrics_and_fire_the_oom_alert"))
		return;
	/* GPU 0: 990 of 1000 MB used by the driver's count; the probes see nothing. */
	driver_state("used 0 990000000\n0 %d 123456789\n0 %d 5555\n", (int)fx.watched,
		     (int)fx.other);
	start_collector("nvml", "1000000000,2000000000", NULL);
	memset(&snap, 0, sizeof(snap));
	shm_reader_init(&r, fx.st.shm);
	wait_figure(&r, fx.watched, 0, 123456789);

	/* A row of the figure alone; none for the process the collector does not watch. */
	snapshot(&r, &snap);
	m = row_of(&snap, fx.watched, 0);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->flags, SHM_GPU_MEM_F_DRIVER | SHM_GPU_MEM_F_DRIVER_ROW);
	ck_assert_uint_eq(m->used_bytes, 0);
	ck_assert_uint_eq(m->gpu_map, SHM_GPU_MAP_DRIVER);
	ck_assert_ptr_null(row_of(&snap, fx.other, 0));
	ck_assert_uint_eq(gpu_of(&snap, 0)->used_bytes, 990000000);
	ck_assert_uint_eq(gpu_of(&snap, 0)->used_source, SHM_USED_DRIVER);
	ck_assert_uint_eq(gpu_of(&snap, 1)->used_bytes, 500000000);	/* the fake's quarter */
	shm_snapshot_free(&snap);

	/* The exporter says the same. */
	ck_assert_int_eq(tu_stack_start_exporter(&fx.st), 0);
	snprintf(labels, sizeof(labels), "pid=\"%d\",gpu_id=\"0\"", (int)fx.watched);
	wait_metric("zernel_gpu_memory_driver_used_bytes", labels, 0, 123456789);
	wait_metric("zernel_gpu_memory_used_bytes", labels, 0, 0);
	snprintf(firing, sizeof(firing), "pid=\"%d\"", (int)fx.other);
	wait_metric("zernel_gpu_memory_driver_used_bytes", firing, 1, 0);
	wait_metric("zernel_gpu_memory_device_used_bytes", "gpu_id=\"0\",source=\"driver\"", 0,
		    990000000);

	/* The figure follows the driver. */
	driver_state("used 0 990000000\n0 %d 223456789\n", (int)fx.watched);
	wait_figure(&r, fx.watched, 0, 223456789);
	wait_metric("zernel_gpu_memory_driver_used_bytes", labels, 0, 223456789);

	/* 99% of GPU 0 by the driver's count for the rule's 10 s: the built-in alert fires. */
	wait_metric("zernel_alert_firing", "alertname=\"GpuOomWarning\",gpu_id=\"0\"", 0, 1);
	wait_metric("zernel_alert_firing", "alertname=\"GpuOomWarning\",gpu_id=\"1\"", 1, 0);

	/* No longer listed: the figure and its row go, the alert resolves with the device. */
	driver_state("used 0 100000000\n");
	wait_figure(&r, fx.watched, 0, 0);
	snapshot(&r, &snap);
	ck_assert_ptr_null(row_of(&snap, fx.watched, 0));
	shm_snapshot_free(&snap);
	wait_metric("zernel_gpu_memory_driver_used_bytes", labels, 1, 0);
	wait_metric("zernel_alert_firing", "alertname=\"GpuOomWarning\",gpu_id=\"0\"", 1, 0);
	shm_reader_close(&r);
	ck_assert_int_eq(logged("NVML: total memory of 2 GPUs read; the driver's memory figures "
				"follow every few seconds (nvmlDeviceGetComputeRunningProcesses_v3)"),
			 1);
	ck_assert_int_eq(logged("warn: NVML"), 0);
}
END_TEST

/* No row of the segment has a driver figure, and no GPU's used memory is the driver's. */
static void expect_no_figure(struct shm_reader *r)
{
	struct shm_snapshot snap;
	uint32_t n = 0;
	const struct shm_gpu_mem *m;

	memset(&snap, 0, sizeof(snap));
	snapshot(r, &snap);
	m = shm_snapshot_gpu_mem(&snap, &n);
	for (uint32_t i = 0; m && i < n; i++)
		ck_assert_msg(!(m[i].flags & SHM_GPU_MEM_F_DRIVER), "pid %u has a driver figure",
			      m[i].pid);
	ck_assert_ptr_null(row_of(&snap, fx.watched, 0));
	shm_snapshot_free(&snap);
}

START_TEST(no_nvml_and_failing_calls_give_one_line_and_no_figure)
{
	struct shm_reader r;
	struct shm_snapshot snap;
	void *real;

	if (tu_skip_unless_root("no_nvml_and_failing_calls_give_one_line_and_no_figure"))
		return;
	/* An NVML without a call the collector needs: one line at start, nothing after. */
	driver_state("used 0 900\n0 %d 4096\n", (int)fx.watched);
	start_collector("nvml-nomem", "1000", NULL);
	shm_reader_init(&r, fx.st.shm);
	expect_no_figure(&r);
	tu_sleep_ms(1500);	/* several reads' worth */
	expect_no_figure(&r);
	shm_reader_close(&r);
	ck_assert_int_eq(logged("NVML: "), 1);
	ck_assert_int_eq(logged("has no nvmlDeviceGetMemoryInfo; GPU totals come only from "
				"--gpu-memory-total, CUDA devices are not mapped to physical GPUs, "
				"and there is no driver figure"), 1);
	tu_stack_stop(&fx.st);
	fx.stack = 0;

	/* No library at all, where the node has none of its own. */
	real = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (real) {
		dlclose(real);
		fprintf(stderr, "SKIP no NVML at all: this node has libnvidia-ml.so.1\n");
	} else {
		start_collector("no-such-folder", "1000", NULL);
		shm_reader_init(&r, fx.st.shm);
		expect_no_figure(&r);
		shm_reader_close(&r);
		ck_assert_int_eq(logged("NVML: "), 1);
		ck_assert_int_eq(logged("NVML: libnvidia-ml.so.1 is not available"), 1);
		tu_stack_stop(&fx.st);
		fx.stack = 0;
	}

	/*
	 * Calls that start failing, read after read: the figures they gave
	 * go, one line each, and what still reads stays.
	 */
	driver_state("used 0 900\n0 %d 4096\n", (int)fx.watched);
	start_collector("nvml", "1000,2000", NULL);
	shm_reader_init(&r, fx.st.shm);
	wait_figure(&r, fx.watched, 0, 4096);
	driver_state("used 0 900\n0 %d 4096\nfail procs 0 4\nfail memory 1 3\n", (int)fx.watched);
	wait_figure(&r, fx.watched, 0, 0);
	tu_sleep_ms(1500);	/* several reads' worth */
	memset(&snap, 0, sizeof(snap));
	snapshot(&r, &snap);
	ck_assert_uint_eq(gpu_of(&snap, 0)->used_source, SHM_USED_DRIVER);
	ck_assert_uint_eq(gpu_of(&snap, 0)->used_bytes, 900);
	ck_assert_uint_eq(gpu_of(&snap, 1)->used_source, SHM_USED_PROCESSES);
	shm_snapshot_free(&snap);
	expect_no_figure(&r);
	shm_reader_close(&r);
	ck_assert_int_eq(logged("NVML: GPU 0: nvmlDeviceGetComputeRunningProcesses_v3: "
				"Insufficient Permissions; its processes have no driver figure"), 1);
	ck_assert_int_eq(logged("NVML: GPU 1: nvmlDeviceGetMemoryInfo: Not Supported; its used "
				"memory is the watched processes' sum"), 1);
	ck_assert_int_eq(logged("warn: NVML"), 2);
}
END_TEST

Suite *nvml_collector_suite(void);

Suite *nvml_collector_suite(void)
{
	Suite *s = suite_create("nvml_collector");
	TCase *tc = tcase_create("collector");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, collector_publishes_nvml_totals_flag_wins);
	tcase_add_test(tc, driver_figures_reach_the_segment_and_metrics_and_fire_the_oom_alert);
	tcase_add_test(tc, no_nvml_and_failing_calls_give_one_line_and_no_figure);
	suite_add_tcase(s, tc);
	return s;
}
