/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Kubernetes names from a fake /var/log/pods and /var/log/containers tree
 * built the way the kubelet builds them, then damaged: links pointing out
 * of the tree, names that are not DNS names, two pods claiming one UID, a
 * pod deleted while its processes run, thousands of pods.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector/identity/kube_logdir.h"
#include "collector/identity/kube_pods.h"
#include "common/util.h"
#include "tests/collector/tu_identity.h"
#include "tests/support/testutil.h"

#define UID1	"0d7cf2b4-5a3b-4c6e-9f1e-8b2a6c1d4e5f"
#define UID2	"11111111-2222-4333-8444-555555555555"
#define UID3	"99999999-2222-4333-8444-555555555555"
#define SUID	"03c7c0ace395d80182db07ae2c30f034"
#define CID1	"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
#define CID2	"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"
#define CID3	"2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6"

static char root[256], pods[300], ctrs[300];

static void fx_setup(void)
{
	snprintf(root, sizeof(root), "/tmp/zernel-test-%d-kube", (int)getpid());
	snprintf(pods, sizeof(pods), "%s/pods", root);
	snprintf(ctrs, sizeof(ctrs), "%s/containers", root);
	tu_system("rm -rf '%s'", root);
	ck_assert_int_eq(tu_system("mkdir -p '%s' '%s'", pods, ctrs), 0);
}

static void fx_teardown(void)
{
	tu_system("rm -rf '%s'", root);
}

/* What the kubelet makes for one container: the log folder, a log, the link. */
static void kubelet_container(const char *ns, const char *pod, const char *uid,
			      const char *ctr, const char *cid)
{
	char dir[1024], link[1024], target[1024];

	snprintf(dir, sizeof(dir), "%s/%s_%s_%s/%s", pods, ns, pod, uid, ctr);
	ck_assert_int_eq(tu_system("mkdir -p '%s' && : > '%s/0.log'", dir, dir), 0);
	if (!cid)
		return;
	/* The kubelet's links are absolute, into the node's /var/log/pods. */
	snprintf(target, sizeof(target), "/var/log/pods/%s_%s_%s/%s/0.log", ns, pod, uid, ctr);
	snprintf(link, sizeof(link), "%s/%s_%s_%s-%s.log", ctrs, pod, ns, ctr, cid);
	ck_assert_int_eq(symlink(target, link), 0);
}

static struct kube_pods *open_tree(void)
{
	struct kube_pods *kp = kube_pods_new(pods, ctrs, &kube_parsers_here);

	ck_assert_ptr_nonnull(kp);
	return kp;
}

/* Sets a folder's times back, as if nothing had changed in it for a while. */
static void age_dir(const char *dir)
{
	struct timespec ts[2];

	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= 60;
	ts[1] = ts[0];
	ck_assert_int_eq(utimensat(AT_FDCWD, dir, ts, 0), 0);
}

START_TEST(names_of_a_running_pod)
{
	struct kube_pods *kp;
	struct kube_names n;

	kubelet_container("ml-team", "trainer-0", UID1, "trainer", CID1);
	kubelet_container("ml-team", "trainer-0", UID1, "log-shipper", CID2);
	kubelet_container("ml-team", "trainer-0", UID1, "init-weights", NULL);
	kubelet_container("kube-system", "kube-apiserver-node1.example.com", SUID, "kube-apiserver", CID3);
	kp = open_tree();

	ck_assert_int_eq(kube_pods_lookup(kp, UID1, CID1, &n), 0);
	ck_assert_uint_eq(n.pod_state, KUBE_NAMES_FOUND);
	ck_assert_str_eq(n.namespace, "ml-team");
	ck_assert_str_eq(n.pod, "trainer-0");
	ck_assert_uint_eq(n.container_state, KUBE_NAMES_FOUND);
	ck_assert_str_eq(n.container, "trainer");

	ck_assert_int_eq(kube_pods_lookup(kp, UID1, CID2, &n), 0);
	ck_assert_str_eq(n.container, "log-shipper");

	/* A static pod: 32-hex UID, a pod name with dots. */
	ck_assert_int_eq(kube_pods_lookup(kp, SUID, CID3, &n), 0);
	ck_assert_str_eq(n.namespace, "kube-system");
	ck_assert_str_eq(n.pod, "kube-apiserver-node1.example.com");
	ck_assert_str_eq(n.container, "kube-apiserver");

	/* No container id: the pod alone. */
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, NULL, &n), 0);
	ck_assert_uint_eq(n.pod_state, KUBE_NAMES_FOUND);
	ck_assert_uint_eq(n.container_state, KUBE_NAMES_UNKNOWN);
	ck_assert_uint_eq(n.container_why, KUBE_WHY_NOT_ASKED);
	kube_pods_free(kp);
}
END_TEST

