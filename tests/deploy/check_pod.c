/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The DaemonSet's pod, run for real: `make images` builds both images,
 * deploy/podman/zernel-pod.py runs the pod with every setting taken from
 * deploy/kubernetes/daemonset.yaml, and then:
 *   - the collector, in its container, finds a workload running on the
 *     host with the fake CUDA/NCCL libraries (hostPID) and the exporter
 *     serves that workload's figures, equal to what the workload did;
 *   - a Python job in a container of the pod, in a PID namespace of its
 *     own as in Kubernetes, gets the line it waits at from `zernel explain`;
 *   - the host's /proc shows the exporter as uid 65534 with every
 *     capability set 0, NoNewPrivs 1, Seccomp 2 and the segment r--s, on
 *     a read-only tmpfs; the collector unprivileged, holding no capability
 *     outside the manifest's list, in the host's PID namespace;
 *   - killing and restarting the collector container takes
 *     zernel_collector_up to 0 and back to 1 with the same exporter.
 * Root only (BPF, podman).
 */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/testutil.h"
#include "tests/deploy/tu_deploy.h"

#define PY	"/usr/bin/python3"
#define MAKE	"env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make"
/* Capabilities the manifest adds to the collector: DAC_READ_SEARCH, SYS_PTRACE,
 * SYS_ADMIN, SYS_RESOURCE, PERFMON, BPF. */
#define COLLECTOR_CAPS	((1ull << 2) | (1ull << 19) | (1ull << 21) | (1ull << 24) | \
			 (1ull << 38) | (1ull << 39))

static char pod[64];

static void pod_name(void)
{
	snprintf(pod, sizeof(pod), "zernel-test-%d", (int)getpid());
}

/* Whatever happened in the tests, the pod and its volume go. */
static void pod_down(void)
{
	tu_system(PY " %s/deploy/podman/zernel-pod.py down --name %s "
		  "--manifest %s/deploy/kubernetes/daemonset.yaml >/dev/null 2>&1",
		  tu_src_dir(), pod, tu_src_dir());
}

static void runner_setup(void)
{
	char conf[512];

	pod_name();
	/* make-images wrote the settings podman needs on this host, if any. */
	tu_build_path(conf, sizeof(conf), "images/containers.conf");
	setenv("CONTAINERS_CONF", conf, 1);
}

static void runner_teardown(void)
{
	pod_down();
}

static void build_images(void)
{
	char *out;
	int st;

	if (access("/usr/bin/podman", X_OK) != 0) {
		tu_skip_missing("podman is missing: run make test-deps");
		ck_abort_msg("podman is missing");
	}
	out = td_capture(&st, MAKE " -s -C %s BUILD=%s images 2>&1", tu_src_dir(), tu_build_dir());
	ck_assert_msg(out && st == 0, "make images failed:\n%s", out ? out : "");
	fprintf(stderr, "%s", out);
	free(out);
	/* containers.conf exists only where podman's defaults fail here. */
	{
		char conf[512];

		tu_build_path(conf, sizeof(conf), "images/containers.conf");
		if (access(conf, R_OK) != 0)
			unsetenv("CONTAINERS_CONF");
	}
}

static pid_t container_pid(const char *container)
{
	char *out;
	int st, pid = 0;

	out = td_capture(&st, "podman inspect --format '{{.State.Pid}}' %s-%s", pod, container);
	if (out && st == 0)
		pid = atoi(out);
	free(out);
	return (pid_t)pid;
}

static char *metrics(uint16_t port)
{
	static char body[1 << 20];

	if (tu_http_request(port, "GET", "/metrics", body, sizeof(body)) != 200)
		return NULL;
	return body;
}

/* Waits until series has value want on /metrics; returns the last value seen. */
static double wait_metric(uint16_t port, const char *series, double want, int timeout_ms)
{
	double v = NAN;

	for (int t = 0; t < timeout_ms; t += 250) {
		char *body = metrics(port);

		v = body ? td_metric(body, series) : NAN;
		if (v == want)
			break;
		tu_sleep_ms(250);
	}
	return v;
}

/* Waits until a sample starting with prefix is on /metrics; 0 or -1. */
static int wait_sample(uint16_t port, const char *prefix, int timeout_ms)
{
	for (int t = 0; t < timeout_ms; t += 250) {
		char *body = metrics(port), want[200];

		snprintf(want, sizeof(want), "\n%s", prefix);
		if (body && strstr(body, want))
			return 0;
		tu_sleep_ms(250);
	}
	return -1;
}

