/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The kubelet's log directory names, parsed; see kube_names.h.  Pure; no
 * privilege (the parser child runs it).
 */
#include <errno.h>
#include <string.h>

#include "collector/identity/kube_names.h"

/* Copies s[0..n) into dst; the caller has checked that it fits. */
static void put(char *dst, const char *s, size_t n)
{
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* Splits "a_b_c" at its only two '_'; returns 0 or -EINVAL. */
static int split3(const char *s, size_t n, size_t *a, size_t *b)
{
	const char *u1 = memchr(s, '_', n), *u2;

	if (!u1)
		return -EINVAL;
	u2 = memchr(u1 + 1, '_', n - (size_t)(u1 + 1 - s));
	if (!u2 || memchr(u2 + 1, '_', n - (size_t)(u2 + 1 - s)))
		return -EINVAL;
	*a = (size_t)(u1 - s);
	*b = (size_t)(u2 - s);
	return 0;
}

int kube_names_parse_pod_dir(const char *name, size_t n, struct kube_pod_entry *e)
{
	size_t a, b;

	memset(e, 0, sizeof(*e));
	if (split3(name, n, &a, &b) != 0 || !idtext_dns_label(name, a) ||
	    !idtext_dns_subdomain(name + a + 1, b - a - 1) ||
	    idtext_pod_uid(name + b + 1, n - b - 1, '-', e->uid) != 0) {
		memset(e, 0, sizeof(*e));
		return -EINVAL;
	}
	put(e->namespace, name, a);
	put(e->pod, name + a + 1, b - a - 1);
	return 0;
}

int kube_names_parse_link(const char *name, size_t n, struct kube_container_entry *e)
{
	const size_t tail = 1 + (IDTEXT_CONTAINER_ID_LEN - 1) + 4;	/* "-<id>.log" */
	const char *id;
	size_t a, b, rest;

	memset(e, 0, sizeof(*e));
	if (n <= tail || memcmp(name + n - 4, ".log", 4) != 0 || name[n - tail] != '-')
		return -EINVAL;
	id = name + n - tail + 1;
	rest = n - tail;
	if (!idtext_is_container_id(id, IDTEXT_CONTAINER_ID_LEN - 1) ||
	    split3(name, rest, &a, &b) != 0 || !idtext_dns_subdomain(name, a) ||
	    !idtext_dns_label(name + a + 1, b - a - 1) || !idtext_dns_label(name + b + 1, rest - b - 1))
		return -EINVAL;
	put(e->id, id, IDTEXT_CONTAINER_ID_LEN - 1);
	put(e->pod, name, a);
	put(e->namespace, name + a + 1, b - a - 1);
	put(e->container, name + b + 1, rest - b - 1);
	return 0;
}

/* The last component of s[0..*n), removed from *n. */
static const char *last_component(const char *s, size_t *n, size_t *len)
{
	size_t end = *n, start;

	if (end == 0)
		return NULL;
	start = end;
	while (start > 0 && s[start - 1] != '/')
		start--;
	*len = end - start;
	*n = start ? start - 1 : 0;
	return s + start;
}

int kube_names_parse_target(const char *target, size_t n, struct kube_container_entry *e)
{
	struct kube_pod_entry pod;
	const char *file, *ctr, *dir;
	size_t flen, clen, dlen;

	file = last_component(target, &n, &flen);
	ctr = last_component(target, &n, &clen);
	dir = last_component(target, &n, &dlen);
	if (!file || !ctr || !dir || flen <= 4 || memcmp(file + flen - 4, ".log", 4) != 0)
		return -EINVAL;
	for (size_t i = 0; i < flen - 4; i++)
		if (file[i] < '0' || file[i] > '9')
			return -EINVAL;
	if (kube_names_parse_pod_dir(dir, dlen, &pod) != 0 ||
	    strcmp(pod.namespace, e->namespace) != 0 || strcmp(pod.pod, e->pod) != 0 ||
	    clen != strlen(e->container) || memcmp(ctr, e->container, clen) != 0)
		return -EINVAL;
	memcpy(e->uid, pod.uid, sizeof(e->uid));
	return 0;
}

int kube_names_link(const char *name, size_t n, const char *target, size_t tn,
		    struct kube_container_entry *e)
{
	if (kube_names_parse_link(name, n, e) != 0 || kube_names_parse_target(target, tn, e) != 0) {
		memset(e, 0, sizeof(*e));
		return -EINVAL;
	}
	return 0;
}

const struct kube_parsers kube_parsers_here = {
	.pod_dir = kube_names_parse_pod_dir,
	.link = kube_names_link,
};

int kube_names_admit_pod(struct kube_pod_entry *e)
{
	/* A parse fills every part. */
	if (!e->uid[0] || !e->namespace[0] || !e->pod[0])
		return -EPROTO;
	return idtext_admit_field(e->uid, sizeof(e->uid), idtext_is_pod_uid) &&
	       idtext_admit_field(e->namespace, sizeof(e->namespace), idtext_dns_label) &&
	       idtext_admit_field(e->pod, sizeof(e->pod), idtext_dns_subdomain) ? 0 : -EPROTO;
}

int kube_names_admit_container(struct kube_container_entry *e)
{
	if (!e->id[0] || !e->uid[0] || !e->namespace[0] || !e->pod[0] || !e->container[0])
		return -EPROTO;
	return idtext_admit_field(e->id, sizeof(e->id), idtext_is_container_id) &&
	       idtext_admit_field(e->uid, sizeof(e->uid), idtext_is_pod_uid) &&
	       idtext_admit_field(e->namespace, sizeof(e->namespace), idtext_dns_label) &&
	       idtext_admit_field(e->pod, sizeof(e->pod), idtext_dns_subdomain) &&
	       idtext_admit_field(e->container, sizeof(e->container), idtext_dns_label) ? 0 : -EPROTO;
}
