/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target: what the parser child makes of a watched process's
 * Python objects (collector/python/pycode.h), which the process controls.
 * The input after its first byte is the process's memory, from address 0:
 * its first bytes are the code object's head, whose pointers lead into
 * the rest.  The first byte picks the version's layout (3.10 to 3.12) and
 * the frame's instruction.  An answer must be what py_code_names_admit
 * admits: the collector refuses anything else.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/python/pycode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int mem = -1;
	const struct py_layout *l;
	struct py_code_query q;
	struct py_code_names n;

	if (size < 1 + PY_CODE_HEADER)
		return 0;
	if (mem < 0)
		mem = memfd_create("fuzz-pycode", MFD_CLOEXEC);
	if (mem < 0 || ftruncate(mem, 0) != 0 ||
	    pwrite(mem, data + 1, size - 1, 0) != (ssize_t)(size - 1))
		abort();
	l = py_layout_find(3, 10 + data[0] % 3);
	if (!l)
		abort();
	memset(&q, 0, sizeof(q));
	q.layout = *l;
	memcpy(q.head, data + 1, PY_CODE_HEADER);
	q.code = 0;
	/* An instruction the table is asked about: a small index, or just past the header. */
	q.instr = (data[0] >> 2) * 2 + (l->instr_kind == PY_INSTR_POINTER ? l->code_units : 0);
	if (py_code_names(mem, &q, &n) == 0 && py_code_names_admit(&n) != 0)
		abort();
	return 0;
}
