/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Cached Kubernetes name lookups; see kube_pods.h.  The finding is done by
 * kube_logdir.c; this file remembers answers (positive ones for as long as
 * there is room, negative ones while the directory is unchanged).
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector/identity/kube_logdir.h"
#include "collector/identity/kube_pods.h"
#include "common/util.h"

/*
 * Directory timestamps come from a coarse clock: a change within the same
 * tick as a scan leaves the time unchanged.  A miss is remembered only
 * when the directory had been quiet this long before the scan, and never
 * longer than KUBE_MISS_TTL_NS.
 */
#define KUBE_QUIET_NS		(1 * NSEC_PER_SEC)
#define KUBE_MISS_TTL_NS	(30 * NSEC_PER_SEC)

struct kp_pod {
	struct kube_pod_entry e;
	uint32_t state;			/* FOUND or GONE; UNKNOWN marks a free slot */
	uint64_t used;			/* LRU tick */
	struct timespec checked;	/* directory mtime when last seen present */
};

struct kp_ctr {
	struct kube_container_entry e;
	uint32_t state;
	uint64_t used;
};

struct kp_miss {
	char key[IDTEXT_CONTAINER_ID_LEN];	/* a pod UID or a container id */
	uint32_t why;
	struct timespec mtime;		/* of the directory scanned */
	uint64_t at_ns;			/* monotonic time of the scan */
	uint64_t used;
};

struct kube_pods {
	const struct kube_parsers *parse;
	int pods_fd, containers_fd;
	char *pods_path, *containers_path;	/* opened again while not open */
	uint64_t tick;
	struct kube_pods_stats st;
	struct kp_pod pods[KUBE_PODS_CACHE];
	struct kp_ctr ctrs[KUBE_CONTAINERS_CACHE];
	struct kp_miss misses[KUBE_MISSES_CACHE];
};

static int dir_fd(const char *path)
{
	return path ? open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
}

struct kube_pods *kube_pods_new(const char *pods_dir, const char *containers_dir,
			       const struct kube_parsers *parse)
{
	struct kube_pods *kp = calloc(1, sizeof(*kp));

	if (!kp)
		return NULL;
	kp->parse = parse;
	kp->pods_fd = kp->containers_fd = -1;
	kp->pods_path = pods_dir ? strdup(pods_dir) : NULL;
	kp->containers_path = containers_dir ? strdup(containers_dir) : NULL;
	if ((pods_dir && !kp->pods_path) || (containers_dir && !kp->containers_path)) {
		kube_pods_free(kp);
		return NULL;
	}
	kp->pods_fd = dir_fd(pods_dir);
	kp->containers_fd = dir_fd(containers_dir);
	return kp;
}

/*
 * A folder missing at start (the kubelet makes it with the first pod, or
 * a mount comes late) is looked for again at each lookup: an open that
 * fails costs a path walk, and names start to come as soon as it exists.
 */
static void reopen(struct kube_pods *kp)
{
	if (kp->pods_fd < 0)
		kp->pods_fd = dir_fd(kp->pods_path);
	if (kp->containers_fd < 0)
		kp->containers_fd = dir_fd(kp->containers_path);
}

void kube_pods_free(struct kube_pods *kp)
{
	if (!kp)
		return;
	if (kp->pods_fd >= 0)
		close(kp->pods_fd);
	if (kp->containers_fd >= 0)
		close(kp->containers_fd);
	free(kp->pods_path);
	free(kp->containers_path);
	free(kp);
}

void kube_pods_stats(const struct kube_pods *kp, struct kube_pods_stats *st)
{
	*st = kp->st;
}

static int dir_mtime(int fd, struct timespec *t)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st) != 0)
		return -1;
	*t = st.st_mtim;
	return 0;
}

static int ts_eq(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* One of the LRU tables above: where each slot keeps its key and its tick. */
struct lru_table {
	void *slots;
	size_t count, stride, key_off, used_off;
};

#define LRU_TABLE(arr, key) { (arr), ARRAY_SIZE(arr), sizeof((arr)[0]),			\
			      offsetof(__typeof__((arr)[0]), key),				\
			      offsetof(__typeof__((arr)[0]), used) }

