/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Everything the identity modules know about one process, in one call for
 * the collector's /proc scanner: pid in, one fixed-size struct out.  Root.
 * It only gathers; each part says itself what it could not find.
 */
#ifndef ZERNEL_PROC_IDENTITY_H
#define ZERNEL_PROC_IDENTITY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collector/gpu/gpu_fds.h"
#include "collector/gpu/gpu_map.h"
#include "collector/identity/cgroup_id.h"
#include "collector/identity/kube_pods.h"
#include "collector/proc/proc_env.h"

/* What the caller holds for the whole node. */
struct proc_identity_ctx {
	struct kube_pods *kube;		/* NULL: no Kubernetes names */
	const struct gpu_node *gpus;	/* the node's GPUs as NVML gives them, or NULL */
	size_t n_gpus;
};

struct proc_identity {
	int32_t pid;
	int32_t cgroup_err;		/* 0, or what cgroup_id_read returned */
	int32_t env_err;		/* 0, or what parser_environ returned */
	int32_t fds_err;		/* 0, or what gpu_fds_read returned */
	int32_t kube_err;		/* 0, or what kube_pods_lookup returned */
	uint32_t pad;
	struct cgroup_id cgroup;
	struct kube_names kube;		/* all UNKNOWN outside a pod */
	struct proc_env env;
	struct gpu_fds fds;
	struct gpu_map gpus;
};

/*
 * Reads pid's cgroups, environment and open device nodes, looks up its
 * pod's names and maps its CUDA ordinals.  Returns 0, or -ENOENT when the
 * process was gone before anything could be read.  out is always fully
 * written; a part that could not be read has its error in *_err.
 */
int proc_identity_read(pid_t pid, const struct proc_identity_ctx *ctx, struct proc_identity *out);

#endif /* ZERNEL_PROC_IDENTITY_H */
