/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Function symbols of a shared library, resolved to file offsets in one
 * pass, so a library is parsed once however many uprobes it gets (libnccl
 * is hundreds of megabytes).  A parser of files other processes control:
 * the collector calls it through the parser child (parser.h).
 */
#ifndef ZERNEL_ELFSYMS_H
#define ZERNEL_ELFSYMS_H

#include <stddef.h>
#include <stdint.h>

/*
 * For each names[i], offsets[i] receives the file offset of that defined
 * function in the ELF file at path, or 0 when it has none.  Returns the
 * number found, or -errno when the file is not a readable ELF object.
 */
int elfsyms_resolve(const char *path, const char *const *names, size_t n,
		    uint64_t *offsets);
/* The same, of the file open at fd (left open). */
int elfsyms_resolve_fd(int fd, const char *const *names, size_t n, uint64_t *offsets);

#endif /* ZERNEL_ELFSYMS_H */