/*
 * The slot holding key, or NULL with *victim the least recently used slot
 * (a free one first: free slots have used == 0).  The build uses
 * -fno-strict-aliasing, so victim may point at any slot type's pointer.
 */
static void *lru_find(const struct lru_table *t, const char *key, void **victim)
{
	char *slot = t->slots, *oldest = slot;

	for (size_t i = 0; i < t->count; i++, slot += t->stride) {
		uint64_t used = *(const uint64_t *)(slot + t->used_off);

		if (used && strcmp(slot + t->key_off, key) == 0)
			return slot;
		if (used < *(const uint64_t *)(oldest + t->used_off))
			oldest = slot;
	}
	*victim = oldest;
	return NULL;
}

static struct kp_pod *pod_find(struct kube_pods *kp, const char *uid, struct kp_pod **victim)
{
	const struct lru_table t = LRU_TABLE(kp->pods, e.uid);

	return lru_find(&t, uid, (void **)victim);
}

static struct kp_ctr *ctr_find(struct kube_pods *kp, const char *id, struct kp_ctr **victim)
{
	const struct lru_table t = LRU_TABLE(kp->ctrs, e.id);

	return lru_find(&t, id, (void **)victim);
}

static struct kp_miss *miss_find(struct kube_pods *kp, const char *key, struct kp_miss **victim)
{
	const struct lru_table t = LRU_TABLE(kp->misses, key);

	return lru_find(&t, key, (void **)victim);
}

/* 1 when a remembered miss for key still holds. */
static int miss_holds(struct kube_pods *kp, const char *key, int fd, uint32_t *why)
{
	struct kp_miss *hit, *victim;
	struct timespec now;

	hit = miss_find(kp, key, &victim);
	if (!hit)
		return 0;
	if (dir_mtime(fd, &now) == 0 && ts_eq(now, hit->mtime) &&
	    now_mono_ns() - hit->at_ns < KUBE_MISS_TTL_NS) {
		hit->used = ++kp->tick;
		*why = hit->why;
		return 1;
	}
	hit->used = 0;	/* stale: forget it */
	return 0;
}

/* Remembers a miss when the directory had been quiet before the scan. */
static void miss_note(struct kube_pods *kp, const char *key, int fd, struct timespec before,
		      uint32_t why)
{
	struct kp_miss *hit, *victim;
	struct timespec after, real;
	int64_t quiet;

	if (dir_mtime(fd, &after) != 0 || !ts_eq(before, after))
		return;
	clock_gettime(CLOCK_REALTIME, &real);
	quiet = (int64_t)(real.tv_sec - after.tv_sec) * (int64_t)NSEC_PER_SEC +
		(real.tv_nsec - after.tv_nsec);
	if (quiet < (int64_t)KUBE_QUIET_NS)
		return;	/* changed a moment ago (or in the future): do not trust it */
	hit = miss_find(kp, key, &victim);
	if (!hit)
		hit = victim;
	memset(hit, 0, sizeof(*hit));
	strncpy(hit->key, key, sizeof(hit->key) - 1);
	hit->why = why;
	hit->mtime = after;
	hit->at_ns = now_mono_ns();
	hit->used = ++kp->tick;
}

static void count_scan(struct kube_pods *kp, const struct kube_scan *sc)
{
	kp->st.scans++;
	kp->st.entries_ignored += sc->ignored;
	kp->st.scans_cut += sc->cut;
}

/*
 * Books a finished search for key.  A miss is remembered and its reason
 * given in *why (returns -1); a hit that takes a slot still in use counts
 * an eviction (returns 0).
 */
static int scan_done(struct kube_pods *kp, int err, const struct kube_scan *sc, const char *key,
		     int fd, struct timespec before, uint64_t victim_used, uint32_t *why)
{
	count_scan(kp, sc);
	if (err != 0) {
		*why = sc->why;
		miss_note(kp, key, fd, before, sc->why);
		return -1;
	}
	if (victim_used)
		kp->st.evictions++;
	return 0;
}

/* Marks a remembered pod GONE once its directory has been removed. */
static void pod_recheck(struct kube_pods *kp, struct kp_pod *p)
{
	struct timespec now;

	if (p->state != KUBE_NAMES_FOUND || dir_mtime(kp->pods_fd, &now) != 0 ||
	    ts_eq(now, p->checked))
		return;
	if (kube_logdir_pod_exists(kp->pods_fd, &p->e) == 0)
		p->state = KUBE_NAMES_GONE;
	else
		p->checked = now;
}

