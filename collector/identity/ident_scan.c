/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Workload identity of watched processes (see ident_scan.h).  Root, in the
 * collector's main loop.  Every text copied here was already checked by
 * the parser that found it; this file only chooses and copies whole
 * values, never a prefix: a value that does not fit is left unknown.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/probe_abi.h"
#include "collector/identity/ident_scan.h"
#include "collector/identity/ident_source.h"
#include "collector/parser/parser.h"
#include "collector/proc/proc_stat.h"

_Static_assert(CGROUP_RUNTIME_NONE == SHM_ID_RUNTIME_NONE &&
	       CGROUP_RUNTIME_UNKNOWN == SHM_ID_RUNTIME_UNKNOWN &&
	       CGROUP_RUNTIME_CONTAINERD == SHM_ID_RUNTIME_CONTAINERD &&
	       CGROUP_RUNTIME_CRIO == SHM_ID_RUNTIME_CRIO &&
	       CGROUP_RUNTIME_DOCKER == SHM_ID_RUNTIME_DOCKER &&
	       CGROUP_RUNTIME_PODMAN == SHM_ID_RUNTIME_PODMAN,
	       "the segment's runtimes are cgroup_id's");
_Static_assert(IDTEXT_CONTAINER_ID_LEN <= SHM_ID_CONTAINER_ID_LEN &&
	       IDTEXT_POD_UID_LEN <= SHM_ID_POD_UID_LEN &&
	       KUBE_NAMESPACE_MAX <= SHM_ID_NAMESPACE_LEN &&
	       KUBE_POD_NAME_MAX <= SHM_ID_POD_LEN &&
	       KUBE_CONTAINER_MAX <= SHM_ID_CONTAINER_LEN &&
	       CGROUP_ID_STEP_MAX <= SHM_ID_STEP_LEN,
	       "every name the parsers keep fits its field");
_Static_assert(PROC_ENV_RANK_MAX == SHM_ID_RANK_MAX, "one bound on ranks");

struct ident_scan {
	struct kube_pods *kube;		/* NULL: no Kubernetes names */
	struct cgroup_id cg;		/* large: kept off the stack */
	struct proc_env env;
	struct kube_names names;
	uint64_t parsed, kept;		/* refreshes that asked the parser child, that did not */
};

struct ident_scan *ident_scan_new(const char *pods_dir, const char *containers_dir)
{
	struct ident_scan *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (pods_dir && pods_dir[0]) {
		s->kube = kube_pods_new(pods_dir, containers_dir && containers_dir[0] ?
						  containers_dir : NULL, &parser_kube_parsers);
		if (!s->kube) {
			free(s);
			return NULL;
		}
	}
	return s;
}

void ident_scan_free(struct ident_scan *s)
{
	if (!s)
		return;
	kube_pods_free(s->kube);
	/* The environment buffer held only allowlisted values; wiped anyway. */
	memset(&s->env, 0, sizeof(s->env));
	free(s);
}

/*
 * Copies the string in src[srclen] whole when it is terminated there and
 * fits dst[len], else leaves dst "" (unknown).
 */
static void copy_whole(char *dst, size_t len, const char *src, size_t srclen)
{
	size_t n = strnlen(src, srclen);

	memset(dst, 0, len);
	if (n < srclen && n < len)
		memcpy(dst, src, n);
}

#define COPY(dst, src)	copy_whole((dst), sizeof(dst), (src), sizeof(src))

/* The first variable of the list that is set, else -1. */
static int32_t first_num(const struct proc_env_num *a, const struct proc_env_num *b,
			 const struct proc_env_num *c)
{
	const struct proc_env_num *v[3] = { a, b, c };

	for (int i = 0; i < 3; i++)
		if (v[i] && v[i]->state == PROC_ENV_SET && v[i]->value <= SHM_ID_RANK_MAX)
			return (int32_t)v[i]->value;
	return -1;
}

/* The kubelet's names in out, in place of those it held (kube NULL: none). */
static void names_into(const struct kube_names *kube, struct shm_identity *out)
{
	memset(out->namespace, 0, sizeof(out->namespace));
	memset(out->pod, 0, sizeof(out->pod));
	memset(out->container, 0, sizeof(out->container));
	out->flags &= ~(uint32_t)SHM_ID_F_POD_GONE;
	if (kube && kube->pod_state != KUBE_NAMES_UNKNOWN) {
		COPY(out->namespace, kube->namespace);
		COPY(out->pod, kube->pod);
		if (kube->pod_state == KUBE_NAMES_GONE)
			out->flags |= SHM_ID_F_POD_GONE;
	}
	if (kube && kube->container_state != KUBE_NAMES_UNKNOWN)
		COPY(out->container, kube->container);
}

