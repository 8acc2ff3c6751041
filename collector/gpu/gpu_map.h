/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which physical GPU each of a process's CUDA device ordinals is, from
 * its environment (proc_env), the NVIDIA nodes it has open (gpu_fds) and,
 * when the caller has it, the node's GPU list as NVML reports it.  Pure;
 * every ordinal comes out resolved with how it was resolved, or unknown
 * with why.  Nothing is guessed.
 *
 * What CUDA enumerates, before CUDA_VISIBLE_DEVICES: the GPUs whose device
 * nodes the process can reach.  Outside a container that is every GPU of
 * the node, but for a Slurm job whose device cgroup holds only its own
 * GPUs (ConstrainDevices=yes; told by its job-local CUDA_VISIBLE_DEVICES,
 * see gpu_base.c), which sees those.  In a container made by the NVIDIA runtime it is the set
 * NVIDIA_VISIBLE_DEVICES named when the container was created (NVML
 * indices or UUIDs); when that variable does not name them (unset, void,
 * the volume-mount or CDI forms) the set is unknown.  Only the caller
 * knows whether the process is in a container (cgroup_id), so it says so.
 *
 * In what order: CUDA_DEVICE_ORDER=PCI_BUS_ID sorts them by PCI bus id,
 * which needs each GPU's bus id (NVML has it).  The default, FASTEST_FIRST,
 * puts "the fastest first, by a simple heuristic" that NVIDIA does not
 * document; identical GPUs usually come out in bus order, but that is a
 * guess, so with more than one GPU an index means nothing certain here,
 * and only UUID entries, a single GPU or a single open node resolve.
 *
 * Then CUDA_VISIBLE_DEVICES picks from that ordered set (gpu_visible.h).
 *
 * Not resolved, by design: MIG instances named "MIG-<uuid>" (their parent
 * needs NVML's MIG listing), GPUs in MIG mode seen without a MIG list (how
 * many instances CUDA sees is not known), and MPS clients, whose ordinals
 * are the MPS server's view.
 */
#ifndef ZERNEL_GPU_MAP_H
#define ZERNEL_GPU_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "collector/gpu/gpu_fds.h"
#include "collector/gpu/gpu_visible.h"
#include "collector/proc/proc_env.h"

#define GPU_UUID_MAX	48	/* "GPU-" + 36, plus NUL */
#define GPU_PCI_MAX	24	/* NVML's "00000000:3B:00.0", plus NUL */
#define GPU_NAME_MAX	96
/* Node GPUs considered (candidates is a 64-bit mask over them). */
#define GPU_NODES_MAX	64

/* The GPU is in MIG mode: CUDA sees its instances, not the GPU. */
#define GPU_NODE_F_MIG	0x1u

/* One physical GPU of the node, as NVML reports it; filled by the caller. */
struct gpu_node {
	int32_t index;			/* NVML's index */
	int32_t minor;			/* /dev/nvidia<minor>; -1 when unknown */
	uint32_t flags;			/* GPU_NODE_F_* */
	uint32_t pad;
	char uuid[GPU_UUID_MAX];	/* "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6" */
	char pci_bus_id[GPU_PCI_MAX];	/* "" when unknown; compared without case */
	char name[GPU_NAME_MAX];	/* "NVIDIA H100 80GB HBM3" */
};

enum gpu_how {
	GPU_HOW_UNKNOWN = 0,
	/* Resolved. */
	GPU_HOW_ONLY_ONE,	/* the process can see one GPU */
	GPU_HOW_PCI_ORDER,	/* an index under CUDA_DEVICE_ORDER=PCI_BUS_ID */
	GPU_HOW_UUID,		/* a UUID, or a prefix of exactly one node GPU's */
	GPU_HOW_MIG_PARENT,	/* a MIG instance: the GPU it is carved from */
	GPU_HOW_OPEN_NODE,	/* one ordinal, and one /dev/nvidiaN open */
	/* Unresolved, and why. */
	GPU_WHY_FASTEST_FIRST,	/* several GPUs in CUDA's default, undocumented order */
	GPU_WHY_ORDER_VALUE,	/* CUDA_DEVICE_ORDER holds neither known value */
	GPU_WHY_NO_NODE_LIST,	/* needs the node's GPU list */
	GPU_WHY_NO_PCI_ID,	/* PCI order, but a GPU's bus id is not known */
	GPU_WHY_CONTAINER,	/* in a container whose GPUs its environment does not name */
	GPU_WHY_AMBIGUOUS,	/* a UUID prefix of several GPUs; a Slurm list read two ways */
	GPU_WHY_NOT_ON_NODE,	/* NVIDIA_VISIBLE_DEVICES names a GPU the node list lacks */
	GPU_WHY_MIG,		/* a MIG instance whose parent its name does not give */
	GPU_WHY_INVALID_ENV,	/* a device variable was refused by proc_env */
	GPU_HOW_COUNT
};

enum gpu_count {
	GPU_COUNT_UNKNOWN = 0,	/* how many ordinals the process has is not known: n is 0 */
	GPU_COUNT_EXACT,	/* it has exactly n */
	GPU_COUNT_AT_MOST,	/* it has at most n: an entry's validity could not be checked */
};

/* NVIDIA_VISIBLE_DEVICES was set outside a container, where it means nothing. */
#define GPU_MAP_F_NVIDIA_IGNORED	0x1u
/* A resolved GPU's node is not among the process's open nodes, while others are. */
#define GPU_MAP_F_NODE_MISMATCH		0x2u

struct gpu_ordinal {
	int32_t index;			/* NVML index; -1 when unknown */
	int32_t minor;			/* /dev/nvidia<minor>; -1 when unknown */
	uint32_t how;			/* enum gpu_how */
	uint32_t pad;
	char uuid[GPU_UUID_MAX];	/* the GPU's full UUID, when known */
};

struct gpu_map {
	uint32_t n;			/* ordinals listed: ord[0..n) is CUDA device 0..n-1 */
	uint32_t count;			/* enum gpu_count */
	uint32_t why;			/* enum gpu_how: why the count is unknown */
	uint32_t flags;			/* GPU_MAP_F_* */
	uint32_t cuda_flags;		/* GPU_VISIBLE_F_* of CUDA_VISIBLE_DEVICES */
	uint32_t pad;
	uint64_t candidates;		/* bit i: nodes[i] is, or may be, behind some ordinal */
	struct gpu_ordinal ord[GPU_VISIBLE_MAX];
};

/*
 * Resolves env's CUDA ordinals.  in_container: the process runs in a
 * container (NVIDIA_VISIBLE_DEVICES then names its GPUs).  fds may be NULL
 * (not read), nodes NULL with n_nodes 0 (no NVML).  Returns 0, or -EINVAL
 * for more than GPU_NODES_MAX nodes.  out is always fully written.
 */
int gpu_map_resolve(const struct proc_env *env, int in_container, const struct gpu_fds *fds,
		    const struct gpu_node *nodes, size_t n_nodes, struct gpu_map *out);

/* "pci_order", "fastest_first", ...: a label value for each enum gpu_how. */
const char *gpu_how_name(uint32_t how);

#endif /* ZERNEL_GPU_MAP_H */
