/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Deployment files: `make install` into a scratch root, the two systemd
 * units through the real systemd-analyze (verify must print nothing; the
 * security exposure must stay within the limits), and the Kubernetes
 * manifests and Containerfiles through tests/py/check_manifests.py, which
 * is itself shown to catch each property broken on purpose.  Root only
 * where noted.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/shm_writer.h"
#include "tests/support/testutil.h"

#define PY		"/usr/bin/python3"
#define EXPORTER_MAX_EXPOSURE	2.0
#define COLLECTOR_MAX_EXPOSURE	5.0
/* A nested make must not inherit the test runner's jobserver. */
#define MAKE		"env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make"

/*
 * Each test works in its own folder under one per runner; the runner's
 * side of the fixture removes them all, failed tests' included.
 */
static pid_t runner_pid;
static char scratch[128];

static void runner_setup(void)
{
	runner_pid = getpid();
}

static void runner_teardown(void)
{
	tu_system("rm -rf /tmp/zernel-deploy-%d", (int)runner_pid);
}

static void scratch_setup(void)
{
	snprintf(scratch, sizeof(scratch), "/tmp/zernel-deploy-%d/%d", (int)runner_pid,
		 (int)getpid());
	ck_assert_int_eq(tu_system("rm -rf %s && mkdir -p %s", scratch, scratch), 0);
}

static void scratch_teardown(void)
{
	tu_system("rm -rf %s", scratch);
}

