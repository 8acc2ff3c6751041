/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Finds the CPython interpreter a process runs (its python3.X executable
 * or libpython3.X.so), its version, and where _PyRuntime and PyCode_Type
 * lie in that process; then checks the version's layout (from
 * collector/python/pyoffsets.h, or the interpreter's own _Py_DebugOffsets,
 * collector/python/pydebug.h) against the live interpreter before anything
 * uses it.  Reads /proc/PID/maps, the ELF file through /proc/PID/root and
 * /proc/PID/mem: root.  Reports; never attaches.
 */
#ifndef ZERNEL_PYFIND_H
#define ZERNEL_PYFIND_H

#include <limits.h>
#include <stdint.h>

#include "collector/python/pymem.h"
#include "collector/python/pyoffsets.h"

struct py_interp {
	uint32_t major, minor, micro;
	int micro_known;		/* Py_Version read (3.11 on); else minor from the file name */
	uint64_t runtime;		/* &_PyRuntime in the process */
	uint64_t code_type;		/* &PyCode_Type */
	struct py_layout layout;	/* its version's, checked (pyfind returned 0) */
	char path[PATH_MAX];		/* the file, as the process maps it */
};

/*
 * Fills pi for pid.  Returns 0 for a supported interpreter whose layout
 * matched the live process; -ENOENT when pid runs no CPython;
 * -EPROTONOSUPPORT when it runs a version without a layout (pi says
 * which); -EAGAIN when the interpreter is not initialised yet; -EPROTO
 * when the layout did not match what the process holds; other -errno.
 * why receives a sentence for the log in the error cases.
 */
int pyfind(uint32_t pid, struct py_interp *pi, char *why, size_t why_len);

#endif /* ZERNEL_PYFIND_H */
