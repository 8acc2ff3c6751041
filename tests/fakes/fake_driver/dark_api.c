// SPDX-License-Identifier: BSD-2-Clause
/*
 * The private tables cuGetExportTable hands NVIDIA's runtime, looked up by
 * UUID.  Their layouts are undocumented; those here follow what the ZLUDA
 * project found and what libcudart.so.13 was seen to call.  A slot whose
 * meaning is unknown holds a stub of its own that records the call, so a
 * trace names the exact slot the runtime reached.  Test code.
 */
#include <string.h>

#include "tests/fakes/fake_driver/fake_driver.h"
#include "tests/fakes/fake_driver/fd_module.h"

/* Slot 0 of most tables: the table's size in bytes, which the runtime checks. */
#define SIZE_OF(table) ((const void *)sizeof(table))

#define DARK_STUB(tab, i)						\
	static CUresult dark_##tab##_##i(void)				\
	{								\
		return fd_unimplemented("dark:" #tab "[" #i "]");	\
	}

/* -------------------------------------------------------------------------
 * CUDART_INTERFACE {6bd5fb6c-5bf4-e74a-8987-d93912fd9df9}: module loading
 * from the fatbins nvcc embeds, and the primary context without retaining it.
 */

static CUresult cudart_get_module_from_cubin(void **module, const struct fatbinc_wrapper *w)
{
	if (!module || !w)
		return fd_ret("dark:cudart_interface[1]", CUDA_ERROR_INVALID_VALUE, NULL);
	return fd_ret("dark:cudart_interface[1]", fd_module_load(module, w->data),
		      "image=%p module=%p", w->data, *module);
}

static CUresult cudart_primary_ctx(void **pctx, CUdevice dev)
{
	struct fd_ctx *c;

	if (!pctx)
		return fd_ret("dark:cudart_interface[2]", CUDA_ERROR_INVALID_VALUE, NULL);
	c = fd_primary_ctx(dev);
	if (!c)
		return fd_ret("dark:cudart_interface[2]", CUDA_ERROR_INVALID_DEVICE, "dev=%d", dev);
	*pctx = c;
	return fd_ret("dark:cudart_interface[2]", CUDA_SUCCESS, "dev=%d ctx=%p", dev, (void *)c);
}

static CUresult cudart_get_module_from_cubin_ext1(void **module, const struct fatbinc_wrapper *w,
						  void *arg3, void *arg4, uint32_t arg5)
{
	(void)arg3; (void)arg4; (void)arg5;
	if (!module || !w)
		return fd_ret("dark:cudart_interface[6]", CUDA_ERROR_INVALID_VALUE, NULL);
	return fd_ret("dark:cudart_interface[6]", fd_module_load(module, w->data),
		      "image=%p module=%p", w->data, *module);
}

static void cudart_interface_fn7(uintptr_t arg)
{
	fd_ret("dark:cudart_interface[7]", CUDA_SUCCESS, "arg=%#lx", (unsigned long)arg);
}

static CUresult cudart_get_module_from_cubin_ext2(const void *fatbin, void **module, void *arg3,
						  void *arg4, uint32_t arg5)
{
	(void)arg3; (void)arg4; (void)arg5;
	if (!module || !fatbin)
		return fd_ret("dark:cudart_interface[8]", CUDA_ERROR_INVALID_VALUE, NULL);
	return fd_ret("dark:cudart_interface[8]", fd_module_load(module, fatbin),
		      "image=%p module=%p", fatbin, *module);
}

/* The real one loads the PTX compiler and the like: nothing to load here. */
static CUresult cudart_load_compilers(void)
{
	return fd_ret("dark:cudart_interface[12]", CUDA_SUCCESS, NULL);
}

DARK_STUB(cudart_interface, 3)
DARK_STUB(cudart_interface, 4)
DARK_STUB(cudart_interface, 5)
DARK_STUB(cudart_interface, 9)
DARK_STUB(cudart_interface, 10)
DARK_STUB(cudart_interface, 11)

static const void *cudart_interface[13] = {
	SIZE_OF(cudart_interface),
	(const void *)cudart_get_module_from_cubin,
	(const void *)cudart_primary_ctx,
	(const void *)dark_cudart_interface_3,
	(const void *)dark_cudart_interface_4,
	(const void *)dark_cudart_interface_5,
	(const void *)cudart_get_module_from_cubin_ext1,
	(const void *)cudart_interface_fn7,
	(const void *)cudart_get_module_from_cubin_ext2,
	(const void *)dark_cudart_interface_9,
	(const void *)dark_cudart_interface_10,
	(const void *)dark_cudart_interface_11,
	(const void *)cudart_load_compilers,
};

/* -------------------------------------------------------------------------
 * TOOLS_RUNTIME_CALLBACK_HOOKS {a094798c-2e74-2e74-93f2-0800200c0a66}: two
 * buffers the runtime and the profiling tools share.  The runtime reads
 * them; zeroes mean no tool is attached.
 */

static uint32_t hooks_buffer1[1024];
static uint32_t hooks_buffer2[14];

static void hooks_get_buffer1(void **ptr, size_t *size)
{
	*ptr = hooks_buffer1;
	*size = sizeof(hooks_buffer1) / sizeof(hooks_buffer1[0]);
	fd_ret("dark:tools_hooks[2]", CUDA_SUCCESS, NULL);
}

static void hooks_get_buffer2(void **ptr, size_t *size)
{
	*ptr = hooks_buffer2;
	*size = sizeof(hooks_buffer2) / sizeof(hooks_buffer2[0]);
	fd_ret("dark:tools_hooks[6]", CUDA_SUCCESS, NULL);
}

DARK_STUB(tools_hooks, 1)
DARK_STUB(tools_hooks, 3)
DARK_STUB(tools_hooks, 4)
DARK_STUB(tools_hooks, 5)

static const void *tools_hooks[7] = {
	SIZE_OF(tools_hooks),
	(const void *)dark_tools_hooks_1,
	(const void *)hooks_get_buffer1,
	(const void *)dark_tools_hooks_3,
	(const void *)dark_tools_hooks_4,
	(const void *)dark_tools_hooks_5,
	(const void *)hooks_get_buffer2,
};

/* -------------------------------------------------------------------------
 * TOOLS_TLS {42d85a81-23f6-cb47-8298-f6e78a3aecdc}: only its size is read.
 */

DARK_STUB(tools_tls, 1)
DARK_STUB(tools_tls, 2)
DARK_STUB(tools_tls, 3)

static const void *tools_tls[4] = {
	SIZE_OF(tools_tls),
	(const void *)dark_tools_tls_1,
	(const void *)dark_tools_tls_2,
	(const void *)dark_tools_tls_3,
};

/* -------------------------------------------------------------------------
 * CONTEXT_LOCAL_STORAGE_INTERFACE_V0301 {c693336e-1121-df11-a8c3-68f355d89593}:
 * the runtime keeps its per-context state under a key in the driver's
 * context.  No size slot: the first entry is already a function.
 */

typedef void (*cls_dtor)(void *ctx, void *key, void *value);

static struct fd_ctx *cls_ctx(void *ctx)
{
	return ctx ? fd_ctx_check(ctx) : fd_current_ctx();
}

static CUresult cls_put(void *ctx, void *key, void *value, cls_dtor dtor)
{
	struct fd_ctx *c = cls_ctx(ctx);
	struct fd_ctx_slot *free_slot = NULL;

	if (!c)
		return fd_ret("dark:ctx_storage[0]", CUDA_ERROR_INVALID_CONTEXT, "ctx=%p", ctx);
	for (int i = 0; i < FD_CTX_SLOTS; i++) {
		if (c->slots[i].key == key) {
			free_slot = &c->slots[i];
			break;
		}
		if (!free_slot && !c->slots[i].key)
			free_slot = &c->slots[i];
	}
	if (!free_slot)
		return fd_ret("dark:ctx_storage[0]", CUDA_ERROR_OUT_OF_MEMORY, "ctx=%p", (void *)c);
	free_slot->key = key;
	free_slot->value = value;
	free_slot->dtor = dtor;
	return fd_ret("dark:ctx_storage[0]", CUDA_SUCCESS, "ctx=%p key=%p", (void *)c, key);
}

static CUresult cls_delete(void *ctx, void *key)
{
	struct fd_ctx *c = cls_ctx(ctx);

	if (!c)
		return fd_ret("dark:ctx_storage[1]", CUDA_ERROR_INVALID_CONTEXT, "ctx=%p", ctx);
	for (int i = 0; i < FD_CTX_SLOTS; i++)
		if (c->slots[i].key == key)
			memset(&c->slots[i], 0, sizeof(c->slots[i]));
	return fd_ret("dark:ctx_storage[1]", CUDA_SUCCESS, "ctx=%p key=%p", (void *)c, key);
}

static CUresult cls_get(void **value, void *ctx, void *key)
{
	struct fd_ctx *c = cls_ctx(ctx);

	if (!c || !value)
		return fd_ret("dark:ctx_storage[2]", CUDA_ERROR_INVALID_CONTEXT, "ctx=%p", ctx);
	for (int i = 0; i < FD_CTX_SLOTS; i++) {
		if (c->slots[i].key == key) {
			*value = c->slots[i].value;
			return fd_ret("dark:ctx_storage[2]", CUDA_SUCCESS, "ctx=%p key=%p",
				      (void *)c, key);
		}
	}
	/* Not there yet: the runtime then makes its state and puts it. */
	return fd_ret("dark:ctx_storage[2]", CUDA_ERROR_INVALID_HANDLE, "ctx=%p key=%p", (void *)c,
		      key);
}

DARK_STUB(ctx_storage, 3)

static const void *ctx_storage[4] = {
	(const void *)cls_put,
	(const void *)cls_delete,
	(const void *)cls_get,
	(const void *)dark_ctx_storage_3,
};

/* -------------------------------------------------------------------------
 * CONTEXT_CHECKS {263e8860-7cd2-6143-92f6-bbd5006dfa7e}.
 */

static CUresult ctx_check(void *ctx, uint32_t *result1, const void **result2)
{
	(void)result2;
	if (result1)
		*result1 = 0;
	return fd_ret("dark:ctx_checks[2]", CUDA_SUCCESS, "ctx=%p", ctx);
}

static uint32_t ctx_check_fn3(void)
{
	fd_ret("dark:ctx_checks[3]", CUDA_SUCCESS, NULL);
	return 0;
}

DARK_STUB(ctx_checks, 1)

static const void *ctx_checks[4] = {
	SIZE_OF(ctx_checks),
	(const void *)dark_ctx_checks_1,
	(const void *)ctx_check,
	(const void *)ctx_check_fn3,
};

/* -------------------------------------------------------------------------
 * INTEGRITY_CHECK {d4082055-bde6-704b-8d34-ba123c66e1f2}: the runtime checks
 * it talks to a genuine driver by a keyed hash over this process, these
 * tables and the devices (integrity.c).
 */

static const void *integrity[3];

static CUresult integrity_check(uint32_t version, uint64_t unix_seconds, uint64_t result[2])
{
	if (!result)
		return fd_ret("dark:integrity[1]", CUDA_ERROR_INVALID_VALUE, NULL);
	fd_integrity_hash(version, unix_seconds, integrity, cudart_interface, integrity[1], result);
	return fd_ret("dark:integrity[1]", CUDA_SUCCESS, "version=%u seconds=%llu", version,
		      (unsigned long long)unix_seconds);
}

DARK_STUB(integrity, 2)

static const void *integrity[3] = {
	SIZE_OF(integrity),
	(const void *)integrity_check,
	(const void *)dark_integrity_2,
};

/* ------------------------------------------------------------------------- */

struct export_table {
	const char *name;
	unsigned char uuid[16];
	const void *table;
};

/*
 * f8cff951-2146-8b4e-b9e2-fb469e7c0dd9, which the runtime asks for first, is
 * not here: its layout is not public, and refused, the runtime goes on.
 */
static const struct export_table tables[] = {
	{ "cudart_interface", { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
				0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 },
	  cudart_interface },
	{ "tools_hooks", { 0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74,
			   0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66 }, tools_hooks },
	{ "tools_tls", { 0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
			 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc }, tools_tls },
	{ "ctx_storage", { 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11,
			   0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 }, ctx_storage },
	{ "ctx_checks", { 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43,
			  0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e }, ctx_checks },
	{ "integrity", { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
			 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 }, integrity },
};

const void *fd_export_table(const unsigned char uuid[16], const char **name)
{
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		if (memcmp(tables[i].uuid, uuid, 16) == 0) {
			*name = tables[i].name;
			return tables[i].table;
		}
	}
	return NULL;
}
