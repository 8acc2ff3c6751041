/* SPDX-License-Identifier: BSD-2-Clause */
/* The set CUDA enumerates, and its order; see gpu_base.h and gpu_map.h. */
#include <stdio.h>
#include <string.h>

#include "collector/gpu/gpu_base.h"

/* A full "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
#define GPU_UUID_LEN	40

void gpu_slot_from_node(struct gpu_slot *s, const struct gpu_node *nodes, int i)
{
	memset(s, 0, sizeof(*s));
	s->node = i;
	s->index = nodes[i].index;
	s->minor = nodes[i].minor;
	snprintf(s->uuid, sizeof(s->uuid), "%s", nodes[i].uuid);
}

static void slot_unknown(struct gpu_slot *s)
{
	memset(s, 0, sizeof(*s));
	s->node = s->index = s->minor = -1;
}

int gpu_node_by_uuid(const struct gpu_node *nodes, size_t n_nodes, const char *prefix)
{
	size_t len = strlen(prefix);
	int found = -1;

	for (size_t i = 0; i < n_nodes; i++) {
		if (strncmp(nodes[i].uuid, prefix, len) != 0)
			continue;
		if (found >= 0)
			return -2;
		found = (int)i;
	}
	return found;
}

static int node_by_index(const struct gpu_node *nodes, size_t n_nodes, uint32_t index)
{
	for (size_t i = 0; i < n_nodes; i++)
		if (nodes[i].index >= 0 && (uint32_t)nodes[i].index == index)
			return (int)i;
	return -1;
}

/*
 * One NVIDIA_VISIBLE_DEVICES reference as a slot.  Returns 0, or an enum
 * gpu_how saying why the container's set is not known.
 */
static uint32_t slot_from_ref(const struct gpu_ref *r, const struct gpu_node *nodes,
			      size_t n_nodes, struct gpu_slot *s)
{
	char parent[GPU_UUID_MAX];
	int i = -1;

	slot_unknown(s);
	switch (r->kind) {
	case GPU_REF_INDEX:
	case GPU_REF_MIG_INDEX:
		s->mig = r->kind == GPU_REF_MIG_INDEX;
		s->parent_known = s->mig;
		if (n_nodes == 0) {
			s->index = (int32_t)r->index;	/* NVML's index, all we know */
			return 0;
		}
		i = node_by_index(nodes, n_nodes, r->index);
		break;
	case GPU_REF_UUID:
		if (n_nodes == 0) {
			if (strlen(r->id) == GPU_UUID_LEN)
				snprintf(s->uuid, sizeof(s->uuid), "%s", r->id);
			return 0;
		}
		i = gpu_node_by_uuid(nodes, n_nodes, r->id);
		if (i == -2)
			return GPU_WHY_AMBIGUOUS;
		break;
	case GPU_REF_MIG:
		s->mig = 1;
		if (gpu_ref_mig_parent(r, parent, sizeof(parent)) != 0)
			return 0;	/* "MIG-<uuid>": parent unknown, still one device */
		s->parent_known = 1;
		if (n_nodes == 0) {
			snprintf(s->uuid, sizeof(s->uuid), "%s", parent);
			return 0;
		}
		i = gpu_node_by_uuid(nodes, n_nodes, parent);
		break;
	}
	if (i < 0)
		return GPU_WHY_NOT_ON_NODE;
	gpu_slot_from_node(s, nodes, i);
	s->mig = r->kind == GPU_REF_MIG || r->kind == GPU_REF_MIG_INDEX;
	s->parent_known = s->mig;
	return 0;
}

/* Every GPU of the node. */
static void base_all(const struct gpu_node *nodes, size_t n_nodes, struct gpu_base *b)
{
	if (n_nodes == 0) {
		b->why = GPU_WHY_NO_NODE_LIST;
		return;
	}
	for (size_t i = 0; i < n_nodes; i++) {
		if (nodes[i].flags & GPU_NODE_F_MIG) {
			b->n = 0;
			b->why = GPU_WHY_MIG;	/* its instance count is not in the list */
			return;
		}
		gpu_slot_from_node(&b->slot[b->n++], nodes, (int)i);
	}
	b->known = 1;
}

