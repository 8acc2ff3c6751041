/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUDA ordinals to physical GPUs; see gpu_map.h.  gpu_base.c finds the set
 * CUDA enumerates; this file applies CUDA_VISIBLE_DEVICES to it and then
 * the open device nodes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collector/gpu/gpu_base.h"
#include "collector/gpu/gpu_map.h"
#include "common/util.h"

const char *gpu_how_name(uint32_t how)
{
	static const char *const names[GPU_HOW_COUNT] = {
		[GPU_HOW_UNKNOWN] = "unknown",
		[GPU_HOW_ONLY_ONE] = "only_one",
		[GPU_HOW_PCI_ORDER] = "pci_order",
		[GPU_HOW_UUID] = "uuid",
		[GPU_HOW_MIG_PARENT] = "mig_parent",
		[GPU_HOW_OPEN_NODE] = "open_node",
		[GPU_WHY_FASTEST_FIRST] = "fastest_first",
		[GPU_WHY_ORDER_VALUE] = "order_value",
		[GPU_WHY_NO_NODE_LIST] = "no_node_list",
		[GPU_WHY_NO_PCI_ID] = "no_pci_id",
		[GPU_WHY_CONTAINER] = "container",
		[GPU_WHY_AMBIGUOUS] = "ambiguous",
		[GPU_WHY_NOT_ON_NODE] = "not_on_node",
		[GPU_WHY_MIG] = "mig",
		[GPU_WHY_INVALID_ENV] = "invalid_env",
	};

	return how < GPU_HOW_COUNT && names[how] ? names[how] : "unknown";
}

static int resolved(const struct gpu_ordinal *o)
{
	return o->how >= GPU_HOW_ONLY_ONE && o->how <= GPU_HOW_OPEN_NODE;
}

static void ord_unknown(struct gpu_ordinal *o, uint32_t why)
{
	memset(o, 0, sizeof(*o));
	o->index = o->minor = -1;
	o->how = why;
}

/* An ordinal from a slot of the enumerated set, resolved as `how` says. */
static void ord_from_slot(struct gpu_ordinal *o, const struct gpu_slot *s, uint32_t how)
{
	if (s->mig && !s->parent_known) {
		ord_unknown(o, GPU_WHY_MIG);
		return;
	}
	ord_unknown(o, how);
	o->index = s->index;
	o->minor = s->minor;
	snprintf(o->uuid, sizeof(o->uuid), "%s", s->uuid);
	if (s->mig)
		o->how = GPU_HOW_MIG_PARENT;
	else if (s->index < 0)
		o->how = GPU_WHY_NO_NODE_LIST;	/* a UUID at most: no index to give */
}

static void ord_from_node(struct gpu_ordinal *o, const struct gpu_node *nodes, int i, uint32_t how)
{
	struct gpu_slot s;

	gpu_slot_from_node(&s, nodes, i);
	ord_from_slot(o, &s, how);
}

/* CUDA_VISIBLE_DEVICES unset: every GPU of the set, in its order. */
static void map_all(const struct gpu_base *b, struct gpu_map *out)
{
	if (!b->known) {
		out->why = b->why;
		return;
	}
	out->count = GPU_COUNT_EXACT;
	for (uint32_t i = 0; i < b->n; i++) {
		if (b->ordered)
			ord_from_slot(&out->ord[i], &b->slot[i], b->order_how);
		else
			ord_unknown(&out->ord[i], b->order_why);
	}
	out->n = b->n;
}

/* The slot whose UUID starts with prefix: its index, -1 none, -2 several, -3 cannot tell. */
static int slot_by_uuid(const struct gpu_base *b, const char *prefix)
{
	size_t len = strlen(prefix);
	int found = -1;

	for (uint32_t i = 0; i < b->n; i++) {
		if (!b->slot[i].uuid[0] || b->slot[i].mig)
			return -3;
		if (strncmp(b->slot[i].uuid, prefix, len) != 0)
			continue;
		if (found >= 0)
			return -2;
		found = (int)i;
	}
	return found;
}

/*
 * A GPU named by UUID (or its prefix) in CUDA_VISIBLE_DEVICES.  Returns 1
 * when o holds the ordinal, 0 when CUDA would end the list here.
 */
