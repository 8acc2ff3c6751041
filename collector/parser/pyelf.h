/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the Python finder needs of an interpreter's ELF file (python3.X or
 * libpython3.X.so): where _PyRuntime, Py_Version and PyCode_Type are
 * linked, and the address of its first load segment, to place them in a
 * process.  A parser of files other processes control: the collector
 * calls it through the parser child (parser.h).
 */
#ifndef ZERNEL_PYELF_H
#define ZERNEL_PYELF_H

#include <stdint.h>

struct pyelf_syms {
	uint64_t runtime, version, code_type;	/* link-time addresses; 0: none */
	uint64_t first_load;			/* p_vaddr of the PT_LOAD at offset 0 */
};

/*
 * The symbols of the ELF file open at fd (left open): 0, or -ENOEXEC when
 * it is not an ELF file with a load segment at offset 0.
 */
int pyelf_symbols(int fd, struct pyelf_syms *s);

#endif /* ZERNEL_PYELF_H */
