/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Searches the kubelet's log directories; see kube_logdir.h.  Root, or a
 * read-only mount of the node's /var/log.  The names found are parsed by
 * the parsers the caller gives (kube_names.h).
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
	const struct kube_parsers *parse = spec->ctx;

	if (entry_type(spec->fd, d) != DT_DIR || parse->pod_dir(d->d_name, n, cand) != 0)
		return -EINVAL;	/* a link, a file, or names that are not DNS names */
	return 0;
}

int kube_logdir_find_pod(int pods_fd, const char *uid, const struct kube_parsers *parse,
			 struct kube_pod_entry *e, struct kube_scan *sc)
{
	const struct scan_spec spec = {
		.fd = pods_fd, .sep = "_", .key = uid, .ext = "",
		.check = pod_dir_check, .ctx = parse, .size = sizeof(*e),
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
	const struct kube_parsers *parse;
};

/* Checks one candidate link; returns 0 when it is the container's. */
static int link_check(const struct scan_spec *spec, const struct dirent *d, size_t n, void *cand)
{
	const struct link_ctx *lc = spec->ctx;
	struct kube_container_entry *c = cand;
	char target[PATH_MAX];
	ssize_t tlen;

	if (entry_type(spec->fd, d) != DT_LNK)
		return -EINVAL;
	tlen = readlinkat(spec->fd, d->d_name, target, sizeof(target) - 1);
	if (tlen <= 0 || (size_t)tlen >= sizeof(target) - 1)
		return -EINVAL;
	target[tlen] = '\0';
	if (lc->parse->link(d->d_name, n, target, (size_t)tlen, c) != 0 ||
	    strcmp(c->uid, lc->uid) != 0)
		return -EINVAL;	/* the link is another pod's, or not the kubelet's */
	if (!container_dir_exists(lc->pods_fd, c))
		return -EINVAL;
	return 0;
}

int kube_logdir_find_container(int containers_fd, int pods_fd, const char *id,
			       const char *uid, const struct kube_parsers *parse,
			       struct kube_container_entry *e, struct kube_scan *sc)
{
	const struct link_ctx lc = { .pods_fd = pods_fd, .uid = uid, .parse = parse };
	const struct scan_spec spec = {
		.fd = pods_fd >= 0 ? containers_fd : -1, .sep = "-", .key = id, .ext = ".log",
		.check = link_check, .ctx = &lc, .size = sizeof(*e),
	};
	struct kube_container_entry cand;

	return scan_unique(&spec, e, &cand, sc);
}
