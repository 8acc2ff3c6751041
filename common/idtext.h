/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Checks for the identity strings the collector takes from places a
 * workload controls (its environment, its cgroup names, file names under
 * /var/log/pods): whatever fails a check is dropped whole, never repaired,
 * so a label either holds what the source said or says "unknown".  Pure
 * functions; no privilege.
 */
#ifndef ZERNEL_IDTEXT_H
#define ZERNEL_IDTEXT_H

#include <stddef.h>

/* A Kubernetes pod UID in its canonical 8-4-4-4-12 form, plus NUL. */
#define IDTEXT_POD_UID_LEN	37
/* A container id as the runtimes print it: 64 lower-case hex digits, plus NUL. */
#define IDTEXT_CONTAINER_ID_LEN	65

/*
 * 1 when s[0..n) is well-formed UTF-8 (no overlong forms, no surrogates,
 * nothing past U+10FFFF) holding no control character (C0, DEL, C1) and no
 * NUL; else 0.
 */
int idtext_printable_utf8(const char *s, size_t n);

/*
 * Copies s[0..n) into dst[len] as a string when it is printable UTF-8 and
 * fits.  Returns 0, -ENAMETOOLONG, or -EINVAL; dst is "" on error.
 */
int idtext_copy(char *dst, size_t len, const char *s, size_t n);

/* 1 when s[0..n) is n > 0 lower-case hex digits. */
int idtext_is_lower_hex(const char *s, size_t n);

/* 1 when s[0..n) is a container id (64 lower-case hex digits). */
int idtext_is_container_id(const char *s, size_t n);

/*
 * Kubernetes' DNS-1123 rules: a label is 1..63 of [a-z0-9-], starting and
 * ending alphanumeric (namespaces, container names); a subdomain is up to
 * 253 bytes of such labels joined by '.' (pod names).  Neither admits '_',
 * which is what makes "<namespace>_<pod>_<uid>" split one way only.
 */
int idtext_dns_label(const char *s, size_t n);
int idtext_dns_subdomain(const char *s, size_t n);

/*
 * A pod UID: either a UUID whose four separators are sep ('-' as the API
 * prints it, '_' inside systemd unit names where '-' means nesting), or
 * the 32 hex digits the kubelet gives static pods.  Lower-case hex only.
 * Writes the canonical form ('-' separators) into out; returns 0 or
 * -EINVAL.
 */
int idtext_pod_uid(const char *s, size_t n, char sep, char out[IDTEXT_POD_UID_LEN]);

/* 1 when s[0..n) is a pod UID in the canonical form idtext_pod_uid writes. */
int idtext_is_pod_uid(const char *s, size_t n);

/*
 * For a text another process wrote into a field of size bytes: 1 when it
 * ends inside the field and is empty or what admit takes, and then the
 * bytes after its end are cleared, so that nothing rides along; else 0.
 */
int idtext_admit_field(char *field, size_t size, int (*admit)(const char *s, size_t n));

#endif /* ZERNEL_IDTEXT_H */
