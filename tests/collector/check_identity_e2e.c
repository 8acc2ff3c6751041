/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Identity from end to end: processes this test starts with a known
 * environment (a planted secret included), placed into real cgroups named
 * as kubelet (systemd and cgroupfs drivers) and Slurm name theirs, a fake
 * kubelet log tree, then the real zernel-collector (BPF mode, --pid) and
 * the real zernel-exporter.  /metrics (zernel_process_info) and the
 * WebSocket feed (a real client) must say who each process is, "unknown"
 * where the input is bad, and never the secret.  Root.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/identity/ident_scan.h"
#include "tests/collector/tu_identity.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define CID	"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
#define CID2	"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"
#define UID	"0d7cf2b4-5a3b-4c6e-9f1e-8b2a6c1d4e5f"
#define UID_	"0d7cf2b4_5a3b_4c6e_9f1e_8b2a6c1d4e5f"
#define UID2	"11111111-2222-4333-8444-555555555555"
#define UID3	"33333333-2222-4333-8444-555555555555"
#define UID4	"44444444-2222-4333-8444-555555555555"
#define SECRET	"zSECRETz-AKIAIOSFODNN7EXAMPLE-wJalrXUtnFEMI"
#define NPROC	5

static struct {
	pid_t pids[NPROC];
	struct ti_cgroup cg[NPROC];
	char logroot[256];
	struct tu_stack st;
	int stack;
} fx;

static void setup(void)
{
	memset(&fx, 0, sizeof(fx));
}

static void teardown(void)
{
	if (fx.stack)
		tu_stack_stop(&fx.st);
	for (int i = 0; i < NPROC; i++)
		ti_reap(fx.pids[i]);
	for (int i = 0; i < NPROC; i++)
		ti_cgroup_remove(&fx.cg[i]);
	if (fx.logroot[0])
		tu_system("rm -rf '%s'", fx.logroot);
}

static void sweep(void)
{
	ti_cgroup_sweep();
	ti_tmp_sweep();
}

/* One pod directory, and when ctr is set its container and log link. */
static void kube_pod(const char *ns, const char *pod, const char *uid, const char *ctr,
		     const char *cid)
{
	ck_assert_int_eq(tu_system("mkdir -p '%s/pods/%s_%s_%s' '%s/containers'",
				   fx.logroot, ns, pod, uid, fx.logroot), 0);
	if (!ctr)
		return;
	ck_assert_int_eq(tu_system("mkdir -p '%s/pods/%s_%s_%s/%s' && : > '%s/pods/%s_%s_%s/%s/0.log' && "
				   "ln -s /var/log/pods/%s_%s_%s/%s/0.log '%s/containers/%s_%s_%s-%s.log'",
				   fx.logroot, ns, pod, uid, ctr, fx.logroot, ns, pod, uid, ctr,
				   ns, pod, uid, ctr, fx.logroot, pod, ns, ctr, cid), 0);
}

/* Starts slot's process with envp inside rel of hierarchy h; 1 when the host lacks h. */
static int place(int slot, char *const envp[], enum ti_hierarchy h, const char *rel)
{
	int rc;

	fx.pids[slot] = ti_spawn_env(envp);
	ck_assert_int_gt(fx.pids[slot], 0);
	rc = ti_cgroup_enter(&fx.cg[slot], h, rel, fx.pids[slot]);
	ck_assert_msg(rc >= 0, "%s: %s", rel, strerror(-rc));
	if (rc == 1)
		fprintf(stderr, "SKIP %s: this host lacks that cgroup hierarchy\n", rel);
	return rc;
}

static void start_stack(void)
{
	char exe[1024], pods[300], ctrs[300], pid[NPROC][16];
	char *argv[40] = { exe, "--shm", fx.st.shm, "--publish-interval", "200",
			   "--pods-dir", pods, "--containers-dir", ctrs, "--no-node-libs" };
	size_t n = 10;

	tu_stack_init(&fx.st);
	fx.stack = 1;
	snprintf(pods, sizeof(pods), "%s/pods", fx.logroot);
	snprintf(ctrs, sizeof(ctrs), "%s/containers", fx.logroot);
	for (int i = 0; i < NPROC; i++) {
		snprintf(pid[i], sizeof(pid[i]), "%d", (int)fx.pids[i]);
		argv[n++] = "--pid";
		argv[n++] = pid[i];
	}
	argv[n] = NULL;
	tu_build_path(exe, sizeof(exe), "zernel-collector");
	fx.st.collector = tu_spawn(argv, fx.st.col_log);
	ck_assert_int_gt(fx.st.collector, 0);
	ck_assert_int_eq(tu_stack_start_exporter(&fx.st), 0);
	if (tu_stack_wait_up(&fx.st, 120000) != 0) {
		tu_stack_dump_logs(&fx.st);
		ck_abort_msg("the collector never came up");
	}
}