/* Runs cmd; its stdout and stderr land in *out (malloc'd).  Returns the exit status. */
static int run_capture(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int run_capture(char **out, const char *fmt, ...)
{
	char cmd[4096], path[256];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s/out.txt", scratch);
	st = tu_system("%s >%s 2>&1", cmd, path);
	*out = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(*out);
	unlink(path);
	return st;
}

static void assert_tool(const char *path)
{
	ck_assert_msg(access(path, X_OK) == 0, "%s is missing: run make test-deps", path);
}

/* ---------------------------------------------------------------- manifests */

static int run_checker(const char *k8s_dir, int k8s_only, char **out)
{
	struct shm_capacity cap;

	shm_capacity_default(&cap);
	return run_capture(out, PY " %s/tests/py/check_manifests.py --src %s --k8s %s "
			   "--build %s --segment-bytes %llu%s", tu_src_dir(), tu_src_dir(),
			   k8s_dir, tu_build_dir(), (unsigned long long)shm_segment_size(&cap),
			   k8s_only ? " --k8s-only" : "");
}

START_TEST(manifests_and_containerfiles_have_every_property)
{
	char k8s[512], *out = NULL;
	int st;

	assert_tool(PY);
	snprintf(k8s, sizeof(k8s), "%s/deploy/kubernetes", tu_src_dir());
	st = run_checker(k8s, 0, &out);
	ck_assert_msg(st == 0 && strstr(out, "\n0 failed\n"), "check_manifests.py:\n%s", out);
	ck_assert_ptr_null(strstr(out, "FAIL"));
	/* It really looked: a sample of the properties it reports. */
	ck_assert_ptr_nonnull(strstr(out, "ok   exporter: runAsUser 65534\n"));
	ck_assert_ptr_nonnull(strstr(out, "ok   exporter: /dev/shm mounted readOnly\n"));
	ck_assert_ptr_nonnull(strstr(out, "ok   collector: not privileged\n"));
	ck_assert_ptr_nonnull(strstr(out, "ok   emptyDir medium: Memory\n"));
	ck_assert_ptr_nonnull(strstr(out, "ok   PodMonitor scrapes the annotated port by name\n"));
	ck_assert_ptr_nonnull(strstr(out, "ok   PodMonitor keeps the workload's pod, namespace and "
				     "container labels (honorLabels)\n"));
	ck_assert_ptr_nonnull(strstr(out, "ok   Containerfile.exporter: runtime installs every "
				     "library zernel-exporter links\n"));
	free(out);
}
END_TEST

/* Replaces the n-th (1-based; 0 = last) occurrence of old in the file. */
static void mutate(const char *path, const char *old, const char *new, int n)
{
	char *text = tu_read_file(path, NULL), *hit = NULL, *p;
	FILE *f;

	ck_assert_ptr_nonnull(text);
	for (p = strstr(text, old); p; p = strstr(p + 1, old)) {
		hit = p;
		if (n > 0 && --n == 0)
			break;
	}
	ck_assert_msg(hit && n <= 0, "\"%s\" not in %s", old, path);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%.*s%s%s", (int)(hit - text), text, new, hit + strlen(old));
	fclose(f);
	free(text);
}

START_TEST(the_checker_catches_each_broken_property)
{
	static const struct {
		const char *old, *new;
		int n;
		const char *complaint;
	} cases[] = {
		{ "runAsUser: 65534", "runAsUser: 0", 1, "FAIL exporter: runAsUser 65534" },
		{ "privileged: false", "privileged: true", 1, "FAIL collector: not privileged" },
		{ "runAsNonRoot: true", "runAsNonRoot: false", 1, "FAIL exporter: runAsNonRoot" },
		{ "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", 0,
		  "FAIL exporter: allowPrivilegeEscalation false" },
		{ "readOnly: true\n      volumes:", "readOnly: false\n      volumes:", 1,
		  "FAIL exporter: /dev/shm mounted readOnly" },
		{ "medium: Memory", "medium: \"\"", 1, "FAIL emptyDir medium: Memory" },
		{ "sizeLimit: 64Mi", "sizeLimit: 1Mi", 1, "FAIL sizeLimit" },
		{ "type: RuntimeDefault", "type: Unconfined", 0,
		  "FAIL exporter: seccompProfile RuntimeDefault" },
		{ "prometheus.io/scrape: \"true\"", "prometheus.io/scrape: \"false\"", 1,
		  "FAIL annotation prometheus.io/scrape" },
		{ "- BPF ", "- NET_ADMIN\n                - BPF ", 1, "FAIL collector: adds only" },
		{ "hostPID: true", "hostPID: false", 1, "FAIL pod: hostPID" },
		{ "drop: [\"ALL\"]\n            seccompProfile", "drop: []\n            seccompProfile",
		  1, "FAIL exporter: drops ALL" },
		{ "containerPort: 9092", "containerPort: 9093", 1, "FAIL exporter: ports 9091 and 9092" },
	};
	char k8s[256], ds[300], *out = NULL;

	assert_tool(PY);
	snprintf(k8s, sizeof(k8s), "%s/k8s", scratch);
	snprintf(ds, sizeof(ds), "%s/daemonset.yaml", k8s);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(tu_system("rm -rf %s && cp -r %s/deploy/kubernetes %s",
					   k8s, tu_src_dir(), k8s), 0);
		mutate(ds, cases[i].old, cases[i].new, cases[i].n);
		ck_assert_msg(run_checker(k8s, 1, &out) == 1, "case %zu passed:\n%s", i, out);
		ck_assert_msg(strstr(out, cases[i].complaint) != NULL,
			      "case %zu: no \"%s\" in:\n%s", i, cases[i].complaint, out);
		free(out);
	}
}
END_TEST

START_TEST(the_checker_catches_a_broken_podmonitor)
{
	static const struct { const char *old, *new, *complaint; } cases[] = {
		{ "- port: metrics", "- port: feed", "FAIL PodMonitor scrapes the annotated port" },
		{ "path: /metrics", "path: /stats", "FAIL PodMonitor path and scheme" },
		{ "    matchLabels:\n      app.kubernetes.io/name: zernel",
		  "    matchLabels:\n      app.kubernetes.io/name: other",
		  "FAIL PodMonitor selects the DaemonSet's pods" },
		{ "namespace: zernel", "namespace: monitoring", "FAIL PodMonitor in the DaemonSet's" },
		{ "  - podmonitor.yaml\n", "", "FAIL prometheus-operator overlay" },
		{ "honorLabels: true", "honorLabels: false", "FAIL PodMonitor keeps the workload's" },
	};
	char k8s[256], file[320], *out = NULL;

	assert_tool(PY);
	snprintf(k8s, sizeof(k8s), "%s/k8s", scratch);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(tu_system("rm -rf %s && cp -r %s/deploy/kubernetes %s",
					   k8s, tu_src_dir(), k8s), 0);
		snprintf(file, sizeof(file), "%s/prometheus-operator/%s", k8s,
			 i == 4 ? "kustomization.yaml" : "podmonitor.yaml");
		mutate(file, cases[i].old, cases[i].new, 1);
		ck_assert_msg(run_checker(k8s, 1, &out) == 1, "case %zu passed:\n%s", i, out);
		ck_assert_msg(strstr(out, cases[i].complaint) != NULL,
			      "case %zu: no \"%s\" in:\n%s", i, cases[i].complaint, out);
		free(out);
	}
}
END_TEST