static unsigned long long status_hex(pid_t pid, const char *key)
{
	char path[64], want[32], *text, *p;
	unsigned long long v = ~0ull;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	snprintf(want, sizeof(want), "%s:\t", key);
	text = tu_read_file(path, NULL);
	if (text && (p = strstr(text, want)))
		v = strtoull(p + strlen(want), NULL, 16);
	free(text);
	return v;
}

/*
 * A Python job as a pod runs it: a container of the pod with a PID
 * namespace of its own (Kubernetes's default), Debian's CPython 3.13 from
 * the root file system test-deps unpacks (tools/python-tree.sh), the
 * script and the fake CUDA libraries copied in at the paths they have
 * here, the runtime preloaded so that the collector finds a CUDA process
 * (that interpreter is Debian's minimal one, without ctypes).  It sleeps
 * 30 ms ten times at the script's "sleep" line; to itself it is pid 1.
 * `zernel explain`, through the pod's exporter, names that line.
 */
static void check_pod_python_job(uint16_t mport)
{
	char tree[512], fakes[512], want[600], *out = NULL;
	unsigned int line = tu_stall_site_line("sleep");
	pid_t job = 0;
	int st, found = 0;

	tu_build_path(tree, sizeof(tree), "python3.13");
	tu_build_path(fakes, sizeof(fakes), "tests/fakes");
	if (access(tree, X_OK) != 0) {
		tu_skip_missing("%s is missing: run make test-deps", tree);
		return;
	}
	ck_assert_uint_gt(line, 0);
	ck_assert_int_eq(tu_system("mkdir -p '%s%s/tests/py' '%s%s' && cp '%s/tests/py/stall_sites.py' "
				   "'%s%s/tests/py/' && cp -a '%s/.' '%s%s/'", tree, tu_src_dir(),
				   tree, fakes, tu_src_dir(), tree, tu_src_dir(), fakes, tree, fakes),
			 0);
	ck_assert_int_eq(tu_system("podman run -d --pod %s --name %s-job --pid private "
				   "-e LD_PRELOAD=%s/libcudart.so --rootfs %s /usr/bin/python3.13 "
				   "%s/tests/py/stall_sites.py 10 30 >/dev/null", pod, pod, fakes,
				   tree, tu_src_dir()), 0);
	for (int t = 0; t < 200 && !found; t++) {
		out = td_capture(&st, "podman logs %s-job 2>&1", pod);
		found = out && strstr(out, "ready pid=1\n") != NULL;
		free(out);
		if (!found)
			tu_sleep_ms(100);
	}
	if (!found)
		tu_system("podman logs %s-job >&2", pod);
	ck_assert_msg(found, "the job in its own PID namespace never said \"ready pid=1\"");
	job = container_pid("job");
	ck_assert_int_gt(job, 1);
	/* Its libraries probed and its interpreter read before it works. */
	snprintf(want, sizeof(want), "pid %d runs CPython 3.13", (int)job);
	found = 0;
	for (int t = 0; t < 240 && !found; t++) {
		out = td_capture(&st, "podman logs %s-collector 2>&1", pod);
		found = out && strstr(out, want) != NULL;
		free(out);
		if (!found)
			tu_sleep_ms(500);
	}
	ck_assert_msg(found, "the collector never read the job's interpreter (\"%s\")", want);
	ck_assert_int_eq(kill(job, SIGUSR1), 0);
	out = NULL;
	snprintf(want, sizeof(want), "%s/tests/py/stall_sites.py:%u in sleeper  sleep", tu_src_dir(),
		 line);
	found = 0;
	for (int t = 0; t < 60 && !found; t++) {
		char bin[512];

		free(out);
		out = td_capture(&st, "%s explain --pid %d --url http://127.0.0.1:%u 2>&1",
				 tu_build_path(bin, sizeof(bin), "zernel"), (int)job, mport);
		found = out && st == 0 && strstr(out, want) != NULL;
		if (!found)
			tu_sleep_ms(1000);
	}
	ck_assert_msg(found, "explain of the job (pid %d on the host) names no %s:\n%s", (int)job,
		      want, out ? out : "");
	free(out);
	tu_system("podman rm -f %s-job >/dev/null 2>&1", pod);
}