/* The container's GPUs, from NVIDIA_VISIBLE_DEVICES. */
static void base_container(const struct proc_env *env, const struct gpu_node *nodes,
			   size_t n_nodes, struct gpu_base *b)
{
	struct gpu_visible nv;
	uint32_t why;

	if (env->nvidia_visible_devices.state == PROC_ENV_INVALID) {
		b->why = GPU_WHY_INVALID_ENV;
		return;
	}
	if (env->nvidia_visible_devices.state != PROC_ENV_SET) {
		b->why = GPU_WHY_CONTAINER;
		return;
	}
	gpu_visible_parse_nvidia(env->nvidia_visible_devices.value, &nv);
	switch (nv.mode) {
	case GPU_LIST_NONE:
		b->known = 1;
		return;
	case GPU_LIST_ALL:
		base_all(nodes, n_nodes, b);
		return;
	case GPU_LIST_DEVICES:
		for (uint32_t k = 0; k < nv.n; k++) {
			struct gpu_slot *sl = &b->slot[b->n++];

			why = slot_from_ref(&nv.ref[k], nodes, n_nodes, sl);
			/* A whole GPU in MIG mode shows CUDA an unknown number of instances. */
			if (!why && !sl->mig && sl->node >= 0 && (nodes[sl->node].flags & GPU_NODE_F_MIG))
				why = GPU_WHY_MIG;
			if (why) {
				b->n = 0;
				b->why = why;
				return;
			}
		}
		b->known = 1;
		return;
	default:
		b->why = GPU_WHY_CONTAINER;	/* void, or a list given elsewhere */
		return;
	}
}

/*
 * How CUDA_VISIBLE_DEVICES numbers a Slurm job's GPUs.  With
 * ConstrainDevices=yes the job's device cgroup lets the process open its
 * own GPUs' nodes only, so CUDA enumerates those alone, and Slurm numbers
 * them job-local: each entry is a position in SLURM_STEP_GPUS
 * (SLURM_JOB_GPUS in a batch script), which keeps their ids on the node,
 * the N of gres.conf's /dev/nvidiaN.  An unconstrained job's
 * CUDA_VISIBLE_DEVICES repeats those ids and CUDA sees every GPU.
 */
enum slurm_numbering {
	SLURM_NONE,		/* not a Slurm job's GPU list */
	SLURM_NODE_WIDE,	/* the ids of the node, as without Slurm */
	SLURM_JOB_LOCAL,	/* positions in Slurm's list */
	SLURM_UNSURE,		/* either, and no open GPU node tells which */
};

static int listed(const struct gpu_visible *ids, uint32_t index)
{
	for (uint32_t k = 0; k < ids->n; k++)
		if (ids->ref[k].index == index)
			return 1;
	return 0;
}

/* Every GPU CUDA_VISIBLE_DEVICES names, read job-local, is open. */
static int local_open(const struct gpu_visible *cv, const struct gpu_visible *ids,
		      const struct gpu_fds *fds)
{
	for (uint32_t k = 0; k < cv->n; k++)
		if (!gpu_fds_has(fds, ids->ref[cv->ref[k].index].index))
			return 0;
	return 1;
}

/* Every GPU node open is one of Slurm's list: all a constrained job can open. */
static int open_within(const struct gpu_fds *fds, const struct gpu_visible *ids)
{
	for (uint32_t minor = 0; minor < GPU_FDS_MINOR_MODESET; minor++)
		if (gpu_fds_has(fds, minor) && !listed(ids, minor))
			return 0;
	return 1;
}

