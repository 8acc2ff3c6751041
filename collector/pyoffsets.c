/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The per-version CPython layouts (pyoffsets.h).  Each row is taken from
 * that version's own headers (Include/cpython/pystate.h,
 * Include/internal/pycore_frame.h, pycore_runtime.h, pycore_interp.h,
 * cpython/code.h, cpython/unicodeobject.h) for x86-64 and arm64 (LP64);
 * tests/collector/check_pystack.c compiles offsetof() against the
 * installed interpreter's headers and compares.  3.13 and later publish
 * _Py_DebugOffsets instead; no row here reads them yet, so they are refused.
 */
#include <stddef.h>

#include "collector/pyoffsets.h"

static const struct py_layout layouts[] = {
	{
		.major = 3, .minor = 11,
		.walk = {
			.runtime_interp_head = 40,
			.interp_threads_head = 16,
			.tstate_next = 8,
			.tstate_native_tid = 160,
			.tstate_cframe = 56,
			.cframe_current_frame = 8,
			.frame_code = 32,
			.frame_previous = 48,
			.frame_prev_instr = 56,
		},
		.tstate_interp = 16,
		.object_type = 8,
		.code_filename = 112,
		.code_qualname = 128,
		.code_firstlineno = 72,
		.code_linetable = 136,
		.code_units = 184,
		.var_size = 16,
		.bytes_data = 32,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 48,
		.str_compact_data = 72,
	},
};

const struct py_layout *py_layout_find(uint32_t major, uint32_t minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major && layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

const char *py_layout_supported(void)
{
	return "3.11";
}
