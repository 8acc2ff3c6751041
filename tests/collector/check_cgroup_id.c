/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Cgroup identity: the naming patterns one path at a time (real examples
 * and hostile ones), the choice between the lines of a hybrid host's
 * /proc/PID/cgroup, and malformed files.  The ground truth with real
 * cgroups and processes is in check_identity.c.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/identity/cgroup_id.h"
#include "collector/identity/cgroup_path.h"

#define CID	"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
#define CID2	"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"
#define UID	"0d7cf2b4-5a3b-4c6e-9f1e-8b2a6c1d4e5f"
#define UID_	"0d7cf2b4_5a3b_4c6e_9f1e_8b2a6c1d4e5f"
#define STATIC_UID "03c7c0ace395d80182db07ae2c30f034"

struct path_case {
	const char *path;
	int found;
	uint32_t runtime;
	const char *cid;
	const char *uid;
	uint32_t qos;
	uint64_t job;
	const char *step;
	uint32_t slurm_uid;
	const char *unit, *slice;
	uint32_t flags;
};

#define NOUID	.slurm_uid = CGROUP_ID_NO_UID
#define KUBE(rt, q)	.found = 1, .runtime = rt, .cid = CID, .uid = UID, .qos = q, NOUID
#define CTR(rt)		.found = 1, .runtime = rt, .cid = CID, NOUID