static int map_uuid(const struct gpu_base *b, const char *uuid, uint32_t how,
		    const struct gpu_node *nodes, size_t n_nodes, struct gpu_ordinal *o,
		    uint32_t *count)
{
	int i = b->known ? slot_by_uuid(b, uuid) : -3;

	if (i >= 0 && how == GPU_HOW_UUID) {
		ord_from_slot(o, &b->slot[i], how);
		return 1;
	}
	if (i == -1 || i == -2)
		return 0;	/* no such GPU, or a prefix of several: invalid for CUDA */
	/* Whether the process can see it is not known; which GPU it is may be. */
	*count = GPU_COUNT_AT_MOST;
	if (n_nodes == 0) {
		ord_unknown(o, GPU_WHY_NO_NODE_LIST);
		if (strlen(uuid) == 40)
			snprintf(o->uuid, sizeof(o->uuid), "%s", uuid);
		return 1;
	}
	i = gpu_node_by_uuid(nodes, n_nodes, uuid);
	if (i == -1)
		return 0;	/* not on this node at all */
	if (i == -2)
		ord_unknown(o, GPU_WHY_AMBIGUOUS);
	else
		ord_from_node(o, nodes, i, how);
	return 1;
}

/* One CUDA_VISIBLE_DEVICES entry; returns 0 when the list ends before it. */
static int map_ref(const struct gpu_base *b, const struct gpu_ref *r, const struct gpu_node *nodes,
		   size_t n_nodes, struct gpu_ordinal *o, uint32_t *count)
{
	char parent[GPU_UUID_MAX];

	switch (r->kind) {
	case GPU_REF_INDEX:
		if (!b->known) {
			*count = GPU_COUNT_AT_MOST;
			ord_unknown(o, b->why);
			return 1;
		}
		if (r->index >= b->n)
			return 0;	/* NVIDIA: "only the devices whose index precedes" */
		if (b->ordered)
			ord_from_slot(o, &b->slot[r->index], b->order_how);
		else
			ord_unknown(o, b->order_why);
		return 1;
	case GPU_REF_UUID:
		return map_uuid(b, r->id, GPU_HOW_UUID, nodes, n_nodes, o, count);
	case GPU_REF_MIG:
		if (gpu_ref_mig_parent(r, parent, sizeof(parent)) == 0) {
			/* Whether that GPU has this instance is not known. */
			struct gpu_base none = { .known = 0 };

			return map_uuid(&none, parent, GPU_HOW_MIG_PARENT, nodes, n_nodes, o, count);
		}
		*count = GPU_COUNT_AT_MOST;
		ord_unknown(o, GPU_WHY_MIG);
		return 1;
	default:
		return 0;
	}
}

static void map_list(const struct gpu_base *b, const struct gpu_visible *cv,
		     const struct gpu_node *nodes, size_t n_nodes, struct gpu_map *out)
{
	uint32_t count = GPU_COUNT_EXACT, k;

	for (k = 0; k < cv->n; k++)
		if (!map_ref(b, &cv->ref[k], nodes, n_nodes, &out->ord[k], &count))
			break;
	out->n = k;
	out->count = count;
}

/* The node behind a resolved ordinal: its position in nodes[], or -1. */
static int node_of(const struct gpu_ordinal *o, const struct gpu_node *nodes, size_t n_nodes)
{
	for (size_t i = 0; i < n_nodes; i++)
		if ((o->uuid[0] && strcmp(o->uuid, nodes[i].uuid) == 0) ||
		    (!o->uuid[0] && o->index >= 0 && o->index == nodes[i].index))
			return (int)i;
	return -1;
}

/* The open device nodes: one ordinal and one node settle it; mismatches are flagged. */
static void use_fds(const struct gpu_fds *fds, const struct gpu_node *nodes, size_t n_nodes,
		    struct gpu_map *out)
{
	int m = fds ? gpu_fds_single(fds) : -1;

