/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The kubelet's log directory names, parsed (the layout is in kube_pods.h):
 * a pod directory "<namespace>_<pod>_<uid>", a container link
 * "<pod>_<namespace>_<container>-<id>.log" and its target.  The names are
 * the node's, made from what users put in pod specs, so the collector has
 * its parser child parse them (parser.h) and admits an answer only when
 * each of its texts is of its kind.  Pure; no privilege.
 */
#ifndef ZERNEL_KUBE_NAMES_H
#define ZERNEL_KUBE_NAMES_H

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
int kube_names_parse_pod_dir(const char *name, size_t n, struct kube_pod_entry *e);
/* Splits "<pod>_<namespace>_<container>-<id>.log"; returns 0 or -EINVAL. */
int kube_names_parse_link(const char *name, size_t n, struct kube_container_entry *e);
/*
 * Checks a link target, ".../<namespace>_<pod>_<uid>/<container>/<N>.log",
 * against e and fills e->uid from it; returns 0 or -EINVAL.
 */
int kube_names_parse_target(const char *target, size_t n, struct kube_container_entry *e);

/*
 * A container link's name and its target, parsed together: 0 with e
 * filled (the pod's uid from the target), or -EINVAL with e zeroed.
 */
int kube_names_link(const char *name, size_t n, const char *target, size_t tn,
		    struct kube_container_entry *e);

/* The parsers a search uses: in this process, or the parser child's. */
struct kube_parsers {
	int (*pod_dir)(const char *name, size_t n, struct kube_pod_entry *e);
	int (*link)(const char *name, size_t n, const char *target, size_t tn,
		    struct kube_container_entry *e);
};

/* kube_names_parse_pod_dir and kube_names_link, here. */
extern const struct kube_parsers kube_parsers_here;

/*
 * 0 when e holds what a parse gives: a canonical pod UID (and a container
 * id), DNS names where names go, each terminated inside its field; the
 * bytes after each text's end are then cleared.  -EPROTO otherwise.  For
 * an answer from another process (the parser child).
 */
int kube_names_admit_pod(struct kube_pod_entry *e);
int kube_names_admit_container(struct kube_container_entry *e);

#endif /* ZERNEL_KUBE_NAMES_H */
