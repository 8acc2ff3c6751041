/* SPDX-License-Identifier: BSD-2-Clause */
/* One process's identity from the identity modules; see proc_identity.h.  Root. */
#include <errno.h>
#include <string.h>

#include "collector/identity/proc_identity.h"
#include "collector/parser/parser.h"

int proc_identity_read(pid_t pid, const struct proc_identity_ctx *ctx, struct proc_identity *out)
{
	memset(out, 0, sizeof(*out));
	out->pid = (int32_t)pid;
	out->cgroup_err = parser_cgroup(pid, &out->cgroup);
	out->env_err = parser_environ(pid, &out->env);
	out->fds_err = gpu_fds_read(pid, &out->fds);
	if (out->cgroup_err == -ENOENT && out->env_err == -ENOENT && out->fds_err == -ENOENT)
		return -ENOENT;
	if (ctx && ctx->kube && out->cgroup.pod_uid[0])
		out->kube_err = kube_pods_lookup(ctx->kube, out->cgroup.pod_uid,
						 out->cgroup.container_id, &out->kube);
	/* A container made by the NVIDIA runtime is the only place NVIDIA_VISIBLE_DEVICES counts. */
	gpu_map_resolve(&out->env, out->cgroup.runtime != CGROUP_RUNTIME_NONE,
			out->fds_err ? NULL : &out->fds, ctx ? ctx->gpus : NULL,
			ctx && ctx->gpus ? ctx->n_gpus : 0, &out->gpus);
	return 0;
}
