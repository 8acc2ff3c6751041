/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The layout of a CPython that publishes its own structure offsets:
 * 3.13 and later keep a _Py_DebugOffsets as the first member of
 * _PyRuntime, for out-of-process debuggers.  Its own shape changes with
 * each minor version, so only the versions whose shape is known here are
 * read (3.13, 3.14); later ones are refused until their shape is added.
 * Each shape is that of the version's Include/internal headers
 * (pycore_runtime.h, then pycore_debug_offsets.h), every field a
 * uint64_t, the sections named alike.  Collector-internal.
 */
#ifndef ZERNEL_PYDEBUG_H
#define ZERNEL_PYDEBUG_H

#include <stddef.h>
#include <stdint.h>

#include "collector/python/pyoffsets.h"

#define PY_DEBUG_COOKIE		"xdebugpy"

/* Sections both versions keep alike. */
struct pd_runtime { uint64_t size, finalizing, interpreters_head; };
struct pd_thread {
	uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
		 datastack_chunk, status;
};
struct pd_object_kinds {		/* pyobject to long_object, 3.13's order */
	struct { uint64_t size, ob_type; } pyobject;
	struct { uint64_t size, tp_name, tp_repr, tp_flags; } type_object;
	struct { uint64_t size, ob_item, ob_size; } tuple_object;
	struct { uint64_t size, ob_item, ob_size; } list_object;
};
struct pd_text {			/* bytes and unicode objects, then gc */
	struct { uint64_t size, ob_size, ob_sval; } bytes_object;
	struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
	struct { uint64_t size, collecting; } gc;
};
struct pd_numbers {
	struct { uint64_t size, ma_keys, ma_values; } dict_object;
	struct { uint64_t size, ob_fval; } float_object;
	struct { uint64_t size, lv_tag, ob_digit; } long_object;
};

/* 3.13's _Py_DebugOffsets, in its order: every field a uint64_t. */
struct py_debug_313 {
	char cookie[8];
	uint64_t version;		/* PY_VERSION_HEX */
	uint64_t free_threaded;
	struct pd_runtime runtime_state;
	struct {
		uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins,
			 ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
			 gil_runtime_state_locked, gil_runtime_state_holder;
	} interpreter_state;
	struct pd_thread thread_state;
	struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
			 localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
	struct pd_object_kinds objects;
	struct pd_numbers numbers;
	struct pd_text text;
};

_Static_assert(sizeof(struct py_debug_313) == 8 * 73, "3.13's _Py_DebugOffsets is 73 words");

/* 3.14's: more fields in several sections, a set section, and three more at the end. */
struct py_debug_314 {
	char cookie[8];
	uint64_t version;
	uint64_t free_threaded;
	struct pd_runtime runtime_state;
	struct {
		uint64_t size, id, next, threads_head, threads_main, gc, imports_modules, sysdict,
			 builtins, ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
			 gil_runtime_state_locked, gil_runtime_state_holder,
			 code_object_generation, tlbc_generation;
	} interpreter_state;
	struct pd_thread thread_state;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus, owner, stackpointer,
			 tlbc_index;
	} frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
			 localsplusnames, localspluskinds, co_code_adaptive, co_tlbc;
	} code_object;
	struct pd_object_kinds objects;
	struct { uint64_t size, used, table, mask; } set_object;
	struct pd_numbers numbers;
	struct pd_text text;
	struct { uint64_t size, gi_name, gi_iframe, gi_frame_state; } gen_object;
	struct { uint64_t next, prev; } llist_node;
	struct {
		uint64_t eval_breaker, remote_debugger_support, remote_debugging_enabled,
			 debugger_pending_call, debugger_script_path, debugger_script_path_size;
	} debugger_support;
};

_Static_assert(sizeof(struct py_debug_314) == 8 * 95, "3.14's _Py_DebugOffsets is 95 words");

/*
 * Fills out from the _Py_DebugOffsets at runtime (&_PyRuntime) of the
 * process whose /proc/PID/mem is mem, which Py_Version says is
 * major.minor.  0; -EPROTONOSUPPORT for a version whose offsets are not
 * read here, or a free-threaded build; -EPROTO when what the process
 * holds is not that version's _Py_DebugOffsets, or names offsets out of bounds;
 * -EIO when it cannot be read.  why receives a sentence in the error
 * cases.
 */
int pydebug_layout(int mem, uint64_t runtime, uint32_t major, uint32_t minor,
		   struct py_layout *out, char *why, size_t why_len);

/* Whether the process's _PyRuntime begins with the debug offsets' cookie. */
int pydebug_published(int mem, uint64_t runtime);

#endif /* ZERNEL_PYDEBUG_H */