/*
 * Which numbering the process's CUDA_VISIBLE_DEVICES is in; ids gets
 * Slurm's list.  Job-local where every entry is a position in Slurm's list
 * and the two readings differ; where an entry is not one of Slurm's ids,
 * only that reading is left (an unconstrained job's entries are its ids).
 * Where both readings stay possible (list 1,3 and device 1), the GPU nodes
 * the process has open tell: one outside Slurm's list, or none where the
 * job-local reading puts a device, is no constrained job's.
 */
static enum slurm_numbering slurm_numbering(const struct proc_env *env,
					    const struct gpu_fds *fds, struct gpu_visible *ids)
{
	const struct proc_env_devices *s = env->slurm_step_gpus.state == PROC_ENV_SET ?
		&env->slurm_step_gpus : &env->slurm_job_gpus;
	int differ = 0, node_wide = 1;
	struct gpu_visible cv;

	if (s->state != PROC_ENV_SET || env->cuda_visible_devices.state != PROC_ENV_SET)
		return SLURM_NONE;
	gpu_visible_parse_cuda(s->value, ids);
	gpu_visible_parse_cuda(env->cuda_visible_devices.value, &cv);
	if (ids->mode != GPU_LIST_DEVICES || cv.mode != GPU_LIST_DEVICES || cv.n == 0)
		return SLURM_NONE;
	for (uint32_t k = 0; k < ids->n; k++)
		if (ids->ref[k].kind != GPU_REF_INDEX)
			return SLURM_NONE;
	for (uint32_t k = 0; k < cv.n; k++) {
		uint32_t i = cv.ref[k].index;

		if (cv.ref[k].kind != GPU_REF_INDEX || i >= ids->n)
			return SLURM_NODE_WIDE;
		differ |= ids->ref[i].index != i;
		node_wide &= listed(ids, i);
	}
	if (!differ)
		return SLURM_NODE_WIDE;
	/* A GPU open outside Slurm's list: no constrained job could open it. */
	if (fds && fds->n > 0 && !open_within(fds, ids))
		return SLURM_NODE_WIDE;
	if (!node_wide)
		return SLURM_JOB_LOCAL;
	if (!fds || fds->n == 0)
		return SLURM_UNSURE;
	return local_open(&cv, ids, fds) ? SLURM_JOB_LOCAL : SLURM_NODE_WIDE;
}

/* The Slurm job's GPUs, read job-local: the node GPUs of those device minors. */
static void base_slurm(const struct gpu_visible *ids, const struct gpu_node *nodes,
		       size_t n_nodes, struct gpu_base *b)
{
	for (uint32_t k = 0; k < ids->n; k++) {
		struct gpu_slot *sl = &b->slot[b->n++];
		int i = -1;

		slot_unknown(sl);
		sl->minor = (int32_t)ids->ref[k].index;
		for (size_t j = 0; j < n_nodes && i < 0; j++)
			if (nodes[j].minor >= 0 && (uint32_t)nodes[j].minor == ids->ref[k].index)
				i = (int)j;
		if (n_nodes > 0 && i < 0) {
			b->n = 0;
			b->why = GPU_WHY_NOT_ON_NODE;
			return;
		}
		if (i >= 0 && (nodes[i].flags & GPU_NODE_F_MIG)) {
			b->n = 0;
			b->why = GPU_WHY_MIG;
			return;
		}
		if (i >= 0)
			gpu_slot_from_node(sl, nodes, i);
	}
	b->known = 1;
}

/* "dddd:bb:dd.f" in any width and case, as one number; 0 when malformed. */
static uint64_t pci_key(const char *s)
{
	unsigned int dom, bus, dev, fn;
	char end;

	if (sscanf(s, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &end) != 4)
		return 0;
	return ((uint64_t)dom << 32 | (uint64_t)bus << 16 | (uint64_t)dev << 8 | fn) + 1;
}

