/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Who each watched process is, for the segment's identity table: read from
 * /proc/PID/cgroup (container runtime and id, pod UID, Slurm job and step;
 * collector/identity/cgroup_id.h), the kubelet's log directories (pod, namespace,
 * container; collector/identity/kube_pods.h) and an allowlist of environment
 * variables (collector/proc/proc_env.h).  Runs in the collector as root (the
 * environment of another user's process needs CAP_SYS_PTRACE); no API
 * server, no network.
 *
 * Where the environment and the cgroup disagree the cgroup wins: a
 * workload chooses its environment, not its cgroup.  Ranks fall back from
 * torch.distributed's variables to Open MPI's and then Slurm's task
 * numbers (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID; LOCAL_RANK,
 * OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID; WORLD_SIZE,
 * OMPI_COMM_WORLD_SIZE, SLURM_NTASKS), since each launcher sets only its
 * own.  Nothing else of the environment is kept.
 */
#ifndef ZERNEL_IDENT_SCAN_H
#define ZERNEL_IDENT_SCAN_H

#include <stdint.h>
#include <sys/types.h>

#include "collector/agg/agg.h"
#include "collector/identity/cgroup_id.h"
#include "collector/identity/kube_pods.h"
#include "collector/proc/proc_env.h"
#include "shm/shm_layout.h"

/* A process's identity is read again this often (a pod's names can appear late). */
#define IDENT_REFRESH_NS	(10ull * 1000000000ull)
/* ... and sooner when its environment could not be read yet (caught in execve). */
#define IDENT_RETRY_NS		(1ull * 1000000000ull)
/* Processes read in one pass at most, so a burst of new ones cannot stall a publish. */
#define IDENT_READS_PER_PASS	256u

struct ident_scan;

/*
 * pods_dir and containers_dir: the kubelet's log directories; NULL or ""
 * for none (then no Kubernetes names).  Returns NULL with errno set when
 * memory is short.
 */
struct ident_scan *ident_scan_new(const char *pods_dir, const char *containers_dir);
void ident_scan_free(struct ident_scan *s);

/*
 * The identity row of what the parsers found; pure, for tests and the
 * simulator's checks.  kube may be NULL.
 */
void ident_scan_build(const struct cgroup_id *cg, const struct kube_names *kube,
		      const struct proc_env *env, struct shm_identity *out);

/*
 * Reads pid's identity.  Returns 0, or -ENOENT when the process is gone;
 * *retry_soon is 1 when part of it could not be read yet.
 */
int ident_scan_read(struct ident_scan *s, pid_t pid, struct shm_identity *out,
		    int *retry_soon);

/*
 * Reads the identity of the watched processes that are due (never read,
 * or read IDENT_REFRESH_NS ago), at most IDENT_READS_PER_PASS of them, and
 * hands it to the aggregation.  Returns the number read.  A process whose
 * files hold what they held at its last parse is not parsed again.
 */
unsigned int ident_scan_refresh(struct ident_scan *s, struct agg *a, uint64_t now_ns);

/*
 * Refreshes so far that parsed a process's files (in the parser child),
 * and those that found them as they were parsed last and kept what was
 * parsed (ident_source.h), the pod's names looked up again.
 */
void ident_scan_counts(const struct ident_scan *s, uint64_t *parsed, uint64_t *kept);

#endif /* ZERNEL_IDENT_SCAN_H */
