/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The watched processes that run CPython, on the loader's side: finds
 * their interpreter (collector/python/pyfind.h) as they are watched, hands a
 * supported one to the Python-stack probe (the zp_procs map), says once
 * and clearly why another is refused, and names the frames of their
 * stalls (collector/python/pyread.h).  Root.
 */
#ifndef ZERNEL_PYPROCS_H
#define ZERNEL_PYPROCS_H

#include <stdint.h>

#include "collector/agg/agg.h"
#include "collector/agg/agg_stall.h"

struct pyprocs;
struct zev_py_stall;

/* procs_fd, loaders_fd: the zp_procs and zp_loaders maps.  NULL + errno on failure. */
struct pyprocs *pyprocs_new(struct agg *agg, int procs_fd, int loaders_fd);
void pyprocs_free(struct pyprocs *pp);

/* Looks at every watched process not yet known (or due a new look). */
void pyprocs_scan(struct pyprocs *pp, uint64_t now_ns);

/* pid is gone: its entry, its map row, its memory descriptor. */
void pyprocs_forget(struct pyprocs *pp, uint32_t pid);

/* decode_ops.py_where. */
int pyprocs_where(void *pp, const struct zev_py_stall *rec, struct stall_where *out);

#endif /* ZERNEL_PYPROCS_H */
