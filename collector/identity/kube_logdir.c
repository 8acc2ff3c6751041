/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parses and searches the kubelet's log directories; see kube_logdir.h.
 * Root, or a read-only mount of the node's /var/log.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/identity/kube_logdir.h"

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

int kube_logdir_parse_pod_dir(const char *name, size_t n, struct kube_pod_entry *e)
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

int kube_logdir_parse_link(const char *name, size_t n, struct kube_container_entry *e)
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

int kube_logdir_parse_target(const char *target, size_t n, struct kube_container_entry *e)
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
	if (kube_logdir_parse_pod_dir(dir, dlen, &pod) != 0 ||
	    strcmp(pod.namespace, e->namespace) != 0 || strcmp(pod.pod, e->pod) != 0 ||
	    clen != strlen(e->container) || memcmp(ctr, e->container, clen) != 0)
		return -EINVAL;
	memcpy(e->uid, pod.uid, sizeof(e->uid));
	return 0;
}

/* A private DIR stream over fd, which stays open. */
static DIR *dir_open(int fd)
{
	int d = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir;

	if (d < 0)
		return NULL;
	dir = fdopendir(d);
	if (!dir)
		close(d);
	return dir;
}

static int has_suffix(const char *s, size_t n, const char *sep, const char *key, const char *ext)
{
	size_t ls = strlen(sep), lk = strlen(key), le = strlen(ext);

	return n > ls + lk + le && memcmp(s + n - le, ext, le) == 0 &&
	       memcmp(s + n - le - lk, key, lk) == 0 && memcmp(s + n - le - lk - ls, sep, ls) == 0;
}

/* The entry's type without following it. */
static unsigned int entry_type(int fd, const struct dirent *d)
{
	struct stat st;

	if (d->d_type != DT_UNKNOWN)
		return d->d_type;
	if (fstatat(fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return DT_UNKNOWN;
	return S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
}

/* Records a failed candidate: "bad" outranks "no entry". */
static void scan_bad(struct kube_scan *sc)
{
	sc->ignored++;
	sc->why = KUBE_WHY_BAD_ENTRY;
}

/* What one search of a directory looks for. */
struct scan_spec {
	int fd;				/* the directory searched */
	const char *sep, *key, *ext;	/* wanted names end in sep, key, ext */
	/* Checks one candidate name; fills cand and returns 0 when it fits. */
	int (*check)(const struct scan_spec *spec, const struct dirent *d, size_t n, void *cand);
	const void *ctx;		/* what check needs besides the entry */
	size_t size;			/* of the entry the search fills */
};

/*
 * Fills out with the one entry that fits; none or several leave it zeroed and
 * say why in sc.  At most KUBE_SCAN_MAX names are looked at.
 */
static int scan_unique(const struct scan_spec *spec, void *out, void *cand, struct kube_scan *sc)
{
	unsigned int seen = 0, found = 0;
	struct dirent *d;
	DIR *dir;

	memset(sc, 0, sizeof(*sc));
	memset(out, 0, spec->size);
	sc->why = KUBE_WHY_NO_ENTRY;
	dir = spec->fd >= 0 ? dir_open(spec->fd) : NULL;
	if (!dir) {
		sc->why = KUBE_WHY_NO_SOURCE;
		return -ENOENT;
	}
	while ((d = readdir(dir))) {
		size_t n = strlen(d->d_name);

		if (++seen > KUBE_SCAN_MAX) {
			sc->cut = 1;
			break;
		}
		if (!has_suffix(d->d_name, n, spec->sep, spec->key, spec->ext))
			continue;
		if (spec->check(spec, d, n, cand) != 0) {
			scan_bad(sc);
			continue;
		}
		if (found++ == 0)
			memcpy(out, cand, spec->size);
	}
	closedir(dir);
	if (found == 1) {
		sc->why = KUBE_WHY_NONE;
		return 0;
	}
	if (found > 1)
		sc->why = KUBE_WHY_AMBIGUOUS;
	memset(out, 0, spec->size);
	return -ENOENT;
}

/* A pod directory "<namespace>_<pod>_<uid>" that is a real directory. */
static int pod_dir_check(const struct scan_spec *spec, const struct dirent *d, size_t n, void *cand)
{
	if (kube_logdir_parse_pod_dir(d->d_name, n, cand) != 0 ||
	    entry_type(spec->fd, d) != DT_DIR)
		return -EINVAL;	/* a link, a file, or names that are not DNS names */
	return 0;
}

int kube_logdir_find_pod(int pods_fd, const char *uid, struct kube_pod_entry *e,
			 struct kube_scan *sc)
{
	const struct scan_spec spec = {
		.fd = pods_fd, .sep = "_", .key = uid, .ext = "",
		.check = pod_dir_check, .size = sizeof(*e),
	};
	struct kube_pod_entry cand;

	return scan_unique(&spec, e, &cand, sc);
}

int kube_logdir_pod_exists(int pods_fd, const struct kube_pod_entry *e)
{
	char name[NAME_MAX + 1];
	struct stat st;

	if (snprintf(name, sizeof(name), "%s_%s_%s", e->namespace, e->pod, e->uid) >= (int)sizeof(name))
		return 0;
	if (fstatat(pods_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	return S_ISDIR(st.st_mode);
}

/* 1 when the pod's directory (not a link) holds a real directory for the container. */
static int container_dir_exists(int pods_fd, const struct kube_container_entry *c)
{
	char name[NAME_MAX + 1];
	struct stat st;
	int fd, ok;

	if (snprintf(name, sizeof(name), "%s_%s_%s", c->namespace, c->pod, c->uid) >= (int)sizeof(name))
		return 0;
	fd = openat(pods_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ok = fstatat(fd, c->container, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
	close(fd);
	return ok;
}

/* Where a container link must point: the pod's uid and its log directories. */
struct link_ctx {
	int pods_fd;
	const char *uid;
};

/* Checks one candidate link; returns 0 when it is the container's. */
static int link_check(const struct scan_spec *spec, const struct dirent *d, size_t n, void *cand)
{
	const struct link_ctx *lc = spec->ctx;
	struct kube_container_entry *c = cand;
	char target[PATH_MAX];
	ssize_t tlen;

	if (kube_logdir_parse_link(d->d_name, n, c) != 0 ||
	    entry_type(spec->fd, d) != DT_LNK)
		return -EINVAL;
	tlen = readlinkat(spec->fd, d->d_name, target, sizeof(target) - 1);
	if (tlen <= 0 || (size_t)tlen >= sizeof(target) - 1)
		return -EINVAL;
	target[tlen] = '\0';
	if (kube_logdir_parse_target(target, (size_t)tlen, c) != 0 || strcmp(c->uid, lc->uid) != 0)
		return -EINVAL;	/* the link is another pod's, or not the kubelet's */
	if (!container_dir_exists(lc->pods_fd, c))
		return -EINVAL;
	return 0;
}

int kube_logdir_find_container(int containers_fd, int pods_fd, const char *id,
			       const char *uid, struct kube_container_entry *e,
			       struct kube_scan *sc)
{
	const struct link_ctx lc = { .pods_fd = pods_fd, .uid = uid };
	const struct scan_spec spec = {
		.fd = pods_fd >= 0 ? containers_fd : -1, .sep = "-", .key = id, .ext = ".log",
		.check = link_check, .ctx = &lc, .size = sizeof(*e),
	};
	struct kube_container_entry cand;

	return scan_unique(&spec, e, &cand, sc);
}
