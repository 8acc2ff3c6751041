/* SPDX-License-Identifier: BSD-2-Clause */
/* Physical GPUs of processes' CUDA ordinals, cached per process; see gpu_ident.h.  Root. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collector/identity/gpu_ident.h"
#include "collector/identity/proc_identity.h"
#include "common/log.h"
#include "shm/shm_layout.h"

_Static_assert((int)GPU_HOW_ONLY_ONE == (int)SHM_GPU_MAP_ONLY_ONE &&
	       (int)GPU_HOW_PCI_ORDER == (int)SHM_GPU_MAP_PCI_ORDER && (int)GPU_HOW_UUID == (int)SHM_GPU_MAP_UUID &&
	       (int)GPU_HOW_MIG_PARENT == (int)SHM_GPU_MAP_MIG_PARENT &&
	       (int)GPU_HOW_OPEN_NODE == (int)SHM_GPU_MAP_OPEN_NODE &&
	       (int)GPU_WHY_FASTEST_FIRST == (int)SHM_GPU_MAP_FASTEST_FIRST &&
	       (int)GPU_WHY_ORDER_VALUE == (int)SHM_GPU_MAP_ORDER_VALUE &&
	       (int)GPU_WHY_NO_NODE_LIST == (int)SHM_GPU_MAP_NO_NODE_LIST &&
	       (int)GPU_WHY_NO_PCI_ID == (int)SHM_GPU_MAP_NO_PCI_ID &&
	       (int)GPU_WHY_CONTAINER == (int)SHM_GPU_MAP_CONTAINER &&
	       (int)GPU_WHY_AMBIGUOUS == (int)SHM_GPU_MAP_AMBIGUOUS &&
	       (int)GPU_WHY_NOT_ON_NODE == (int)SHM_GPU_MAP_NOT_ON_NODE && (int)GPU_WHY_MIG == (int)SHM_GPU_MAP_MIG &&
	       (int)GPU_WHY_INVALID_ENV == (int)SHM_GPU_MAP_INVALID_ENV &&
	       (int)GPU_HOW_COUNT == (int)SHM_GPU_MAP_UNREADABLE,
	       "gpu_map's enum gpu_how is the segment's enum shm_gpu_map");

/* Ordinals kept per process: more than any node has. */
#define GPU_IDENT_ORDINALS	16

struct gpu_ident_slot {
	uint32_t pid;			/* 0: free */
	uint32_t n;			/* ordinals in map[] */
	int unreadable;			/* the identity could not be read: n is 0 */
	struct {
		int32_t gpu_id;		/* -1: SHM_GPU_UNKNOWN */
		uint32_t how;		/* enum shm_gpu_map */
	} map[GPU_IDENT_ORDINALS];
};

struct gpu_ident {
	struct gpu_node nodes[GPU_NODES_MAX];
	size_t n_nodes;
	struct proc_identity scratch;	/* large: one, reused */
	struct gpu_ident_slot slot[GPU_IDENT_SLOTS];
};

struct gpu_ident *gpu_ident_new(const struct gpu_node *nodes, size_t n)
{
	struct gpu_ident *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	if (n > GPU_NODES_MAX)
		n = GPU_NODES_MAX;
	if (n)
		memcpy(g->nodes, nodes, n * sizeof(*nodes));
	g->n_nodes = n;
	return g;
}

void gpu_ident_free(struct gpu_ident *g)
{
	free(g);
}

static struct gpu_ident_slot *slot_of(struct gpu_ident *g, uint32_t pid)
{
	return &g->slot[(pid * 2654435761u) % GPU_IDENT_SLOTS];
}

void gpu_ident_forget(struct gpu_ident *g, uint32_t pid)
{
	struct gpu_ident_slot *s = slot_of(g, pid);

	if (s->pid == pid)
		s->pid = 0;
}

static int selects_devices(const struct proc_env *env, int in_container)
{
	return in_container || env->cuda_visible_devices.state != PROC_ENV_ABSENT ||
	       env->nvidia_visible_devices.state != PROC_ENV_ABSENT;
}

