/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fake driver (tests/fakes/fake_driver) under NVIDIA's real runtime:
 * zw_cudart, which nvcc builds against libcudart.so.13, runs to its end on
 * it, and the fake's trace shows every runtime call reaching the driver
 * function it should exactly as many times as the workload made it, with
 * the legacy and the per-thread default stream.  The runtime's
 * cuGetProcAddress requests are the recorded ones; a wrong integrity hash
 * and NVIDIA's stub driver are refused.  Skipped where the CUDA toolkit is
 * absent.  No privilege.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/testutil.h"

#define CUDA_HOME	"/usr/local/cuda"
#define REQUESTS	"tests/fakes/fake_driver/cudart13_requests.txt"

struct run {
	int status;
	char *out;		/* stdout and stderr */
	char *trace;		/* $FAKE_CUDA_TRACE */
};

static void run_free(struct run *r)
{
	free(r->out);
	free(r->trace);
}

/* The workload's path, or NULL after a skip message. */
static const char *workload(const char *test, char *buf, size_t len, const char *name)
{
	char rel[64], fake[512];

	if (access(CUDA_HOME "/bin/nvcc", X_OK) != 0 ||
	    access(CUDA_HOME "/lib64/libcudart.so.13", R_OK) != 0) {
		fprintf(stderr, "SKIP %s: no CUDA toolkit at %s\n", test, CUDA_HOME);
		return NULL;
	}
	snprintf(rel, sizeof(rel), "tests/workloads/%s", name);
	tu_build_path(buf, len, rel);
	tu_build_path(fake, sizeof(fake), "tests/fakes/driver/libcuda.so.1");
	if (access(buf, X_OK) != 0 || access(fake, R_OK) != 0) {
		tu_skip_missing("%s: %s or %s is not built\n", test, buf, fake);
		return NULL;
	}
	return buf;
}

/* Runs bin with libcuda.so.1 from libdir (the fake's when NULL) and env. */
static void run_workload(struct run *r, const char *bin, const char *libdir, const char *env)
{
	static int n;
	char trace[128], dir[512], cmd[2048];

	snprintf(trace, sizeof(trace), "/tmp/zernel-fake-driver-%d-%d.trace", (int)getpid(), n++);
	unlink(trace);
	if (!libdir)
		libdir = tu_build_path(dir, sizeof(dir), "tests/fakes/driver");
	snprintf(cmd, sizeof(cmd), "FAKE_CUDA_TRACE=%s LD_LIBRARY_PATH=%s %s %s 2>&1", trace,
		 libdir, env ? env : "", bin);
	r->out = tu_capture(cmd, &r->status);
	r->trace = tu_read_file(trace, NULL);
	unlink(trace);
	ck_assert_ptr_nonnull(r->out);
	if (!r->trace)
		r->trace = strdup("");
}

/* The workload's "COUNT <call> <n>"; fails the test when it is missing. */
static unsigned long did(const struct run *r, const char *call)
{
	char key[96];
	const char *p;

	snprintf(key, sizeof(key), "COUNT %s ", call);
	p = strstr(r->out, key);
	ck_assert_msg(p != NULL, "the workload did not report %s:\n%s", call, r->out);
	return strtoul(p + strlen(key), NULL, 10);
}

/* Trace lines "call <sym> ..." that contain `with` (any when NULL). */
static unsigned long calls(const struct run *r, const char *sym, const char *with)
{
	char key[96];
	unsigned long n = 0;
	const char *line = r->trace;

	snprintf(key, sizeof(key), "call %s ", sym);
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (strncmp(line, key, strlen(key)) == 0 &&
		    (!with || memmem(line, len, with, strlen(with))))
			n++;
		line = end ? end + 1 : NULL;
	}
	return n;
}

/*
 * Which driver function each runtime call reaches, by default-stream mode,
 * and which of the workload's counts add up to its calls.
 */
struct reach {
	const char *legacy;
	const char *ptds;
	const char *with;		/* only trace lines with this */
	const char *did[3];
};