/* ------------------------------------------------------------------ systemd */

static void install_into_scratch(void)
{
	char *out = NULL;
	int st;

	st = run_capture(&out, MAKE " -s -C %s BUILD=%s DESTDIR=%s/root install",
			 tu_src_dir(), tu_build_dir(), scratch);
	ck_assert_msg(st == 0, "make install failed:\n%s", out);
	free(out);
}

START_TEST(make_install_puts_binaries_and_units)
{
	static const struct { const char *rel; mode_t mode; } files[] = {
		{ "usr/local/bin/zernel-collector", 0755 },
		{ "usr/local/bin/zernel-exporter", 0755 },
		{ "usr/local/lib/systemd/system/zernel-collector.service", 0644 },
		{ "usr/local/lib/systemd/system/zernel-exporter.service", 0644 },
	};
	char path[512];
	struct stat st;

	install_into_scratch();
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/root/%s", scratch, files[i].rel);
		ck_assert_msg(stat(path, &st) == 0, "%s not installed", files[i].rel);
		ck_assert_msg((st.st_mode & 07777) == files[i].mode, "%s has mode %o",
			      files[i].rel, (unsigned int)(st.st_mode & 07777));
	}
	/* The installed units are the ones in the tree. */
	ck_assert_int_eq(tu_system("cmp -s %s/systemd/zernel-exporter.service "
				   "%s/root/usr/local/lib/systemd/system/zernel-exporter.service",
				   tu_src_dir(), scratch), 0);
}
END_TEST

/*
 * systemd-analyze verify needs the binaries the units name and the units
 * they pull in (sysinit.target...): the scratch root gets both.
 */
static void prepare_verify_root(void)
{
	install_into_scratch();
	ck_assert_int_eq(tu_system("mkdir -p %s/root/usr/lib/systemd && "
				   "cp -a /usr/lib/systemd/system %s/root/usr/lib/systemd/",
				   scratch, scratch), 0);
}

static int verify_unit(const char *unit_path, char **out)
{
	return run_capture(out, "systemd-analyze verify --root=%s/root %s", scratch, unit_path);
}

START_TEST(units_pass_systemd_analyze_verify_silently)
{
	static const char *const units[] = { "zernel-collector.service", "zernel-exporter.service" };
	char path[512], broken[512], *out = NULL;

	if (tu_skip_unless_root("units_pass_systemd_analyze_verify_silently"))
		return;
	assert_tool("/usr/bin/systemd-analyze");
	prepare_verify_root();
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		snprintf(path, sizeof(path), "%s/root/usr/local/lib/systemd/system/%s",
			 scratch, units[i]);
		ck_assert_msg(verify_unit(path, &out) == 0 && out[0] == '\0',
			      "systemd-analyze verify %s:\n%s", units[i], out);
		free(out);
	}
	/* Control: the same check speaks up about a unit whose binary is missing. */
	snprintf(broken, sizeof(broken), "%s/root/usr/local/lib/systemd/system/zernel-broken.service",
		 scratch);
	ck_assert_int_eq(tu_system("sed 's|/usr/local/bin/zernel-exporter|/usr/local/bin/zernel-nope|' "
				   "%s > %s", path, broken), 0);
	verify_unit(broken, &out);
	ck_assert_msg(strstr(out, "zernel-nope") != NULL, "verify said:\n%s", out);
	free(out);
}
END_TEST