/* gpu_map's answer as the segment spells it: the same numbers, but for "unknown". */
static uint32_t shm_map(uint32_t how)
{
	return how == GPU_HOW_UNKNOWN || how >= GPU_HOW_COUNT ? SHM_GPU_MAP_UNKNOWN : how;
}

uint32_t gpu_ident_resolve(const struct gpu_map *m, const struct proc_env *env, int in_container,
			   size_t n_nodes, uint32_t ordinal, uint32_t *gpu_id)
{
	const struct gpu_ordinal *o;
	uint32_t how;

	*gpu_id = SHM_GPU_UNKNOWN;
	if (ordinal >= m->n)
		how = m->count == GPU_COUNT_UNKNOWN ? m->why : GPU_HOW_UNKNOWN;
	else if ((o = &m->ord[ordinal])->how >= GPU_HOW_ONLY_ONE && o->how <= GPU_HOW_OPEN_NODE)
		how = o->index >= 0 ? o->how : GPU_WHY_NO_NODE_LIST;
	else
		how = o->how;
	if (how >= GPU_HOW_ONLY_ONE && how <= GPU_HOW_OPEN_NODE) {
		*gpu_id = (uint32_t)m->ord[ordinal].index;
		return how;
	}
	/* No GPU list on the node and no device selected: the ordinal, said to be one. */
	if (n_nodes == 0 && !selects_devices(env, in_container)) {
		*gpu_id = ordinal;
		return SHM_GPU_MAP_ORDINAL;
	}
	return shm_map(how);
}

/* Reads pid's identity into its slot; 0, or -errno when it cannot be read. */
static int fill(struct gpu_ident *g, uint32_t pid, struct gpu_ident_slot *s)
{
	const struct proc_identity_ctx ctx = { .gpus = g->nodes, .n_gpus = g->n_nodes };
	struct proc_identity *id = &g->scratch;
	int in_container, err;
	uint32_t gpu;

	err = proc_identity_read((pid_t)pid, &ctx, id);
	if (err == 0 && id->env_err != 0)
		err = id->env_err;
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	if (err) {
		/*
		 * Remembered until the process goes or execs: a process that
		 * allocates and exits at once is a zombie or gone by the time
		 * its events are read, and reading /proc again for each of its
		 * events would cost more than the events.  Only a process that
		 * is still there is worth a line in the log.
		 */
		s->unreadable = 1;
		if (err != -ENOENT && err != -ESRCH && err != -ENODATA)
			log_info("pid %u: its GPUs cannot be mapped, its environment cannot be "
				 "read: %s", pid, strerror(-err));
		return err;
	}
	in_container = id->cgroup.runtime != CGROUP_RUNTIME_NONE;
	for (uint32_t k = 0; k < GPU_IDENT_ORDINALS; k++) {
		s->map[k].how = gpu_ident_resolve(&id->gpus, &id->env, in_container, g->n_nodes, k,
						  &gpu);
		s->map[k].gpu_id = gpu == SHM_GPU_UNKNOWN ? -1 : (int32_t)gpu;
	}
	s->n = GPU_IDENT_ORDINALS;
	return 0;
}

uint32_t gpu_ident_map(struct gpu_ident *g, uint32_t pid, uint32_t ordinal, uint32_t *gpu_id)
{
	struct gpu_ident_slot *s = slot_of(g, pid);

	*gpu_id = SHM_GPU_UNKNOWN;
	if ((s->pid != pid && fill(g, pid, s) != 0) || s->unreadable)
		return SHM_GPU_MAP_UNREADABLE;
	if (ordinal >= s->n)
		return SHM_GPU_MAP_UNKNOWN;	/* more devices than any node has */
	if (s->map[ordinal].gpu_id >= 0)
		*gpu_id = (uint32_t)s->map[ordinal].gpu_id;
	return s->map[ordinal].how;
}
