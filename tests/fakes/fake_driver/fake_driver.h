/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the parts of the fake driver (libcuda.so.1 in tests/fakes/fake_driver/)
 * share: the few driver types and error codes it needs, the objects behind
 * its handles, and the trace.  Test code, no privilege.
 */
#ifndef ZERNEL_FAKE_DRIVER_H
#define ZERNEL_FAKE_DRIVER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Every function the runtime may reach is exported and never inlined away. */
#define FD_EXPORT __attribute__((visibility("default"), noinline))

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;

/* The error codes of cuda.h the fake answers with. */
enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_IMAGE = 200,
	CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_ILLEGAL_STATE = 401,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_NOT_SUPPORTED = 801,
	CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
	CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
	CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903,
	CUDA_ERROR_UNKNOWN = 999,
};

/* Devices the fake shows: $FAKE_CUDA_DEVICES (1..FD_MAX_DEVICES), else 2. */
#define FD_MAX_DEVICES		8
/*
 * Their compute capability: 7.5 (Turing), the oldest CUDA 13 builds for and
 * what nvcc 13.0 targets by default (sm_75 cubin and compute_75 PTX).
 */
#define FD_CC_MAJOR		7
#define FD_CC_MINOR		5
/* The driver API version it reports: CUDA 13.0, what libcudart.so.13 needs. */
#define FD_DRIVER_VERSION	13000

/* A context: each device's primary one, or one made by cuCtxCreate. */
#define FD_CTX_SLOTS		64

struct fd_ctx_slot {
	void *key;
	void *value;
	void (*dtor)(void *ctx, void *key, void *value);
};

struct fd_ctx {
	uint32_t magic;			/* FD_MAGIC_CTX while alive */
	CUdevice dev;
	int primary;
	unsigned int flags;
	int refs;			/* primary: cuDevicePrimaryCtxRetain count */
	struct fd_ctx_slot slots[FD_CTX_SLOTS];	/* context-local storage */
};

#define FD_MAGIC_CTX		0x43545846u	/* "FXTC" */
#define FD_MAGIC_STREAM		0x53545846u
#define FD_MAGIC_EVENT		0x45545846u
#define FD_MAGIC_LIB		0x4c545846u
#define FD_MAGIC_FUNC		0x46545846u
#define FD_MAGIC_GRAPH		0x47545846u
#define FD_MAGIC_EXEC		0x58545846u
#define FD_MAGIC_NODE		0x4e545846u
#define FD_MAGIC_POOL		0x50545846u

struct fd_graph;

struct fd_stream {
	uint32_t magic;
	struct fd_ctx *ctx;
	unsigned int flags;
	int priority;
	uint64_t id;
	struct fd_graph *capture;	/* the graph being captured into, or NULL */
	int capture_mode;
	uint64_t capture_id;
};

/* CU_STREAM_LEGACY and CU_STREAM_PER_THREAD, the two special handles. */
#define FD_STREAM_LEGACY	((void *)0x1)
#define FD_STREAM_PER_THREAD	((void *)0x2)

/* Device 0..n-1, or -1 when dev is not one of the fake's. */
int fd_device_count(void);
int fd_valid_device(CUdevice dev);
/* The thread's current context, or NULL. */
struct fd_ctx *fd_current_ctx(void);
/* ctx itself when it is a live context; NULL otherwise. */
struct fd_ctx *fd_ctx_check(void *ctx);
/* The device's primary context (made once, lives for the process). */
struct fd_ctx *fd_primary_ctx(CUdevice dev);
/* The stream object of a handle, or NULL for the null and special streams. */
struct fd_stream *fd_stream_check(void *stream, CUresult *err);

/*
 * Adds a kernel node to the graph s is capturing, for a launch made on a
 * capturing stream; 0 or a CUresult.
 */
struct fd_func;
CUresult fd_capture_kernel(struct fd_stream *s, struct fd_func *f, const unsigned int grid[3],
			   const unsigned int block[3], unsigned int shared);

/*
 * A stream, event or context synchronisation completed: every pool gives
 * back what it holds above its release threshold (memory.c).
 */
void fd_pools_settle(void);

/* 1 when [p, p + n) lies inside one live device allocation. */
int fd_mem_range(CUdeviceptr p, size_t n);

/* Uniform 1-based ids for objects, as the driver's cuStreamGetId & co. give. */
uint64_t fd_next_id(void);

/* cuInit ran: what every other call needs first. */
int fd_initialised(void);

/*
 * The trace: with $FAKE_CUDA_TRACE=path, one line per event appended to
 * path (O_APPEND, one write per line, so threads and processes never
 * interleave within a line).  Lines:
 *   gpa NAME VERSION FLAGS SYMBOL|- RESULT   a cuGetProcAddress request
 *   table GUID NAME|-                        a cuGetExportTable request (- refused)
 *   call SYMBOL [key=value ...] = RESULT     a call into the fake
 *   unimplemented SYMBOL                     a call into a stub
 */
void fd_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Records "call SYMBOL <args> = rc" and returns rc. */
CUresult fd_ret(const char *sym, CUresult rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The answer of every function the fake does not implement. */
CUresult fd_unimplemented(const char *sym);

/* The private tables behind cuGetExportTable (dark_api.c). */
const void *fd_export_table(const unsigned char uuid[16], const char **name);
/* The integrity table's hash (integrity.c). */
void fd_integrity_hash(uint32_t version, uint64_t unix_seconds, const void *integrity_table,
		       const void *cudart_table, const void *fn_address, uint64_t out[2]);
/* Identity of device dev as the integrity hash and cuDeviceGetUuid see it. */
void fd_device_uuid(CUdevice dev, unsigned char uuid[16]);
int fd_device_pci(CUdevice dev, int *domain, int *bus, int *device);

#endif /* ZERNEL_FAKE_DRIVER_H */