	if (!fds)
		return;
	if (out->n == 1 && m >= 0 && !resolved(&out->ord[0])) {
		ord_unknown(&out->ord[0], GPU_HOW_OPEN_NODE);
		out->ord[0].minor = m;
		for (size_t i = 0; i < n_nodes; i++)
			if (nodes[i].minor == m)
				ord_from_node(&out->ord[0], nodes, (int)i, GPU_HOW_OPEN_NODE);
		out->ord[0].how = GPU_HOW_OPEN_NODE;
	}
	for (uint32_t k = 0; k < out->n && fds->n > 0; k++)
		if (resolved(&out->ord[k]) && out->ord[k].minor >= 0 &&
		    !gpu_fds_has(fds, (uint32_t)out->ord[k].minor))
			out->flags |= GPU_MAP_F_NODE_MISMATCH;
}

/* Which node GPUs are, or may be, behind the ordinals. */
static void set_candidates(const struct gpu_base *b, const struct gpu_fds *fds,
			   const struct gpu_node *nodes, size_t n_nodes, struct gpu_map *out)
{
	/* AT_MOST only says some listed ordinal may not exist: not open-ended. */
	int open_ended = out->count == GPU_COUNT_UNKNOWN;

	for (uint32_t k = 0; k < out->n; k++) {
		int i = resolved(&out->ord[k]) ? node_of(&out->ord[k], nodes, n_nodes) : -1;

		if (i >= 0)
			out->candidates |= 1ull << i;
		else
			open_ended = 1;
	}
	if (!open_ended)
		return;
	if (b->known) {
		for (uint32_t s = 0; s < b->n; s++)
			if (b->slot[s].node >= 0)
				out->candidates |= 1ull << b->slot[s].node;
	} else if (fds) {
		/* Whatever it has open it can see. */
		for (size_t i = 0; i < n_nodes; i++)
			if (nodes[i].minor >= 0 && gpu_fds_has(fds, (uint32_t)nodes[i].minor))
				out->candidates |= 1ull << i;
	}
}

/* The ordinals from base b and the process's environment. */
static void map_env(const struct proc_env *env, const struct gpu_base *b,
		    const struct gpu_node *nodes, size_t n_nodes, struct gpu_map *out)
{
	struct gpu_visible cv;

	memset(out, 0, sizeof(*out));
	out->flags = b->flags;
	switch (env->cuda_visible_devices.state) {
	case PROC_ENV_ABSENT:
		map_all(b, out);
		break;
	case PROC_ENV_SET:
		gpu_visible_parse_cuda(env->cuda_visible_devices.value, &cv);
		out->cuda_flags = cv.flags;
		map_list(b, &cv, nodes, n_nodes, out);
		break;
	default:
		out->why = GPU_WHY_INVALID_ENV;
		break;
	}
}

/* Every ordinal resolved to a node the process has open. */
static int all_resolved_open(const struct gpu_map *m, const struct gpu_fds *fds)
{
	if (m->n == 0 || m->count != GPU_COUNT_EXACT)
		return 0;
	for (uint32_t k = 0; k < m->n; k++)
		if (!resolved(&m->ord[k]) || m->ord[k].minor < 0 ||
		    !gpu_fds_has(fds, (uint32_t)m->ord[k].minor))
			return 0;
	return 1;
}

int gpu_map_resolve(const struct proc_env *env, int in_container, const struct gpu_fds *fds,
		    const struct gpu_node *nodes, size_t n_nodes, struct gpu_map *out)
{
	struct gpu_base b, nb;
	struct gpu_map narrowed;

	memset(out, 0, sizeof(*out));
	if (n_nodes > GPU_NODES_MAX || (n_nodes > 0 && !nodes))
		return -EINVAL;
	gpu_base_build(env, in_container, fds, nodes, n_nodes, &b);
	map_env(env, &b, nodes, n_nodes, out);
	/*
	 * A Slurm task whose GPUs, by the step's list, are not the ones it has
	 * open has a device cgroup of its own: CUDA numbered what it could
	 * open.  Taken where that reading puts every ordinal on an open node.
	 */
	nb = b;
	if (fds && !all_resolved_open(out, fds) && gpu_base_only_open(env, fds, nodes, &nb)) {
		map_env(env, &nb, nodes, n_nodes, &narrowed);
		if (all_resolved_open(&narrowed, fds)) {
			*out = narrowed;
			b = nb;
		}
	}
	use_fds(fds, nodes, n_nodes, out);
	set_candidates(&b, fds, nodes, n_nodes, out);
	return 0;
}