/*
 * /metrics once every process has its info series with the identity read
 * (each of them has a rank or a local rank).
 */
static char *scrape_identified(void)
{
	static const char *const known[NPROC] = {
		"rank=\"3\"", "rank=\"0\"", "rank=\"5\"", "pod_uid=\"" UID3 "\"",
		"local_rank=\"2\"",
	};

	for (int waited = 0; waited < 60000; waited += 200) {
		char *m = tu_scrape(fx.st.metrics_port);
		int all = m != NULL;

		for (int i = 0; all && i < NPROC; i++) {
			char want[128];
			double v;

			snprintf(want, sizeof(want), "pid=\"%d\",%s", (int)fx.pids[i], known[i]);
			all = tu_metric(m, "zernel_process_info", want, &v) == 0;
		}
		if (all)
			return m;
		if (waited + 200 >= 60000 && m) {
			/* What was there instead, for the failure message. */
			for (const char *l = strstr(m, "\nzernel_process_info{"); l;
			     l = strstr(l + 1, "\nzernel_process_info{"))
				fprintf(stderr, "%.*s\n", (int)strcspn(l + 1, "\n"), l + 1);
		}
		free(m);
		tu_sleep_ms(200);
	}
	tu_stack_dump_logs(&fx.st);
	ck_abort_msg("not every process reached zernel_process_info");
	return NULL;
}

static void expect_info(const char *metrics, int slot, const char *labels)
{
	char want[1024];
	double v = 0;

	snprintf(want, sizeof(want), "pid=\"%d\",%s", (int)fx.pids[slot], labels);
	ck_assert_msg(tu_metric(metrics, "zernel_process_info", want, &v) == 0 && v == 1,
		      "no zernel_process_info{%s}", want);
}

/* The feed's object of slot's process (compact JSON, sorted keys), malloc'd. */
static char *feed_process(const char *feed, int slot)
{
	char key[32];
	const char *p;
	size_t n;

	snprintf(key, sizeof(key), ",\"pid\":%d,", (int)fx.pids[slot]);
	p = strstr(feed, key);
	ck_assert_msg(p, "process %d is not in the feed", (int)fx.pids[slot]);
	while (p > feed && p[-1] != '\n')
		p--;
	n = strcspn(p, "\n");
	return strndup(p, n);
}

static void expect_feed(const char *obj, const char *kv)
{
	ck_assert_msg(strstr(obj, kv), "feed object lacks %s: %s", kv, obj);
}

