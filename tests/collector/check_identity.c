/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Identity against ground truth: processes this test starts with a known
 * environment (a planted secret included) and places into real cgroups it
 * creates, named as kubelet (systemd and cgroupfs drivers), CRI-O,
 * podman, Slurm (v1 and v2) and systemd name theirs, on the cgroup v2
 * hierarchy and on v1 ones; a fake /var/log tree for their pod names; a
 * GPU list as NVML would give it.  Then proc_identity_read() must say
 * exactly who each process is.  Root.  And the refresh hands a row only
 * its own process's identity (no root needed).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpf/probe_abi.h"
#include "collector/agg/agg.h"
#include "collector/probes/discovery.h"
#include "collector/identity/ident_scan.h"
#include "collector/identity/proc_identity.h"
#include "collector/parser/parser.h"
#include "collector/proc/proc_stat.h"
#include "tests/collector/tu_identity.h"
#include "common/util.h"
#include "tests/support/testutil.h"

#define CID	"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
#define CID2	"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"
#define UID	"0d7cf2b4-5a3b-4c6e-9f1e-8b2a6c1d4e5f"
#define UID_	"0d7cf2b4_5a3b_4c6e_9f1e_8b2a6c1d4e5f"
#define UID2	"11111111-2222-4333-8444-555555555555"
#define SECRET	"zSECRETz-AKIAIOSFODNN7EXAMPLE-wJalrXUtnFEMI"

#define U0	"GPU-aaaa0000-0000-4000-8000-000000000000"
#define U1	"GPU-aaaa1111-1111-4111-8111-111111111111"
#define U2	"GPU-bbbb2222-2222-4222-8222-222222222222"

static const struct gpu_node GPUS[3] = {
	{ .index = 0, .minor = 0, .uuid = U0, .pci_bus_id = "00000000:1B:00.0", .name = "NVIDIA A100-SXM4-80GB" },
	{ .index = 1, .minor = 1, .uuid = U1, .pci_bus_id = "00000000:3B:00.0", .name = "NVIDIA A100-SXM4-80GB" },
	{ .index = 2, .minor = 2, .uuid = U2, .pci_bus_id = "00000000:86:00.0", .name = "NVIDIA A100-SXM4-80GB" },
};

/* What one test holds, released by teardown or, after a failure, by the sweep. */
static struct {
	pid_t pids[4];
	struct ti_cgroup cg[6];
	char logroot[256];
	struct kube_pods *kube;
	struct proc_identity id;	/* large: not on the stack */
} fx;

static void setup(void)
{
	memset(&fx, 0, sizeof(fx));
}

static void teardown(void)
{
	for (size_t i = 0; i < sizeof(fx.pids) / sizeof(fx.pids[0]); i++)
		ti_reap(fx.pids[i]);
	for (size_t i = 0; i < sizeof(fx.cg) / sizeof(fx.cg[0]); i++)
		ti_cgroup_remove(&fx.cg[i]);
	kube_pods_free(fx.kube);
	if (fx.logroot[0])
		tu_system("rm -rf '%s'", fx.logroot);
}

/* The runner's side: whatever a failed test (which skips teardown) left. */
static void sweep(void)
{
	ti_cgroup_sweep();
	ti_tmp_sweep();
}

static pid_t start(int slot, char *const envp[])
{
	fx.pids[slot] = ti_spawn_env(envp);
	ck_assert_int_gt(fx.pids[slot], 0);
	return fx.pids[slot];
}

/* Places pid in <mount>/zernel-test-<pid>/<rel>; 1 when this host has no such hierarchy. */
static int enter(int slot, enum ti_hierarchy h, const char *rel, pid_t pid)
{
	static const char *const names[] = {
		[TI_V2] = "cgroup v2", [TI_V1_SYSTEMD] = "v1 name=systemd", [TI_V1_FREEZER] = "v1 freezer",
	};
	int rc = ti_cgroup_enter(&fx.cg[slot], h, rel, pid);

	ck_assert_msg(rc >= 0, "%s %s: %s", names[h], rel, strerror(-rc));
	if (rc == 1)	/* a property of the host, not a missing package */
		fprintf(stderr, "SKIP %s: this host mounts no %s hierarchy\n", rel, names[h]);
	return rc;
}