START_TEST(pod_runs_probes_host_workload_and_recovers)
{
	char fakes[400], libs[3][512], log[512], series[160], why[256], *out;
	char *argv[12];
	uint16_t mport = tu_free_port(), fport;
	int in[2], st;
	pid_t wl, exporter, collector, exporter_again;
	char *start_err = NULL;
	double v;

	if (tu_skip_unless_root("pod_runs_probes_host_workload_and_recovers"))
		return;
	build_images();
	do
		fport = tu_free_port();
	while (fport == mport);

	/* The pod, from the manifest. */
	out = td_capture(&st, PY " %s/deploy/podman/zernel-pod.py up --name %s --manifest "
			 "%s/deploy/kubernetes/daemonset.yaml --publish metrics=127.0.0.1:%u "
			 "--publish feed=127.0.0.1:%u 2>&1", tu_src_dir(), pod, tu_src_dir(),
			 mport, fport);
	ck_assert_msg(out && st == 0, "zernel-pod.py up:\n%s", out ? out : "");
	free(out);
	/*
	 * The collector probes every CUDA process of the host: on a machine
	 * busy with other such programs its start takes a minute or more.
	 */
	v = wait_metric(mport, "zernel_collector_up", 1, 180000);
	ck_assert_msg(v == 1, "zernel_collector_up is %g after 180 s", v);
	/* The feed port is published too: libwebsockets answers plain HTTP. */
	{
		char page[256];

		ck_assert_int_gt(tu_http_request(fport, "GET", "/", page, sizeof(page)), 0);
	}

	/* A workload on the host, the fake libraries loaded, held at "wait". */
	tu_build_path(fakes, sizeof(fakes), "tests/fakes");
	snprintf(libs[0], sizeof(libs[0]), "lib:%s/libcuda.so.1", fakes);
	snprintf(libs[1], sizeof(libs[1]), "lib:%s/libcudart.so", fakes);
	snprintf(libs[2], sizeof(libs[2]), "lib:%s/libnccl.so.2", fakes);
	tu_build_path(log, sizeof(log), "tests/workloads/zw_cuda");
	if (access(log, X_OK) != 0) {
		tu_skip_missing("%s is missing: run make tests-build", log);
		return;
	}
	argv[0] = log;
	argv[1] = libs[0];
	argv[2] = libs[1];
	argv[3] = libs[2];
	argv[4] = "wait";
	argv[5] = "dev:0";
	argv[6] = "malloc:1048576";
	argv[7] = "launch:50:1000";
	argv[8] = "wait";
	argv[9] = NULL;
	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	wl = tu_spawn_io(argv, "/dev/null", in[0], -1);
	ck_assert_int_gt(wl, 0);
	close(in[0]);

	/* The collector in its container sees it through the host's PID namespace. */
	snprintf(series, sizeof(series), "zernel_process_info{pid=\"%d\",ppid=\"%d\","
		 "comm=\"zw_cuda\"", (int)wl, (int)getpid());
	v = wait_sample(mport, series, 120000) == 0;
	if (v != 1)
		tu_system("podman logs %s-collector 2>&1 | tail -n 20 >&2; curl -s "
			  "127.0.0.1:%u/metrics | grep -E 'process_info|libraries|probes_att' >&2",
			  pod, mport);
	ck_assert_msg(v == 1, "%s is %g", series, v);
	/*
	 * Discovery lists the process before its libraries' uprobes are in;
	 * the collector says "probing PATH" once a library's are attached
	 * (one file, one set of uprobes, for every process mapping it).
	 */
	{
		static const char *const names[] = { "libcuda.so.1", "libcudart.so",
						     "libnccl.so.2" };
		int all = 0;

		for (int t = 0; t < 240 && !all; t++) {
			char *logs = td_capture(&st, "podman logs %s-collector 2>&1 | "
						"grep 'probing .*/tests/fakes/'", pod);

			all = 1;
			for (size_t i = 0; i < 3; i++) {
				char want[64];

				snprintf(want, sizeof(want), "/%s (", names[i]);
				all &= logs && strstr(logs, want) != NULL;
			}
			free(logs);
			if (!all)
				tu_sleep_ms(500);
		}
		ck_assert_msg(all, "the collector never probed the three fake libraries");
	}
	ck_assert_int_eq(write(in[1], "go\n", 3), 3);

	/* Its figures: what it did, 1 MiB on GPU 0 and 50 launches. */
	snprintf(series, sizeof(series), "zernel_gpu_memory_used_bytes{pid=\"%d\",gpu_id=\"0\"}",
		 (int)wl);
	v = wait_metric(mport, series, 1048576, 30000);
	ck_assert_msg(v == 1048576, "%s is %g", series, v);
	snprintf(series, sizeof(series), "zernel_cuda_launch_latency_seconds_count{pid=\"%d\"}",
		 (int)wl);
	v = wait_metric(mport, series, 50, 30000);
	ck_assert_msg(v == 50, "%s is %g", series, v);

	check_pod_python_job(mport);

	/* The exporter's sandbox, from the host's /proc. */
	exporter = container_pid("exporter");
	collector = container_pid("collector");
	ck_assert_int_gt(exporter, 0);
	ck_assert_int_gt(collector, 0);
	ck_assert_msg(td_exporter_sandboxed(exporter, why, sizeof(why)) == 0, "%s", why);
	/* Its /dev/shm: the pod's memory-backed volume, read-only. */
	out = td_capture(&st, "awk '$5 == \"/dev/shm\" { print $6, $(NF-2) }' /proc/%d/mountinfo",
			 (int)exporter);
	ck_assert_msg(out && strncmp(out, "ro,", 3) == 0 && strstr(out, " tmpfs\n"),
		      "exporter /dev/shm: %s", out ? out : "");
	free(out);
	/* The collector: not privileged, nothing beyond the manifest's capabilities, host PIDs. */
	ck_assert_msg((status_hex(collector, "CapBnd") & ~COLLECTOR_CAPS) == 0,
		      "collector CapBnd %llx", status_hex(collector, "CapBnd"));
	out = td_capture(&st, "podman inspect --format '{{.HostConfig.Privileged}} "
			 "{{.HostConfig.ReadonlyRootfs}}' %s-collector %s-exporter", pod, pod);
	ck_assert_msg(out && strcmp(out, "false true\nfalse true\n") == 0,
		      "privileged, read-only root: %s", out ? out : "");
	free(out);
	ck_assert_int_eq(tu_system("test \"$(readlink /proc/%d/ns/pid)\" = \"$(readlink "
				   "/proc/self/ns/pid)\"", (int)collector), 0);

	/*
	 * Kill the collector container (SIGKILL to its process, as a crash):
	 * the exporter reports it down; once podman has the container exited,
	 * start it again, and the exporter reports it up.
	 */
	ck_assert_int_eq(kill(collector, SIGKILL), 0);
	v = wait_metric(mport, "zernel_collector_up", 0, 30000);
	ck_assert_msg(v == 0, "zernel_collector_up is %g with the collector killed", v);
	/* podman 4.3 may take a while to see the exit, or to clean the old run up. */
	st = -1;
	for (int t = 0; t < 90 && st != 0; t++) {
		char state[64] = "";

		out = td_capture(&st, "podman inspect --format '{{.State.Status}}' %s-collector", pod);
		if (out)
			sscanf(out, "%63s", state);
		free(out);
		st = -1;
		if (!strcmp(state, "exited") || !strcmp(state, "stopped")) {
			free(start_err);
			start_err = td_capture(&st, "podman start %s-collector 2>&1", pod);
		} else if (t > 0 && t % 30 == 0) {
			/* Its process is gone but podman missed the exit: have it look again. */
			free(start_err);
			start_err = td_capture(&st, "podman restart --time 0 %s-collector 2>&1", pod);
		}
		if (st != 0)
			tu_sleep_ms(1000);
	}
	ck_assert_msg(st == 0, "podman start of the collector container failed: %s",
		      start_err ? start_err : "never exited");
	free(start_err);
	v = wait_metric(mport, "zernel_collector_up", 1, 180000);
	ck_assert_msg(v == 1, "zernel_collector_up is %g after the restart", v);
	exporter_again = container_pid("exporter");
	ck_assert_int_eq(exporter_again, exporter);
	ck_assert_msg(td_exporter_sandboxed(exporter, why, sizeof(why)) == 0, "%s", why);
	/* The new collector finds the workload again. */
	snprintf(series, sizeof(series), "zernel_process_info{pid=\"%d\",ppid=\"%d\","
		 "comm=\"zw_cuda\"", (int)wl, (int)getpid());
	ck_assert_msg(wait_sample(mport, series, 120000) == 0, "after the restart no %s", series);

	close(in[1]);
	ck_assert_int_eq(tu_stop(wl, SIGTERM, 5000) >= 0, 1);
	pod_down();
	ck_assert_int_ne(tu_system("podman pod exists %s", pod), 0);
}
END_TEST

