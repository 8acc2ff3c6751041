/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every attachment of every BPF program, in one table (probe_loader.h):
 * tracepoints attached once at start, and uprobes on symbols of the CUDA driver and runtime, NCCL and libc,
 * attached in each library of their kind as discovery finds it.  Table
 * order is attach order.  Root-only code.
 */
#include <stddef.h>

#include "bpf/nccl_gpu_span.h"
#include "collector/probes/probe_loader.h"

#define DRV	PROBE_LIB_CUDA
#define RT	PROBE_LIB_CUDART
#define NCCL	PROBE_LIB_NCCL
#define LIBC	PROBE_LIB_LIBC
#define LOADER	PROBE_LIB_LOADER
#define PROF	PROBE_LIB_NCCL_PROFILER

#define AUTO(obj, prog)		{ obj, prog, PROBE_AUTO, 0, NULL }
#define ITER(obj, prog)		{ obj, prog, PROBE_ITER, 0, NULL }
/* A symbol's entry and return programs: two rows, return first (probe_loader.h says why). */
#define UPROBE(obj, lib, sym, entry)	{ obj, entry, PROBE_UPROBE, lib, sym }
#define URETPROBE(obj, lib, sym, ret)	{ obj, ret, PROBE_URETPROBE, lib, sym }
#define PAIR(obj, lib, sym, entry, ret)	URETPROBE(obj, lib, sym, ret), UPROBE(obj, lib, sym, entry)

#define MEM(lib, sym, entry, ret)	PAIR(PROBE_OBJ_GPU_MEM, lib, sym, entry, ret)
#define LAUNCH(lib, sym, entry, ret)	PAIR(PROBE_OBJ_CUDA_TRACE, lib, sym, entry, ret)
#define COLL(lib, sym, entry, ret)	PAIR(PROBE_OBJ_NCCL, lib, sym, entry, ret)
#define CUDA(lib, sym, entry)		PAIR(PROBE_OBJ_NCCL, lib, sym, entry, "zn_cuda_ret")
/* What a thread is inside when it blocks, and which threads train. */
#define SCHED_MARK(lib, sym)		UPROBE(PROBE_OBJ_SCHED, lib, sym, "zs_cuda_launch")
#define SCHED_GPU(lib, sym, entry)	PAIR(PROBE_OBJ_SCHED, lib, sym, entry, "zs_cuda_ret")
#define SCHED_NCCL(sym)			PAIR(PROBE_OBJ_SCHED, NCCL, sym, "zs_nccl_call", "zs_nccl_ret")
#define PY_SYNC(lib, sym)		PAIR(PROBE_OBJ_PYSTACK, lib, sym, "zp_sync", "zp_sync_ret")

