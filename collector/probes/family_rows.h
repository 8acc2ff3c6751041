/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a probe family's NAME.c writes its tables with (probe_family.h):
 * its attachments, its decoders, its object and the family itself.
 * Included by the families' own files only: the short names are theirs.
 */
#ifndef ZERNEL_FAMILY_ROWS_H
#define ZERNEL_FAMILY_ROWS_H

#include "collector/probes/probe_family.h"

#define PROBE_ROWS(a)	(a), (sizeof(a) / sizeof((a)[0]))

/* The library kinds of uprobe rows. */
#define DRV	PROBE_LIB_CUDA
#define RT	PROBE_LIB_CUDART
#define NCCL	PROBE_LIB_NCCL
#define LIBC	PROBE_LIB_LIBC
#define LOADER	PROBE_LIB_LOADER
#define PROF	PROBE_LIB_NCCL_PROFILER

#define AUTO(obj, prog)		{ obj, prog, PROBE_AUTO, 0, NULL }
#define ITER(obj, prog)		{ obj, prog, PROBE_ITER, 0, NULL }
/* A symbol's entry and return programs: two rows, return first (probe_loader.h says why). */
#define UPROBE(obj, lib, sym, entry)	{ obj, entry, PROBE_UPROBE, lib, sym }
#define URETPROBE(obj, lib, sym, ret)	{ obj, ret, PROBE_URETPROBE, lib, sym }
#define PAIR(obj, lib, sym, entry, ret)	URETPROBE(obj, lib, sym, ret), UPROBE(obj, lib, sym, entry)

/*
 * A stream-ordered CUDA entry point and its _ptsz twin, which code built
 * for the per-thread default stream (nvcc --default-stream per-thread)
 * calls instead: both get the family's row macro row(lib, sym, ...).
 */
#define WITH_PTSZ(row, lib, sym, ...)	\
	row(lib, sym, ##__VA_ARGS__), row(lib, sym "_ptsz", ##__VA_ARGS__)

#define DECODER(type, rec, handle)	{ type, sizeof(struct rec), handle }

/* The skeleton's functions behind the object's untyped ones, and the object. */
#define PROBE_SKELETON(name)							\
static void *name##_open(struct bpf_object **obj)				\
{										\
	struct name##_bpf *s = name##_bpf__open();				\
										\
	if (s)									\
		*obj = s->obj;							\
	return s;								\
}										\
static int name##_load(void *s)							\
{										\
	return name##_bpf__load(s);						\
}										\
static void name##_destroy(void *s)						\
{										\
	name##_bpf__destroy(s);							\
}

#define PROBE_OBJECT(name, configure, fallback) \
	{ #name, name##_open, configure, fallback, name##_load, name##_destroy }

/* NAME_family, of the file's tables attach and decoders, and its state (NULL: none). */
#define PROBE_FAMILY(name, configure, fallback, state_ops)			\
const struct probe_family name##_family = {					\
	.object = PROBE_OBJECT(name, configure, fallback),			\
	.attach = PROBE_ROWS(attach),						\
	.decoders = PROBE_ROWS(decoders),					\
	.state = (state_ops),							\
}

#endif /* ZERNEL_FAMILY_ROWS_H */
