/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Do the uprobes see the calls?  A probe sits on a driver function's
 * exported symbol, but NVIDIA's runtime, PyTorch and others call the
 * driver through the pointers cuGetProcAddress hands out.  If a driver
 * answered with another address (an internal entry point), every call
 * through it would bypass the probe, and nothing else would show it.
 *
 * So at start the collector asks the node's driver itself: a child
 * process, with no privilege at all (user nobody, no capabilities,
 * NO_NEW_PRIVS), loads libcuda, calls cuGetProcAddress (allowed before
 * cuInit) for each probed entry point with the name, version and
 * per-thread-stream flag a program would use, and compares the answer with
 * the exported symbol's address.  The parent opens the library (nobody
 * may not reach it: a container's root file system) and hands the child
 * the descriptor; it only reads the child's bounded output.  Root (to
 * fork the child and drop it to nobody).
 */
#ifndef ZERNEL_COVERAGE_H
#define ZERNEL_COVERAGE_H

#include <stddef.h>
#include <stdint.h>

/* A probed driver symbol and the request that yields it. */
struct coverage_entry {
	const char *symbol;	/* "cuMemAlloc_v2" */
	const char *name;	/* "cuMemAlloc" */
	int version;		/* 3020: CUDA 3.2, as cuGetProcAddress numbers them */
	unsigned int ptds;	/* 1: CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */
};

extern const struct coverage_entry coverage_table[];
extern const size_t coverage_count;

enum coverage_verdict {
	COVERAGE_SAME = 0,	/* the exported symbol: probed calls are seen */
	COVERAGE_DIFFERS,	/* another address: calls through it bypass the probe */
	COVERAGE_NOT_OFFERED,	/* the driver does not give it (too old, not found) */
	COVERAGE_NOT_EXPORTED,	/* the library does not export the symbol */
	COVERAGE_VERDICTS
};

struct coverage_result {
	uint32_t checked;	/* entries compared */
	uint32_t differ;	/* COVERAGE_DIFFERS */
	uint32_t not_offered;
	uint32_t not_exported;
	uint8_t verdict[64];	/* per coverage_table entry */
};

/*
 * Runs the check against the driver library at path.  Returns 0 (out
 * filled, every difference logged), or -errno: -ENOSYS when the library
 * has no cuGetProcAddress, -ENOEXEC when it cannot be loaded, -ECHILD when
 * the child failed or said nothing sensible (each logged).
 */
int coverage_check(const char *path, struct coverage_result *out);

#endif /* ZERNEL_COVERAGE_H */