/* Folders that appear after the start (the first pod, a late mount) are used. */
START_TEST(folders_made_after_the_start_are_found)
{
	struct kube_pods *kp;
	struct kube_names n;

	tu_system("rm -rf '%s' '%s'", pods, ctrs);
	kp = open_tree();
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, CID1, &n), 0);
	ck_assert_uint_eq(n.pod_why, KUBE_WHY_NO_SOURCE);
	ck_assert_uint_eq(n.container_why, KUBE_WHY_NO_SOURCE);
	ck_assert_int_eq(tu_system("mkdir -p '%s' '%s'", pods, ctrs), 0);
	kubelet_container("ml", "late", UID1, "main", CID1);
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, CID1, &n), 0);
	ck_assert_uint_eq(n.pod_state, KUBE_NAMES_FOUND);
	ck_assert_str_eq(n.pod, "late");
	ck_assert_uint_eq(n.container_state, KUBE_NAMES_FOUND);
	ck_assert_str_eq(n.container, "main");
	kube_pods_free(kp);
}
END_TEST

START_TEST(container_names_need_the_link)
{
	struct kube_pods *kp;
	struct kube_names n;

	/* One container folder, but no link for this id: not taken as the answer. */
	kubelet_container("ml", "solo", UID1, "main", NULL);
	kp = open_tree();
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, CID1, &n), 0);
	ck_assert_uint_eq(n.pod_state, KUBE_NAMES_FOUND);
	ck_assert_uint_eq(n.container_state, KUBE_NAMES_UNKNOWN);
	ck_assert_uint_eq(n.container_why, KUBE_WHY_NO_ENTRY);
	kube_pods_free(kp);

	/* Without a containers folder at all. */
	kp = kube_pods_new(pods, NULL, &kube_parsers_here);
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, CID1, &n), 0);
	ck_assert_str_eq(n.pod, "solo");
	ck_assert_uint_eq(n.container_why, KUBE_WHY_NO_SOURCE);
	kube_pods_free(kp);

	/* Nothing at all. */
	kp = kube_pods_new("/nonexistent/pods", NULL, &kube_parsers_here);
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, CID1, &n), 0);
	ck_assert_uint_eq(n.pod_state, KUBE_NAMES_UNKNOWN);
	ck_assert_uint_eq(n.pod_why, KUBE_WHY_NO_SOURCE);
	kube_pods_free(kp);
}
END_TEST

START_TEST(links_that_lie_are_refused)
{
	char link[1024], path[1024];
	struct kube_pods *kp;
	struct kube_names n;

	kubelet_container("ml", "a", UID1, "main", NULL);
	kubelet_container("ml", "b", UID2, "main", NULL);
	/* The link of CID1 claims pod a but points at pod b's folder. */
	snprintf(link, sizeof(link), "%s/a_ml_main-%s.log", ctrs, CID1);
	ck_assert_int_eq(symlink("/var/log/pods/ml_b_" UID2 "/main/0.log", link), 0);
	/* CID2's "link" is a regular file. */
	snprintf(path, sizeof(path), "%s/a_ml_main-%s.log", ctrs, CID2);
	ck_assert_int_eq(tu_system(": > '%s'", path), 0);
	/* CID3's link names a container folder that does not exist. */
	snprintf(link, sizeof(link), "%s/a_ml_ghost-%s.log", ctrs, CID3);
	ck_assert_int_eq(symlink("/var/log/pods/ml_a_" UID1 "/ghost/0.log", link), 0);

	kp = open_tree();
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, CID1, &n), 0);
	ck_assert_str_eq(n.pod, "a");
	ck_assert_uint_eq(n.container_state, KUBE_NAMES_UNKNOWN);
	ck_assert_uint_eq(n.container_why, KUBE_WHY_BAD_ENTRY);
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, CID2, &n), 0);
	ck_assert_uint_eq(n.container_why, KUBE_WHY_BAD_ENTRY);
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, CID3, &n), 0);
	ck_assert_uint_eq(n.container_why, KUBE_WHY_BAD_ENTRY);
	/* Pod b's UID with a's container link: still refused. */
	ck_assert_int_eq(kube_pods_lookup(kp, UID2, CID1, &n), 0);
	ck_assert_str_eq(n.pod, "b");
	ck_assert_uint_eq(n.container_state, KUBE_NAMES_UNKNOWN);
	kube_pods_free(kp);
}
END_TEST

