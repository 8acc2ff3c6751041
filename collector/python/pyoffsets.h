/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CPython structure offsets, one row per supported version that does not
 * publish its own (collector/python/pydebug.h reads those): what the BPF frame
 * walk follows (struct zp_offsets) and what the collector reads of a code
 * object to name a frame.  Versions with neither are refused: a guessed
 * layout would give wrong lines.  Collector-internal.
 */
#ifndef ZERNEL_PYOFFSETS_H
#define ZERNEL_PYOFFSETS_H

#include <stdint.h>

#include "bpf/pystack.h"

/* What a frame's instruction word is, and the line table it is looked up in. */
enum py_instr_kind {
	/* 3.11 on: prev_instr, into co_code_adaptive; the location table. */
	PY_INSTR_POINTER,
	/* 3.10: f_lasti, an instruction index (the word's low 32 bits); the 3.10 line table. */
	PY_INSTR_LASTI,
};

struct py_layout {
	uint32_t major, minor;
	enum py_instr_kind instr_kind;
	struct zp_offsets walk;
	uint16_t tstate_interp;		/* PyThreadState.interp (checked at attach) */
	uint16_t object_type;		/* PyObject.ob_type */
	uint16_t code_filename;		/* PyCodeObject.co_filename */
	uint16_t code_qualname;		/* PyCodeObject.co_qualname (3.10: co_name) */
	uint16_t code_firstlineno;	/* PyCodeObject.co_firstlineno (int) */
	uint16_t code_linetable;	/* PyCodeObject.co_linetable (bytes) */
	uint16_t code_units;		/* PyCodeObject.co_code_adaptive: instruction 0 (3.10: 0) */
	uint16_t var_size;		/* PyVarObject.ob_size */
	uint16_t bytes_data;		/* PyBytesObject.ob_sval */
	uint16_t str_length;		/* PyASCIIObject.length */
	uint16_t str_state;		/* PyASCIIObject.state */
	uint16_t str_ascii_data;	/* sizeof(PyASCIIObject): compact ASCII text */
	uint16_t str_compact_data;	/* sizeof(PyCompactUnicodeObject) */
	uint16_t code_tag_bits;		/* low bits of a frame's code pointer that tag it */
};

/*
 * What the collector reads of an object at once (collector/python/pyread.c): a
 * layout's offsets must fall inside, which py_layout_fits checks.  The
 * BPF walk reads a frame's first 64 bytes, and an instruction word
 * beyond them (3.10's f_lasti) on its own, below PY_FRAME_INSTR_MAX.
 */
#define PY_FRAME_INSTR_MAX	256
#define PY_CODE_HEADER		256	/* of a code object */
#define PY_STR_HEADER		96	/* of a str object, up to its compact text */
#define PY_BYTES_HEADER		48	/* of a bytes object, up to its data */

/* The word at off of an object's bytes b, as read from its process. */
static inline uint64_t py_u64_at(const uint8_t *b, uint16_t off)
{
	uint64_t v;

	__builtin_memcpy(&v, b + off, sizeof(v));
	return v;
}

/*
 * Whether every offset of l lies inside what is read of its object,
 * including the frame words the BPF walk reads (8).  A table row always
 * does; offsets the interpreter publishes are checked the same way.
 */
int py_layout_fits(const struct py_layout *l);

/* The row of version major.minor, or NULL when it is not supported. */
const struct py_layout *py_layout_find(uint32_t major, uint32_t minor);

/* "3.10, 3.11, 3.12, 3.13 and 3.14": the versions with a row or read offsets, for messages. */
const char *py_layout_supported(void);

#endif /* ZERNEL_PYOFFSETS_H */