static const struct path_case path_cases[] = {
	/* Kubernetes, systemd driver. */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/cri-containerd-" CID ".scope",
	  KUBE(CGROUP_RUNTIME_CONTAINERD, CGROUP_QOS_BURSTABLE) },
	{ "/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" CID ".scope",
	  KUBE(CGROUP_RUNTIME_CRIO, CGROUP_QOS_GUARANTEED) },
	{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/docker-" CID ".scope",
	  KUBE(CGROUP_RUNTIME_DOCKER, CGROUP_QOS_BESTEFFORT) },
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-conmon-" CID ".scope",
	  KUBE(CGROUP_RUNTIME_CRIO, CGROUP_QOS_BURSTABLE), .flags = CGROUP_ID_F_CONMON },
	{ "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" CID ".scope",
	  KUBE(CGROUP_RUNTIME_CONTAINERD, CGROUP_QOS_BESTEFFORT) },
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" STATIC_UID ".slice/cri-containerd-" CID ".scope",
	  .found = 1, .runtime = CGROUP_RUNTIME_CONTAINERD, .cid = CID, .uid = STATIC_UID,
	  .qos = CGROUP_QOS_BURSTABLE, NOUID },
	/* A process of the pod outside any container (or the pod's own cgroup). */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice",
	  .found = 1, .uid = UID, .qos = CGROUP_QOS_BURSTABLE, NOUID },
	/* A kind node: the pods live inside the node's docker container. */
	{ "/system.slice/docker-" CID2 ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod" UID_ ".slice/cri-containerd-" CID ".scope",
	  KUBE(CGROUP_RUNTIME_CONTAINERD, CGROUP_QOS_GUARANTEED) },
	/* Kubernetes, cgroupfs driver. */
	{ "/kubepods/burstable/pod" UID "/" CID, KUBE(CGROUP_RUNTIME_UNKNOWN, CGROUP_QOS_BURSTABLE) },
	{ "/kubepods/pod" UID "/" CID, KUBE(CGROUP_RUNTIME_UNKNOWN, CGROUP_QOS_GUARANTEED) },
	{ "/kubepods/besteffort/pod" UID "/crio-" CID, KUBE(CGROUP_RUNTIME_CRIO, CGROUP_QOS_BESTEFFORT) },
	/* Docker and podman on their own. */
	{ "/system.slice/docker-" CID ".scope", CTR(CGROUP_RUNTIME_DOCKER) },
	{ "/docker/" CID, CTR(CGROUP_RUNTIME_DOCKER) },
	{ "/machine.slice/libpod-" CID ".scope", CTR(CGROUP_RUNTIME_PODMAN) },
	{ "/machine.slice/libpod-" CID ".scope/container", CTR(CGROUP_RUNTIME_PODMAN) },
	{ "/machine.slice/libpod-conmon-" CID ".scope", CTR(CGROUP_RUNTIME_PODMAN), .flags = CGROUP_ID_F_CONMON },
	{ "/libpod_parent/libpod-" CID, CTR(CGROUP_RUNTIME_PODMAN) },
	{ "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" CID ".scope",
	  CTR(CGROUP_RUNTIME_PODMAN), .flags = CGROUP_ID_F_DELEGATED },
	/* Slurm. */
	{ "/slurm/uid_1000/job_4242/step_0/task_1", .found = 1, .job = 4242, .step = "0", .slurm_uid = 1000 },
	{ "/slurm_node07/uid_1000/job_4242/step_batch/task_0", .found = 1, .job = 4242, .step = "batch", .slurm_uid = 1000 },
	{ "/slurm/uid_0/job_7", .found = 1, .job = 7, .step = "", .slurm_uid = 0 },
	{ "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_1", .found = 1, .job = 4242, .step = "0", NOUID },
	{ "/system.slice/slurmstepd.scope/job_4242/step_extern/slurm", .found = 1, .job = 4242, .step = "extern", NOUID },
	{ "/system.slice/slurmstepd.scope/job_4242/step_interactive", .found = 1, .job = 4242, .step = "interactive", NOUID },
	/* Plain systemd. */
	{ "/system.slice/jupyter.service", .unit = "jupyter.service", .slice = "system.slice", NOUID },
	{ "/user.slice/user-1000.slice/session-4.scope", .unit = "session-4.scope", .slice = "user-1000.slice", NOUID },
	{ "/init.scope", .unit = "init.scope", NOUID },
	{ "/", NOUID },
	/* Read from another cgroup namespace. */
	{ "/../../kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" CID ".scope",
	  KUBE(CGROUP_RUNTIME_CONTAINERD, CGROUP_QOS_BESTEFFORT), .flags = CGROUP_ID_F_OUTSIDE_NS },
	/* cgroupfs: "kubepods" is above the reader's namespace, out of sight. */
	{ "/../../../besteffort/pod" UID "/" CID,
	  KUBE(CGROUP_RUNTIME_UNKNOWN, CGROUP_QOS_BESTEFFORT), .flags = CGROUP_ID_F_OUTSIDE_NS },
	{ "/../../burstable/pod" UID "/crio-" CID,
	  KUBE(CGROUP_RUNTIME_CRIO, CGROUP_QOS_BURSTABLE), .flags = CGROUP_ID_F_OUTSIDE_NS },
	{ "/../../pod" UID "/" CID,
	  KUBE(CGROUP_RUNTIME_UNKNOWN, CGROUP_QOS_UNKNOWN), .flags = CGROUP_ID_F_OUTSIDE_NS },
	/* Not right after the climb, or with no climb: a container, in no pod. */
	{ "/../../x/besteffort/pod" UID "/" CID, CTR(CGROUP_RUNTIME_UNKNOWN),
	  .flags = CGROUP_ID_F_OUTSIDE_NS },
	{ "/besteffort/pod" UID "/" CID, CTR(CGROUP_RUNTIME_UNKNOWN) },
	{ "/../../podnot-a-uid/" CID, CTR(CGROUP_RUNTIME_UNKNOWN), .flags = CGROUP_ID_F_OUTSIDE_NS },

	/* Hostile or wrong: nothing taken from them. */
	{ "/user.slice/user-1000.slice/user@1000.service/kubepods.slice/kubepods-pod" UID_ ".slice/app.scope",
	  .unit = "app.scope", .slice = "kubepods-pod" UID_ ".slice", NOUID, .flags = CGROUP_ID_F_DELEGATED },
	{ "/user.slice/user-1000.slice/user@1000.service/app.slice/slurm/uid_0/job_9/step_0",
	  .unit = "user@1000.service", .slice = "app.slice", NOUID, .flags = CGROUP_ID_F_DELEGATED },
	{ "/system.slice/docker-" CID "0.scope", .unit = "docker-" CID "0.scope", .slice = "system.slice", NOUID },
	{ "/system.slice/docker-CA978112CA1BBDCAFAC231B39A23DC4DA786EFF8147C4E72B9807785AFEE48BB.scope",
	  .unit = "docker-CA978112CA1BBDCAFAC231B39A23DC4DA786EFF8147C4E72B9807785AFEE48BB.scope",
	  .slice = "system.slice", NOUID },
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d7cf2b4-5a3b-4c6e-9f1e-8b2a6c1d4e5f.slice",
	  .slice = "kubepods-burstable-pod0d7cf2b4-5a3b-4c6e-9f1e-8b2a6c1d4e5f.slice", NOUID },
	{ "/kubepods/burstable/pod" UID_ "/x", NOUID },
	{ "/kubepods/burstable/podnot-a-uid/" CID, CTR(CGROUP_RUNTIME_UNKNOWN) },
	/* A malformed inner level does not undo the pod found outside it. */
	{ "/kubepods/burstable/pod" UID "/podzzz/" CID, KUBE(CGROUP_RUNTIME_UNKNOWN, CGROUP_QOS_BURSTABLE) },
	{ "/notkubepods.slice/notkubepods-pod" UID_ ".slice", .slice = "notkubepods-pod" UID_ ".slice", NOUID },
	{ "/slurm/uid_x/job_/step_0", NOUID },
	{ "/slurm/uid_1/job_99999999999/step_0", NOUID },
	{ "/slurm/uid_1/job_0/step_0", NOUID },
	{ "/system.slice/bad\x01name.service", .slice = "system.slice", NOUID },
	{ "/system.slice/\xff\xfe.service", .slice = "system.slice", NOUID },
};

