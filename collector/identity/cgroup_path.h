/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The cgroup naming patterns of kubelet, the container runtimes, Slurm and
 * systemd, matched against one cgroup path.  Pure; cgroup_id.c picks the
 * path and calls it.
 */
#ifndef ZERNEL_CGROUP_PATH_H
#define ZERNEL_CGROUP_PATH_H

#include <stddef.h>

#include "collector/identity/cgroup_id.h"

/*
 * Matches path[0..len) (starting with '/') and sets out's runtime,
 * container_id, qos, pod_uid, slurm_* fields and the CONMON, DELEGATED
 * and OUTSIDE_NS flags, or, when none of those is found, unit and slice.
 * Other fields are left alone; the fields it sets must be zero on entry
 * (slurm_uid CGROUP_ID_NO_UID).  Returns 1 when a container, pod or
 * Slurm job was found, 0 when not, -EINVAL when path is not absolute.
 */
int cgroup_path_match(const char *path, size_t len, struct cgroup_id *out);

#endif /* ZERNEL_CGROUP_PATH_H */
