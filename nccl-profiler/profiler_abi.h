/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The part of NCCL's profiler plugin interface, version 5 (NCCL 2.28), that
 * Zernel's plugin uses: NCCL dlopens $NCCL_PROFILER_PLUGIN and
 * looks up the symbol ncclProfiler_v5, a table of five functions; events
 * are described by ncclProfilerEventDescr_v5 and updated with
 * ncclProfilerEventStateArgs_v5.  Layouts as NCCL 2.28 defines them (its
 * ext-profiler/example/nccl/profiler_v5.h); the test suite drives this
 * plugin through NCCL 2.28.9's own headers (tests/fakes/nccl_profiler_2.28.9/).
 */
#ifndef ZERNEL_NCCL_PROFILER_ABI_H
#define ZERNEL_NCCL_PROFILER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int zp_result_t;		/* ncclResult_t */
#define ZP_SUCCESS		0	/* ncclSuccess */
#define ZP_INTERNAL_ERROR	3	/* ncclInternalError */

/* Event types (the activation mask's bits). */
#define ZP_EVENT_COLL		(1 << 1)	/* ncclProfileColl */
#define ZP_EVENT_KERNEL_CH	(1 << 6)	/* ncclProfileKernelCh */

/* ncclProfilerKernelChStop: a channel's kernel work ended, with its GPU time. */
#define ZP_STATE_KERNEL_CH_STOP	22

typedef void (*zp_logger_t)(int level, unsigned long flags, const char *file, int line,
			    const char *fmt, ...);

/* ncclProfilerEventDescr_v5_t: the members of its union this plugin reads. */
struct zp_event_descr {
	uint64_t type;
	void *parent;
	int rank;
	union {
		struct {
			uint64_t seq;
			const char *func;
			const void *send_buff;
			void *recv_buff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t channels;
			uint8_t warps;
			const char *algo;
			const char *proto;
			void *parent_group;
		} coll;
		struct {
			uint8_t channel;
			uint64_t ptimer;	/* GPU globaltimer at the channel's start, ns */
		} kernel_ch;
		/* The other members, unread. */
		uint8_t other[96];
	};
};

/* ncclProfilerEventStateArgs_v5_t */
union zp_state_args {
	struct {
		uint64_t ptimer;	/* GPU globaltimer at the channel's end, ns */
	} kernel_ch;
	uint8_t other[8];
};

/* ncclProfiler_v5_t */
struct zp_profiler_v5 {
	const char *name;
	zp_result_t (*init)(void **context, uint64_t comm_id, int *activation_mask,
			    const char *comm_name, int nodes, int nranks, int rank,
			    zp_logger_t log);
	zp_result_t (*start_event)(void *context, void **handle, struct zp_event_descr *descr);
	zp_result_t (*stop_event)(void *handle);
	zp_result_t (*record_event_state)(void *handle, int state, union zp_state_args *args);
	zp_result_t (*finalize)(void *context);
};

/*
 * ncclProfiler_v4_t (NCCL 2.27): init takes its arguments in another order,
 * and its descriptor's type is one byte; the other members sit at the same
 * offsets as version 5's.
 */
struct zp_profiler_v4 {
	const char *name;
	zp_result_t (*init)(void **context, int *activation_mask, const char *comm_name,
			    uint64_t comm_hash, int nodes, int nranks, int rank, zp_logger_t log);
	zp_result_t (*start_event)(void *context, void **handle, struct zp_event_descr *descr);
	zp_result_t (*stop_event)(void *handle);
	zp_result_t (*record_event_state)(void *handle, int state, union zp_state_args *args);
	zp_result_t (*finalize)(void *context);
};

#endif /* ZERNEL_NCCL_PROFILER_ABI_H */
