/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The list of probe families (probe_family.h), one BPF object each, in
 * load order: the first to declare a shared map owns it.  A family is
 * added by its folder and its line here; families.c makes their table.
 */
#ifndef ZERNEL_FAMILIES_H
#define ZERNEL_FAMILIES_H

#define PROBE_FAMILY_LIST(X)		\
	X(WATCH, watch)			\
	X(GPU_MEM, gpu_mem)		\
	X(CUDA_TRACE, cuda_trace)	\
	X(NCCL, nccl)			\
	X(SCHED, sched)			\
	X(PYSTACK, pystack)

enum probe_obj {
#define PROBE_OBJ_ID(id, name)	PROBE_OBJ_##id,
	PROBE_FAMILY_LIST(PROBE_OBJ_ID)
#undef PROBE_OBJ_ID
	PROBE_OBJ_COUNT
};

#endif /* ZERNEL_FAMILIES_H */