/* A kubelet-like log tree: one pod, one container with its link. */
static void kube_tree(const char *ns, const char *pod, const char *uid, const char *ctr, const char *cid)
{
	char pods[512], ctrs[512];

	if (!fx.logroot[0]) {
		snprintf(fx.logroot, sizeof(fx.logroot), "/tmp/zernel-test-%d-identity", (int)getpid());
		tu_system("rm -rf '%s'", fx.logroot);
	}
	snprintf(pods, sizeof(pods), "%s/pods", fx.logroot);
	snprintf(ctrs, sizeof(ctrs), "%s/containers", fx.logroot);
	ck_assert_int_eq(tu_system("mkdir -p '%s/%s_%s_%s/%s' '%s' && : > '%s/%s_%s_%s/%s/0.log' && "
				   "ln -s /var/log/pods/%s_%s_%s/%s/0.log '%s/%s_%s_%s-%s.log'",
				   pods, ns, pod, uid, ctr, ctrs, pods, ns, pod, uid, ctr,
				   ns, pod, uid, ctr, ctrs, pod, ns, ctr, cid), 0);
	if (!fx.kube)
		fx.kube = kube_pods_new(pods, ctrs, &parser_kube_parsers);
}

static const struct proc_identity *identify(pid_t pid)
{
	struct proc_identity_ctx ctx = { .kube = fx.kube, .gpus = GPUS, .n_gpus = 3 };

	ck_assert_int_eq(proc_identity_read(pid, &ctx, &fx.id), 0);
	ck_assert_int_eq(fx.id.cgroup_err, 0);
	ck_assert_int_eq(fx.id.env_err, 0);
	ck_assert_msg(!memmem(&fx.id, sizeof(fx.id), "zSECRETz", 8), "the secret reached the output");
	return &fx.id;
}

