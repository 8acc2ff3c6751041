// SPDX-License-Identifier: BSD-2-Clause
/*
 * Libraries, modules, kernels and functions of the fake driver.  Images
 * are checked for what they claim to be (fatbin, cubin or PTX) but never
 * compiled: a kernel is a name, and launching it does nothing.  Test code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakes/fake_driver/fd_module.h"

#define FATBIN_MAGIC		0xba55ed50u	/* a fatbin's header */
#define FATBINC_MAGIC		0x466243b1u	/* __fatBinC_Wrapper_t */
#define FATBIN_MAX		(1ull << 30)

/* A fatbin: this header, then images, each a header and its payload. */
struct fatbin_header {
	uint32_t magic;
	uint16_t version;
	uint16_t header_size;
	uint64_t fat_size;		/* of the images after the header */
};

struct fatbin_image {
	uint16_t kind;			/* 1 PTX, 2 ELF (cubin) */
	uint16_t version;
	uint32_t header_size;
	uint32_t payload_size;
	uint32_t unknown[4];
	uint32_t sm;			/* 75 for sm_75 / compute_75 */
};

/*
 * Whether the device can run one of the images: a cubin for sm_XY runs on
 * compute capability X.Z for Z >= Y, PTX for compute_XY is compiled for
 * any X.Y or newer.  desc gets the images, e.g. "elf:75,ptx:75".
 */
static int fatbin_runs(const struct fatbin_header *h, char *desc, size_t len)
{
	const int cc = FD_CC_MAJOR * 10 + FD_CC_MINOR;
	const unsigned char *p, *end;
	int runs = 0;
	size_t used = 0;

	desc[0] = '\0';
	if (h->header_size < sizeof(*h) || h->fat_size > FATBIN_MAX)
		return 0;
	p = (const unsigned char *)h + h->header_size;
	end = p + h->fat_size;
	while (p + sizeof(struct fatbin_image) <= end) {
		struct fatbin_image im;

		memcpy(&im, p, sizeof(im));
		if (im.header_size < sizeof(im) || (uint64_t)im.header_size + im.payload_size >
						      (uint64_t)(end - p))
			break;
		if (im.kind == 2 && im.sm / 10 == FD_CC_MAJOR && (int)im.sm <= cc)
			runs = 1;
		if (im.kind == 1 && (int)im.sm <= cc)
			runs = 1;
		if (used < len)
			used += (size_t)snprintf(desc + used, len - used, "%s%s:%u",
						 used ? "," : "",
						 im.kind == 1 ? "ptx" : im.kind == 2 ? "elf" : "?",
						 im.sm);
		p += im.header_size + im.payload_size;
	}
	return runs;
}

CUresult fd_module_load(void **module, const void *image)
{
	const struct fatbin_header *fatbin = NULL;
	const unsigned char *p = image;
	const char *kind = NULL;
	char images[64] = "";
	struct fd_lib *l;
	uint32_t magic;

	if (!module || !image)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&magic, p, sizeof(magic));
	if (magic == FATBINC_MAGIC) {
		kind = "fatbinc";
		fatbin = ((const struct fatbinc_wrapper *)image)->data;
	} else if (magic == FATBIN_MAGIC) {
		kind = "fatbin";
		fatbin = image;
	} else if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') {
		kind = "elf";
	} else if (strstr((const char *)p, ".version") && strstr((const char *)p, ".target")) {
		kind = "ptx";	/* text naming its version and target */
	}
	if (!kind || (fatbin && fatbin->magic != FATBIN_MAGIC))
		return CUDA_ERROR_INVALID_IMAGE;
	/* The driver picks the image for the device: none fits, no module. */
	if (fatbin && !fatbin_runs(fatbin, images, sizeof(images)))
		return CUDA_ERROR_NO_BINARY_FOR_GPU;
	l = calloc(1, sizeof(*l));
	if (!l)
		return CUDA_ERROR_OUT_OF_MEMORY;
	l->magic = FD_MAGIC_LIB;
	l->image = image;
	snprintf(l->kind, sizeof(l->kind), "%s%s%s", kind, images[0] ? ":" : "", images);
	pthread_mutex_init(&l->lock, NULL);
	*module = l;
	return CUDA_SUCCESS;
}

struct fd_lib *fd_lib_check(void *handle)
{
	struct fd_lib *l = handle;

	return l && l->magic == FD_MAGIC_LIB ? l : NULL;
}

struct fd_func *fd_func_check(void *handle)
{
	struct fd_func *f = handle;

	return f && f->magic == FD_MAGIC_FUNC ? f : NULL;
}

