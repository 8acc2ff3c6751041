/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The identity labels of a watched process (zernel_process_info, the
 * feed's processes): pod, namespace, container, runtime, ranks, job.  They
 * come from the segment's identity table, whose texts a workload chose
 * (cgroup names, directory names, its environment), so each is checked
 * again here: a text that is not terminated inside its field, is empty,
 * or is not printable UTF-8 says "unknown", as does a row whose pid is not
 * its process's.  Pure; no privilege.
 */
#include <stdio.h>
#include <string.h>

#include "catalog/cat_derive.h"
#include "common/utf8.h"

#define UNKNOWN	"unknown"

/* The identity row of a process row, or NULL. */
static const struct shm_identity *ident_of(const struct cat_input *in, const void *row)
{
	const struct shm_proc *p = row, *procs;
	const struct shm_identity *ids;
	uint32_t n_procs, n_ids;
	size_t i;

	if (!in || !in->snap)
		return NULL;
	procs = shm_snapshot_procs(in->snap, &n_procs);
	ids = shm_snapshot_identity(in->snap, &n_ids);
	if (!procs || !ids || p < procs || p >= procs + n_procs)
		return NULL;
	i = (size_t)(p - procs);
	if (i >= n_ids || ids[i].pid != p->pid || !(ids[i].flags & SHM_ID_F_READ))
		return NULL;
	return &ids[i];
}

static int printable(const char *s, size_t n)
{
	if (!n || !utf8_valid(s, n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f)
			return 0;
		/* C1 controls, U+0080..U+009F: 0xc2 0x80..0x9f in UTF-8. */
		if (c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] < 0xa0)
			return 0;
	}
	return 1;
}

/* A text field of fieldlen bytes, or "unknown". */
static int text_or_unknown(char *buf, size_t len, const char *field, size_t fieldlen)
{
	size_t n = strnlen(field, fieldlen);

	if (n == fieldlen || n >= len || !printable(field, n))
		snprintf(buf, len, "%s", UNKNOWN);
	else
		snprintf(buf, len, "%.*s", (int)n, field);
	return 0;
}

static int num_or_unknown(char *buf, size_t len, int64_t v, int64_t none)
{
	if (v == none || v < 0)
		snprintf(buf, len, "%s", UNKNOWN);
	else
		snprintf(buf, len, "%lld", (long long)v);
	return 0;
}

#define IDENT_TEXT(fn, field)							\
int fn(char *buf, size_t len, const struct cat_input *in, const void *row)	\
{										\
	const struct shm_identity *id = ident_of(in, row);			\
										\
	if (!id)								\
		return text_or_unknown(buf, len, "", 1);			\
	return text_or_unknown(buf, len, id->field, sizeof(id->field));	\
}

#define IDENT_NUM(fn, field, none)						\
int fn(char *buf, size_t len, const struct cat_input *in, const void *row)	\
{										\
	const struct shm_identity *id = ident_of(in, row);			\
										\
	return num_or_unknown(buf, len, id ? (int64_t)id->field : (none), (none));\
}

IDENT_TEXT(cat_text_pod, pod)
IDENT_TEXT(cat_text_namespace, namespace)
IDENT_TEXT(cat_text_container, container)
IDENT_TEXT(cat_text_container_id, container_id)
IDENT_TEXT(cat_text_pod_uid, pod_uid)
IDENT_TEXT(cat_text_slurm_step, slurm_step)
IDENT_TEXT(cat_text_run_id, run_id)
IDENT_NUM(cat_text_slurm_job, slurm_job_id, 0)
IDENT_NUM(cat_text_rank, rank, -1)
IDENT_NUM(cat_text_local_rank, local_rank, -1)
IDENT_NUM(cat_text_world_size, world_size, -1)
IDENT_NUM(cat_text_group_rank, group_rank, -1)

int cat_text_runtime(char *buf, size_t len, const struct cat_input *in, const void *row)
{
	static const char *const names[SHM_ID_RUNTIME_MAX + 1] = {
		UNKNOWN, UNKNOWN, "containerd", "cri-o", "docker", "podman",
	};
	const struct shm_identity *id = ident_of(in, row);

	snprintf(buf, len, "%s", id && id->runtime <= SHM_ID_RUNTIME_MAX ?
		 names[id->runtime] : UNKNOWN);
	return 0;
}

int cat_workload_label(const struct shm_workload *w, unsigned int i, const char **name,
		       char *text, size_t len)
{
	static const char *const name_label[SHM_WORKLOAD_KIND_COUNT] = {
		[SHM_WORKLOAD_POD] = "pod", [SHM_WORKLOAD_POD_UID] = "pod_uid",
		[SHM_WORKLOAD_CONTAINER] = "container_id",
		[SHM_WORKLOAD_SLURM_JOB] = "slurm_job",
		[SHM_WORKLOAD_RUN] = "torchelastic_run_id",
	};

	if (w->kind >= SHM_WORKLOAD_KIND_COUNT || !name_label[w->kind])
		return -1;	/* the node: no label */
	if (w->kind == SHM_WORKLOAD_POD && i == 0) {
		*name = "namespace";
		return text_or_unknown(text, len, w->namespace, sizeof(w->namespace));
	}
	if (i != (w->kind == SHM_WORKLOAD_POD))
		return -1;
	*name = name_label[w->kind];
	return text_or_unknown(text, len, w->name, sizeof(w->name));
}