START_TEST(kubernetes_pod_systemd_driver_on_cgroup_v2)
{
	char *const envp[] = {
		"PATH=/usr/bin:/bin", "AWS_SECRET_ACCESS_KEY=" SECRET, "RANK=3", "LOCAL_RANK=1",
		"WORLD_SIZE=8", "LOCAL_WORLD_SIZE=2", "TORCHELASTIC_RUN_ID=llama-ft-7",
		"MASTER_ADDR=trainer-0.trainer.ml.svc", "MASTER_PORT=29500",
		"NVIDIA_VISIBLE_DEVICES=" U2 "," U0, "CUDA_VISIBLE_DEVICES=1",
		"CUDA_DEVICE_ORDER=PCI_BUS_ID", "HF_TOKEN=" SECRET, NULL,
	};
	const struct proc_identity *id;
	pid_t pid;

	if (tu_skip_unless_root("kubernetes_pod_systemd_driver_on_cgroup_v2"))
		return;
	kube_tree("ml", "trainer-0", UID, "trainer", CID);
	pid = start(0, envp);
	if (enter(0, TI_V2, "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		  ".slice/cri-containerd-" CID ".scope", pid))
		return;
	id = identify(pid);
	/* Read by the collector's side, parsed by its sandboxed child. */
	ck_assert_int_gt(parser_pid(), 0);
	ck_assert_uint_eq(parser_restarts(), 0);
	ck_assert_uint_eq(id->cgroup.source, CGROUP_SOURCE_V2);
	ck_assert_str_eq(id->cgroup.path, fx.cg[0].path);
	ck_assert_uint_eq(id->cgroup.runtime, CGROUP_RUNTIME_CONTAINERD);
	ck_assert_str_eq(id->cgroup.container_id, CID);
	ck_assert_str_eq(id->cgroup.pod_uid, UID);
	ck_assert_uint_eq(id->cgroup.qos, CGROUP_QOS_BURSTABLE);
	ck_assert_uint_eq(id->kube.pod_state, KUBE_NAMES_FOUND);
	ck_assert_str_eq(id->kube.namespace, "ml");
	ck_assert_str_eq(id->kube.pod, "trainer-0");
	ck_assert_str_eq(id->kube.container, "trainer");
	ck_assert_uint_eq(id->env.rank.value, 3);
	ck_assert_uint_eq(id->env.local_rank.value, 1);
	ck_assert_uint_eq(id->env.world_size.value, 8);
	ck_assert_str_eq(id->env.run_id.value, "llama-ft-7");
	ck_assert_str_eq(id->env.master_addr.value, "trainer-0.trainer.ml.svc");
	/* The container holds GPUs 2 and 0; in bus order 0 then 2; "1" is GPU 2. */
	ck_assert_uint_eq(id->gpus.count, GPU_COUNT_EXACT);
	ck_assert_uint_eq(id->gpus.n, 1);
	ck_assert_int_eq(id->gpus.ord[0].index, 2);
	ck_assert_str_eq(id->gpus.ord[0].uuid, U2);
	ck_assert_uint_eq(id->gpus.ord[0].how, GPU_HOW_PCI_ORDER);
}
END_TEST

START_TEST(kubernetes_pod_cgroupfs_driver_on_v1_name_systemd)
{
	char *const envp[] = { "AWS_SECRET_ACCESS_KEY=" SECRET, "RANK=0", "NVIDIA_VISIBLE_DEVICES=1", NULL };
	const struct proc_identity *id;
	pid_t pid;

	if (tu_skip_unless_root("kubernetes_pod_cgroupfs_driver_on_v1_name_systemd"))
		return;
	kube_tree("research", "sweep-2.batch", UID2, "worker", CID2);
	pid = start(0, envp);
	if (enter(0, TI_V1_SYSTEMD, "kubepods/besteffort/pod" UID2 "/" CID2, pid))
		return;
	id = identify(pid);
	/* v2 says "/", so the name=systemd line is the one. */
	ck_assert_uint_eq(id->cgroup.source, CGROUP_SOURCE_V1_SYSTEMD);
	ck_assert_uint_eq(id->cgroup.runtime, CGROUP_RUNTIME_UNKNOWN);
	ck_assert_str_eq(id->cgroup.container_id, CID2);
	ck_assert_str_eq(id->cgroup.pod_uid, UID2);
	ck_assert_uint_eq(id->cgroup.qos, CGROUP_QOS_BESTEFFORT);
	ck_assert_str_eq(id->kube.namespace, "research");
	ck_assert_str_eq(id->kube.pod, "sweep-2.batch");
	ck_assert_str_eq(id->kube.container, "worker");
	/* One GPU in the container: ordinal 0 is NVML's 1 whatever the order. */
	ck_assert_int_eq(id->gpus.ord[0].index, 1);
	ck_assert_uint_eq(id->gpus.ord[0].how, GPU_HOW_ONLY_ONE);
}
END_TEST

START_TEST(hybrid_host_prefers_the_v2_path)
{
	char *const envp[] = { "AWS_SECRET_ACCESS_KEY=" SECRET, NULL };
	const struct proc_identity *id;
	pid_t pid;

	if (tu_skip_unless_root("hybrid_host_prefers_the_v2_path"))
		return;
	pid = start(0, envp);
	if (enter(0, TI_V2, "machine.slice/libpod-" CID ".scope/container", pid) ||
	    enter(1, TI_V1_SYSTEMD, "system.slice/docker-" CID2 ".scope", pid))
		return;
	id = identify(pid);
	ck_assert_uint_eq(id->cgroup.source, CGROUP_SOURCE_V2);
	ck_assert_uint_eq(id->cgroup.runtime, CGROUP_RUNTIME_PODMAN);
	ck_assert_str_eq(id->cgroup.container_id, CID);
	ck_assert_str_eq(id->cgroup.pod_uid, "");
	ck_assert_uint_eq(id->kube.pod_state, KUBE_NAMES_UNKNOWN);
}
END_TEST

START_TEST(podman_container_and_conmon)
{
	char *const envp[] = { "AWS_SECRET_ACCESS_KEY=" SECRET, "CUDA_VISIBLE_DEVICES=" U1, NULL };
	const struct proc_identity *id;
	pid_t ctr, mon;

	if (tu_skip_unless_root("podman_container_and_conmon"))
		return;
	ctr = start(0, envp);
	mon = start(1, envp);
	if (enter(0, TI_V1_SYSTEMD, "machine.slice/libpod-" CID ".scope", ctr) ||
	    enter(1, TI_V1_SYSTEMD, "machine.slice/libpod-conmon-" CID ".scope", mon))
		return;
	id = identify(ctr);
	ck_assert_uint_eq(id->cgroup.runtime, CGROUP_RUNTIME_PODMAN);
	ck_assert_str_eq(id->cgroup.container_id, CID);
	ck_assert_uint_eq(id->cgroup.flags & CGROUP_ID_F_CONMON, 0);
	/* A container without NVIDIA_VISIBLE_DEVICES: a UUID still names its GPU. */
	ck_assert_uint_eq(id->gpus.count, GPU_COUNT_AT_MOST);
	ck_assert_int_eq(id->gpus.ord[0].index, 1);
	ck_assert_uint_eq(id->gpus.ord[0].how, GPU_HOW_UUID);
	id = identify(mon);
	ck_assert_str_eq(id->cgroup.container_id, CID);
	ck_assert(id->cgroup.flags & CGROUP_ID_F_CONMON);
}
END_TEST

START_TEST(slurm_step_on_a_v1_controller)
{
	char *const envp[] = {
		"AWS_SECRET_ACCESS_KEY=" SECRET, "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0",
		"SLURM_PROCID=5", "SLURM_LOCALID=1", "SLURM_NTASKS=16", "CUDA_VISIBLE_DEVICES=0,2",
		"CUDA_DEVICE_ORDER=PCI_BUS_ID", NULL,
	};
	const struct proc_identity *id;
	pid_t pid;

	if (tu_skip_unless_root("slurm_step_on_a_v1_controller"))
		return;
	pid = start(0, envp);
	/* Slurm's task/cgroup plugin uses the freezer among others. */
	if (enter(0, TI_V1_FREEZER, "slurm/uid_1000/job_4242/step_0/task_1", pid))
		return;
	id = identify(pid);
	ck_assert_uint_eq(id->cgroup.source, CGROUP_SOURCE_V1_CONTROLLER);
	ck_assert_uint_eq(id->cgroup.slurm_job_id, 4242);
	ck_assert_str_eq(id->cgroup.slurm_step, "0");
	ck_assert_uint_eq(id->cgroup.slurm_uid, 1000);
	ck_assert_uint_eq(id->cgroup.runtime, CGROUP_RUNTIME_NONE);
	ck_assert_uint_eq(id->env.slurm_job_id.value, 4242);
	ck_assert_uint_eq(id->env.slurm_procid.value, 5);
	ck_assert_uint_eq(id->env.slurm_ntasks.value, 16);
	/* Not in a container: every GPU of the node, in bus order. */
	ck_assert_uint_eq(id->gpus.n, 2);
	ck_assert_int_eq(id->gpus.ord[0].index, 0);
	ck_assert_int_eq(id->gpus.ord[1].index, 2);
}
END_TEST

START_TEST(slurm_step_on_cgroup_v2)
{
	char *const envp[] = { "AWS_SECRET_ACCESS_KEY=" SECRET, "SLURM_JOB_ID=77", NULL };
	const struct proc_identity *id;
	pid_t pid;

	if (tu_skip_unless_root("slurm_step_on_cgroup_v2"))
		return;
	pid = start(0, envp);
	if (enter(0, TI_V2, "system.slice/slurmstepd.scope/job_77/step_batch/user/task_0", pid))
		return;
	id = identify(pid);
	ck_assert_uint_eq(id->cgroup.source, CGROUP_SOURCE_V2);
	ck_assert_uint_eq(id->cgroup.slurm_job_id, 77);
	ck_assert_str_eq(id->cgroup.slurm_step, "batch");
	ck_assert_uint_eq(id->cgroup.slurm_uid, CGROUP_ID_NO_UID);
	ck_assert_str_eq(id->cgroup.unit, "");
	/* No CUDA_VISIBLE_DEVICES, default order, three GPUs: nothing certain. */
	ck_assert_uint_eq(id->gpus.count, GPU_COUNT_EXACT);
	ck_assert_uint_eq(id->gpus.n, 3);
	ck_assert_uint_eq(id->gpus.ord[0].how, GPU_WHY_FASTEST_FIRST);
	ck_assert_int_eq(id->gpus.ord[0].index, -1);
}
END_TEST

START_TEST(plain_systemd_service)
{
	char *const envp[] = { "AWS_SECRET_ACCESS_KEY=" SECRET, NULL };
	const struct proc_identity *id;
	pid_t pid;

	if (tu_skip_unless_root("plain_systemd_service"))
		return;
	pid = start(0, envp);
	if (enter(0, TI_V2, "system.slice/jupyter.service", pid))
		return;
	id = identify(pid);
	ck_assert_str_eq(id->cgroup.unit, "jupyter.service");
	ck_assert_str_eq(id->cgroup.slice, "system.slice");
	ck_assert_str_eq(id->cgroup.container_id, "");
	ck_assert_uint_eq(id->cgroup.slurm_job_id, 0);
}
END_TEST

START_TEST(hostile_cgroup_names)
{
	char *const envp[] = { "AWS_SECRET_ACCESS_KEY=" SECRET, NULL };
	char deep[1400], v2[128];
	const struct proc_identity *id;
	size_t n = 0;
	pid_t odd, lng;

	if (tu_skip_unless_root("hostile_cgroup_names"))
		return;
	/* The kernel refuses '\n' in a cgroup name: no line can be forged that way. */
	if (ti_cgroup_mount(TI_V2, v2, sizeof(v2)) == 0)
		ck_assert_int_ne(tu_system("mkdir '%s/zernel-test-%d-nl\n0::x' 2>/dev/null",
					   v2, (int)getpid()), 0);
	/* Control bytes, invalid UTF-8 and spaces it allows. */
	odd = start(0, envp);
	if (enter(0, TI_V2, "system.slice/docker-" CID ".scope/\x01\xff odd", odd))
		return;
	id = identify(odd);
	ck_assert_str_eq(id->cgroup.container_id, CID);
	ck_assert_str_eq(id->cgroup.path, "");
	ck_assert(id->cgroup.flags & CGROUP_ID_F_ODD_BYTES);

	/* A v2 path over CGROUP_ID_PATH_MAX: skipped for the name=systemd line. */
	while (n + 101 < sizeof(deep) && n < CGROUP_ID_PATH_MAX + 100) {
		memset(deep + n, 'd', 99);
		deep[n + 99] = '/';
		n += 100;
	}
	snprintf(deep + n, sizeof(deep) - n, "docker-%s.scope", CID2);
	lng = start(1, envp);
	if (enter(1, TI_V2, deep, lng) ||
	    enter(2, TI_V1_SYSTEMD, "system.slice/docker-" CID ".scope", lng))
		return;
	id = identify(lng);
	ck_assert(id->cgroup.flags & CGROUP_ID_F_TOO_LONG);
	ck_assert_uint_eq(id->cgroup.source, CGROUP_SOURCE_V1_SYSTEMD);
	ck_assert_str_eq(id->cgroup.container_id, CID);
}
END_TEST

START_TEST(processes_that_exit_while_being_identified)
{
	static char fill[30][1100];
	char *envp[40];
	struct proc_identity_ctx ctx = { .gpus = GPUS, .n_gpus = 3 };
	int n = 0, gone = 0;

	if (tu_skip_unless_root("processes_that_exit_while_being_identified"))
		return;
	for (int i = 0; i < 30; i++) {
		snprintf(fill[i], sizeof(fill[i]), "FILL%02d=%01080d", i, 0);
		envp[n++] = fill[i];
	}
	envp[n++] = "RANK=2";
	envp[n++] = "AWS_SECRET_ACCESS_KEY=" SECRET;
	envp[n] = NULL;
	for (int round = 0; round < 100; round++) {
		pid_t pid = start(0, envp);
		int rc;

		if (round == 0 && enter(0, TI_V2, "system.slice/docker-" CID ".scope", pid))
			return;
		if (round > 0)
			ck_assert_int_eq(tu_system("echo %d > '%s/cgroup.procs'", (int)pid, fx.cg[0].dir), 0);
		kill(pid, SIGKILL);
		rc = proc_identity_read(pid, &ctx, &fx.id);
		ti_reap(pid);
		fx.pids[0] = 0;
		ck_assert_msg(rc == 0 || rc == -ENOENT, "round %d: %d", round, rc);
		ck_assert(!memmem(&fx.id, sizeof(fx.id), "zSECRETz", 8));
		/* Whatever was read is true. */
		ck_assert(fx.id.env.rank.state == PROC_ENV_ABSENT || fx.id.env.rank.value == 2);
		ck_assert(fx.id.cgroup.container_id[0] == '\0' || strcmp(fx.id.cgroup.container_id, CID) == 0);
		gone += rc != 0 || fx.id.env_err != 0;
	}
	fprintf(stderr, "identity exit races: %d of 100 reads saw the process go\n", gone);
}
END_TEST

/* Text in pid's environment overwritten where it stands, as the process itself could. */
static void environ_overwrite(pid_t pid, const char *from, const char *to)
{
	char path[64], *stat, *p, area[4096];
	unsigned long long start = 0, end = 0;
	ssize_t n;
	int fd;

	ck_assert_uint_eq(strlen(from), strlen(to));
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	stat = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(stat);
	/* env_start and env_end are fields 50 and 51, the 48th and 49th after the name. */
	p = strrchr(stat, ')');
	ck_assert_ptr_nonnull(p);
	for (int field = 2; field < 50 && p; field++)
		p = strchr(p + 1, ' ');
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(sscanf(p, " %llu %llu", &start, &end), 2);
	free(stat);
	ck_assert(end > start && end - start <= sizeof(area));
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	n = pread(fd, area, end - start, (off_t)start);
	ck_assert_int_eq(n, (ssize_t)(end - start));
	p = memmem(area, (size_t)n, from, strlen(from));
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(pwrite(fd, to, strlen(to), (off_t)(start + (size_t)(p - area))),
			 (ssize_t)strlen(to));
	close(fd);
}

static void refresh_counts(const struct ident_scan *scan, uint64_t parsed, uint64_t kept)
{
	uint64_t p, k;

	ident_scan_counts(scan, &p, &k);
	ck_assert_msg(p == parsed && k == kept, "parsed %llu, kept %llu; want %llu and %llu",
		      (unsigned long long)p, (unsigned long long)k, (unsigned long long)parsed,
		      (unsigned long long)kept);
}

/*
 * The refresh asks the parser child only about files that changed since
 * their last parse: a process as it was keeps its identity with no
 * request; its environment rewritten in place, or the process moved to
 * another cgroup, is parsed again, and the identity follows.
 */
START_TEST(a_refresh_parses_again_only_files_that_changed)
{
	char *const envp[] = { "PATH=/usr/bin:/bin", "AWS_SECRET_ACCESS_KEY=" SECRET, "RANK=3",
			       "WORLD_SIZE=8", NULL };
	struct shm_identity id;
	struct agg_opts ao;
	struct ident_scan *scan;
	struct agg *a;
	uint64_t started = 0, source, asked, t = now_mono_ns();
	pid_t pid;

	if (tu_skip_unless_root("a_refresh_parses_again_only_files_that_changed"))
		return;
	pid = start(0, envp);
	memset(&ao, 0, sizeof(ao));
	shm_capacity_default(&ao.cap);
	ao.window_ns = 60 * NSEC_PER_SEC;
	a = agg_new(&ao);
	scan = ident_scan_new(NULL, NULL);
	ck_assert(a && scan);
	ck_assert_int_eq(proc_start_time(pid, &started), 0);
	ck_assert_int_eq(agg_proc_watch(a, (uint32_t)pid, (uint32_t)getpid(), SHM_WATCH_PID, "sleep",
					started), 0);

	asked = parser_requests();
	ck_assert_uint_eq(ident_scan_refresh(scan, a, t), 1);
	ck_assert_uint_eq(parser_requests(), asked + 2);
	ck_assert_int_eq(agg_proc_identity(a, (uint32_t)pid, &id, &source), 0);
	ck_assert_int_eq(id.rank, 3);
	ck_assert_uint_ne(source, 0);
	refresh_counts(scan, 1, 0);

	/* As it was: no request, the same identity, stamped anew. */
	asked = parser_requests();
	ck_assert_uint_eq(ident_scan_refresh(scan, a, t + IDENT_REFRESH_NS), 1);
	ck_assert_uint_eq(parser_requests(), asked);
	ck_assert_uint_eq(agg_proc_identity_time(a, (uint32_t)pid), t + IDENT_REFRESH_NS);
	ck_assert_int_eq(agg_proc_identity(a, (uint32_t)pid, &id, &source), 0);
	ck_assert_int_eq(id.rank, 3);
	ck_assert_int_eq(id.world_size, 8);
	refresh_counts(scan, 1, 1);

	/* Its environment rewritten in place. */
	environ_overwrite(pid, "RANK=3", "RANK=5");
	ck_assert_uint_eq(ident_scan_refresh(scan, a, t + 2 * IDENT_REFRESH_NS), 1);
	ck_assert_uint_eq(parser_requests(), asked + 2);
	ck_assert_int_eq(agg_proc_identity(a, (uint32_t)pid, &id, &source), 0);
	ck_assert_int_eq(id.rank, 5);
	ck_assert(!memmem(&id, sizeof(id), "zSECRETz", 8));
	refresh_counts(scan, 2, 1);

	/* Moved into a Slurm step's cgroup: the job comes from the cgroup file. */
	if (enter(0, TI_V2, "system.slice/slurmstepd.scope/job_78/step_0/user/task_0", pid) == 0) {
		asked = parser_requests();
		ck_assert_uint_eq(ident_scan_refresh(scan, a, t + 3 * IDENT_REFRESH_NS), 1);
		ck_assert_uint_eq(parser_requests(), asked + 2);
		ck_assert_int_eq(agg_proc_identity(a, (uint32_t)pid, &id, &source), 0);
		ck_assert_uint_eq(id.slurm_job_id, 78);
		ck_assert_int_eq(id.rank, 5);
		refresh_counts(scan, 3, 1);
		ck_assert_uint_eq(ident_scan_refresh(scan, a, t + 4 * IDENT_REFRESH_NS), 1);
		ck_assert_uint_eq(parser_requests(), asked + 2);
		refresh_counts(scan, 3, 2);
	}
	agg_free(a);
	ident_scan_free(scan);
}
END_TEST

/*
 * The refresh gives a row the identity of the process its pid names now
 * only if that is the row's process: same start time.  A row whose exit
 * went unseen, its pid another process's since, keeps none.
 */
START_TEST(a_row_whose_pid_is_another_process_now_gets_no_identity)
{
	struct agg_opts ao;
	struct agg *a;
	struct ident_scan *scan = ident_scan_new(NULL, NULL);
	uint32_t self = (uint32_t)getpid(), parent = (uint32_t)getppid();
	uint64_t start_self = 0, start_parent = 0;

	ck_assert_ptr_nonnull(scan);
	memset(&ao, 0, sizeof(ao));
	shm_capacity_default(&ao.cap);
	ao.window_ns = 60 * NSEC_PER_SEC;
	a = agg_new(&ao);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(proc_start_time(self, &start_self), 0);
	ck_assert_int_eq(proc_start_time(parent, &start_parent), 0);
	ck_assert_int_eq(agg_proc_watch(a, self, parent, SHM_WATCH_PID, "self", start_self), 0);
	/* The parent's pid, with the start of a process that ran before it. */
	ck_assert_int_eq(agg_proc_watch(a, parent, 1, SHM_WATCH_PID, "gone",
					start_parent - 2 * ZW_START_TICK_NS), 0);
	ck_assert_uint_eq(ident_scan_refresh(scan, a, now_mono_ns()), 2);
	ck_assert_uint_ne(agg_proc_identity_time(a, self), 0);
	ck_assert_uint_eq(agg_proc_identity_time(a, parent), 0);
	agg_free(a);
	ident_scan_free(scan);
}
END_TEST

Suite *identity_suite(void);
Suite *identity_suite(void)
{
	Suite *s = suite_create("identity");
	TCase *tc = tcase_create("real_cgroups");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_unchecked_fixture(tc, sweep, sweep);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, kubernetes_pod_systemd_driver_on_cgroup_v2);
	tcase_add_test(tc, kubernetes_pod_cgroupfs_driver_on_v1_name_systemd);
	tcase_add_test(tc, hybrid_host_prefers_the_v2_path);
	tcase_add_test(tc, podman_container_and_conmon);
	tcase_add_test(tc, slurm_step_on_a_v1_controller);
	tcase_add_test(tc, slurm_step_on_cgroup_v2);
	tcase_add_test(tc, plain_systemd_service);
	tcase_add_test(tc, hostile_cgroup_names);
	tcase_add_test(tc, processes_that_exit_while_being_identified);
	tcase_add_test(tc, a_refresh_parses_again_only_files_that_changed);
	suite_add_tcase(s, tc);
	tc = tcase_create("refresh");
	tcase_add_test(tc, a_row_whose_pid_is_another_process_now_gets_no_identity);
	suite_add_tcase(s, tc);
	return s;
}