START_TEST(pods_jobs_and_ranks_reach_metrics_and_feed)
{
	char *const trainer_env[] = {
		"PATH=/usr/bin:/bin", "AWS_SECRET_ACCESS_KEY=" SECRET, "RANK=3", "LOCAL_RANK=1",
		"WORLD_SIZE=8", "GROUP_RANK=1", "TORCHELASTIC_RUN_ID=llama-ft-7",
		"HF_TOKEN=" SECRET, NULL,
	};
	char *const worker_env[] = { "AWS_SECRET_ACCESS_KEY=" SECRET, "RANK=0", "WORLD_SIZE=2", NULL };
	char *const slurm_env[] = {
		"AWS_SECRET_ACCESS_KEY=" SECRET, "SLURM_JOB_ID=77", "SLURM_PROCID=5",
		"SLURM_LOCALID=1", "SLURM_NTASKS=16", NULL,
	};
	char long_run[300] = "TORCHELASTIC_RUN_ID=";
	char *const odd_env[] = { "AWS_SECRET_ACCESS_KEY=" SECRET, "RANK=abc", long_run, NULL };
	char *const late_env[] = { "AWS_SECRET_ACCESS_KEY=" SECRET, "LOCAL_RANK=2", NULL };
	char cmd[512], *metrics, *feed, *obj;
	int status;

	if (tu_skip_unless_root("pods_jobs_and_ranks_reach_metrics_and_feed"))
		return;
	memset(long_run + strlen(long_run), 'r', 200);
	snprintf(fx.logroot, sizeof(fx.logroot), "/tmp/zernel-test-%d-ident-e2e", (int)getpid());
	tu_system("rm -rf '%s'", fx.logroot);
	kube_pod("ml", "trainer-0", UID, "trainer", CID);
	kube_pod("research", "sweep-2.batch", UID2, "worker", CID2);
	/* UID3's only directory is not a well-formed name: it names no pod. */
	kube_pod("Bad_NS", "pod$x", UID3, NULL, NULL);

	if (place(0, trainer_env, TI_V2, "kubepods.slice/kubepods-burstable.slice/"
		  "kubepods-burstable-pod" UID_ ".slice/cri-containerd-" CID ".scope") ||
	    place(1, worker_env, TI_V1_SYSTEMD, "kubepods/besteffort/pod" UID2 "/" CID2) ||
	    place(2, slurm_env, TI_V2, "system.slice/slurmstepd.scope/job_77/step_batch/user/task_0") ||
	    place(3, odd_env, TI_V2, "kubepods/pod" UID3 "/" CID) ||
	    place(4, late_env, TI_V2, "kubepods/pod" UID4 "/" CID2))
		return;
	start_stack();

	metrics = scrape_identified();
	expect_info(metrics, 0, "pod=\"trainer-0\",namespace=\"ml\",container=\"trainer\","
		    "container_runtime=\"containerd\",container_id=\"" CID "\",pod_uid=\"" UID "\","
		    "slurm_job=\"unknown\",slurm_step=\"unknown\",rank=\"3\",local_rank=\"1\","
		    "world_size=\"8\",group_rank=\"1\",torchelastic_run_id=\"llama-ft-7\"");
	expect_info(metrics, 1, "pod=\"sweep-2.batch\",namespace=\"research\",container=\"worker\","
		    "container_runtime=\"unknown\",container_id=\"" CID2 "\",pod_uid=\"" UID2 "\","
		    "rank=\"0\",local_rank=\"unknown\",world_size=\"2\"");
	expect_info(metrics, 2, "pod=\"unknown\",container_id=\"unknown\",slurm_job=\"77\","
		    "slurm_step=\"batch\",rank=\"5\",local_rank=\"1\",world_size=\"16\"");
	/* A badly named pod directory, a rank that is no number, an over-long run id. */
	expect_info(metrics, 3, "pod=\"unknown\",namespace=\"unknown\",container=\"unknown\","
		    "container_id=\"" CID "\",pod_uid=\"" UID3 "\",rank=\"unknown\","
		    "torchelastic_run_id=\"unknown\"");
	/* A pod whose log directory does not exist (yet). */
	expect_info(metrics, 4, "pod=\"unknown\",pod_uid=\"" UID4 "\",local_rank=\"2\"");
	ck_assert_msg(!strstr(metrics, "zSECRETz"), "the secret reached /metrics");
	ck_assert_msg(!strstr(metrics, "AKIA"), "the secret reached /metrics");
	free(metrics);

	/* The feed, read by a real WebSocket client. */
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/py/ws_processes.py %u %d 20",
		 tu_src_dir(), fx.st.ws_port, NPROC);
	feed = tu_capture(cmd, &status);
	ck_assert_msg(feed && status == 0, "ws_processes.py: %s", feed ? feed : "(no output)");
	ck_assert_msg(!strstr(feed, "zSECRETz") && !strstr(feed, "AKIA"), "the secret reached the feed");
	obj = feed_process(feed, 0);
	expect_feed(obj, "\"pod\":\"trainer-0\"");
	expect_feed(obj, "\"namespace\":\"ml\"");
	expect_feed(obj, "\"container\":\"trainer\"");
	expect_feed(obj, "\"rank\":\"3\"");
	expect_feed(obj, "\"torchelastic_run_id\":\"llama-ft-7\"");
	free(obj);
	obj = feed_process(feed, 2);
	expect_feed(obj, "\"slurm_job\":\"77\"");
	expect_feed(obj, "\"rank\":\"5\"");
	free(obj);
	free(feed);

	/*
	 * The trainer's pod is deleted while it runs, and UID4's pod appears
	 * late: after the next identity read the first keeps its last names
	 * and the second gains its own.
	 */
	ck_assert_int_eq(tu_system("rm -rf '%s/pods/ml_trainer-0_" UID "' "
				   "'%s/containers/trainer-0_ml_trainer-" CID ".log'",
				   fx.logroot, fx.logroot), 0);
	kube_pod("ml", "late-1", UID4, NULL, NULL);
	for (int waited = 0;; waited += 500) {
		double v;

		metrics = tu_scrape(fx.st.metrics_port);
		ck_assert_ptr_nonnull(metrics);
		snprintf(cmd, sizeof(cmd), "pid=\"%d\",pod=\"late-1\",namespace=\"ml\"",
			 (int)fx.pids[4]);
		if (tu_metric(metrics, "zernel_process_info", cmd, &v) == 0)
			break;
		ck_assert_msg(waited < (int)(IDENT_REFRESH_NS / 1000000) + 40000,
			      "the late pod was never named");
		free(metrics);
		tu_sleep_ms(500);
	}
	expect_info(metrics, 0, "pod=\"trainer-0\",namespace=\"ml\",container=\"trainer\"");
	free(metrics);
}
END_TEST