static void assert_str(const char *what, const char *got, const char *want, const char *path)
{
	ck_assert_msg(strcmp(got, want ? want : "") == 0, "%s: %s is \"%s\", not \"%s\"", path,
		      what, got, want ? want : "");
}

START_TEST(path_patterns)
{
	const struct path_case *c = &path_cases[_i];
	struct cgroup_id id;
	int rc;

	memset(&id, 0, sizeof(id));
	id.slurm_uid = CGROUP_ID_NO_UID;
	rc = cgroup_path_match(c->path, strlen(c->path), &id);
	ck_assert_msg(rc == c->found, "%s: found %d", c->path, rc);
	ck_assert_msg(id.runtime == c->runtime, "%s: runtime %s", c->path,
		      cgroup_runtime_name(id.runtime));
	assert_str("container", id.container_id, c->cid, c->path);
	assert_str("pod uid", id.pod_uid, c->uid, c->path);
	ck_assert_msg(id.qos == c->qos, "%s: qos %s", c->path, cgroup_qos_name(id.qos));
	ck_assert_msg(id.slurm_job_id == c->job, "%s: job %llu", c->path,
		      (unsigned long long)id.slurm_job_id);
	assert_str("step", id.slurm_step, c->step, c->path);
	ck_assert_msg(id.slurm_uid == c->slurm_uid, "%s: slurm uid %u", c->path, id.slurm_uid);
	assert_str("unit", id.unit, c->unit, c->path);
	assert_str("slice", id.slice, c->slice, c->path);
	ck_assert_msg(id.flags == c->flags, "%s: flags %#x", c->path, id.flags);
	/* What the parser child would answer for it is believed. */
	ck_assert_msg(cgroup_id_admit(&id) == 0, "%s: a real parse refused", c->path);
}
END_TEST

START_TEST(relative_paths_are_refused)
{
	struct cgroup_id id;

	memset(&id, 0, sizeof(id));
	ck_assert_int_eq(cgroup_path_match("kubepods/pod" UID "/" CID, 50, &id), -EINVAL);
	ck_assert_int_eq(cgroup_path_match("", 0, &id), -EINVAL);
}
END_TEST

