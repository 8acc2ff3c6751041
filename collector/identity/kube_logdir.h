/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The kubelet's log directories searched: the finding half of kube_pods,
 * which adds the caches.  See kube_pods.h for the layout.  Directories are
 * passed as open descriptors; nothing here follows a symbolic link.  The
 * names of the entries that may be the answer are parsed by the parsers
 * given (in the collector, its parser child's).
 */
#ifndef ZERNEL_KUBE_LOGDIR_H
#define ZERNEL_KUBE_LOGDIR_H

#include <stddef.h>
#include <stdint.h>

#include "collector/identity/kube_names.h"
#include "collector/identity/kube_pods.h"

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
int kube_logdir_find_pod(int pods_fd, const char *uid, const struct kube_parsers *parse,
			 struct kube_pod_entry *e, struct kube_scan *sc);
/*
 * Looks through the containers directory for the one link ending in
 * "-<id>.log" whose target names the pod uid, and checks that the pod
 * directory holds a real directory for the container.  Returns 0 with *e
 * filled, or -ENOENT with sc->why set.
 */
int kube_logdir_find_container(int containers_fd, int pods_fd, const char *id,
			       const char *uid, const struct kube_parsers *parse,
			       struct kube_container_entry *e, struct kube_scan *sc);
/* 1 when "<namespace>_<pod>_<uid>" is still a real directory, 0 when gone, -errno. */
int kube_logdir_pod_exists(int pods_fd, const struct kube_pod_entry *e);

#endif /* ZERNEL_KUBE_LOGDIR_H */