/* The kernel of that name, made on first request: any name is there. */
static struct fd_func *lib_func(struct fd_lib *l, const char *name)
{
	struct fd_func *f;

	pthread_mutex_lock(&l->lock);
	for (f = l->funcs; f; f = f->next)
		if (strcmp(f->name, name) == 0)
			break;
	if (!f && (f = calloc(1, sizeof(*f))) != NULL) {
		f->magic = FD_MAGIC_FUNC;
		f->lib = l;
		snprintf(f->name, sizeof(f->name), "%s", name);
		f->next = l->funcs;
		l->funcs = f;
	}
	pthread_mutex_unlock(&l->lock);
	return f;
}

/*
 * The objects stay allocated, marked dead: a stale handle then reads as
 * dead instead of as a newer object at the same address.
 */
static void lib_unload(struct fd_lib *l)
{
	pthread_mutex_lock(&l->lock);
	for (struct fd_func *f = l->funcs; f; f = f->next)
		f->magic = 0;
	l->magic = 0;
	pthread_mutex_unlock(&l->lock);
}

FD_EXPORT CUresult cuLibraryLoadData(void **lib, const void *code, void *jit_options,
				     void **jit_values, unsigned int n_jit, void *lib_options,
				     void **lib_values, unsigned int n_lib)
{
	CUresult rc;

	(void)jit_options; (void)jit_values; (void)lib_options; (void)lib_values;
	rc = fd_module_load(lib, code);
	return fd_ret("cuLibraryLoadData", rc,
		      "image=%p kind=%s jit_options=%u lib_options=%u lib=%p", code, rc == CUDA_SUCCESS ? ((struct fd_lib *)*lib)->kind : "-", n_jit, n_lib,
		      rc == CUDA_SUCCESS ? *lib : NULL);
}

FD_EXPORT CUresult cuLibraryUnload(void *lib)
{
	struct fd_lib *l = fd_lib_check(lib);

	if (!l)
		return fd_ret("cuLibraryUnload", CUDA_ERROR_INVALID_HANDLE, "lib=%p", lib);
	lib_unload(l);
	return fd_ret("cuLibraryUnload", CUDA_SUCCESS, "lib=%p", lib);
}

FD_EXPORT CUresult cuLibraryGetKernel(void **kernel, void *lib, const char *name)
{
	struct fd_lib *l = fd_lib_check(lib);
	struct fd_func *f;

	if (!kernel || !name)
		return fd_ret("cuLibraryGetKernel", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!l)
		return fd_ret("cuLibraryGetKernel", CUDA_ERROR_INVALID_HANDLE, "lib=%p", lib);
	f = lib_func(l, name);
	if (!f)
		return fd_ret("cuLibraryGetKernel", CUDA_ERROR_OUT_OF_MEMORY, NULL);
	*kernel = f;
	return fd_ret("cuLibraryGetKernel", CUDA_SUCCESS, "lib=%p name=%s kernel=%p", lib, name,
		      (void *)f);
}

FD_EXPORT CUresult cuLibraryGetModule(void **module, void *lib)
{
	if (!module || !fd_lib_check(lib))
		return fd_ret("cuLibraryGetModule", CUDA_ERROR_INVALID_HANDLE, "lib=%p", lib);
	*module = lib;
	return fd_ret("cuLibraryGetModule", CUDA_SUCCESS, "lib=%p", lib);
}

FD_EXPORT CUresult cuKernelGetFunction(void **func, void *kernel)
{
	if (!func || !fd_func_check(kernel))
		return fd_ret("cuKernelGetFunction", CUDA_ERROR_INVALID_HANDLE, "kernel=%p",
			      kernel);
	*func = kernel;
	return fd_ret("cuKernelGetFunction", CUDA_SUCCESS, "kernel=%p", kernel);
}

FD_EXPORT CUresult cuKernelGetName(const char **name, void *kernel)
{
	struct fd_func *f = fd_func_check(kernel);

	if (!name || !f)
		return fd_ret("cuKernelGetName", CUDA_ERROR_INVALID_HANDLE, "kernel=%p", kernel);
	*name = f->name;
	return fd_ret("cuKernelGetName", CUDA_SUCCESS, "kernel=%p", kernel);
}

FD_EXPORT CUresult cuModuleLoadData(void **module, const void *image)
{
	CUresult rc = fd_module_load(module, image);

	return fd_ret("cuModuleLoadData", rc, "image=%p", image);
}

FD_EXPORT CUresult cuModuleLoadFatBinary(void **module, const void *image)
{
	CUresult rc = fd_module_load(module, image);

	return fd_ret("cuModuleLoadFatBinary", rc, "image=%p", image);
}