/* A hybrid host's file: v2 first, then name=systemd, then controllers. */
START_TEST(hybrid_prefers_v2_then_name_systemd_then_controllers)
{
	static const char v2[] =
		"9:name=systemd:/kubepods/pod" UID "/" CID2 "\n"
		"4:memory:/kubepods/pod" UID "/" CID2 "\n"
		"0::/system.slice/docker-" CID ".scope\n";
	static const char systemd[] =
		"9:name=systemd:/kubepods/burstable/pod" UID "/" CID "\n"
		"8:pids:/system.slice/docker-" CID2 ".scope\n"
		"0::/\n";
	static const char controller[] =
		"12:freezer:/slurm/uid_1000/job_31/step_2/task_0\n"
		"9:name=systemd:/\n"
		"4:memory:/process_api/x\n"
		"0::/\n";
	static const char unit_only[] =
		"9:name=systemd:/user.slice/user-0.slice/session-1.scope\n"
		"0::/system.slice/ssh.service\n";
	static const char root_only[] = "9:name=systemd:/\n1:cpu:/\n0::/\n";
	struct cgroup_id id;

	ck_assert_int_eq(cgroup_id_parse(v2, strlen(v2), &id), 0);
	ck_assert_uint_eq(id.source, CGROUP_SOURCE_V2);
	ck_assert_str_eq(id.container_id, CID);
	ck_assert_uint_eq(id.runtime, CGROUP_RUNTIME_DOCKER);
	ck_assert_str_eq(id.pod_uid, "");
	ck_assert_str_eq(id.path, "/system.slice/docker-" CID ".scope");

	ck_assert_int_eq(cgroup_id_parse(systemd, strlen(systemd), &id), 0);
	ck_assert_uint_eq(id.source, CGROUP_SOURCE_V1_SYSTEMD);
	ck_assert_str_eq(id.pod_uid, UID);
	ck_assert_uint_eq(id.qos, CGROUP_QOS_BURSTABLE);
	ck_assert_str_eq(id.container_id, CID);

	/* memory's "/process_api/x" names nothing; freezer's Slurm path does. */
	ck_assert_int_eq(cgroup_id_parse(controller, strlen(controller), &id), 0);
	ck_assert_uint_eq(id.source, CGROUP_SOURCE_V1_CONTROLLER);
	ck_assert_uint_eq(id.slurm_job_id, 31);
	ck_assert_str_eq(id.slurm_step, "2");
	ck_assert_uint_eq(id.slurm_uid, 1000);

	ck_assert_int_eq(cgroup_id_parse(unit_only, strlen(unit_only), &id), 0);
	ck_assert_uint_eq(id.source, CGROUP_SOURCE_V2);
	ck_assert_str_eq(id.unit, "ssh.service");
	ck_assert_str_eq(id.slice, "system.slice");

	ck_assert_int_eq(cgroup_id_parse(root_only, strlen(root_only), &id), 0);
	ck_assert_uint_eq(id.source, CGROUP_SOURCE_NONE);
	ck_assert_str_eq(id.path, "");
	ck_assert_uint_eq(id.slurm_uid, CGROUP_ID_NO_UID);
}
END_TEST

/* Whole files that are not what the kernel writes: nothing is used. */
static const char *const bad_files[] = {
	"0::/kubepods/pod" UID "/" CID "\n0::/system.slice/x.service\n",	/* hierarchy twice */
	"9:name=systemd:/a\n9:name=systemd:/kubepods/pod" UID "/" CID "\n",
	"garbage\n",
	"0:/kubepods\n",
	":0::/\n",
	"x::/\n",
	"0:memory:/\n",				/* v2 has no controllers */
	"3::/\n",				/* and only v2 has none */
	"3:Memory:/\n",
	"3:mem ory:/\n",
	"0::kubepods/pod" UID "/" CID "\n",	/* not absolute */
	"0::\n",
	"99999999999:cpu:/\n",
	"-1:cpu:/\n",
};

