/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CUDA entry points several families follow, each as row(lib, sym,
 * ...) for the family's own row macro (family_rows.h): the launch family
 * times the launches and the stream and device synchronisations, the
 * scheduler family marks the threads that launch and tells what a blocked
 * thread is inside, the Python-stack family reads the frames of a wait
 * that spins.  Listed once, so every family follows the
 * same calls.
 */
#ifndef ZERNEL_CUDA_CALLS_H
#define ZERNEL_CUDA_CALLS_H

#include "collector/probes/family_rows.h"

/* Kernel launches: plain, extended, cooperative. */
#define CUDA_KERNEL_LAUNCHES(row, ...)					\
	WITH_PTSZ(row, DRV, "cuLaunchKernel", ##__VA_ARGS__),		\
	WITH_PTSZ(row, DRV, "cuLaunchKernelEx", ##__VA_ARGS__),		\
	WITH_PTSZ(row, RT,  "cudaLaunchKernel", ##__VA_ARGS__),		\
	WITH_PTSZ(row, RT,  "cudaLaunchKernelExC", ##__VA_ARGS__),	\
	WITH_PTSZ(row, DRV, "cuLaunchCooperativeKernel", ##__VA_ARGS__), \
	WITH_PTSZ(row, RT,  "cudaLaunchCooperativeKernel", ##__VA_ARGS__)

#define CUDA_GRAPH_LAUNCHES(row, ...)					\
	WITH_PTSZ(row, DRV, "cuGraphLaunch", ##__VA_ARGS__),		\
	WITH_PTSZ(row, RT,  "cudaGraphLaunch", ##__VA_ARGS__)

/* The host waiting for a stream, a device or a context to finish. */
#define CUDA_STREAM_SYNCS(row, ...)					\
	WITH_PTSZ(row, RT,  "cudaStreamSynchronize", ##__VA_ARGS__),	\
	row(RT,  "cudaDeviceSynchronize", ##__VA_ARGS__),		\
	WITH_PTSZ(row, DRV, "cuStreamSynchronize", ##__VA_ARGS__),	\
	row(DRV, "cuCtxSynchronize", ##__VA_ARGS__),			\
	row(DRV, "cuCtxSynchronize_v2", ##__VA_ARGS__)

/* The host waiting for an event. */
#define CUDA_EVENT_SYNCS(row, ...)					\
	row(RT,  "cudaEventSynchronize", ##__VA_ARGS__),		\
	row(DRV, "cuEventSynchronize", ##__VA_ARGS__)

#endif /* ZERNEL_CUDA_CALLS_H */
