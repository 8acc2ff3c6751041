// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fake driver's entry: cuInit, cuDriverGetVersion, cuGetProcAddress and
 * cuGetExportTable, through which NVIDIA's libcudart.so.13 finds everything
 * else.  Test code, no privilege.
 *
 * A libcuda.so.1 of the project's own on which NVIDIA's runtime runs its
 * real code paths: a program built by nvcc with -cudart shared runs over it
 * with LD_LIBRARY_PATH=<build>/tests/fakes/driver.  What follows was seen
 * with nvidia-cuda-runtime 13.0.96 and this fake's trace.
 *
 * How the runtime reaches the driver
 *   Nothing happens until the program's first runtime call.  Then the
 *   runtime dlopens libcuda.so.1, dlsyms one symbol, cuGetProcAddress_v2,
 *   and asks it for 440 names (cudart13_requests.txt, in order): first an
 *   empty name (answered CUDA_ERROR_NOT_FOUND), then 439 (name, version,
 *   flags), cuInit, cuGetProcAddress and cuGetExportTable among them.
 *   Versions run from 2000 to 13000; 74 requests carry flags 2
 *   (CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) for the per-thread
 *   variant, asked whatever stream mode the program was built with.  137
 *   answers are a suffixed symbol: 61 _v2, 1 _v3, 63 _ptsz, 11 _ptds (e.g.
 *   cuMemAlloc 3020 -> cuMemAlloc_v2, cuCtxSynchronize 13000 ->
 *   cuCtxSynchronize_v2 beside cuCtxSynchronize 2000 -> cuCtxSynchronize,
 *   cuLaunchKernel 7000 flags 2 -> cuLaunchKernel_ptsz).  It asks for
 *   nothing later unless the program calls cudaGetDriverEntryPoint*.  The
 *   runtime calls the driver only through these pointers, so each is the
 *   address of this object's exported symbol of that versioned name
 *   (procs.h; stubs.c for those not implemented): a uprobe on a symbol
 *   fires as it would on NVIDIA's driver.  The trace names each answer by
 *   dladdr(), the proof that it is exported.
 *
 * Start-up, after the requests
 *   cuGetExportTable(f8cff951-...), cuDriverGetVersion, cuInit(0), the
 *   cudart_interface and tools_hooks tables, cuModuleGetLoadingMode; per
 *   device cuDeviceGet, cudart_interface[2] (its primary context),
 *   cuDeviceGetName, cuDeviceTotalMem_v2, and 111 cuDeviceGetAttribute
 *   around a cuDeviceGetUuid; tools_hooks[2] and [6]; the tools_tls,
 *   ctx_storage, ctx_checks (slot 3 called) and integrity tables;
 *   integrity[1] with the versions 13000, 13001 and 13002.  The first call needing a device makes
 *   the primary context current (cuCtxSetCurrent, cuDevicePrimaryCtxRetain)
 *   and keeps the runtime's state in it through ctx_storage.
 *
 * The private tables (dark_api.c; layouts as the ZLUDA project documents
 * them, slot 0 the table's size in bytes unless said otherwise; every slot
 * of unknown meaning holds a stub of its own that records the call, and
 * none of those is reached)
 *   f8cff951-2146-8b4e-b9e2-fb469e7c0dd9  asked first, before cuInit; its
 *       layout is not public.  Refused (CUDA_ERROR_INVALID_VALUE), and the
 *       runtime goes on without it.
 *   6bd5fb6c-5bf4-e74a-8987-d93912fd9df9  cudart_interface, 13 slots: [2]
 *       gives a device's primary context without retaining it; [1], [6] and
 *       [8] load a module from a fatbin (implemented, not reached: this
 *       runtime loads kernels with cuLibraryLoadData); [7] takes a value and
 *       returns nothing; [12] would load the JIT compilers (nothing to do).
 *   a094798c-2e74-2e74-93f2-0800200c0a66  tools_hooks, 7 slots: [2] and [6]
 *       hand out two zeroed buffers (1024 and 14 words) that profiling tools
 *       would fill.
 *   42d85a81-23f6-cb47-8298-f6e78a3aecdc  tools_tls, 4 slots: only the size
 *       is read.
 *   c693336e-1121-df11-a8c3-68f355d89593  ctx_storage, no size slot: [0]
 *       put (ctx, key, value, destructor), [1] delete (ctx, key), [2] get
 *       (value, ctx, key); ctx NULL means the current context, a missing key
 *       CUDA_ERROR_INVALID_HANDLE.  cuDevicePrimaryCtxReset calls the
 *       destructors.
 *   263e8860-7cd2-6143-92f6-bbd5006dfa7e  ctx_checks, 4 slots: [2] checks a
 *       context and [3] a state; both answer 0, as ZLUDA found the real ones do.
 *   d4082055-bde6-704b-8d34-ba123c66e1f2  integrity, 3 slots: [1] (version,
 *       unix seconds, u64[2] out), see below.
 *
 * The integrity hash (integrity.c)
 *   For versions ending in 0 and 1 the runtime expects two fixed 128-bit
 *   answers.  For the others, an HMAC (RFC 2104) over MD2 (RFC 1319, the
 *   16-byte block size) with a fixed 16-byte key, of a 48-byte record
 *   {driver version, requested version, pid, pthread_self() truncated to
 *   32 bits, address of the cudart_interface table, of the integrity
 *   table, of its slot-1 function, the seconds passed in} followed by one
 *   28-byte record per device {uuid, PCI domain, bus, device}.  The runtime
 *   computes the same from what the driver told it and refuses a driver
 *   that differs with cudaErrorSoftwareValidityNotEstablished (103): one
 *   bit off ($FAKE_CUDA_INTEGRITY=wrong) and the program stops there.
 *
 * What the program's calls become (tests/check_fake_driver.c pins these)
 *   cudaMalloc -> cuMemAlloc_v2, cudaFree -> cuMemFree_v2, cudaMallocAsync
 *   -> cuMemAllocAsync, cudaFreeAsync -> cuMemFreeAsync, <<<>>> and
 *   cudaLaunchKernel -> cuLaunchKernel (the first launch of a kernel
 *   loads its library: cuLibraryLoadData, once for all devices, then
 *   cuLibraryGetKernel), cudaGraphLaunch -> cuGraphLaunch,
 *   cudaStreamSynchronize -> cuStreamSynchronize, cudaDeviceSynchronize ->
 *   cuCtxSynchronize_v2, cudaStreamBeginCapture -> cuStreamBeginCapture_v2,
 *   cudaGraphInstantiate -> cuGraphInstantiateWithFlags, cudaMemcpy ->
 *   cuMemcpyHtoD_v2 / cuMemcpyDtoH_v2, cudaMemset -> cuMemsetD8_v2,
 *   cudaMallocHost -> cuMemHostAlloc, cudaEventRecord -> cuEventRecord,
 *   each once.  Built with --default-stream per-thread the stream-ordered
 *   ones go to the _ptsz/_ptds variants, except cudaGraphLaunch (still
 *   cuGraphLaunch); the allocations, frees and cuCtxSynchronize_v2 have no
 *   variant.  A launch on a capturing stream is a cuLaunchKernel
 *   call too (traced captured=1).  None of zw_cudart's calls reaches
 *   cuLaunchKernelEx, and the runtime never asks for cuMemCreate or
 *   cuMemRelease.
 *
 * Devices (device.c)
 *   Tesla T4-shaped boards of compute capability 7.5, the oldest CUDA 13
 *   builds for: nvcc 13.0 embeds an sm_75 cubin and compute_75 PTX by
 *   default.  The runtime does not check the capability itself; it hands
 *   the whole fatbin, in nvcc's wrapper, to cuLibraryLoadData, and the
 *   fake, like the driver, refuses one with no image its devices could run
 *   (CUDA_ERROR_NO_BINARY_FOR_GPU; the program sees
 *   cudaErrorNoKernelImageForDevice).
 *
 * Environment
 *   FAKE_CUDA_TRACE=path      append the trace to path (format: fake_driver.h)
 *   FAKE_CUDA_DEVICES=n       n devices, 1 to 8 (default 2), a T4 each
 *   FAKE_CUDA_STRICT=1        abort at the first call the fake does not
 *                             implement, instead of CUDA_ERROR_NOT_SUPPORTED
 *   FAKE_CUDA_INTEGRITY=wrong answer the integrity check one bit off
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakes/fake_driver/fake_driver.h"

