/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A code object's file, qualified name and the line of one of its
 * instructions, parsed from the watched process's memory: the str objects
 * and the line table it points to, which the process controls.  Parsed in
 * the parser child (collector/parser/parser.h), which is handed the
 * process's /proc/PID/mem and the code object's head as the collector read
 * it, and answers with the texts and the line; the collector keeps them
 * (collector/python/pyread.c).  Every length and offset read is bounded.
 */
#ifndef ZERNEL_PYCODE_H
#define ZERNEL_PYCODE_H

#include <stdint.h>

#include "collector/python/pyoffsets.h"
#include "shm/shm_layout.h"

/* What is asked about one frame's code object. */
struct py_code_query {
	struct py_layout layout;	/* its interpreter's, as py_layout_fits admits */
	uint64_t code;			/* the code object's address */
	uint64_t instr;			/* the frame's instruction word */
	uint8_t head[PY_CODE_HEADER];	/* the code object's first bytes */
};

/* The answer: texts NUL-terminated, printable ASCII ('?' for other characters). */
struct py_code_names {
	char file[SHM_SITE_FILE_LEN];
	char func[SHM_SITE_FUNC_LEN];	/* "?" when its name could not be read */
	uint32_t line;			/* 0: unknown */
	uint32_t pad;
};

/*
 * Names q's code object from the process whose /proc/PID/mem is mem.
 * 0, or -errno when even its file name could not be read (out then names
 * nothing).  out is always fully written.
 */
int py_code_names(int mem, const struct py_code_query *q, struct py_code_names *out);

/* 0 when n is what py_code_names writes (each text ends in its field, printable), else -EINVAL. */
int py_code_names_admit(const struct py_code_names *n);

#endif /* ZERNEL_PYCODE_H */