static double exposure(const char *unit)
{
	char *out = NULL, *p;
	double v = -1;

	run_capture(&out, "systemd-analyze security --offline=yes --root=%s/root "
		    "%s/root/usr/local/lib/systemd/system/%s", scratch, scratch, unit);
	p = strstr(out, "Overall exposure level for ");
	ck_assert_msg(p != NULL, "no exposure level for %s:\n%s", unit, out);
	p = strchr(p, ':');
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(sscanf(p + 1, "%lf", &v), 1);
	fprintf(stderr, "systemd-analyze security: %s exposure %.1f\n", unit, v);
	free(out);
	return v;
}

START_TEST(units_exposure_within_limits)
{
	if (tu_skip_unless_root("units_exposure_within_limits"))
		return;
	assert_tool("/usr/bin/systemd-analyze");
	prepare_verify_root();
	ck_assert_double_le(exposure("zernel-exporter.service"), EXPORTER_MAX_EXPOSURE);
	ck_assert_double_le(exposure("zernel-collector.service"), COLLECTOR_MAX_EXPOSURE);
}
END_TEST

/* Every line in want appears as a whole line of the unit file. */
static void assert_unit_lines(const char *unit, const char *const *want, size_t n)
{
	char path[512], line[256];
	char *text;

	snprintf(path, sizeof(path), "%s/systemd/%s", tu_src_dir(), unit);
	text = tu_read_file(path, NULL);
	ck_assert_msg(text != NULL, "%s missing", path);
	for (size_t i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "\n%s\n", want[i]);
		ck_assert_msg(strstr(text, line) != NULL, "%s lacks the line %s", unit, want[i]);
	}
	free(text);
}

START_TEST(units_state_the_security_model)
{
	static const char *const exporter[] = {
		"User=65534", "Group=65534", "After=network.target zernel-collector.service",
		"Wants=zernel-collector.service", "NoNewPrivileges=yes", "CapabilityBoundingSet=",
		"AmbientCapabilities=", "ProtectSystem=strict", "PrivateTmp=yes",
		"PrivateDevices=yes", "BindReadOnlyPaths=/dev/shm", "ProtectKernelTunables=yes",
		"ProtectKernelModules=yes", "ProtectKernelLogs=yes", "ProtectControlGroups=yes",
		"RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "MemoryDenyWriteExecute=yes",
		"SystemCallArchitectures=native", "LimitCORE=0",
	};
	static const char *const collector[] = {
		"CapabilityBoundingSet=CAP_BPF CAP_PERFMON CAP_SYS_ADMIN CAP_SYS_RESOURCE "
		"CAP_SYS_PTRACE CAP_DAC_READ_SEARCH",
		"NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateNetwork=yes",
		"SystemCallFilter=bpf perf_event_open setrlimit capset",
		"MemoryDenyWriteExecute=yes", "SystemCallArchitectures=native",
	};

	assert_unit_lines("zernel-exporter.service", exporter, sizeof(exporter) / sizeof(exporter[0]));
	assert_unit_lines("zernel-collector.service", collector,
			  sizeof(collector) / sizeof(collector[0]));
}
END_TEST

Suite *deploy_suite(void);

Suite *deploy_suite(void)
{
	Suite *s = suite_create("deploy");
	TCase *k = tcase_create("manifests");
	TCase *u = tcase_create("systemd");

	tcase_add_unchecked_fixture(k, runner_setup, runner_teardown);
	tcase_add_checked_fixture(k, scratch_setup, scratch_teardown);
	tcase_add_test(k, manifests_and_containerfiles_have_every_property);
	tcase_add_test(k, the_checker_catches_each_broken_property);
	tcase_add_test(k, the_checker_catches_a_broken_podmonitor);
	tcase_set_timeout(k, 60);
	suite_add_tcase(s, k);

	tcase_add_unchecked_fixture(u, runner_setup, runner_teardown);
	tcase_add_checked_fixture(u, scratch_setup, scratch_teardown);
	tcase_add_test(u, make_install_puts_binaries_and_units);
	tcase_add_test(u, units_pass_systemd_analyze_verify_silently);
	tcase_add_test(u, units_exposure_within_limits);
	tcase_add_test(u, units_state_the_security_model);
	/* make install may have to link what the build left out of date. */
	tcase_set_timeout(u, 180);
	suite_add_tcase(s, u);
	return s;
}
