/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Names the frames of a Python stall (bpf/probe_abi.h's zev_py_stall):
 * reads each code object the kernel saw from the process (/proc/PID/mem),
 * checks it is still a code object, and takes its file, qualified name
 * and the line of the frame's instruction.  Everything read is the other
 * process's and bounded; what does not check out is left unnamed rather
 * than named wrong.  Root (reads another process's memory).
 */
#ifndef ZERNEL_PYREAD_H
#define ZERNEL_PYREAD_H

#include <stdint.h>

#include "bpf/probe_abi.h"
#include "collector/agg/agg_stall.h"
#include "collector/python/pyfind.h"

/*
 * Starts a batch: the records drained together, named with one read of
 * each code object (pyread.c).  Also after a process is forgotten, whose
 * pid may come back as another.
 */
void pyread_next_batch(void);

/* 1 when file is the standard library's or an installed package's. */
int pyread_is_library(const char *file);

/* 1 when the frame named file, func is torch's DataLoader iterator's __next__. */
int pyread_is_loader_next(const char *file, const char *func);

/*
 * The site (innermost frame of the user's code, or the innermost frame)
 * and the leaf (innermost frame) of a stall, and in loader_code the code
 * pointer (as the frames hold it) of the DataLoader's next() where the
 * frames named pass through it (0: they do not).  0, or -errno when not
 * even the innermost frame could be named.
 */
int pyread_where(int mem, const struct py_interp *pi, const struct zev_py_stall *rec,
		 struct stall_where *out, uint64_t *loader_code);

#endif /* ZERNEL_PYREAD_H */