static const struct reach reaches[] = {
	{ "cuMemAlloc_v2", "cuMemAlloc_v2", NULL, { "cudaMalloc" } },
	{ "cuMemFree_v2", "cuMemFree_v2", NULL, { "cudaFree" } },
	{ "cuMemAllocPitch_v2", "cuMemAllocPitch_v2", NULL, { "cudaMallocPitch" } },
	{ "cuMemAllocAsync", "cuMemAllocAsync_ptsz", NULL, { "cudaMallocAsync" } },
	{ "cuMemFreeAsync", "cuMemFreeAsync_ptsz", NULL, { "cudaFreeAsync" } },
	{ "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz", NULL,
	  { "cudaMallocFromPoolAsync" } },
	{ "cuLaunchKernel", "cuLaunchKernel_ptsz", "captured=0",
	  { "triple_chevron", "cudaLaunchKernel" } },
	{ "cuLaunchKernel", "cuLaunchKernel_ptsz", "captured=1", { "captured_launch" } },
	{ "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz", NULL,
	  { "cudaLaunchCooperativeKernel" } },
	/* The runtime launches graphs through the legacy entry in both modes. */
	{ "cuGraphLaunch", "cuGraphLaunch", NULL, { "cudaGraphLaunch" } },
	{ "cuStreamSynchronize", "cuStreamSynchronize_ptsz", NULL, { "cudaStreamSynchronize" } },
	{ "cuCtxSynchronize_v2", "cuCtxSynchronize_v2", NULL, { "cudaDeviceSynchronize" } },
	{ "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds", NULL, { "cudaMemcpy_HostToDevice" } },
	{ "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds", NULL, { "cudaMemcpy_DeviceToHost" } },
	{ "cuMemsetD8_v2", "cuMemsetD8_v2_ptds", NULL, { "cudaMemset" } },
	{ "cuMemHostAlloc", "cuMemHostAlloc", NULL, { "cudaMallocHost" } },
	{ "cuMemFreeHost", "cuMemFreeHost", NULL, { "cudaFreeHost" } },
	{ "cuEventRecord", "cuEventRecord_ptsz", NULL, { "cudaEventRecord" } },
};

static void check_counts(const char *name, int ptds)
{
	char bin[512];
	struct run r;

	if (!workload(name, bin, sizeof(bin), ptds ? "zw_cudart_ptds" : "zw_cudart"))
		return;
	run_workload(&r, bin, NULL, NULL);
	ck_assert_msg(r.status == 0 && strstr(r.out, "\nDONE\n"),
		      "%s over the fake driver: exit %d\n%s", bin, r.status, r.out);
	ck_assert_msg(strstr(r.trace, "unimplemented") == NULL,
		      "the runtime reached a function the fake does not implement:\n%s", r.trace);
	for (size_t i = 0; i < sizeof(reaches) / sizeof(reaches[0]); i++) {
		const struct reach *c = &reaches[i];
		const char *sym = ptds ? c->ptds : c->legacy, *other = ptds ? c->legacy : c->ptds;
		unsigned long want = 0;

		for (size_t j = 0; j < 3 && c->did[j]; j++)
			want += did(&r, c->did[j]);
		ck_assert_msg(want > 0, "the workload made no %s", c->did[0]);
		ck_assert_msg(calls(&r, sym, c->with) == want,
			      "%s%s%s: %lu calls, the workload made %lu", sym, c->with ? " " : "", c->with ? c->with : "",
			      calls(&r, sym, c->with), want);
		if (strcmp(sym, other) != 0)
			ck_assert_msg(calls(&r, other, NULL) == 0, "%s called in the other mode",
				      other);
	}
	/* One primary context per device the workload used. */
	ck_assert_uint_eq(calls(&r, "cuDevicePrimaryCtxRetain", NULL), did(&r, "cudaSetDevice"));
	run_free(&r);
}

START_TEST(test_runtime_calls_reach_the_driver_once_each)
{
	check_counts("test_runtime_calls_reach_the_driver_once_each", 0);
}
END_TEST

START_TEST(test_runtime_calls_reach_the_driver_once_each_per_thread_stream)
{
	check_counts("test_runtime_calls_reach_the_driver_once_each_per_thread_stream", 1);
}
END_TEST

/* Line i (from 0) of text, without its newline, into buf; 0 when there is none. */
static int nth_line(const char *text, size_t i, char *buf, size_t len)
{
	const char *end;

	while (i-- && text)
		text = (text = strchr(text, '\n')) ? text + 1 : NULL;
	if (!text || !*text)
		return 0;
	end = strchr(text, '\n');
	snprintf(buf, len, "%.*s", (int)(end ? end - text : (ptrdiff_t)strlen(text)), text);
	return 1;
}