/*
 * Every file of the image is the program, a library `ldd` resolves for it
 * (the loader included), a copyright file of those libraries' packages, or
 * /etc/passwd and /etc/group: no shell, no package manager.
 */
static void assert_image_holds_only(const char *prog)
{
	char *out, *line;
	int st, files = 0, libs = 0;

	out = td_capture(&st, "c=$(podman create localhost/%s:" ZERNEL_VERSION ") && "
			 "podman export $c | tar -tvf - | awk '$1 !~ /^d/ { print $6 }'; "
			 "podman rm $c >/dev/null", prog);
	ck_assert_msg(out && st == 0 && out[0], "cannot list the %s image", prog);
	for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		char want[300];

		files++;
		snprintf(want, sizeof(want), "usr/bin/%s", prog);
		if (!strcmp(line, want) || !strcmp(line, "etc/passwd") || !strcmp(line, "etc/group"))
			continue;
		if (!strncmp(line, "usr/share/doc/", 14) && strstr(line, "/copyright"))
			continue;
		/* A library: the one ldd resolves at that very path for the program. */
		ck_assert_msg(tu_system("ldd %s/%s | tr '\\t' ' ' | grep -qF ' /%s '",
				    tu_build_dir(), prog, line) == 0, "%s image holds %s", prog, line);
		libs++;
	}
	free(out);
	fprintf(stderr, "image %s: %d files, %d of them libraries\n", prog, files, libs);
	ck_assert_int_gt(libs, 1);
}

