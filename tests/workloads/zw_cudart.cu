// SPDX-License-Identifier: BSD-2-Clause
/*
 * A CUDA workload built by nvcc against NVIDIA's shared runtime
 * (libcudart.so.13), for the tests that put the fake driver
 * (tests/fakes/fake_driver) under the real runtime.  It makes a known
 * number of each call and prints, per call, "COUNT <call> <n>": the ground
 * truth the driver-side figures are checked against.  <call> is the runtime
 * function, except that launches come as triple_chevron (<<<>>>) and
 * cudaLaunchKernel made outside a capture, and captured_launch, either
 * kind made on a stream being captured into a graph; and copies as
 * cudaMemcpy_<kind>.  "HELD <device> <bytes>" is the device memory it
 * still holds at the end, per device.  Any failed call ends it with exit 1 and the
 * runtime's error.  No privilege.
 *
 *   zw_cudart            run and exit
 *   zw_cudart hold       run at once, then print DONE and wait for stdin to
 *                        close
 *   zw_cudart wait       print WAIT once the runtime has loaded the driver
 *                        (it does at its first call, cudaGetDeviceCount here)
 *                        and wait for a line on stdin; once done print DONE
 *                        and wait for stdin to close: probes can be attached
 *                        to the libraries mapped, in a process still alive
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

/* What the workload did, by runtime call; printed at the end. */
enum zw_call {
	ZW_SET_DEVICE, ZW_MALLOC, ZW_FREE, ZW_MALLOC_ASYNC, ZW_FREE_ASYNC, ZW_TRIPLE_CHEVRON,
	ZW_LAUNCH_KERNEL, ZW_CAPTURED_LAUNCH, ZW_GRAPH_LAUNCH, ZW_STREAM_SYNC, ZW_DEVICE_SYNC,
	ZW_MEMCPY_H2D, ZW_MEMCPY_D2H, ZW_MEMSET, ZW_MALLOC_HOST, ZW_FREE_HOST, ZW_EVENT_RECORD,
	ZW_COOPERATIVE_LAUNCH, ZW_MALLOC_FROM_POOL, ZW_MALLOC_PITCH, ZW_N_CALLS,
};

static const char *const zw_names[ZW_N_CALLS] = {
	"cudaSetDevice", "cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaFreeAsync",
	"triple_chevron", "cudaLaunchKernel", "captured_launch", "cudaGraphLaunch",
	"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaMemcpy_HostToDevice",
	"cudaMemcpy_DeviceToHost", "cudaMemset", "cudaMallocHost", "cudaFreeHost",
	"cudaEventRecord", "cudaLaunchCooperativeKernel", "cudaMallocFromPoolAsync",
	"cudaMallocPitch",
};

static unsigned long zw_count[ZW_N_CALLS];
/* Device memory held now, per device (the fake shows at most 8). */
static unsigned long long zw_held[8];
static int zw_dev;

static void held(long long bytes)
{
	zw_held[zw_dev] += (unsigned long long)bytes;
}

__global__ void zw_fill(int *p, int v)
{
	p[threadIdx.x] = v;
}

__global__ void zw_add(int *p, int v)
{
	p[threadIdx.x] += v;
}

static void check(cudaError_t e, const char *what)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "zw_cudart: %s: %s (%s, %d)\n", what, cudaGetErrorString(e),
			cudaGetErrorName(e), (int)e);
		exit(1);
	}
}

/* Counts a runtime call that succeeded. */
#define DO(call, what) do { check((what), #what); zw_count[call]++; } while (0)

static void wait_line(void)
{
	char line[64];

	if (!fgets(line, sizeof(line), stdin))
		exit(1);
}

