// SPDX-License-Identifier: BSD-2-Clause
/*
 * Stream-ordered allocation through NVIDIA's real runtime (libcudart.so.13)
 * as PyTorch's cudaMallocAsync backend uses it: device 0's default pool,
 * a release threshold, syncs of each kind and a trim, next to one plain
 * cudaMalloc.  After each step it prints "HOLDS <step> <bytes>", the
 * device memory the process holds from the driver (cudaMemGetInfo's total
 * less its free: the fake driver counts one process), then "WAIT", and
 * goes on at a line on stdin.  Sizes are whole MiB, so no page rounding
 * hides a byte.  Any failed call ends it with exit 1 and the runtime's
 * error.  No privilege.
 *
 *   zw_mempool           print WAIT once the runtime has loaded the
 *                        driver, then run the steps; DONE at the end, and
 *                        wait for stdin to close
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#define MIB	(1ull << 20)

static void check(cudaError_t e, const char *what)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "zw_mempool: %s: %s\n", what, cudaGetErrorString(e));
		exit(1);
	}
}

static void wait_line(void)
{
	int c;

	printf("WAIT\n");
	fflush(stdout);
	while ((c = getchar()) != '\n')
		if (c == EOF)
			exit(0);
}

/* What the driver says this process holds on its current device, then a pause. */
static void holds(const char *step)
{
	size_t free_b, total;

	check(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo");
	printf("HOLDS %s %zu\n", step, total - free_b);
	wait_line();
}

static void set_threshold(cudaMemPool_t pool, uint64_t bytes)
{
	check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &bytes),
	      "cudaMemPoolSetAttribute");
}

int main(void)
{
	void *plain, *a[3], *big;
	cudaMemPool_t pool;
	cudaStream_t s;
	cudaEvent_t ev;
	int n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
	wait_line();
	check(cudaSetDevice(0), "cudaSetDevice");
	check(cudaStreamCreate(&s), "cudaStreamCreate");
	check(cudaEventCreate(&ev), "cudaEventCreate");

	/* Before the process names its pool: the default pool, threshold 0. */
	check(cudaMalloc(&plain, MIB), "cudaMalloc");
	for (int i = 0; i < 3; i++)
		check(cudaMallocAsync(&a[i], MIB, s), "cudaMallocAsync");
	check(cudaFreeAsync(a[0], s), "cudaFreeAsync");
	check(cudaFreeAsync(a[1], s), "cudaFreeAsync");
	holds("freed-kept");			/* 1 + 3: the pool keeps what was freed */
	check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
	holds("stream-sync");			/* 1 + 1: threshold 0 gives back the rest */

	/* What PyTorch does: the largest threshold, so the pool keeps everything. */
	check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
	set_threshold(pool, UINT64_MAX);
	check(cudaMallocAsync(&big, 4 * MIB, s), "cudaMallocAsync");
	check(cudaFreeAsync(big, s), "cudaFreeAsync");
	check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
	holds("kept-past-sync");		/* 1 + 5 */
	check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
	holds("trimmed");			/* 1 + 1 */

	/* A threshold of 2 MiB, reached through an event's synchronisation. */
	set_threshold(pool, 2 * MIB);
	check(cudaMallocAsync(&big, 3 * MIB, s), "cudaMallocAsync");
	check(cudaFreeAsync(big, s), "cudaFreeAsync");
	check(cudaEventRecord(ev, s), "cudaEventRecord");
	check(cudaEventSynchronize(ev), "cudaEventSynchronize");
	holds("event-sync-threshold");		/* 1 + 2 */
	set_threshold(pool, 0);
	check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	holds("device-sync");			/* 1 + 1 */

	check(cudaFreeAsync(a[2], s), "cudaFreeAsync");
	check(cudaFree(plain), "cudaFree");
	holds("all-freed");			/* the pool's 1 */
	check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
	holds("empty");				/* 0 */
	printf("DONE\n");
	while (getchar() != EOF)
		;
	return 0;
}