enum { MODE_ANY, MODE_LEGACY, MODE_PTDS };

/* CUdriverProcAddressQueryResult */
enum {
	CU_GET_PROC_ADDRESS_SUCCESS = 0,
	CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
	CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
};

#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM	(1ull << 1)

struct proc {
	const char *sym;
	const char *name;
	int since;
	int mode;
};

static const struct proc procs[] = {
#define FAKE_PROC(sym, name, since, mode) { #sym, #name, since, MODE_##mode },
#include "tests/fakes/fake_driver/procs.h"
#undef FAKE_PROC
};

#define N_PROCS (sizeof(procs) / sizeof(procs[0]))

static _Atomic(void *) proc_addr[N_PROCS];
static atomic_int initialised;

int fd_initialised(void)
{
	return atomic_load(&initialised);
}

FD_EXPORT CUresult cuInit(unsigned int flags)
{
	if (flags != 0)
		return fd_ret("cuInit", CUDA_ERROR_INVALID_VALUE, "flags=%u", flags);
	atomic_store(&initialised, 1);
	return fd_ret("cuInit", CUDA_SUCCESS, "flags=%u", flags);
}

FD_EXPORT CUresult cuDriverGetVersion(int *version)
{
	if (!version)
		return fd_ret("cuDriverGetVersion", CUDA_ERROR_INVALID_VALUE, NULL);
	*version = FD_DRIVER_VERSION;
	return fd_ret("cuDriverGetVersion", CUDA_SUCCESS, "version=%d", *version);
}