FD_EXPORT CUresult cuModuleUnload(void *module)
{
	struct fd_lib *l = fd_lib_check(module);

	if (!l)
		return fd_ret("cuModuleUnload", CUDA_ERROR_INVALID_HANDLE, "module=%p", module);
	lib_unload(l);
	return fd_ret("cuModuleUnload", CUDA_SUCCESS, "module=%p", module);
}

FD_EXPORT CUresult cuModuleGetFunction(void **func, void *module, const char *name)
{
	struct fd_lib *l = fd_lib_check(module);
	struct fd_func *f;

	if (!func || !name)
		return fd_ret("cuModuleGetFunction", CUDA_ERROR_INVALID_VALUE, NULL);
	if (!l)
		return fd_ret("cuModuleGetFunction", CUDA_ERROR_INVALID_HANDLE, "module=%p",
			      module);
	f = lib_func(l, name);
	if (!f)
		return fd_ret("cuModuleGetFunction", CUDA_ERROR_OUT_OF_MEMORY, NULL);
	*func = f;
	return fd_ret("cuModuleGetFunction", CUDA_SUCCESS, "module=%p name=%s func=%p", module,
		      name, (void *)f);
}

FD_EXPORT CUresult cuModuleGetLoadingMode(int *mode)
{
	if (!mode)
		return fd_ret("cuModuleGetLoadingMode", CUDA_ERROR_INVALID_VALUE, NULL);
	*mode = 2;	/* CU_MODULE_LAZY_LOADING, CUDA 12's default */
	return fd_ret("cuModuleGetLoadingMode", CUDA_SUCCESS, "mode=%d", *mode);
}

/* CUfunction_attribute values of a small kernel on a T4. */
static CUresult func_attr(int *value, int attr)
{
	switch (attr) {
	case 0: *value = 1024; break;	/* MAX_THREADS_PER_BLOCK */
	case 1: *value = 0; break;	/* SHARED_SIZE_BYTES */
	case 2: *value = 0; break;	/* CONST_SIZE_BYTES */
	case 3: *value = 0; break;	/* LOCAL_SIZE_BYTES */
	case 4: *value = 16; break;	/* NUM_REGS */
	case 5: *value = 75; break;	/* PTX_VERSION */
	case 6: *value = 75; break;	/* BINARY_VERSION */
	case 7: *value = 0; break;	/* CACHE_MODE_CA */
	case 8: *value = 49152; break;	/* MAX_DYNAMIC_SHARED_SIZE_BYTES */
	case 9: *value = -1; break;	/* PREFERRED_SHARED_MEMORY_CARVEOUT */
	default: *value = 0; break;	/* cluster attributes: none on Turing */
	}
	return attr >= 0 && attr <= 16 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FD_EXPORT CUresult cuFuncGetAttribute(int *value, int attr, void *func)
{
	CUresult rc;

	if (!value || !fd_func_check(func))
		return fd_ret("cuFuncGetAttribute", CUDA_ERROR_INVALID_HANDLE, "func=%p", func);
	rc = func_attr(value, attr);
	return fd_ret("cuFuncGetAttribute", rc, "attr=%d func=%p value=%d", attr, func, *value);
}

FD_EXPORT CUresult cuKernelGetAttribute(int *value, int attr, void *kernel, CUdevice dev)
{
	CUresult rc;

	if (!value || !fd_func_check(kernel))
		return fd_ret("cuKernelGetAttribute", CUDA_ERROR_INVALID_HANDLE, "kernel=%p",
			      kernel);
	rc = func_attr(value, attr);
	return fd_ret("cuKernelGetAttribute", rc, "attr=%d kernel=%p dev=%d value=%d", attr, kernel,
		      dev, *value);
}

FD_EXPORT CUresult cuFuncSetAttribute(void *func, int attr, int value)
{
	CUresult rc = fd_func_check(func) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;

	return fd_ret("cuFuncSetAttribute", rc, "func=%p attr=%d value=%d", func, attr, value);
}

FD_EXPORT CUresult cuKernelSetAttribute(int attr, int value, void *kernel, CUdevice dev)
{
	CUresult rc = fd_func_check(kernel) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;

	return fd_ret("cuKernelSetAttribute", rc, "attr=%d value=%d kernel=%p dev=%d", attr, value,
		      kernel, dev);
}

FD_EXPORT CUresult cuFuncGetName(const char **name, void *func)
{
	struct fd_func *f = fd_func_check(func);

	if (!name || !f)
		return fd_ret("cuFuncGetName", CUDA_ERROR_INVALID_HANDLE, "func=%p", func);
	*name = f->name;
	return fd_ret("cuFuncGetName", CUDA_SUCCESS, "func=%p", func);
}