START_TEST(malformed_files_give_nothing)
{
	const char *f = bad_files[_i];
	struct cgroup_id id;

	ck_assert_int_eq(cgroup_id_parse(f, strlen(f), &id), -EBADMSG);
	ck_assert_uint_eq(id.flags & CGROUP_ID_F_MALFORMED, CGROUP_ID_F_MALFORMED);
	ck_assert_str_eq(id.container_id, "");
	ck_assert_str_eq(id.pod_uid, "");
	ck_assert_uint_eq(id.runtime, CGROUP_RUNTIME_NONE);
	ck_assert_str_eq(id.path, "");
}
END_TEST

START_TEST(long_and_cut_lines_are_skipped)
{
	static char text[CGROUP_ID_READ_MAX * 2];
	struct cgroup_id id;
	size_t n;

	/* A v2 path longer than CGROUP_ID_PATH_MAX: skipped, name=systemd used. */
	n = (size_t)snprintf(text, sizeof(text), "9:name=systemd:/docker/%s\n0::/", CID);
	memset(text + n, 'a', CGROUP_ID_PATH_MAX);
	n += CGROUP_ID_PATH_MAX;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "/docker-%s.scope\n", CID2);
	ck_assert_int_eq(cgroup_id_parse(text, n, &id), 0);
	ck_assert_uint_eq(id.source, CGROUP_SOURCE_V1_SYSTEMD);
	ck_assert_str_eq(id.container_id, CID);
	ck_assert(id.flags & CGROUP_ID_F_TOO_LONG);

	/* A last line without '\n' may be cut ("job_12" of "job_123"): dropped. */
	n = (size_t)snprintf(text, sizeof(text), "9:name=systemd:/init.scope\n0::/slurm/uid_0/job_12");
	ck_assert_int_eq(cgroup_id_parse(text, n, &id), 0);
	ck_assert_uint_eq(id.slurm_job_id, 0);
	ck_assert_str_eq(id.unit, "init.scope");
	ck_assert(id.flags & CGROUP_ID_F_TRUNCATED);

	ck_assert_int_eq(cgroup_id_parse("", 0, &id), -ENODATA);
	ck_assert_int_eq(cgroup_id_parse("0::/x", 5, &id), -ENODATA);
}
END_TEST

START_TEST(odd_bytes_match_but_are_not_copied)
{
	static const char text[] = "0::/system.slice/docker-" CID ".scope/\x01\xff weird\n";
	struct cgroup_id id;

	ck_assert_int_eq(cgroup_id_parse(text, strlen(text), &id), 0);
	ck_assert_str_eq(id.container_id, CID);
	ck_assert_str_eq(id.path, "");
	ck_assert(id.flags & CGROUP_ID_F_ODD_BYTES);
}
END_TEST

START_TEST(files_and_processes)
{
	struct cgroup_id id;

	ck_assert_int_eq(cgroup_id_read_file("/nonexistent/cgroup", &id), -ENOENT);
	ck_assert_int_eq(cgroup_id_read(getpid(), &id), 0);
	ck_assert_int_eq(cgroup_id_read(2, &id), 0);	/* kthreadd: root cgroups */
	ck_assert_str_eq(id.container_id, "");
	ck_assert_str_eq(cgroup_runtime_name(CGROUP_RUNTIME_CRIO), "cri-o");
	ck_assert_str_eq(cgroup_runtime_name(99), "unknown");
	ck_assert_str_eq(cgroup_qos_name(CGROUP_QOS_BESTEFFORT), "besteffort");
}
END_TEST

/*
 * cgroup_id_admit: an answer from the parser child is kept only when a
 * parse could give it.  Real parses pass (every path pattern above does,
 * and a unit's answer whose unit name left a longer one's tail behind has
 * that tail cleared); each way a hostile child could bend one is refused.
 */
enum cg_bend {
	CG_SOURCE, CG_RUNTIME, CG_QOS, CG_FLAGS, CG_CID_SHORT, CG_CID_UPPER, CG_CID_UNTERMINATED,
	CG_UID_FORM, CG_STEP, CG_UNIT_CONTROL, CG_SLICE_UTF8, CG_PATH_UNTERMINATED, CG_BEND_COUNT
};