void ident_scan_build(const struct cgroup_id *cg, const struct kube_names *kube,
		      const struct proc_env *env, struct shm_identity *out)
{
	memset(out, 0, sizeof(*out));
	out->runtime = cg->runtime <= SHM_ID_RUNTIME_MAX ? cg->runtime : SHM_ID_RUNTIME_UNKNOWN;
	COPY(out->container_id, cg->container_id);
	COPY(out->pod_uid, cg->pod_uid);
	names_into(kube, out);

	/* Slurm: the cgroup says which job a process is in; the environment can only claim. */
	/* Slurm's job ids are 32-bit: a larger number is not one of its jobs. */
	if (cg->slurm_job_id && cg->slurm_job_id <= SHM_ID_SLURM_JOB_MAX) {
		out->slurm_job_id = cg->slurm_job_id;
		COPY(out->slurm_step, cg->slurm_step);
	} else if (env->slurm_job_id.state == PROC_ENV_SET &&
		   env->slurm_job_id.value <= SHM_ID_SLURM_JOB_MAX) {
		out->slurm_job_id = env->slurm_job_id.value;
		if (env->slurm_step_id.state == PROC_ENV_SET)
			snprintf(out->slurm_step, sizeof(out->slurm_step), "%llu",
				 (unsigned long long)env->slurm_step_id.value);
	}

	out->rank = first_num(&env->rank, &env->ompi_rank, &env->slurm_procid);
	out->local_rank = first_num(&env->local_rank, &env->ompi_local_rank, &env->slurm_localid);
	out->world_size = first_num(&env->world_size, &env->ompi_size, &env->slurm_ntasks);
	out->group_rank = first_num(&env->group_rank, NULL, NULL);
	if (env->run_id.state == PROC_ENV_SET)
		COPY(out->run_id, env->run_id.value);
}

/* The kubelet's names of the pod and container id holds, looked up again. */
static void names_again(struct ident_scan *s, struct shm_identity *id)
{
	memset(&s->names, 0, sizeof(s->names));
	if (s->kube && id->pod_uid[0])
		kube_pods_lookup(s->kube, id->pod_uid, id->container_id, &s->names);
	names_into(&s->names, id);
}

/* The identity parsed in the child from src's files, which it closes. */
static int read_source(struct ident_scan *s, struct ident_source *src, struct shm_identity *out,
		       int *retry_soon)
{
	int cg_err, env_err;

	*retry_soon = 0;
	if (src->cgroup_fd < 0) {
		cgroup_id_reset(&s->cg);
		cg_err = src->cgroup_fd;
	} else {
		cg_err = parser_cgroup_fd(src->cgroup_fd, &s->cg);
	}
	src->cgroup_fd = -EBADF;
	if (cg_err == -ENOENT) {
		ident_source_close(src);
		return -ENOENT;
	}
	if (src->environ_fd < 0) {
		memset(&s->env, 0, sizeof(s->env));
		env_err = src->environ_fd;
	} else {
		env_err = parser_environ_fd(src->environ_fd, &s->env);
	}
	src->environ_fd = -EBADF;
	if (env_err == -ENOENT)
		return -ENOENT;
	/* Caught inside execve, or a zombie: the environment may come later. */
	if (env_err == -ENODATA)
		*retry_soon = 1;
	ident_scan_build(&s->cg, NULL, &s->env, out);
	memset(&s->env, 0, sizeof(s->env));
	/* By the pod UID and container id the row now holds whole, as the cgroup file gave them. */
	names_again(s, out);
	return 0;
}

int ident_scan_read(struct ident_scan *s, pid_t pid, struct shm_identity *out,
		    int *retry_soon)
{
	struct ident_source src;

	ident_source_open(pid, &src);
	return read_source(s, &src, out, retry_soon);
}

/*
 * Whether pid, read just now, is still the process of its row (whose exit
 * record may have been lost, the pid taken since): the row's start time
 * against /proc's, read after the identity.
 */
static int same_process(const struct agg *a, uint32_t pid)
{
	uint64_t row = 0, now = 0;

	if (agg_proc_start_time(a, pid, &row) != 0 || !row)
		return 1;
	return proc_start_time(pid, &now) == 0 && ZW_SAME_START(now, row);
}

unsigned int ident_scan_refresh(struct ident_scan *s, struct agg *a, uint64_t now_ns)
{
	struct shm_identity id;
	uint32_t cursor = 0, pid;
	unsigned int n = 0;

	while (n < IDENT_READS_PER_PASS && agg_proc_next(a, &cursor, &pid)) {
		uint64_t t = agg_proc_identity_time(a, pid), parsed_from;
		struct ident_source src;
		int retry_soon;

		if (t && now_ns - t < IDENT_REFRESH_NS)
			continue;
		n++;
		ident_source_open((pid_t)pid, &src);
		/* Its files as they were when parsed: only the pod's names may have come since. */
		if (src.digest && agg_proc_identity(a, pid, &id, &parsed_from) == 0 &&
		    parsed_from == src.digest) {
			ident_source_close(&src);
			names_again(s, &id);
			agg_proc_set_identity(a, pid, &id, now_ns);
			s->kept++;
			continue;
		}
		if (read_source(s, &src, &id, &retry_soon) < 0)
			continue;	/* gone: the exit sweep evicts it */
		if (!same_process(a, pid))
			continue;	/* its pid another process's: the sweep evicts it too */
		/* Stamped earlier than now, so that it comes due again after IDENT_RETRY_NS. */
		if (retry_soon && now_ns > IDENT_REFRESH_NS)
			agg_proc_set_identity(a, pid, &id, now_ns - IDENT_REFRESH_NS + IDENT_RETRY_NS);
		else
			agg_proc_set_identity(a, pid, &id, now_ns);
		agg_proc_set_identity_source(a, pid, retry_soon ? 0 : src.digest);
		s->parsed++;
	}
	return n;
}

void ident_scan_counts(const struct ident_scan *s, uint64_t *parsed, uint64_t *kept)
{
	*parsed = s->parsed;
	*kept = s->kept;
}
