// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fake driver's entry: cuInit, cuDriverGetVersion, cuGetProcAddress and
 * cuGetExportTable, through which NVIDIA's libcudart.so.13 finds everything
 * else.  Test code, no privilege.
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
static const struct proc *proc_find(const char *name, int version, int ptds, int *known, size_t *idx)
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