START_TEST(an_answer_no_parse_gives_is_refused)
{
	static const char text[] = "0::/kubepods.slice/kubepods-burstable.slice/"
		"kubepods-burstable-pod" UID_ ".slice/cri-containerd-" CID ".scope\n";
	static const char slurm[] = "0::/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0\n";
	struct cgroup_id id, job;

	ck_assert_int_eq(cgroup_id_parse(text, strlen(text), &id), 0);
	ck_assert_int_eq(cgroup_id_admit(&id), 0);
	ck_assert_int_eq(cgroup_id_parse(slurm, strlen(slurm), &job), 0);
	ck_assert_str_eq(job.slurm_step, "batch");
	ck_assert_int_eq(cgroup_id_admit(&job), 0);
	switch ((enum cg_bend)_i) {
	case CG_SOURCE:
		id.source = CGROUP_SOURCE_V1_CONTROLLER + 1;
		break;
	case CG_RUNTIME:
		id.runtime = CGROUP_RUNTIME_PODMAN + 1;
		break;
	case CG_QOS:
		id.qos = CGROUP_QOS_UNKNOWN + 1;
		break;
	case CG_FLAGS:
		id.flags |= 0x80;
		break;
	case CG_CID_SHORT:
		id.container_id[10] = '\0';
		break;
	case CG_CID_UPPER:
		id.container_id[0] = 'C';
		break;
	case CG_CID_UNTERMINATED:
		id.container_id[64] = 'a';
		break;
	case CG_UID_FORM:
		id.pod_uid[8] = '_';
		break;
	case CG_STEP:
		memcpy(id.slurm_step, "x/y", 4);
		break;
	case CG_UNIT_CONTROL:
		memcpy(id.unit, "a\nb.service", 12);
		break;
	case CG_SLICE_UTF8:
		memcpy(id.slice, "\xc0\xaf.slice", 9);
		break;
	default:
		memset(id.path, 'p', sizeof(id.path));
		break;
	}
	ck_assert_msg(cgroup_id_admit(&id) == -EPROTO, "bend %d admitted", _i);
}
END_TEST

START_TEST(admitted_answers_carry_nothing_past_their_texts)
{
	static const char text[] = "0::/system.slice/a-much-longer-unit-name.service/b.scope\n";
	struct cgroup_id id;
	size_t n;

	ck_assert_int_eq(cgroup_id_parse(text, strlen(text), &id), 0);
	ck_assert_str_eq(id.unit, "b.scope");
	/* What a child could hide after a text's end. */
	n = strlen(id.path);
	memcpy(id.path + n + 1, "zSECRETz", 8);
	ck_assert_int_eq(cgroup_id_admit(&id), 0);
	ck_assert(!memmem(&id, sizeof(id), "zSECRETz", 8));
	for (size_t i = strlen(id.unit); i < sizeof(id.unit); i++)
		ck_assert_int_eq(id.unit[i], 0);
}
END_TEST

Suite *cgroup_id_suite(void);
Suite *cgroup_id_suite(void)
{
	Suite *s = suite_create("cgroup_id");
	TCase *tc = tcase_create("patterns");

	tcase_add_loop_test(tc, path_patterns, 0, (int)(sizeof(path_cases) / sizeof(path_cases[0])));
	tcase_add_test(tc, relative_paths_are_refused);
	tcase_add_test(tc, hybrid_prefers_v2_then_name_systemd_then_controllers);
	tcase_add_loop_test(tc, malformed_files_give_nothing, 0,
			    (int)(sizeof(bad_files) / sizeof(bad_files[0])));
	tcase_add_test(tc, long_and_cut_lines_are_skipped);
	tcase_add_test(tc, odd_bytes_match_but_are_not_copied);
	tcase_add_test(tc, files_and_processes);
	tcase_add_loop_test(tc, an_answer_no_parse_gives_is_refused, 0, CG_BEND_COUNT);
	tcase_add_test(tc, admitted_answers_carry_nothing_past_their_texts);
	suite_add_tcase(s, tc);
	return s;
}