/*
 * The exported address of sym, looked up in this very object's dynamic
 * symbol table: what a uprobe on sym is placed on, whatever another
 * library loaded beside it exports.
 */
static void *exported(const char *sym)
{
	static void *self;
	Dl_info info;

	if (!self) {
		if (!dladdr((void *)exported, &info) || !info.dli_fname)
			return NULL;
		self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
		if (!self)
			return NULL;
	}
	return dlsym(self, sym);
}

/* The row answering name at version in the given mode, or NULL; *known when the name exists. */
static const struct proc *proc_find(const char *name, int version, int ptds, int *known,
				    size_t *idx)
{
	const struct proc *best = NULL;

	*known = 0;
	for (size_t i = 0; i < N_PROCS; i++) {
		const struct proc *p = &procs[i];

		if (strcmp(p->name, name) != 0)
			continue;
		if (p->mode != MODE_ANY && (p->mode == MODE_PTDS) != ptds)
			continue;
		*known = 1;
		if (p->since <= version && (!best || p->since > best->since)) {
			best = p;
			*idx = i;
		}
	}
	return best;
}

/*
 * Not exported: what a driver that hands out internal entry points would
 * answer.  $FAKE_CUDA_GPA_PRIVATE lists the symbols (comma separated)
 * cuGetProcAddress answers with it; calling it does nothing.
 */
static CUresult private_entry(void)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

static int gpa_private(const char *sym)
{
	const char *list = getenv("FAKE_CUDA_GPA_PRIVATE"), *hit;
	size_t n = strlen(sym);

	for (hit = list ? strstr(list, sym) : NULL; hit; hit = strstr(hit + 1, sym))
		if ((hit == list || hit[-1] == ',') && (hit[n] == '\0' || hit[n] == ','))
			return 1;
	return 0;
}

static CUresult get_proc(const char *name, void **pfn, int version, uint64_t flags, int *status)
{
	const struct proc *p = NULL;
	const char *shown = "-";
	int known = 0, st;
	size_t idx = 0;
	void *addr = NULL;
	CUresult rc;
	Dl_info info;

	if (!name || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	p = proc_find(name, version, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0,
		      &known, &idx);
	if (p) {
		addr = atomic_load(&proc_addr[idx]);
		if (!addr) {
			addr = exported(p->sym);
			atomic_store(&proc_addr[idx], addr);
		}
	}
	if (addr && gpa_private(p->sym)) {
		CUresult (*priv)(void) = private_entry;

		memcpy(&addr, &priv, sizeof(addr));
	}
	if (addr) {
		st = CU_GET_PROC_ADDRESS_SUCCESS;
		rc = CUDA_SUCCESS;
		/* The name the dynamic symbol table gives the address: the proof it is exported. */
		if (dladdr(addr, &info) && info.dli_sname && info.dli_saddr == addr)
			shown = info.dli_sname;
	} else {
		st = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
			   : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		rc = CUDA_ERROR_NOT_FOUND;
	}
	*pfn = addr;
	if (status)
		*status = st;
	fd_trace("gpa %s %d %llu %s %d", *name ? name : "\"\"", version,
		 (unsigned long long)flags, shown, rc);
	return rc;
}

FD_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
				       int *status)
{
	return get_proc(symbol, pfn, version, flags, status);
}

FD_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
	return get_proc(symbol, pfn, version, flags, NULL);
}

FD_EXPORT CUresult cuGetExportTable(const void **table, const unsigned char *uuid)
{
	const char *name = NULL;
	const void *t;

	if (!table || !uuid)
		return CUDA_ERROR_INVALID_VALUE;
	t = fd_export_table(uuid, &name);
	fd_trace("table %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x %s",
		 uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7], uuid[8],
		 uuid[9], uuid[10], uuid[11], uuid[12], uuid[13], uuid[14], uuid[15],
		 name ? name : "-");
	if (!t)
		return CUDA_ERROR_INVALID_VALUE;
	*table = t;
	return CUDA_SUCCESS;
}