/* Pod folder names that must never produce names, each with UID1. */
static const char *const hostile_dirs[] = {
	"Ml_pod_" UID1,				/* upper case */
	"ml_pod_extra_" UID1,			/* three '_' */
	"ml__" UID1,				/* empty pod name */
	"_pod_" UID1,				/* empty namespace */
	"-ml_pod_" UID1,			/* label starting with '-' */
	"ml_pod-_" UID1,			/* ending with '-' */
	"ml_pod..x_" UID1,			/* empty subdomain label */
	"ml.x_pod_" UID1,			/* a namespace is a label: no dots */
	"ml_p\xc3\xa9_" UID1,			/* non-ASCII */
	"ml_p\x01od_" UID1,			/* control character */
	"ml_p od_" UID1,
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_pod_" UID1,	/* 64-byte label */
	"ml_pod_" "0D7CF2B4-5A3B-4C6E-9F1E-8B2A6C1D4E5F",	/* another UID spelling: not ours */
};

START_TEST(hostile_pod_folders_give_no_names)
{
	char dir[1024];
	struct kube_pods *kp;
	struct kube_names n;

	snprintf(dir, sizeof(dir), "%s/%s", pods, hostile_dirs[_i]);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	kp = open_tree();
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, NULL, &n), 0);
	ck_assert_uint_eq(n.pod_state, KUBE_NAMES_UNKNOWN);
	ck_assert_str_eq(n.namespace, "");
	ck_assert_str_eq(n.pod, "");
	kube_pods_free(kp);
}
END_TEST

START_TEST(links_out_of_the_tree_are_not_followed)
{
	char link[1024], outside[512];
	struct kube_pods *kp;
	struct kube_names n;

	/* A real-looking pod folder that lives elsewhere, linked in. */
	snprintf(outside, sizeof(outside), "%s/outside/ml_evil_%s/main", root, UID1);
	ck_assert_int_eq(tu_system("mkdir -p '%s'", outside), 0);
	snprintf(link, sizeof(link), "%s/ml_evil_%s", pods, UID1);
	snprintf(outside, sizeof(outside), "%s/outside/ml_evil_%s", root, UID1);
	ck_assert_int_eq(symlink(outside, link), 0);
	kp = open_tree();
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, NULL, &n), 0);
	ck_assert_uint_eq(n.pod_state, KUBE_NAMES_UNKNOWN);
	ck_assert_uint_eq(n.pod_why, KUBE_WHY_BAD_ENTRY);
	kube_pods_free(kp);

	/* A container folder that is a link is not a container folder either. */
	kubelet_container("ml", "p", UID2, "real", CID1);
	snprintf(link, sizeof(link), "%s/ml_p_%s/linked", pods, UID2);
	ck_assert_int_eq(symlink("/etc", link), 0);
	snprintf(link, sizeof(link), "%s/p_ml_linked-%s.log", ctrs, CID2);
	ck_assert_int_eq(symlink("/var/log/pods/ml_p_" UID2 "/linked/0.log", link), 0);
	kp = open_tree();
	ck_assert_int_eq(kube_pods_lookup(kp, UID2, CID1, &n), 0);
	ck_assert_str_eq(n.container, "real");
	ck_assert_int_eq(kube_pods_lookup(kp, UID2, CID2, &n), 0);
	ck_assert_uint_eq(n.container_state, KUBE_NAMES_UNKNOWN);
	ck_assert_uint_eq(n.container_why, KUBE_WHY_BAD_ENTRY);
	kube_pods_free(kp);
}
END_TEST

