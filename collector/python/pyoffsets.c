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

/*
 * The walk of the BPF program: _PyRuntimeState.interpreters.head,
 * PyInterpreterState.threads.head, PyThreadState's next, native_thread_id
 * and cframe, _PyCFrame.current_frame, then the frame's code, previous
 * and instruction word (3.10: PyFrameObject's f_code, f_back, f_lasti).
 */
#define WALK(interp_head, threads_head, next, native_tid, cframe, current_frame, code,	\
	     previous, prev_instr)							\
	.walk = { .runtime_interp_head = interp_head, .interp_threads_head = threads_head, \
		  .tstate_next = next, .tstate_native_tid = native_tid,			\
		  .tstate_cframe = cframe, .cframe_current_frame = current_frame,	\
		  .frame_code = code, .frame_previous = previous,			\
		  .frame_prev_instr = prev_instr }

/*
 * PyThreadState.interp, and PyCodeObject's co_filename, co_qualname,
 * co_firstlineno, co_linetable and co_code_adaptive.
 */
#define CODE(interp, filename, qualname, firstlineno, linetable, units)		\
	.tstate_interp = interp, .code_filename = filename, .code_qualname = qualname,	\
	.code_firstlineno = firstlineno, .code_linetable = linetable, .code_units = units

/* PyObject.ob_type, PyVarObject.ob_size, PyBytesObject.ob_sval: alike in all. */
#define OBJECTS		.object_type = 8, .var_size = 16, .bytes_data = 32

/* PyASCIIObject and PyCompactUnicodeObject: with wstr (to 3.11) and without. */
#define STR_WITH_WSTR	.str_length = 16, .str_state = 32, .str_ascii_data = 48, \
			.str_compact_data = 72
#define STR_NO_WSTR	.str_length = 16, .str_state = 32, .str_ascii_data = 40, \
			.str_compact_data = 56

static const struct py_layout layouts[] = {
	/*
	 * Ubuntu 22.04's interpreter: frame objects, threads named by
	 * pthread_self() (the main one's kept in _PyRuntimeState), no
	 * co_qualname (co_name stands in), instructions counted by f_lasti.
	 */
	{ .major = 3, .minor = 10, .instr_kind = PY_INSTR_LASTI,
	  WALK(32, 8, 8, 176, 0, 24, 32, 24, 96), .walk.runtime_main_thread = 72,
	  CODE(16, 104, 112, 40, 120, 0), OBJECTS, STR_WITH_WSTR },
	/* Debian 12's. */
	{ .major = 3, .minor = 11,
	  WALK(40, 16, 8, 160, 56, 8, 32, 48, 56), CODE(16, 112, 128, 72, 136, 184),
	  OBJECTS, STR_WITH_WSTR },
	/* Ubuntu 24.04's and NVIDIA's NGC images'. */
	{ .major = 3, .minor = 12,
	  WALK(40, 72, 8, 144, 56, 0, 0, 8, 56), CODE(16, 112, 128, 68, 136, 192),
	  OBJECTS, STR_NO_WSTR },
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