/* Allocations, launches and syncs on one device, through the legacy stream. */
static void on_device(int dev, int n_malloc, int n_free)
{
	int *p[8];

	if (dev >= 8)
		exit(1);

	DO(ZW_SET_DEVICE, cudaSetDevice(dev));
	zw_dev = dev;
	for (int i = 0; i < n_malloc; i++) {
		DO(ZW_MALLOC, cudaMalloc(&p[i], (size_t)(i + 1) << 20));
		held((long long)(i + 1) << 20);
	}
	zw_fill<<<1, 32>>>(p[0], dev);
	check(cudaGetLastError(), "zw_fill<<<>>>");
	zw_count[ZW_TRIPLE_CHEVRON]++;
	DO(ZW_DEVICE_SYNC, cudaDeviceSynchronize());
	for (int i = 0; i < n_free; i++) {
		DO(ZW_FREE, cudaFree(p[i]));
		held(-((long long)(i + 1) << 20));
	}
}

int main(int argc, char **argv)
{
	int wait = argc > 1 && strcmp(argv[1], "wait") == 0;
	int hold = wait || (argc > 1 && strcmp(argv[1], "hold") == 0);
	int n_dev = 0, *host, back[32], *d, *a[4], *pooled[2];
	cudaMemPool_t pool;
	void *pitched;
	size_t pitch;
	float ms;
	cudaEvent_t ev[2];
	cudaStream_t s;
	cudaGraph_t captured, built;
	cudaGraphExec_t captured_exec, built_exec;
	cudaGraphNode_t node;
	cudaKernelNodeParams kp = {};
	void *args[2];
	int v = 3;

	/* 1. Devices: one each, the first kept for the rest. */
	check(cudaGetDeviceCount(&n_dev), "cudaGetDeviceCount");
	printf("devices %d\n", n_dev);
	if (wait) {
		printf("WAIT\n");
		fflush(stdout);
		wait_line();
	}
	if (n_dev > 1)
		on_device(1, 1, 1);
	on_device(0, 6, 5);	/* one allocation stays until exit */

	/* 2. A data round trip through device memory, from page-locked memory. */
	DO(ZW_MALLOC_HOST, cudaMallocHost(&host, 32 * sizeof(int)));
	for (int i = 0; i < 32; i++)
		host[i] = i * 7;
	DO(ZW_MALLOC, cudaMalloc(&d, 32 * sizeof(int)));
	held(32 * sizeof(int));
	DO(ZW_MEMSET, cudaMemset(d, 0, 32 * sizeof(int)));
	DO(ZW_MEMCPY_H2D, cudaMemcpy(d, host, 32 * sizeof(int), cudaMemcpyHostToDevice));
	DO(ZW_MEMCPY_D2H, cudaMemcpy(back, d, sizeof(back), cudaMemcpyDeviceToHost));
	if (memcmp(host, back, sizeof(back)) != 0) {
		fprintf(stderr, "zw_cudart: device memory did not keep its data\n");
		return 1;
	}
	DO(ZW_FREE_HOST, cudaFreeHost(host));
	/* A pitched allocation: its size is the pitch the driver chose, times the rows. */
	DO(ZW_MALLOC_PITCH, cudaMallocPitch(&pitched, &pitch, 100, 3));
	held((long long)(pitch * 3));

	/* 3. A stream: stream-ordered allocations, launches both ways, syncs. */
	check(cudaStreamCreate(&s), "cudaStreamCreate");
	check(cudaEventCreate(&ev[0]), "cudaEventCreate");
	check(cudaEventCreate(&ev[1]), "cudaEventCreate");
	DO(ZW_EVENT_RECORD, cudaEventRecord(ev[0], s));
	for (int i = 0; i < 4; i++) {
		DO(ZW_MALLOC_ASYNC, cudaMallocAsync(&a[i], 4096u << i, s));
		held(4096u << i);
	}
	check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
	for (int i = 0; i < 2; i++) {
		DO(ZW_MALLOC_FROM_POOL, cudaMallocFromPoolAsync(&pooled[i], 8192u << i, pool, s));
		held(8192u << i);
	}
	for (int i = 0; i < 3; i++) {
		zw_fill<<<2, 32, 0, s>>>(a[i], i);
		check(cudaGetLastError(), "zw_fill<<<s>>>");
		zw_count[ZW_TRIPLE_CHEVRON]++;
	}
	args[0] = &d;
	args[1] = &v;
	for (int i = 0; i < 2; i++)
		DO(ZW_LAUNCH_KERNEL, cudaLaunchKernel((const void *)zw_add, dim3(1), dim3(32), args,
						      0, s));
	DO(ZW_COOPERATIVE_LAUNCH, cudaLaunchCooperativeKernel((const void *)zw_add, dim3(1),
							      dim3(32), args, 0, s));
	DO(ZW_EVENT_RECORD, cudaEventRecord(ev[1], s));
	DO(ZW_STREAM_SYNC, cudaStreamSynchronize(s));
	check(cudaEventElapsedTime(&ms, ev[0], ev[1]), "cudaEventElapsedTime");
	for (int i = 0; i < 3; i++) {
		DO(ZW_FREE_ASYNC, cudaFreeAsync(a[i], s));	/* a[3] stays until exit */
		held(-(4096ll << i));
	}
	DO(ZW_FREE_ASYNC, cudaFreeAsync(pooled[0], s));	/* pooled[1] stays too */
	held(-8192ll);
	DO(ZW_STREAM_SYNC, cudaStreamSynchronize(s));

	/* 4. A graph captured from the stream: its launches are captured, not run. */
	check(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
	zw_fill<<<1, 32, 0, s>>>(d, 1);
	zw_count[ZW_CAPTURED_LAUNCH]++;
	DO(ZW_CAPTURED_LAUNCH, cudaLaunchKernel((const void *)zw_add, dim3(1), dim3(32), args, 0,
						s));
	check(cudaStreamEndCapture(s, &captured), "cudaStreamEndCapture");
	check(cudaGraphInstantiate(&captured_exec, captured, 0), "cudaGraphInstantiate");
	for (int i = 0; i < 3; i++)
		DO(ZW_GRAPH_LAUNCH, cudaGraphLaunch(captured_exec, s));
	DO(ZW_STREAM_SYNC, cudaStreamSynchronize(s));

	/* 5. A graph built node by node. */
	check(cudaGraphCreate(&built, 0), "cudaGraphCreate");
	kp.func = (void *)zw_add;
	kp.gridDim = dim3(1);
	kp.blockDim = dim3(32);
	kp.kernelParams = args;
	check(cudaGraphAddKernelNode(&node, built, NULL, 0, &kp), "cudaGraphAddKernelNode");
	check(cudaGraphInstantiate(&built_exec, built, 0), "cudaGraphInstantiate");
	for (int i = 0; i < 2; i++)
		DO(ZW_GRAPH_LAUNCH, cudaGraphLaunch(built_exec, s));
	DO(ZW_STREAM_SYNC, cudaStreamSynchronize(s));

	check(cudaGraphExecDestroy(captured_exec), "cudaGraphExecDestroy");
	check(cudaGraphExecDestroy(built_exec), "cudaGraphExecDestroy");
	check(cudaGraphDestroy(captured), "cudaGraphDestroy");
	check(cudaGraphDestroy(built), "cudaGraphDestroy");
	check(cudaEventDestroy(ev[0]), "cudaEventDestroy");
	check(cudaEventDestroy(ev[1]), "cudaEventDestroy");
	check(cudaStreamDestroy(s), "cudaStreamDestroy");
	DO(ZW_DEVICE_SYNC, cudaDeviceSynchronize());

	for (int i = 0; i < ZW_N_CALLS; i++)
		printf("COUNT %s %lu\n", zw_names[i], zw_count[i]);
	for (int i = 0; i < n_dev && i < 8; i++)
		printf("HELD %d %llu\n", i, zw_held[i]);
	printf("DONE\n");
	fflush(stdout);
	if (hold)
		while (getchar() != EOF)
			;
	return 0;
}