START_TEST(test_runtime_requests_the_recorded_names_at_start_up)
{
	char bin[512], path[512], want[256], got[256];
	char *rec, *recorded;
	size_t n = 0, first_call;
	struct run r;

	if (!workload("test_runtime_requests_the_recorded_names_at_start_up", bin, sizeof(bin),
		      "zw_cudart"))
		return;
	snprintf(path, sizeof(path), "%s/%s", tu_src_dir(), REQUESTS);
	rec = tu_read_file(path, NULL);
	ck_assert_msg(rec != NULL, "cannot read %s", path);
	recorded = rec;
	while (*recorded == '#')
		recorded = strchr(recorded, '\n') + 1;
	run_workload(&r, bin, NULL, NULL);
	ck_assert_int_eq(r.status, 0);
	/* The trace starts with the requests, each as recorded, then nothing but calls. */
	for (n = 0; nth_line(recorded, n, want, sizeof(want)); n++) {
		ck_assert_msg(nth_line(r.trace, n, got, sizeof(got)), "trace ends at request %zu",
			      n);
		ck_assert_msg(strncmp(got, "gpa ", 4) == 0 && strcmp(got + 4, want) == 0,
			      "request %zu: traced \"%s\", recorded \"%s\"", n, got, want);
	}
	ck_assert_uint_eq(n, 440);
	first_call = n;
	for (n = first_call; nth_line(r.trace, n, got, sizeof(got)); n++)
		ck_assert_msg(strncmp(got, "gpa ", 4) != 0, "a later request: %s", got);
	free(rec);
	run_free(&r);
}
END_TEST

START_TEST(test_wrong_integrity_hash_is_refused)
{
	char bin[512];
	struct run r;

	if (!workload("test_wrong_integrity_hash_is_refused", bin, sizeof(bin), "zw_cudart"))
		return;
	/* The right hash: asked three times, the versions ending 0, 1 and 2. */
	run_workload(&r, bin, NULL, NULL);
	ck_assert_int_eq(r.status, 0);
	ck_assert_uint_eq(calls(&r, "dark:integrity[1]", NULL), 3);
	ck_assert_uint_eq(calls(&r, "dark:integrity[1]", "version=13002"), 1);
	run_free(&r);

	run_workload(&r, bin, NULL, "FAKE_CUDA_INTEGRITY=wrong");
	ck_assert_msg(r.status == 1 && strstr(r.out, "cudaErrorSoftwareValidityNotEstablished"),
		      "a wrong hash was not refused: exit %d\n%s", r.status, r.out);
	ck_assert_uint_eq(calls(&r, "cuMemAlloc_v2", NULL), 0);
	run_free(&r);
}
END_TEST

START_TEST(test_stub_driver_fails_clearly)
{
	char bin[512], dir[128], link[192];
	struct run r;

	if (!workload("test_stub_driver_fails_clearly", bin, sizeof(bin), "zw_cudart"))
		return;
	/* The stub is libcuda.so in stubs/: the runtime loads it by its soname. */
	snprintf(dir, sizeof(dir), "/tmp/zernel-stub-driver-%d", (int)getpid());
	snprintf(link, sizeof(link), "%s/libcuda.so.1", dir);
	mkdir(dir, 0755);
	unlink(link);
	ck_assert_int_eq(symlink(CUDA_HOME "/lib64/stubs/libcuda.so", link), 0);
	run_workload(&r, bin, dir, NULL);
	unlink(link);
	rmdir(dir);
	ck_assert_msg(r.status == 1 && strstr(r.out, "zw_cudart: cudaGetDeviceCount: ") &&
		      strstr(r.out, "cudaErrorStubLibrary"),
		      "over the stub driver: exit %d\n%s", r.status, r.out);
	ck_assert_ptr_null(strstr(r.out, "DONE"));
	run_free(&r);
}
END_TEST

Suite *fake_driver_suite(void);
Suite *fake_driver_suite(void)
{
	Suite *s = suite_create("fake_driver");
	TCase *tc = tcase_create("real_runtime");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_runtime_calls_reach_the_driver_once_each);
	tcase_add_test(tc, test_runtime_calls_reach_the_driver_once_each_per_thread_stream);
	tcase_add_test(tc, test_runtime_requests_the_recorded_names_at_start_up);
	tcase_add_test(tc, test_wrong_integrity_hash_is_refused);
	tcase_add_test(tc, test_stub_driver_fails_clearly);
	suite_add_tcase(s, tc);
	return s;
}