START_TEST(two_pods_claiming_one_uid_are_ambiguous)
{
	struct kube_pods *kp;
	struct kube_names n;

	kubelet_container("ml", "one", UID1, "main", NULL);
	kubelet_container("ops", "two", UID1, "main", NULL);
	kp = open_tree();
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, NULL, &n), 0);
	ck_assert_uint_eq(n.pod_state, KUBE_NAMES_UNKNOWN);
	ck_assert_uint_eq(n.pod_why, KUBE_WHY_AMBIGUOUS);
	kube_pods_free(kp);
}
END_TEST

START_TEST(a_deleted_pod_keeps_its_last_known_names)
{
	struct kube_pods *kp;
	struct kube_names n;

	kubelet_container("ml", "trainer-0", UID1, "trainer", CID1);
	kp = open_tree();
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, CID1, &n), 0);
	ck_assert_uint_eq(n.pod_state, KUBE_NAMES_FOUND);
	/* The kubelet removes the pod's logs; its processes are still exiting. */
	ck_assert_int_eq(tu_system("rm -rf '%s'/* '%s'/*", pods, ctrs), 0);
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, CID1, &n), 0);
	ck_assert_uint_eq(n.pod_state, KUBE_NAMES_GONE);
	ck_assert_str_eq(n.namespace, "ml");
	ck_assert_str_eq(n.pod, "trainer-0");
	ck_assert_uint_eq(n.container_state, KUBE_NAMES_FOUND);
	ck_assert_str_eq(n.container, "trainer");
	/* The folder itself gone: the cache still answers. */
	ck_assert_int_eq(tu_system("rm -rf '%s'", pods), 0);
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, CID1, &n), 0);
	ck_assert_str_eq(n.pod, "trainer-0");
	kube_pods_free(kp);
}
END_TEST

START_TEST(misses_are_remembered_only_while_nothing_changes)
{
	struct kube_pods_stats st;
	struct kube_pods *kp;
	struct kube_names n;

	kubelet_container("ml", "other", UID2, "main", NULL);
	age_dir(pods);
	kp = open_tree();
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, NULL, &n), 0);
	ck_assert_uint_eq(n.pod_why, KUBE_WHY_NO_ENTRY);
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, NULL, &n), 0);
	ck_assert_uint_eq(n.pod_why, KUBE_WHY_NO_ENTRY);
	kube_pods_stats(kp, &st);
	ck_assert_uint_eq(st.scans, 1);		/* the second miss came from the cache */

	/* The pod starts: the folder changes, the miss is forgotten. */
	kubelet_container("ml", "late", UID1, "main", NULL);
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, NULL, &n), 0);
	ck_assert_uint_eq(n.pod_state, KUBE_NAMES_FOUND);
	ck_assert_str_eq(n.pod, "late");

	/* A folder changed a moment ago is scanned again every time. */
	ck_assert_int_eq(kube_pods_lookup(kp, UID3, NULL, &n), 0);
	ck_assert_int_eq(kube_pods_lookup(kp, UID3, NULL, &n), 0);
	ck_assert_uint_eq(n.pod_why, KUBE_WHY_NO_ENTRY);
	kube_pods_stats(kp, &st);
	ck_assert_uint_eq(st.scans, 4);
	kube_pods_free(kp);
}
END_TEST

