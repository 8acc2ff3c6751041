/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The kubelet's log directory names, parsed and searched: the finding half
 * of kube_pods, which adds the caches.  See kube_pods.h for the layout.
 * Directories are passed as open descriptors; nothing here follows a
 * symbolic link.
 */
#ifndef ZERNEL_KUBE_LOGDIR_H
#define ZERNEL_KUBE_LOGDIR_H

#include <stddef.h>
#include <stdint.h>

#include "collector/identity/kube_pods.h"

struct kube_pod_entry {
	char uid[IDTEXT_POD_UID_LEN];
	char namespace[KUBE_NAMESPACE_MAX];
	char pod[KUBE_POD_NAME_MAX];
};

struct kube_container_entry {
	char id[IDTEXT_CONTAINER_ID_LEN];
	char uid[IDTEXT_POD_UID_LEN];		/* from the link's target */
	char namespace[KUBE_NAMESPACE_MAX];
	char pod[KUBE_POD_NAME_MAX];
	char container[KUBE_CONTAINER_MAX];
};

/* Splits "<namespace>_<pod>_<uid>"; returns 0 or -EINVAL. */
int kube_logdir_parse_pod_dir(const char *name, size_t n, struct kube_pod_entry *e);
/* Splits "<pod>_<namespace>_<container>-<id>.log"; returns 0 or -EINVAL. */
int kube_logdir_parse_link(const char *name, size_t n, struct kube_container_entry *e);
/*
 * Checks a link target, ".../<namespace>_<pod>_<uid>/<container>/<N>.log",
 * against e and fills e->uid from it; returns 0 or -EINVAL.
 */
int kube_logdir_parse_target(const char *target, size_t n, struct kube_container_entry *e);

/* What a scan saw, besides the answer. */
struct kube_scan {
	uint32_t why;			/* enum kube_names_why when not found */
	uint32_t ignored;		/* malformed entries passed over */
	uint32_t cut;			/* 1 when stopped at KUBE_SCAN_MAX */
};

/*
 * Looks through the pods directory for the one real directory (not a
 * link) ending in "_<uid>".  Returns 0 with *e filled, or -ENOENT with
 * sc->why set.
 */
int kube_logdir_find_pod(int pods_fd, const char *uid, struct kube_pod_entry *e,
			 struct kube_scan *sc);
/*
 * Looks through the containers directory for the one link ending in
 * "-<id>.log" whose target names the pod uid, and checks that the pod
 * directory holds a real directory for the container.  Returns 0 with *e
 * filled, or -ENOENT with sc->why set.
 */
int kube_logdir_find_container(int containers_fd, int pods_fd, const char *id,
			       const char *uid, struct kube_container_entry *e,
			       struct kube_scan *sc);
/* 1 when "<namespace>_<pod>_<uid>" is still a real directory, 0 when gone, -errno. */
int kube_logdir_pod_exists(int pods_fd, const struct kube_pod_entry *e);

#endif /* ZERNEL_KUBE_LOGDIR_H */