const struct probe_attach probe_attach_table[] = {
	/*
	 * A thread's last state, counted only for a watched process: before
	 * zw_exit, which takes the process out of the watched set at its last
	 * thread (a tracepoint runs its programs in the order they were attached).
	 */
	AUTO(PROBE_OBJ_SCHED, "zs_task_exit"),
	/* The watched set follows forks, execs and exits from the first. */
	AUTO(PROBE_OBJ_WATCH, "zw_fork"),
	AUTO(PROBE_OBJ_WATCH, "zw_exec"),
	AUTO(PROBE_OBJ_WATCH, "zw_exit"),
	/* Each process's library loads, in the loader it maps. */
	UPROBE(PROBE_OBJ_WATCH, LOADER, "_dl_debug_state", "zw_dl_state"),

	/* GPU memory: allocations and frees, and the calls that set the device. */
	MEM(DRV, "cuMemAlloc_v2",		"zm_alloc",	"zm_mem_ret"),
	MEM(DRV, "cuMemAllocAsync",		"zm_alloc_async", "zm_mem_ret"),
	MEM(DRV, "cuMemAllocAsync_ptsz",	"zm_alloc_async", "zm_mem_ret"),
	MEM(DRV, "cuMemAllocFromPoolAsync",	"zm_alloc_pool", "zm_mem_ret"),
	MEM(DRV, "cuMemAllocFromPoolAsync_ptsz", "zm_alloc_pool", "zm_mem_ret"),
	MEM(DRV, "cuMemAllocPitch_v2",		"zm_alloc_pitch", "zm_mem_ret"),
	MEM(DRV, "cuMemFree_v2",		"zm_free",	"zm_mem_ret"),
	MEM(DRV, "cuMemFreeAsync",		"zm_free",	"zm_mem_ret"),
	MEM(DRV, "cuMemFreeAsync_ptsz",		"zm_free",	"zm_mem_ret"),
	MEM(DRV, "cuMemCreate",			"zm_create",	"zm_mem_ret"),
	MEM(DRV, "cuMemRelease",		"zm_release",	"zm_mem_ret"),
	MEM(DRV, "cuDeviceGetDefaultMemPool",	"zm_pool_default", "zm_pool_ret"),
	MEM(DRV, "cuDeviceGetMemPool",		"zm_pool_current", "zm_pool_ret"),
	MEM(DRV, "cuDeviceSetMemPool",		"zm_pool_set",	"zm_pool_ret"),
	MEM(DRV, "cuMemPoolSetAttribute",	"zm_pool_attr",	"zm_pool_ret"),
	MEM(DRV, "cuMemPoolTrimTo",		"zm_pool_trim",	"zm_pool_ret"),
	MEM(DRV, "cuMemPoolDestroy",		"zm_pool_destroy", "zm_pool_ret"),
	MEM(RT,  "cudaMalloc",			"zm_alloc",	"zm_mem_ret"),
	MEM(RT,  "cudaFree",			"zm_free",	"zm_mem_ret"),
	MEM(DRV, "cuDevicePrimaryCtxRetain",	"zm_ctx_retain", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxCreate_v2",		"zm_ctx_create2", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxCreate_v3",		"zm_ctx_create3", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxCreate_v4",		"zm_ctx_create4", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxSetCurrent",		"zm_ctx_current", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxPushCurrent_v2",		"zm_ctx_current", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxGetCurrent",		"zm_ctx_get",	"zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxGetDevice",		"zm_ctx_get_device", "zm_drv_ctx_ret"),
	MEM(DRV, "cuCtxGetDevice_v2",		"zm_ctx_get_device2", "zm_drv_ctx_ret"),
	MEM(RT,  "cudaSetDevice",		"zm_set_device", "zm_ctx_ret"),

	/* Kernel launches (_ptsz: per-thread default stream) and graph launches. */
	LAUNCH(DRV, "cuLaunchKernel",		"zt_launch",	"zt_launch_ret"),
	LAUNCH(DRV, "cuLaunchKernel_ptsz",	"zt_launch",	"zt_launch_ret"),
	LAUNCH(DRV, "cuLaunchKernelEx",		"zt_launch",	"zt_launch_ret"),
	LAUNCH(DRV, "cuLaunchKernelEx_ptsz",	"zt_launch",	"zt_launch_ret"),
	LAUNCH(RT,  "cudaLaunchKernel",		"zt_launch",	"zt_launch_ret"),
	LAUNCH(RT,  "cudaLaunchKernel_ptsz",	"zt_launch",	"zt_launch_ret"),
	LAUNCH(RT,  "cudaLaunchKernelExC",	"zt_launch",	"zt_launch_ret"),
	LAUNCH(RT,  "cudaLaunchKernelExC_ptsz",	"zt_launch",	"zt_launch_ret"),
	LAUNCH(DRV, "cuLaunchCooperativeKernel", "zt_launch",	"zt_launch_ret"),
	LAUNCH(DRV, "cuLaunchCooperativeKernel_ptsz", "zt_launch", "zt_launch_ret"),
	LAUNCH(RT,  "cudaLaunchCooperativeKernel", "zt_launch",	"zt_launch_ret"),
	LAUNCH(RT,  "cudaLaunchCooperativeKernel_ptsz", "zt_launch", "zt_launch_ret"),
	LAUNCH(DRV, "cuGraphLaunch",		"zt_graph",	"zt_graph_ret"),
	LAUNCH(DRV, "cuGraphLaunch_ptsz",	"zt_graph",	"zt_graph_ret"),
	LAUNCH(RT,  "cudaGraphLaunch",		"zt_graph",	"zt_graph_ret"),
	LAUNCH(RT,  "cudaGraphLaunch_ptsz",	"zt_graph",	"zt_graph_ret"),

	/* Host waits for the GPU: stream and device synchronisation. */
	LAUNCH(RT,  "cudaStreamSynchronize",	"zt_sync",	"zt_sync_ret"),
	LAUNCH(RT,  "cudaStreamSynchronize_ptsz", "zt_sync",	"zt_sync_ret"),
	LAUNCH(RT,  "cudaDeviceSynchronize",	"zt_sync",	"zt_sync_ret"),
	LAUNCH(DRV, "cuStreamSynchronize",	"zt_sync",	"zt_sync_ret"),
	LAUNCH(DRV, "cuStreamSynchronize_ptsz",	"zt_sync",	"zt_sync_ret"),
	LAUNCH(DRV, "cuCtxSynchronize",		"zt_sync",	"zt_sync_ret"),
	LAUNCH(DRV, "cuCtxSynchronize_v2",	"zt_sync",	"zt_sync_ret"),

	/*
	 * NCCL: collectives, point-to-point, groups, communicators made and
	 * ended (commAlloc: libnccl's internal symbol, where NCCL settles a
	 * split child's rank),
	 * then the CUDA calls that order streams or end a wait.
	 */
	COLL(NCCL, "ncclAllReduce",		"zn_all_reduce",	"zn_coll_ret"),
	COLL(NCCL, "ncclAllGather",		"zn_all_gather",	"zn_coll_ret"),
	COLL(NCCL, "ncclReduceScatter",		"zn_reduce_scatter",	"zn_coll_ret"),
	COLL(NCCL, "ncclBroadcast",		"zn_broadcast",		"zn_coll_ret"),
	COLL(NCCL, "ncclBcast",			"zn_bcast",		"zn_coll_ret"),
	COLL(NCCL, "ncclReduce",		"zn_reduce",		"zn_coll_ret"),
	COLL(NCCL, "ncclSend",			"zn_send",		"zn_coll_ret"),
	COLL(NCCL, "ncclRecv",			"zn_recv",		"zn_coll_ret"),
	COLL(NCCL, "ncclAlltoAll",		"zn_all_to_all",	"zn_coll_ret"),
	COLL(NCCL, "ncclGather",		"zn_gather",		"zn_coll_ret"),
	COLL(NCCL, "ncclScatter",		"zn_scatter",		"zn_coll_ret"),
	UPROBE(PROBE_OBJ_NCCL, NCCL, "ncclGroupStart", "zn_group_start"),
	COLL(NCCL, "ncclGroupEnd",		"zn_group_end",		"zn_coll_ret"),
	COLL(NCCL, "ncclCommInitRank",		"zn_init_rank",		"zn_init_ret"),
	COLL(NCCL, "ncclCommInitRankConfig",	"zn_init_rank",		"zn_init_ret"),
	COLL(NCCL, "ncclCommInitRankScalable",	"zn_init_scalable",	"zn_init_ret"),
	COLL(NCCL, "ncclCommInitAll",		"zn_init_all",		"zn_init_ret"),
	COLL(NCCL, "ncclCommSplit",		"zn_split",		"zn_init_ret"),
	COLL(NCCL, "ncclCommShrink",		"zn_shrink",		"zn_init_ret"),
	COLL(NCCL, "ncclCommFinalize",		"zn_finalize",		"zn_end_ret"),
	COLL(NCCL, "ncclCommDestroy",		"zn_destroy",		"zn_end_ret"),
	COLL(NCCL, "ncclCommAbort",		"zn_abort",		"zn_end_ret"),
	UPROBE(PROBE_OBJ_NCCL, NCCL, "_ZL9commAllocP8ncclCommS0_ii", "zn_comm_alloc"),
	/* Each collective's GPU time, where NCCL loaded Zernel's profiler plugin. */
	UPROBE(PROBE_OBJ_NCCL, PROF, ZERNEL_NCCL_GPU_SPAN_FN, "zn_gpu_span"),
	CUDA(RT,  "cudaStreamSynchronize",	"zn_stream_sync"),
	CUDA(RT,  "cudaStreamSynchronize_ptsz",	"zn_stream_sync"),
	CUDA(DRV, "cuStreamSynchronize",	"zn_stream_sync"),
	CUDA(DRV, "cuStreamSynchronize_ptsz",	"zn_stream_sync"),
	CUDA(RT,  "cudaEventSynchronize",	"zn_event_sync"),
	CUDA(DRV, "cuEventSynchronize",		"zn_event_sync"),
	CUDA(RT,  "cudaEventQuery",		"zn_event_query"),
	CUDA(DRV, "cuEventQuery",		"zn_event_query"),
	CUDA(RT,  "cudaStreamQuery",		"zn_stream_query"),
	CUDA(RT,  "cudaStreamQuery_ptsz",	"zn_stream_query"),
	CUDA(DRV, "cuStreamQuery",		"zn_stream_query"),
	CUDA(DRV, "cuStreamQuery_ptsz",		"zn_stream_query"),
	CUDA(RT,  "cudaDeviceSynchronize",	"zn_device_sync"),
	CUDA(DRV, "cuCtxSynchronize",		"zn_device_sync"),
	CUDA(DRV, "cuCtxSynchronize_v2",	"zn_device_sync"),
	CUDA(RT,  "cudaEventRecord",		"zn_event_record"),
	CUDA(RT,  "cudaEventRecord_ptsz",	"zn_event_record"),
	CUDA(RT,  "cudaEventRecordWithFlags",	"zn_event_record"),
	CUDA(RT,  "cudaEventRecordWithFlags_ptsz", "zn_event_record"),
	CUDA(DRV, "cuEventRecord",		"zn_event_record"),
	CUDA(DRV, "cuEventRecord_ptsz",		"zn_event_record"),
	CUDA(DRV, "cuEventRecordWithFlags",	"zn_event_record"),
	CUDA(DRV, "cuEventRecordWithFlags_ptsz", "zn_event_record"),
	CUDA(RT,  "cudaStreamWaitEvent",	"zn_stream_wait"),
	CUDA(RT,  "cudaStreamWaitEvent_ptsz",	"zn_stream_wait"),
	CUDA(DRV, "cuStreamWaitEvent",		"zn_stream_wait"),
	CUDA(DRV, "cuStreamWaitEvent_ptsz",	"zn_stream_wait"),
	CUDA(RT,  "cudaStreamBeginCapture",	"zn_capture_begin"),
	CUDA(RT,  "cudaStreamBeginCapture_ptsz", "zn_capture_begin"),
	CUDA(DRV, "cuStreamBeginCapture_v2",	"zn_capture_begin"),
	CUDA(DRV, "cuStreamBeginCapture_v2_ptsz", "zn_capture_begin"),
	CUDA(RT,  "cudaStreamEndCapture",	"zn_capture_end"),
	CUDA(RT,  "cudaStreamEndCapture_ptsz",	"zn_capture_end"),
	CUDA(DRV, "cuStreamEndCapture",		"zn_capture_end"),
	CUDA(DRV, "cuStreamEndCapture_ptsz",	"zn_capture_end"),

	/*
	 * Scheduler: where threads' time goes, waits included (no syscall
	 * tracepoint); pthread_barrier_wait in each libc.
	 */
	AUTO(PROBE_OBJ_SCHED, "zs_wakeup"),		/* without sched_info only */
	AUTO(PROBE_OBJ_SCHED, "zs_wakeup_new"),
	AUTO(PROBE_OBJ_SCHED, "zs_switch"),		/* one of the two is loaded */
	AUTO(PROBE_OBJ_SCHED, "zs_switch_deferred"),
	AUTO(PROBE_OBJ_SCHED, "zs_migrate"),
	AUTO(PROBE_OBJ_SCHED, "zs_exec"),
	ITER(PROBE_OBJ_SCHED, "zs_open_states"),	/* read before each publish */
	PAIR(PROBE_OBJ_SCHED, LIBC, "pthread_barrier_wait", "zs_barrier_enter", "zs_barrier_exit"),

	/* Training threads: those that launch, allocate or synchronise. */
	SCHED_MARK(DRV, "cuLaunchKernel"),
	SCHED_MARK(DRV, "cuLaunchKernel_ptsz"),
	SCHED_MARK(DRV, "cuLaunchKernelEx"),
	SCHED_MARK(DRV, "cuLaunchKernelEx_ptsz"),
	SCHED_MARK(RT,  "cudaLaunchKernel"),
	SCHED_MARK(RT,  "cudaLaunchKernel_ptsz"),
	SCHED_MARK(RT,  "cudaLaunchKernelExC"),
	SCHED_MARK(RT,  "cudaLaunchKernelExC_ptsz"),
	SCHED_MARK(DRV, "cuGraphLaunch"),
	SCHED_MARK(DRV, "cuGraphLaunch_ptsz"),
	SCHED_MARK(RT,  "cudaGraphLaunch"),
	SCHED_MARK(RT,  "cudaGraphLaunch_ptsz"),
	/* Blocked inside these: gpu (collective for a sync that ends collectives). */
	SCHED_GPU(RT,  "cudaMalloc",			"zs_cuda_block"),
	SCHED_GPU(RT,  "cudaFree",			"zs_cuda_block"),
	SCHED_GPU(RT,  "cudaMemcpy",			"zs_cuda_block"),
	SCHED_GPU(DRV, "cuMemAlloc_v2",			"zs_cuda_block"),
	SCHED_GPU(DRV, "cuMemFree_v2",			"zs_cuda_block"),
	SCHED_GPU(DRV, "cuMemcpy",			"zs_cuda_block"),
	SCHED_GPU(DRV, "cuMemcpyDtoH_v2",		"zs_cuda_block"),
	SCHED_GPU(DRV, "cuMemcpyHtoD_v2",		"zs_cuda_block"),
	SCHED_GPU(RT,  "cudaStreamSynchronize",		"zs_cuda_sync"),
	SCHED_GPU(RT,  "cudaStreamSynchronize_ptsz",	"zs_cuda_sync"),
	SCHED_GPU(RT,  "cudaDeviceSynchronize",		"zs_cuda_sync"),
	SCHED_GPU(RT,  "cudaEventSynchronize",		"zs_cuda_sync"),
	SCHED_GPU(DRV, "cuStreamSynchronize",		"zs_cuda_sync"),
	SCHED_GPU(DRV, "cuStreamSynchronize_ptsz",	"zs_cuda_sync"),
	SCHED_GPU(DRV, "cuCtxSynchronize",		"zs_cuda_sync"),
	SCHED_GPU(DRV, "cuCtxSynchronize_v2",		"zs_cuda_sync"),
	SCHED_GPU(DRV, "cuEventSynchronize",		"zs_cuda_sync"),
	SCHED_NCCL("ncclAllReduce"),
	SCHED_NCCL("ncclAllGather"),
	SCHED_NCCL("ncclReduceScatter"),
	SCHED_NCCL("ncclBroadcast"),
	SCHED_NCCL("ncclBcast"),
	SCHED_NCCL("ncclReduce"),
	SCHED_NCCL("ncclSend"),
	SCHED_NCCL("ncclRecv"),
	SCHED_NCCL("ncclAlltoAll"),
	SCHED_NCCL("ncclGather"),
	SCHED_NCCL("ncclScatter"),
	SCHED_NCCL("ncclGroupEnd"),

	/*
	 * Python frames of synchronisations that spin (those of blocked and
	 * preempted threads are read by zs_switch).
	 */
	PY_SYNC(RT,  "cudaStreamSynchronize"),
	PY_SYNC(RT,  "cudaStreamSynchronize_ptsz"),
	PY_SYNC(RT,  "cudaDeviceSynchronize"),
	PY_SYNC(RT,  "cudaEventSynchronize"),
	PY_SYNC(DRV, "cuStreamSynchronize"),
	PY_SYNC(DRV, "cuStreamSynchronize_ptsz"),
	PY_SYNC(DRV, "cuCtxSynchronize"),
	PY_SYNC(DRV, "cuCtxSynchronize_v2"),
	PY_SYNC(DRV, "cuEventSynchronize"),
};

const size_t probe_attach_count = sizeof(probe_attach_table) / sizeof(probe_attach_table[0]);
