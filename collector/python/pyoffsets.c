/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The per-version CPython layouts (pyoffsets.h).  Each row is taken from
 * that version's own headers (Include/cpython/pystate.h,
 * Include/internal/pycore_frame.h or 3.10's cpython/frameobject.h,
 * pycore_runtime.h, pycore_interp.h, cpython/code.h,
 * cpython/unicodeobject.h) for x86-64 and arm64 (LP64);
 * tests/collector/check_pystack.c compiles offsetof() against the
 * installed interpreter's headers and compares.  3.13 and later publish
 * _Py_DebugOffsets instead (collector/python/pydebug.c).
 */
#include <stddef.h>

#include "collector/python/pyoffsets.h"

static const struct py_layout layouts[] = {
	{
		/*
		 * Ubuntu 22.04's interpreter: frame objects, threads named by
		 * pthread_self(), no co_qualname (co_name stands in).
		 */
		.major = 3, .minor = 10,
		.instr_kind = PY_INSTR_LASTI,
		.walk = {
			.runtime_interp_head = 32,
			.interp_threads_head = 8,
			.tstate_next = 8,
			.tstate_native_tid = 176,
			.tstate_cframe = 0,
			.cframe_current_frame = 24,
			.frame_code = 32,
			.frame_previous = 24,
			.frame_prev_instr = 96,
			.runtime_main_thread = 72,
		},
		.tstate_interp = 16,
		.object_type = 8,
		.code_filename = 104,
		.code_qualname = 112,
		.code_firstlineno = 40,
		.code_linetable = 120,
		.code_units = 0,
		.var_size = 16,
		.bytes_data = 32,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 48,
		.str_compact_data = 72,
	},
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
	{
		/* Ubuntu 24.04's and NVIDIA's NGC images' interpreter. */
		.major = 3, .minor = 12,
		.walk = {
			.runtime_interp_head = 40,
			.interp_threads_head = 72,
			.tstate_next = 8,
			.tstate_native_tid = 144,
			.tstate_cframe = 56,
			.cframe_current_frame = 0,
			.frame_code = 0,
			.frame_previous = 8,
			.frame_prev_instr = 56,
		},
		.tstate_interp = 16,
		.object_type = 8,
		.code_filename = 112,
		.code_qualname = 128,
		.code_firstlineno = 68,
		.code_linetable = 136,
		.code_units = 192,
		.var_size = 16,
		.bytes_data = 32,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 40,
		.str_compact_data = 56,
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
	return "3.10, 3.11, 3.12, 3.13 and 3.14";
}

/* A word at off lies inside size bytes. */
static int word_in(uint16_t off, size_t size)
{
	return (size_t)off + 8 <= size;
}

int py_layout_fits(const struct py_layout *l)
{
	const uint16_t frame[] = { l->walk.frame_code, l->walk.frame_previous };
	const uint16_t code[] = { l->object_type, l->code_filename, l->code_qualname,
				  l->code_firstlineno, l->code_linetable, l->code_units };

	/* The probe reads a frame as 8 words: its offsets must be word indices below 8. */
	for (size_t i = 0; i < sizeof(frame) / sizeof(frame[0]); i++)
		if (frame[i] % 8 || frame[i] >= 64)
			return 0;
	/* The instruction word too, but where it is an index it may lie beyond (read alone). */
	if (l->walk.frame_prev_instr % 8 ||
	    l->walk.frame_prev_instr >= (l->instr_kind == PY_INSTR_LASTI ? PY_FRAME_INSTR_MAX : 64))
		return 0;
	for (size_t i = 0; i < sizeof(code) / sizeof(code[0]); i++)
		if (!word_in(code[i], PY_CODE_HEADER))
			return 0;
	return word_in(l->var_size, l->bytes_data) && l->bytes_data <= PY_BYTES_HEADER &&
	       l->str_ascii_data <= l->str_compact_data &&
	       l->str_compact_data <= PY_STR_HEADER &&
	       word_in(l->str_length, l->str_ascii_data) &&
	       (size_t)l->str_state + 4 <= l->str_ascii_data;
}
