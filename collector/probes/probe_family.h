/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A probe family: one folder of collector/probes/ holding its BPF program
 * (NAME.bpf.c), and in NAME.c its registration: the BPF object and how to
 * set it up, the attachments of its programs, the decoders of the records
 * it sends, and what they keep across records (gpu_mem/ its allocations,
 * nccl/ its streams), written with family_rows.h.  The one list of
 * families is PROBE_FAMILY_LIST (families.h), their table families.c; the
 * loader (probe_loader.h) and the decoder (decode.h) read every family
 * through it.  Records and their type numbers are declared once, in
 * bpf/probe_abi.h, with what the programs share in bpf/.
 *
 * Adding a family: a folder with NAME.bpf.c and NAME.c, its line in
 * PROBE_FAMILY_LIST, and its test.  New record types are declared in
 * bpf/probe_abi.h and new metrics in the catalog.  Root-only code.
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

/*
 * What a family's decoders keep across records (decode_state): made with
 * the decoder (NULL: no memory) and freed with it; told of a process that
 * is gone, and (expire, optional) of event time once a second so that
 * what went unused for long can go.
 */
struct probe_state_ops {
	void *(*make)(struct agg *agg);
	void (*free)(void *state);
	void (*proc_gone)(void *state, uint32_t pid);
	void (*expire)(void *state, uint64_t now_ns);
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
	const struct probe_state_ops *state;	/* NULL: the decoders keep nothing */
};

/* The families, by enum probe_obj: load order. */
extern const struct probe_family *const probe_families[PROBE_OBJ_COUNT];

/* Each family's, NAME_family in NAME/NAME.c. */
#define PROBE_FAMILY_DECLARE(id, name)	extern const struct probe_family name##_family;
PROBE_FAMILY_LIST(PROBE_FAMILY_DECLARE)
#undef PROBE_FAMILY_DECLARE

/*
 * Every family's attachments, in attach order (built once); NULL and *n 0
 * when they are more than the table holds (PROBE_MAX_ATTACH, families.c).
 */
const struct probe_attach *probe_attach_rows(size_t *n);

#endif /* ZERNEL_PROBE_FAMILY_H */