START_TEST(thousands_of_pods)
{
	enum { PODS = 3000 };
	struct kube_pods_stats st;
	struct kube_pods *kp;
	struct kube_names n;
	uint64_t t0, t1;
	char uid[64];

	for (int i = 0; i < PODS; i++) {
		char dir[512];

		snprintf(uid, sizeof(uid), "%08x-0000-4000-8000-%012x", i, i);
		snprintf(dir, sizeof(dir), "%s/ns-%d_pod-%d_%s", pods, i % 40, i, uid);
		ck_assert_int_eq(mkdir(dir, 0755), 0);
	}
	kp = open_tree();
	t0 = now_mono_ns();
	for (int i = 0; i < PODS; i++) {
		char want[64];

		snprintf(uid, sizeof(uid), "%08x-0000-4000-8000-%012x", i, i);
		ck_assert_int_eq(kube_pods_lookup(kp, uid, NULL, &n), 0);
		ck_assert_uint_eq(n.pod_state, KUBE_NAMES_FOUND);
		snprintf(want, sizeof(want), "pod-%d", i);
		ck_assert_str_eq(n.pod, want);
	}
	/* The most recent ones are cached; the first ones were evicted. */
	snprintf(uid, sizeof(uid), "%08x-0000-4000-8000-%012x", PODS - 1, PODS - 1);
	ck_assert_int_eq(kube_pods_lookup(kp, uid, NULL, &n), 0);
	t1 = now_mono_ns();
	kube_pods_stats(kp, &st);
	ck_assert_uint_eq(st.scans, PODS);
	ck_assert_uint_eq(st.evictions, PODS - KUBE_PODS_CACHE);
	ck_assert_uint_eq(st.lookups, PODS + 1);
	fprintf(stderr, "%d pods: %d cold lookups in %.1f ms\n", PODS, PODS, (double)(t1 - t0) / 1e6);
	snprintf(uid, sizeof(uid), "%08x-0000-4000-8000-%012x", 0, 0);
	ck_assert_int_eq(kube_pods_lookup(kp, uid, NULL, &n), 0);
	ck_assert_str_eq(n.pod, "pod-0");
	kube_pods_free(kp);
}
END_TEST

START_TEST(malformed_arguments)
{
	struct kube_pods *kp = open_tree();
	struct kube_names n;

	ck_assert_int_eq(kube_pods_lookup(kp, NULL, NULL, &n), -EINVAL);
	ck_assert_int_eq(kube_pods_lookup(kp, "../../etc", NULL, &n), -EINVAL);
	ck_assert_int_eq(kube_pods_lookup(kp, "0d7cf2b4_5a3b_4c6e_9f1e_8b2a6c1d4e5f", NULL, &n), -EINVAL);
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, "abc", &n), -EINVAL);
	ck_assert_int_eq(kube_pods_lookup(kp, UID1, "*", &n), -EINVAL);
	ck_assert_uint_eq(n.pod_state, KUBE_NAMES_UNKNOWN);
	kube_pods_free(kp);
}
END_TEST

START_TEST(name_parsers)
{
	struct kube_container_entry c;
	struct kube_pod_entry p;
	const char *t;

	ck_assert_int_eq(kube_names_parse_pod_dir("ns_p.q_" UID1, strlen("ns_p.q_" UID1), &p), 0);
	ck_assert_str_eq(p.namespace, "ns");
	ck_assert_str_eq(p.pod, "p.q");
	ck_assert_str_eq(p.uid, UID1);
	ck_assert_int_eq(kube_names_parse_link("p_ns_c-1-" CID1 ".log", strlen("p_ns_c-1-" CID1 ".log"), &c), 0);
	ck_assert_str_eq(c.container, "c-1");
	ck_assert_str_eq(c.id, CID1);
	t = "/var/log/pods/ns_q_" UID1 "/c-1/12.log";
	ck_assert_int_eq(kube_names_parse_target(t, strlen(t), &c), -EINVAL);	/* pod differs */
	t = "/var/log/pods/ns_p_" UID1 "/c-2/12.log";
	ck_assert_int_eq(kube_names_parse_target(t, strlen(t), &c), -EINVAL);	/* container differs */
	t = "/var/log/pods/ns_p_" UID1 "/c-1/12.log";
	ck_assert_int_eq(kube_names_parse_target(t, strlen(t), &c), 0);
	ck_assert_str_eq(c.uid, UID1);
	t = "ns_p_" UID1 "/c-1/x.log";
	ck_assert_int_eq(kube_names_parse_target(t, strlen(t), &c), -EINVAL);
	t = "c-1/0.log";
	ck_assert_int_eq(kube_names_parse_target(t, strlen(t), &c), -EINVAL);
	/* A link name cut by the kubelet's 255-byte limit loses its id. */
	ck_assert_int_eq(kube_names_parse_link("p_ns_c-" CID1, strlen("p_ns_c-" CID1), &c), -EINVAL);
	ck_assert_int_eq(kube_names_parse_link("p_ns-" CID1 ".log", strlen("p_ns-" CID1 ".log"), &c), -EINVAL);
}
END_TEST

