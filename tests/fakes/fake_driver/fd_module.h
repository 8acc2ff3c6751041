/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Loaded code in the fake driver: libraries, modules and their kernels and
 * functions, shared by module.c, the private tables and the launches.
 * Test code.
 */
#ifndef ZERNEL_FD_MODULE_H
#define ZERNEL_FD_MODULE_H

#include "tests/fakes/fake_driver/fake_driver.h"

#define FD_NAME_MAX	256

struct fd_lib;

/* A kernel of a library (CUkernel) and its function (CUfunction) are one. */
struct fd_func {
	uint32_t magic;			/* FD_MAGIC_FUNC */
	struct fd_lib *lib;
	struct fd_func *next;
	char name[FD_NAME_MAX];
};

/* A library (CUlibrary) and its module (CUmodule) are one too. */
struct fd_lib {
	uint32_t magic;			/* FD_MAGIC_LIB */
	const void *image;
	char kind[80];			/* "fatbinc:elf:75,ptx:75", "elf", "ptx" */
	struct fd_func *funcs;
	pthread_mutex_t lock;
};

/* __fatBinC_Wrapper_t: what nvcc registers with the runtime, around a fatbin. */
struct fatbinc_wrapper {
	uint32_t magic;			/* 0x466243b1 */
	uint32_t version;
	const void *data;
	const void *filename_or_fatbins;
};

/*
 * Accepts an image the way the driver would (a fatbin, directly or in
 * nvcc's wrapper, a cubin or PTX text) and makes a module of it;
 * CUDA_ERROR_INVALID_IMAGE otherwise, CUDA_ERROR_NO_BINARY_FOR_GPU for a
 * fatbin with nothing the fake's devices could run.
 */
CUresult fd_module_load(void **module, const void *image);
struct fd_lib *fd_lib_check(void *handle);
struct fd_func *fd_func_check(void *handle);

#endif /* ZERNEL_FD_MODULE_H */