/* Sorts the slots by their nodes' bus ids (at most GPU_VISIBLE_MAX: insertion sort). */
static void sort_by_pci(struct gpu_slot *s, uint32_t n, const struct gpu_node *nodes)
{
	for (uint32_t i = 1; i < n; i++) {
		struct gpu_slot cur = s[i];
		uint64_t key = pci_key(nodes[cur.node].pci_bus_id);
		uint32_t j = i;

		for (; j > 0 && pci_key(nodes[s[j - 1].node].pci_bus_id) > key; j--)
			s[j] = s[j - 1];
		s[j] = cur;
	}
}

/* CUDA's order over b's slots, when it can be known. */
static void base_order(const struct proc_env *env, const struct gpu_node *nodes, struct gpu_base *b)
{
	const struct proc_env_id *o = &env->cuda_device_order;
	int pci = o->state == PROC_ENV_SET && strcmp(o->value, "PCI_BUS_ID") == 0;

	if (b->n <= 1) {
		b->ordered = 1;
		b->order_how = b->n == 1 && b->slot[0].mig ? GPU_HOW_MIG_PARENT : GPU_HOW_ONLY_ONE;
		return;
	}
	for (uint32_t i = 0; i < b->n; i++) {
		if (b->slot[i].mig) {
			b->order_why = GPU_WHY_MIG;	/* how CUDA orders instances is not documented */
			return;
		}
	}
	if (o->state == PROC_ENV_INVALID) {
		b->order_why = GPU_WHY_INVALID_ENV;
		return;
	}
	if (o->state == PROC_ENV_SET && !pci && strcmp(o->value, "FASTEST_FIRST") != 0) {
		b->order_why = GPU_WHY_ORDER_VALUE;
		return;
	}
	if (!pci) {
		b->order_why = GPU_WHY_FASTEST_FIRST;
		return;
	}
	for (uint32_t i = 0; i < b->n; i++) {
		if (b->slot[i].node < 0) {
			b->order_why = GPU_WHY_NO_NODE_LIST;
			return;
		}
		if (!pci_key(nodes[b->slot[i].node].pci_bus_id)) {
			b->order_why = GPU_WHY_NO_PCI_ID;
			return;
		}
	}
	sort_by_pci(b->slot, b->n, nodes);
	b->ordered = 1;
	b->order_how = GPU_HOW_PCI_ORDER;
}

void gpu_base_build(const struct proc_env *env, int in_container, const struct gpu_fds *fds,
		    const struct gpu_node *nodes, size_t n_nodes, struct gpu_base *b)
{
	struct gpu_visible slurm;

	memset(b, 0, sizeof(*b));
	if (in_container) {
		base_container(env, nodes, n_nodes, b);
	} else {
		enum slurm_numbering how = slurm_numbering(env, fds, &slurm);

		b->slurm = how != SLURM_NONE;
		switch (how) {
		case SLURM_JOB_LOCAL:
			base_slurm(&slurm, nodes, n_nodes, b);
			break;
		case SLURM_UNSURE:
			b->why = GPU_WHY_AMBIGUOUS;
			break;
		default:
			if (env->nvidia_visible_devices.state != PROC_ENV_ABSENT)
				b->flags |= GPU_MAP_F_NVIDIA_IGNORED;
			base_all(nodes, n_nodes, b);
			break;
		}
	}
	if (b->known)
		base_order(env, nodes, b);
}

int gpu_base_only_open(const struct proc_env *env, const struct gpu_fds *fds,
		       const struct gpu_node *nodes, struct gpu_base *b)
{
	uint32_t kept = 0;

	if (!b->known || !b->slurm || !fds || fds->n == 0)
		return 0;
	for (uint32_t k = 0; k < b->n; k++)
		if (b->slot[k].minor >= 0 && gpu_fds_has(fds, (uint32_t)b->slot[k].minor))
			b->slot[kept++] = b->slot[k];
	if (kept == 0 || kept == b->n)
		return 0;
	b->n = kept;
	b->ordered = 0;
	base_order(env, nodes, b);
	return 1;
}
