/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pydebug.h.  The shape of 3.13's _Py_DebugOffsets is that of its
 * Include/internal/pycore_runtime.h (stable across 3.13.x, and checked by
 * tests/collector/check_pystack.c against a real 3.13's headers and live
 * process).  Every offset read is bounded before it is used: the struct
 * comes from the watched process, which may hold anything.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collector/pydebug.h"
#include "collector/pyfind.h"


/*
 * PyCompactUnicodeObject is PyASCIIObject and then utf8_length and utf8,
 * two words (Include/cpython/unicodeobject.h, 3.11 to 3.13); the debug
 * offsets give only the first size.
 */
#define COMPACT_AFTER_ASCII	16

int pydebug_published(int mem, uint64_t runtime)
{
	char cookie[8];

	return pymem_read(mem, runtime, cookie, sizeof(cookie)) == 0 &&
	       memcmp(cookie, PY_DEBUG_COOKIE, sizeof(cookie)) == 0;
}

/* One offset of the layout: where it goes, its value, the size of its structure. */
struct pick {
	uint16_t *to;
	uint64_t off, size;
	const char *what;
};

/*
 * An offset must lie inside its structure, and fit the layout's 16 bits;
 * py_layout_fits then bounds those the collector reads objects by.
 */
#define STRUCT_MAX	65536

static int fill_313(const struct py_debug_313 *d, struct py_layout *l, char *why,
		    size_t why_len)
{
	uint16_t ascii = 0;
	const struct pick picks[] = {
		{ &l->walk.runtime_interp_head, d->runtime_state.interpreters_head,
		  d->runtime_state.size, "the interpreters' head" },
		{ &l->walk.interp_threads_head, d->interpreter_state.threads_head,
		  d->interpreter_state.size, "the threads' head" },
		{ &l->walk.tstate_next, d->thread_state.next, d->thread_state.size,
		  "the next thread state" },
		{ &l->walk.tstate_native_tid, d->thread_state.native_thread_id,
		  d->thread_state.size, "the native thread id" },
		{ &l->walk.cframe_current_frame, d->thread_state.current_frame,
		  d->thread_state.size, "the current frame" },
		{ &l->tstate_interp, d->thread_state.interp, d->thread_state.size,
		  "the thread's interpreter" },
		{ &l->walk.frame_code, d->frame.executable, d->frame.size, "a frame's code" },
		{ &l->walk.frame_previous, d->frame.previous, d->frame.size, "a frame's caller" },
		{ &l->walk.frame_prev_instr, d->frame.instr_ptr, d->frame.size,
		  "a frame's instruction" },
		{ &l->object_type, d->pyobject.ob_type, d->pyobject.size, "an object's type" },
		{ &l->code_filename, d->code_object.filename, d->code_object.size,
		  "a code object's file" },
		{ &l->code_qualname, d->code_object.qualname, d->code_object.size,
		  "a code object's name" },
		{ &l->code_firstlineno, d->code_object.firstlineno, d->code_object.size,
		  "a code object's first line" },
		{ &l->code_linetable, d->code_object.linetable, d->code_object.size,
		  "a code object's line table" },
		{ &l->code_units, d->code_object.co_code_adaptive, d->code_object.size,
		  "a code object's instructions" },
		{ &l->var_size, d->bytes_object.ob_size, d->bytes_object.size,
		  "a bytes object's size" },
		{ &l->bytes_data, d->bytes_object.ob_sval, d->bytes_object.size,
		  "a bytes object's data" },
		{ &l->str_length, d->unicode_object.length, d->unicode_object.size,
		  "a string's length" },
		{ &l->str_state, d->unicode_object.state, d->unicode_object.size,
		  "a string's state" },
		{ &ascii, d->unicode_object.asciiobject_size, STRUCT_MAX - COMPACT_AFTER_ASCII,
		  "a string's header" },
	};

	for (size_t i = 0; i < sizeof(picks) / sizeof(picks[0]); i++) {
		uint64_t bound = picks[i].size < STRUCT_MAX ? picks[i].size : STRUCT_MAX;

		if (picks[i].off >= bound) {
			snprintf(why, why_len, "its _Py_DebugOffsets give %s as %llu, beyond %llu",
				 picks[i].what, (unsigned long long)picks[i].off,
				 (unsigned long long)bound);
			return -EPROTO;
		}
		*picks[i].to = (uint16_t)picks[i].off;
	}
	l->walk.tstate_cframe = 0;	/* the frame pointer is in the thread state */
	l->str_ascii_data = ascii;
	l->str_compact_data = ascii + COMPACT_AFTER_ASCII;
	return 0;
}

int pydebug_layout(int mem, uint64_t runtime, uint32_t major, uint32_t minor,
		   struct py_layout *out, char *why, size_t why_len)
{
	struct py_debug_313 d;
	uint64_t want;

	memset(out, 0, sizeof(*out));
	if (major != 3 || minor != 13) {
		snprintf(why, why_len, "the _Py_DebugOffsets of CPython %u.%u are not read yet",
			 major, minor);
		return -EPROTONOSUPPORT;
	}
	if (pymem_read(mem, runtime, &d, sizeof(d)) != 0) {
		snprintf(why, why_len, "cannot read its _Py_DebugOffsets");
		return -EIO;
	}
	if (memcmp(d.cookie, PY_DEBUG_COOKIE, sizeof(d.cookie)) != 0) {
		snprintf(why, why_len, "its _PyRuntime does not begin with _Py_DebugOffsets");
		return -EPROTO;
	}
	want = (uint64_t)major << 24 | (uint64_t)minor << 16;
	if ((d.version & 0xffff0000u) != want) {
		snprintf(why, why_len, "its _Py_DebugOffsets are of version %#llx, not %u.%u",
			 (unsigned long long)d.version, major, minor);
		return -EPROTO;
	}
	if (d.free_threaded) {
		snprintf(why, why_len, "free-threaded builds are not supported for Python frames");
		return -EPROTONOSUPPORT;
	}
	out->major = major;
	out->minor = minor;
	return fill_313(&d, out, why, why_len);
}
