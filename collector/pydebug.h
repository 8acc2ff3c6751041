/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The layout of a CPython that publishes its own structure offsets:
 * 3.13 and later keep a _Py_DebugOffsets as the first member of
 * _PyRuntime, for out-of-process debuggers.  Its own shape changes with
 * each minor version, so only the versions whose shape is known here are
 * read (3.13); later ones are refused until their shape is added.
 * Collector-internal.
 */
#ifndef ZERNEL_PYDEBUG_H
#define ZERNEL_PYDEBUG_H

#include <stddef.h>
#include <stdint.h>

#include "collector/pyoffsets.h"

#define PY_DEBUG_COOKIE		"xdebugpy"

/* 3.13's _Py_DebugOffsets, in its order: every field a uint64_t. */
struct py_debug_313 {
	char cookie[8];
	uint64_t version;		/* PY_VERSION_HEX */
	uint64_t free_threaded;
	struct { uint64_t size, finalizing, interpreters_head; } runtime_state;
	struct {
		uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins,
			 ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
			 gil_runtime_state_locked, gil_runtime_state_holder;
	} interpreter_state;
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
			 datastack_chunk, status;
	} thread_state;
	struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
			 localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
	struct { uint64_t size, ob_type; } pyobject;
	struct { uint64_t size, tp_name, tp_repr, tp_flags; } type_object;
	struct { uint64_t size, ob_item, ob_size; } tuple_object;
	struct { uint64_t size, ob_item, ob_size; } list_object;
	struct { uint64_t size, ma_keys, ma_values; } dict_object;
	struct { uint64_t size, ob_fval; } float_object;
	struct { uint64_t size, lv_tag, ob_digit; } long_object;
	struct { uint64_t size, ob_size, ob_sval; } bytes_object;
	struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
	struct { uint64_t size, collecting; } gc;
};

_Static_assert(sizeof(struct py_debug_313) == 8 * 73, "3.13's _Py_DebugOffsets is 73 words");

/*
 * Fills out from the _Py_DebugOffsets at runtime (&_PyRuntime) of the
 * process whose /proc/PID/mem is mem, which Py_Version says is
 * major.minor.  0; -EPROTONOSUPPORT for a version whose offsets are not
 * read here, or a free-threaded build; -EPROTO when what the process
 * holds is not a 3.13 _Py_DebugOffsets, or names offsets out of bounds;
 * -EIO when it cannot be read.  why receives a sentence in the error
 * cases.
 */
int pydebug_layout(int mem, uint64_t runtime, uint32_t major, uint32_t minor,
		   struct py_layout *out, char *why, size_t why_len);

/* Whether the process's _PyRuntime begins with the debug offsets' cookie. */
int pydebug_published(int mem, uint64_t runtime);

#endif /* ZERNEL_PYDEBUG_H */