/*
 * kube_names_admit_*: the parser child's answers for log directory names
 * are kept only when each text is of its kind; real parses pass, each
 * bend is refused, and nothing rides past a text's end.
 */
START_TEST(log_name_answers_no_parse_gives_are_refused)
{
	const char *t = "/var/log/pods/ns_p_" UID1 "/c-1/0.log";
	const char *link = "p_ns_c-1-" CID1 ".log";
	struct kube_container_entry c, c0;
	struct kube_pod_entry p, p0;

	ck_assert_int_eq(kube_names_parse_pod_dir("ns_p.q_" UID1, strlen("ns_p.q_" UID1), &p0), 0);
	ck_assert_int_eq(kube_names_link(link, strlen(link), t, strlen(t), &c0), 0);
	ck_assert_str_eq(c0.uid, UID1);
	p = p0;
	ck_assert_int_eq(kube_names_admit_pod(&p), 0);
	c = c0;
	ck_assert_int_eq(kube_names_admit_container(&c), 0);
	memcpy(p.pod + strlen(p.pod) + 1, "zSECRETz", 8);
	ck_assert_int_eq(kube_names_admit_pod(&p), 0);
	ck_assert(!memmem(&p, sizeof(p), "zSECRETz", 8));

	p = p0;
	p.namespace[0] = '_';
	ck_assert_int_eq(kube_names_admit_pod(&p), -EPROTO);
	p = p0;
	p.pod[0] = 'P';
	ck_assert_int_eq(kube_names_admit_pod(&p), -EPROTO);
	p = p0;
	p.uid[8] = '_';
	ck_assert_int_eq(kube_names_admit_pod(&p), -EPROTO);
	p = p0;
	memset(p.pod, 'a', sizeof(p.pod));
	ck_assert_int_eq(kube_names_admit_pod(&p), -EPROTO);
	p = p0;
	p.namespace[0] = '\0';
	ck_assert_int_eq(kube_names_admit_pod(&p), -EPROTO);

	c = c0;
	c.id[63] = '\0';
	ck_assert_int_eq(kube_names_admit_container(&c), -EPROTO);
	c = c0;
	c.container[0] = '-';
	ck_assert_int_eq(kube_names_admit_container(&c), -EPROTO);
	c = c0;
	c.uid[0] = 'G';
	ck_assert_int_eq(kube_names_admit_container(&c), -EPROTO);
	c = c0;
	memcpy(c.namespace, "a/b", 4);
	ck_assert_int_eq(kube_names_admit_container(&c), -EPROTO);
}
END_TEST

Suite *kube_pods_suite(void);
Suite *kube_pods_suite(void)
{
	Suite *s = suite_create("kube_pods");
	TCase *tc = tcase_create("fake_tree");

	tcase_add_checked_fixture(tc, fx_setup, fx_teardown);
	/* A failed test exits before its teardown: the runner sweeps after. */
	tcase_add_unchecked_fixture(tc, NULL, ti_tmp_sweep);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, names_of_a_running_pod);
	tcase_add_test(tc, container_names_need_the_link);
	tcase_add_test(tc, folders_made_after_the_start_are_found);
	tcase_add_test(tc, links_that_lie_are_refused);
	tcase_add_loop_test(tc, hostile_pod_folders_give_no_names, 0,
			    (int)(sizeof(hostile_dirs) / sizeof(hostile_dirs[0])));
	tcase_add_test(tc, links_out_of_the_tree_are_not_followed);
	tcase_add_test(tc, two_pods_claiming_one_uid_are_ambiguous);
	tcase_add_test(tc, a_deleted_pod_keeps_its_last_known_names);
	tcase_add_test(tc, misses_are_remembered_only_while_nothing_changes);
	tcase_add_test(tc, thousands_of_pods);
	tcase_add_test(tc, malformed_arguments);
	tcase_add_test(tc, name_parsers);
	tcase_add_test(tc, log_name_answers_no_parse_gives_are_refused);
	suite_add_tcase(s, tc);
	return s;
}