START_TEST(images_hold_their_program_and_its_libraries)
{
	char *out;
	int st;

	if (tu_skip_unless_root("images_hold_their_program_and_its_libraries"))
		return;
	build_images();
	assert_image_holds_only("zernel-exporter");
	assert_image_holds_only("zernel-collector");
	/* The images say what they run, as whom. */
	out = td_capture(&st, "podman image inspect --format '{{.Config.User}} {{index "
			 ".Config.Entrypoint 0}}' localhost/zernel-exporter:" ZERNEL_VERSION
			 " localhost/zernel-collector:" ZERNEL_VERSION);
	ck_assert_msg(out && strcmp(out, "65534:65534 /usr/bin/zernel-exporter\n"
				    "0:0 /usr/bin/zernel-collector\n") == 0, "%s", out ? out : "");
	free(out);
}
END_TEST

START_TEST(pod_runner_refuses_what_it_cannot_carry)
{
	char dir[256], *out;
	int st;

	snprintf(dir, sizeof(dir), "/tmp/zernel-pod-%d", (int)getpid());
	/* A Localhost seccomp profile has no podman equivalent here: refused, not dropped. */
	out = td_capture(&st, "mkdir -p %s && sed 's/type: RuntimeDefault/type: Localhost/' "
			 "%s/deploy/kubernetes/daemonset.yaml > %s/ds.yaml && " PY
			 " %s/deploy/podman/zernel-pod.py show --manifest %s/ds.yaml 2>&1; "
			 "rm -rf %s", dir, tu_src_dir(), dir, tu_src_dir(), dir, dir);
	ck_assert_ptr_nonnull(out);
	ck_assert_msg(strstr(out, "seccompProfile Localhost not carried"), "%s", out);
	free(out);
	/* And the commands for the real manifest carry each setting. */
	out = td_capture(&st, PY " %s/deploy/podman/zernel-pod.py show --manifest "
			 "%s/deploy/kubernetes/daemonset.yaml", tu_src_dir(), tu_src_dir());
	ck_assert_msg(out && st == 0, "show failed");
	ck_assert_ptr_nonnull(strstr(out, "--opt type=tmpfs"));
	ck_assert_ptr_nonnull(strstr(out, "--user 65534:65534 --cap-drop ALL --read-only "));
	ck_assert_ptr_nonnull(strstr(out, "--security-opt no-new-privileges"));
	ck_assert_ptr_nonnull(strstr(out, "dst=/dev/shm,ro=true"));
	ck_assert_ptr_nonnull(strstr(out, "--pid host"));
	ck_assert_ptr_null(strstr(out, "--privileged"));
	free(out);
}
END_TEST

Suite *pod_suite(void);

Suite *pod_suite(void)
{
	Suite *s = suite_create("pod");
	TCase *t = tcase_create("podman");

	tcase_add_unchecked_fixture(t, runner_setup, runner_teardown);
	tcase_add_test(t, pod_runner_refuses_what_it_cannot_carry);
	tcase_add_test(t, images_hold_their_program_and_its_libraries);
	tcase_add_test(t, pod_runs_probes_host_workload_and_recovers);
	/* The first run makes a Debian 12 with debootstrap and builds both images. */
	tcase_set_timeout(t, 1200);
	suite_add_tcase(s, t);
	return s;
}
