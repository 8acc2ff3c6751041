/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Kubernetes names for a pod UID and a container id, without an API
 * server: from the directories the kubelet keeps for container logs.  The
 * collector (root) reads them from the node, or a DaemonSet from a
 * read-only mount of /var/log.
 *
 *   /var/log/pods/<namespace>_<pod-name>_<pod-uid>/<container-name>/<restart>.log
 *   /var/log/containers/<pod-name>_<namespace>_<container-name>-<container-id>.log
 *       -> /var/log/pods/<namespace>_<pod-name>_<pod-uid>/<container-name>/<restart>.log
 *
 * Namespaces and container names are DNS labels and pod names DNS
 * subdomains: none holds '_', so each name splits one way only; entries
 * whose parts are not such names are ignored.  The pod directory gives the
 * namespace and pod name; the container name needs the container's link
 * in /var/log/containers, whose target must name the same pod UID and an
 * existing container directory of that pod.  Without that evidence the
 * container name is unknown: a pod's one container directory might belong
 * to an init container, so it is never taken as the answer.
 *
 * Symbolic links among the pod directories are not followed, and a
 * container link is read, never followed, so nothing outside the two
 * directories is looked at.
 *
 * A UID names one pod for ever, and a container id one container, so a
 * name once found stays true: when the pod's directory disappears (the pod
 * was deleted while its processes still run) the last known names are
 * kept, marked KUBE_NAMES_GONE.  Lookups are cached, in bounded tables
 * evicted least recently used first; misses are cached only while the
 * directory stays unchanged, so a pod that starts later is found.
 */
#ifndef ZERNEL_KUBE_PODS_H
#define ZERNEL_KUBE_PODS_H

#include <stdint.h>

#include "common/idtext.h"

#define KUBE_PODS_DIR		"/var/log/pods"
#define KUBE_CONTAINERS_DIR	"/var/log/containers"

#define KUBE_NAMESPACE_MAX	64	/* DNS label: 63, plus NUL */
#define KUBE_POD_NAME_MAX	254	/* DNS subdomain: 253, plus NUL */
#define KUBE_CONTAINER_MAX	64	/* DNS label */

/* Cache sizes: a node runs up to a few hundred pods. */
#define KUBE_PODS_CACHE		512
#define KUBE_CONTAINERS_CACHE	2048
#define KUBE_MISSES_CACHE	256
/* Directory entries looked at in one scan at most. */
#define KUBE_SCAN_MAX		100000

enum kube_names_state {
	KUBE_NAMES_UNKNOWN = 0,	/* not found; why says why */
	KUBE_NAMES_FOUND,
	KUBE_NAMES_GONE,	/* found before, directory since removed: last known names */
};

enum kube_names_why {
	KUBE_WHY_NONE = 0,
	KUBE_WHY_NOT_ASKED,	/* no container id given */
	KUBE_WHY_NO_SOURCE,	/* the directory is not configured or cannot be read */
	KUBE_WHY_NO_ENTRY,	/* nothing there names it */
	KUBE_WHY_AMBIGUOUS,	/* more than one entry names it */
	KUBE_WHY_BAD_ENTRY,	/* an entry names it but fails the checks above */
};

struct kube_names {
	uint32_t pod_state;		/* enum kube_names_state: namespace and pod */
	uint32_t pod_why;		/* enum kube_names_why when UNKNOWN */
	uint32_t container_state;
	uint32_t container_why;
	char namespace[KUBE_NAMESPACE_MAX];
	char pod[KUBE_POD_NAME_MAX];
	char container[KUBE_CONTAINER_MAX];
};

struct kube_pods_stats {
	uint64_t lookups;
	uint64_t scans;			/* directory scans (cache misses) */
	uint64_t entries_ignored;	/* entries that are not well-formed */
	uint64_t evictions;
	uint64_t scans_cut;		/* scans stopped at KUBE_SCAN_MAX */
};

struct kube_pods;
struct kube_parsers;

/*
 * Opens the two directories (containers_dir may be NULL: container names
 * then stay unknown).  A directory that cannot be opened is reported by
 * its lookups as KUBE_WHY_NO_SOURCE; the handle is still made.  The names
 * found are parsed by parse (kube_names.h: the collector gives its parser
 * child's, parser_kube_parsers), which must outlive the handle.  Returns
 * NULL with errno set only when memory is short.
 */
struct kube_pods *kube_pods_new(const char *pods_dir, const char *containers_dir,
			       const struct kube_parsers *parse);
void kube_pods_free(struct kube_pods *kp);

/*
 * Names for pod_uid (canonical form, as cgroup_id gives it) and
 * container_id (64 hex digits, or NULL/"").  out is always fully written.
 * Returns 0, or -EINVAL when pod_uid or container_id is malformed.
 */
int kube_pods_lookup(struct kube_pods *kp, const char *pod_uid, const char *container_id,
		     struct kube_names *out);

void kube_pods_stats(const struct kube_pods *kp, struct kube_pods_stats *st);

#endif /* ZERNEL_KUBE_PODS_H */