/* The choices between sources, on parsed inputs: no root needed. */
START_TEST(cgroup_wins_and_ranks_fall_back)
{
	static struct cgroup_id cg;
	static struct proc_env env;
	static struct kube_names kn;
	struct shm_identity id;

	memset(&cg, 0, sizeof(cg));
	memset(&env, 0, sizeof(env));
	memset(&kn, 0, sizeof(kn));
	cg.slurm_job_id = 9;
	snprintf(cg.slurm_step, sizeof(cg.slurm_step), "extern");
	env.slurm_job_id = (struct proc_env_num){ .state = PROC_ENV_SET, .value = 10 };
	env.ompi_rank = (struct proc_env_num){ .state = PROC_ENV_SET, .value = 4 };
	env.slurm_procid = (struct proc_env_num){ .state = PROC_ENV_SET, .value = 6 };
	env.slurm_ntasks = (struct proc_env_num){ .state = PROC_ENV_SET, .value = 12 };
	env.local_rank = (struct proc_env_num){ .state = PROC_ENV_INVALID };
	kn.pod_state = KUBE_NAMES_GONE;
	snprintf(kn.namespace, sizeof(kn.namespace), "ml");
	snprintf(kn.pod, sizeof(kn.pod), "gone-0");
	ident_scan_build(&cg, &kn, &env, &id);
	/* The environment claims job 10; the cgroup says 9. */
	ck_assert_uint_eq(id.slurm_job_id, 9);
	ck_assert_str_eq(id.slurm_step, "extern");
	ck_assert_int_eq(id.rank, 4);		/* OMPI before Slurm */
	ck_assert_int_eq(id.world_size, 12);
	ck_assert_int_eq(id.local_rank, -1);	/* invalid is unknown */
	ck_assert_int_eq(id.group_rank, -1);
	ck_assert_str_eq(id.pod, "gone-0");
	ck_assert(id.flags & SHM_ID_F_POD_GONE);
	ck_assert_str_eq(id.container, "");	/* container name never found */

	/* Without a Slurm cgroup, the environment's job and step. */
	cg.slurm_job_id = 0;
	env.slurm_step_id = (struct proc_env_num){ .state = PROC_ENV_SET, .value = 3 };
	ident_scan_build(&cg, NULL, &env, &id);
	ck_assert_uint_eq(id.slurm_job_id, 10);
	ck_assert_str_eq(id.slurm_step, "3");
	ck_assert_str_eq(id.pod, "");

	/* A Slurm job id past 32 bits is no Slurm job: unknown, from either source. */
	cg.slurm_job_id = 1ull << 40;
	env.slurm_job_id.value = 1ull << 33;
	ident_scan_build(&cg, NULL, &env, &id);
	ck_assert_uint_eq(id.slurm_job_id, 0);
}
END_TEST

Suite *identity_e2e_suite(void);
Suite *identity_e2e_suite(void)
{
	Suite *s = suite_create("identity_e2e");
	TCase *tc = tcase_create("collector_and_exporter");
	TCase *unit = tcase_create("choices");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_unchecked_fixture(tc, sweep, sweep);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, pods_jobs_and_ranks_reach_metrics_and_feed);
	suite_add_tcase(s, tc);
	tcase_add_test(unit, cgroup_wins_and_ranks_fall_back);
	suite_add_tcase(s, unit);
	return s;
}
