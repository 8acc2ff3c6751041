/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A probe family: one folder of collector/probes/ holding its BPF program
 * (NAME.bpf.c), and in NAME.c its registration: the BPF object and how to
 * set it up, the attachments of its programs, and the decoders of the
 * records it sends, with what aggregates them (gpu_mem/ keeps its
 * allocations, nccl/ its streams).  The one list of families is
 * PROBE_FAMILY_LIST (probe_loader.h), their table families.c; the loader (probe_loader.h) and the decoder (decode.h) read
 * every family through it.  Records and their type numbers are declared
 * once, in bpf/probe_abi.h, with what the programs share in bpf/.
 *
 * Adding a family: a folder with NAME.bpf.c and NAME.c, its line in
 * PROBE_FAMILY_LIST (probe_loader.h), and its test.  New record types are
 * declared in bpf/probe_abi.h and new metrics in the catalog.  Root-only
 * code.
 */
#ifndef ZERNEL_PROBE_FAMILY_H
#define ZERNEL_PROBE_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "collector/probes/probe_loader.h"

struct decode;

/* The records of one type, and what turns them into aggregation calls. */
struct probe_decoder {
	uint32_t type;			/* enum zev_type */
	size_t size;			/* of each record; others are refused */
	int (*handle)(struct decode *d, const void *rec);
};

struct probe_family {
	struct probe_object object;
	/*
	 * Attachments made before every family's others (the order the
	 * kernel runs a tracepoint's programs in), then its own, after the
	 * families before it in the table.
	 */
	const struct probe_attach *attach_first;
	size_t n_attach_first;
	const struct probe_attach *attach;
	size_t n_attach;
	const struct probe_decoder *decoders;
	size_t n_decoders;
};

#define PROBE_ROWS(a)	(a), (sizeof(a) / sizeof((a)[0]))

/* The families, by enum probe_obj: load order. */
extern const struct probe_family *const probe_families[PROBE_OBJ_COUNT];

/* Each family's, NAME_family in NAME/NAME.c. */
#define PROBE_FAMILY_DECLARE(id, name)	extern const struct probe_family name##_family;
PROBE_FAMILY_LIST(PROBE_FAMILY_DECLARE)
#undef PROBE_FAMILY_DECLARE

/* Every family's attachments, in attach order (built once). */
const struct probe_attach *probe_attach_rows(size_t *n);

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

/* NAME_family, of the file's tables attach and decoders. */
#define PROBE_FAMILY(name, configure, fallback)					\
const struct probe_family name##_family = {					\
	.object = PROBE_OBJECT(name, configure, fallback),			\
	.attach = PROBE_ROWS(attach),						\
	.decoders = PROBE_ROWS(decoders),					\
}

#endif /* ZERNEL_PROBE_FAMILY_H */
