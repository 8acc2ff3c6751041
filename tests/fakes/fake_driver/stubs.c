// SPDX-License-Identifier: BSD-2-Clause
/*
 * A weak exported stub for every function in procs.h.  The fake's own
 * implementations (strong symbols in the other files) replace them at link
 * time; what is left records the call and fails with
 * CUDA_ERROR_NOT_SUPPORTED.  So every address cuGetProcAddress hands out is
 * an exported symbol of the versioned name, as with NVIDIA's driver, and a
 * uprobe on any of them sees the calls the runtime makes.  Test code.
 */
#include "tests/fakes/fake_driver/fake_driver.h"

/*
 * The arguments are never read, so no prototype is needed; the callers'
 * prototypes are the driver API's, and the x86-64 and AArch64 calling
 * conventions let a callee ignore what it was passed.
 */
#define FAKE_PROC(sym, name, since, mode)					\
	__attribute__((weak)) FD_EXPORT CUresult sym(void);			\
	__attribute__((weak)) FD_EXPORT CUresult sym(void) { return fd_unimplemented(#sym); }
#include "tests/fakes/fake_driver/procs.h"
#undef FAKE_PROC
