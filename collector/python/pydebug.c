/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pydebug.h.  A version's _Py_DebugOffsets is read whole, and the fields
 * the layout takes copied into one shape (struct fields) that the rest
 * reads; each shape is checked by tests/collector/check_pystack.c against
 * a real interpreter's headers and live process.  Every offset read is
 * bounded before it is used: the struct comes from the watched process,
 * which may hold anything.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collector/python/pydebug.h"
#include "collector/python/pymem.h"


/*
 * PyCompactUnicodeObject is PyASCIIObject and then utf8_length and utf8,
 * two words (Include/cpython/unicodeobject.h, 3.11 to 3.14); the debug
 * offsets give only the first size.
 */
#define COMPACT_AFTER_ASCII	16

/*
 * 3.14 keeps a frame's code object as a _PyStackRef, a pointer with tag
 * bits in its low two (Py_TAG_BITS of Include/internal/pycore_stackref.h,
 * builds with the GIL).
 */
#define STACKREF_TAG_BITS	3u

/*
 * The fields the layout takes, wherever a version keeps them: the
 * sections both versions share whole, and of the others what is used.
 */
struct fields {
	uint64_t version, free_threaded;
	struct pd_runtime runtime_state;
	struct { uint64_t size, threads_head; } interpreter_state;
	struct pd_thread thread_state;
	struct { uint64_t size, previous, executable, instr_ptr; } frame;
	struct {
		uint64_t size, filename, qualname, linetable, firstlineno, co_code_adaptive;
	} code_object;
	struct pd_object_kinds objects;
	struct pd_text text;
};

/* The same fields of any version's struct d (their names are alike). */
#define TAKE_FIELDS(f, d) do {							\
	(f)->version = (d)->version;						\
	(f)->free_threaded = (d)->free_threaded;				\
	(f)->runtime_state = (d)->runtime_state;				\
	(f)->interpreter_state.size = (d)->interpreter_state.size;		\
	(f)->interpreter_state.threads_head = (d)->interpreter_state.threads_head; \
	(f)->thread_state = (d)->thread_state;					\
	(f)->frame.size = (d)->frame.size;					\
	(f)->frame.previous = (d)->frame.previous;				\
	(f)->frame.executable = (d)->frame.executable;				\
	(f)->frame.instr_ptr = (d)->frame.instr_ptr;				\
	(f)->code_object.size = (d)->code_object.size;				\
	(f)->code_object.filename = (d)->code_object.filename;			\
	(f)->code_object.qualname = (d)->code_object.qualname;			\
	(f)->code_object.linetable = (d)->code_object.linetable;		\
	(f)->code_object.firstlineno = (d)->code_object.firstlineno;		\
	(f)->code_object.co_code_adaptive = (d)->code_object.co_code_adaptive;	\
	(f)->objects = (d)->objects;						\
	(f)->text = (d)->text;							\
} while (0)

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

static int fill(const struct fields *d, struct py_layout *l, char *why, size_t why_len)
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
		{ &l->object_type, d->objects.pyobject.ob_type, d->objects.pyobject.size, "an object's type" },
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
		{ &l->var_size, d->text.bytes_object.ob_size, d->text.bytes_object.size,
		  "a bytes object's size" },
		{ &l->bytes_data, d->text.bytes_object.ob_sval, d->text.bytes_object.size,
		  "a bytes object's data" },
		{ &l->str_length, d->text.unicode_object.length, d->text.unicode_object.size,
		  "a string's length" },
		{ &l->str_state, d->text.unicode_object.state, d->text.unicode_object.size,
		  "a string's state" },
		{ &ascii, d->text.unicode_object.asciiobject_size, STRUCT_MAX - COMPACT_AFTER_ASCII,
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

/*
 * The fields of 3.minor's _Py_DebugOffsets at runtime, minor one whose
 * shape is known.  0, or -errno with why set.
 */
static int read_fields(int mem, uint64_t runtime, uint32_t minor, struct fields *f, char *why,
		       size_t why_len)
{
	union {
		char cookie[8];
		struct py_debug_313 v13;
		struct py_debug_314 v14;
	} d;

	if (pymem_read(mem, runtime, &d, minor == 13 ? sizeof(d.v13) : sizeof(d.v14)) != 0) {
		snprintf(why, why_len, "cannot read its _Py_DebugOffsets");
		return -EIO;
	}
	if (memcmp(d.cookie, PY_DEBUG_COOKIE, sizeof(d.cookie)) != 0) {
		snprintf(why, why_len, "its _PyRuntime does not begin with _Py_DebugOffsets");
		return -EPROTO;
	}
	if (minor == 13)
		TAKE_FIELDS(f, &d.v13);
	else
		TAKE_FIELDS(f, &d.v14);
	return 0;
}

int pydebug_layout(int mem, uint64_t runtime, uint32_t major, uint32_t minor,
		   struct py_layout *out, char *why, size_t why_len)
{
	struct fields f;
	uint64_t want;
	int err;

	memset(out, 0, sizeof(*out));
	if (major != 3 || (minor != 13 && minor != 14)) {
		snprintf(why, why_len, "the _Py_DebugOffsets of CPython %u.%u are not read yet",
			 major, minor);
		return -EPROTONOSUPPORT;
	}
	err = read_fields(mem, runtime, minor, &f, why, why_len);
	if (err)
		return err;
	want = (uint64_t)major << 24 | (uint64_t)minor << 16;
	if ((f.version & 0xffff0000u) != want) {
		snprintf(why, why_len, "its _Py_DebugOffsets are of version %#llx, not %u.%u",
			 (unsigned long long)f.version, major, minor);
		return -EPROTO;
	}
	if (f.free_threaded) {
		snprintf(why, why_len, "free-threaded builds are not supported for Python frames");
		return -EPROTONOSUPPORT;
	}
	out->major = major;
	out->minor = minor;
	out->code_tag_bits = minor >= 14 ? STACKREF_TAG_BITS : 0;
	return fill(&f, out, why, why_len);
}
