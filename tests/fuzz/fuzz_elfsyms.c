/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: the symbol tables of a library file, which a hostile
 * container can put under /proc/PID/root, as the parser child reads them:
 * a library's functions (elfsyms) and an interpreter's runtime symbols
 * (pyelf).  The bytes go to an in-memory file, opened by path as a real
 * library is.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/parser/elfsyms.h"
#include "collector/parser/pyelf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {
		"cuLaunchKernel", "cuMemAlloc_v2", "ncclAllReduce", "cudaMalloc", "a",
	};
	static int fd = -1;
	struct pyelf_syms py;
	uint64_t off[5];
	char path[64];
	int n;

	if (fd < 0)
		fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = elfsyms_resolve(path, names, 5, off);
	if (n > 5)
		abort();
	n = pyelf_symbols(fd, &py);
	if (n > 0 || (n < 0 && (py.runtime || py.version || py.code_type)))
		abort();
	return 0;
}