static void lookup_pod(struct kube_pods *kp, const char *uid, struct kube_names *out)
{
	struct kp_pod *hit, *victim;
	struct kube_pod_entry e;
	struct kube_scan sc;
	struct timespec before = { 0, 0 };
	int err;

	hit = pod_find(kp, uid, &victim);
	if (!hit) {
		if (miss_holds(kp, uid, kp->pods_fd, &out->pod_why))
			return;
		dir_mtime(kp->pods_fd, &before);
		err = kube_logdir_find_pod(kp->pods_fd, uid, kp->parse, &e, &sc);
		if (scan_done(kp, err, &sc, uid, kp->pods_fd, before, victim->used,
			      &out->pod_why) != 0)
			return;
		hit = victim;
		memset(hit, 0, sizeof(*hit));
		hit->e = e;
		hit->state = KUBE_NAMES_FOUND;
		hit->checked = before;
	} else {
		pod_recheck(kp, hit);
	}
	hit->used = ++kp->tick;
	out->pod_state = hit->state;
	out->pod_why = KUBE_WHY_NONE;
	memcpy(out->namespace, hit->e.namespace, sizeof(out->namespace));
	memcpy(out->pod, hit->e.pod, sizeof(out->pod));
}

static void lookup_container(struct kube_pods *kp, const char *uid, const char *id,
			     struct kube_names *out)
{
	struct kp_ctr *hit, *victim;
	struct kube_container_entry e;
	struct kube_scan sc;
	struct timespec before = { 0, 0 };
	int err;

	hit = ctr_find(kp, id, &victim);
	if (hit && strcmp(hit->e.uid, uid) != 0) {
		out->container_why = KUBE_WHY_BAD_ENTRY;	/* asked with another pod's UID */
		return;
	}
	if (!hit) {
		if (miss_holds(kp, id, kp->containers_fd, &out->container_why))
			return;
		dir_mtime(kp->containers_fd, &before);
		err = kube_logdir_find_container(kp->containers_fd, kp->pods_fd, id, uid, kp->parse,
						 &e, &sc);
		if (scan_done(kp, err, &sc, id, kp->containers_fd, before, victim->used,
			      &out->container_why) != 0)
			return;
		hit = victim;
		memset(hit, 0, sizeof(*hit));
		hit->e = e;
		hit->state = KUBE_NAMES_FOUND;
	}
	hit->used = ++kp->tick;
	out->container_state = KUBE_NAMES_FOUND;
	out->container_why = KUBE_WHY_NONE;
	memcpy(out->container, hit->e.container, sizeof(out->container));
	/* The link names the pod too: a pod whose directory went first still has names. */
	if (out->pod_state == KUBE_NAMES_UNKNOWN) {
		out->pod_state = KUBE_NAMES_GONE;
		out->pod_why = KUBE_WHY_NONE;
		memcpy(out->namespace, hit->e.namespace, sizeof(out->namespace));
		memcpy(out->pod, hit->e.pod, sizeof(out->pod));
	}
}

int kube_pods_lookup(struct kube_pods *kp, const char *pod_uid, const char *container_id,
		     struct kube_names *out)
{
	char uid[IDTEXT_POD_UID_LEN];

	memset(out, 0, sizeof(*out));
	out->pod_why = KUBE_WHY_NO_ENTRY;
	out->container_why = KUBE_WHY_NOT_ASKED;
	if (!pod_uid || idtext_pod_uid(pod_uid, strlen(pod_uid), '-', uid) != 0 ||
	    strcmp(uid, pod_uid) != 0)
		return -EINVAL;
	if (container_id && container_id[0] &&
	    !idtext_is_container_id(container_id, strlen(container_id)))
		return -EINVAL;
	kp->st.lookups++;
	reopen(kp);
	lookup_pod(kp, uid, out);
	if (container_id && container_id[0]) {
		out->container_why = KUBE_WHY_NO_ENTRY;
		lookup_container(kp, uid, container_id, out);
	}
	return 0;
}
