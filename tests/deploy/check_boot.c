/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The units under a real systemd: a Debian 12 made with debootstrap
 * (tools/debian-tree.sh, the tree the images use where no registry
 * answers) boots with systemd-nspawn -b, systemd as its PID 1, on a
 * throw-away overlay.  In it (tests/deploy/machine.sh does each step):
 *   - installing the package enables and starts nothing;
 *   - both units start; the host's /proc shows the exporter as uid 65534,
 *     no capabilities, NoNewPrivs 1, Seccomp 2, the segment r--s;
 *   - a collector killed by SIGKILL is restarted (Restart=on-failure) and
 *     the same exporter process reports zernel_collector_up 0, then 1;
 *   - systemd-analyze security of each running unit prints exactly what
 *     it prints offline for the unit file;
 *   - an upgrade restarts the enabled units; systemctl stop returns well
 *     within TimeoutStopSec, the unit ending with Result=success;
 *   - removing stops both units and purging leaves the file system as it
 *     was before the install.
 * Root only.  The machine gets CAP_BPF and CAP_PERFMON and may call bpf()
 * and perf_event_open(), which systemd-nspawn withholds by default.
 */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/testutil.h"
#include "tests/deploy/tu_deploy.h"

#define MAKE	"env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make"

static pid_t runner_pid;
static pid_t machine_init;	/* the machine's PID 1, as the host sees it */
static char pidfile[128];

static void runner_setup(void)
{
	runner_pid = getpid();
	snprintf(pidfile, sizeof(pidfile), "/tmp/zernel-boot-%d.pid", (int)runner_pid);
}

/* Whatever happened, the machine goes: SIGKILL to its PID 1 ends its PID namespace. */
static void runner_teardown(void)
{
	char *text = tu_read_file(pidfile, NULL);

	if (text && atoi(text) > 1)
		kill(atoi(text), SIGKILL);
	free(text);
	unlink(pidfile);
	tu_system("rm -f /tmp/zernel-boot-%d.log", (int)runner_pid);
}

/* Runs a machine.sh step inside the machine; its stdout (malloc'd), status in *st. */
static char *step(int *st, const char *args)
{
	return td_capture(st, "nsenter -t %d -a /bin/sh /mnt/zernel-tests/machine.sh %s 2>&1",
			  (int)machine_init, args);
}

static char *step_ok(const char *args)
{
	int st;
	char *out = step(&st, args);

	ck_assert_msg(out && st == 0, "machine.sh %s failed:\n%s", args, out ? out : "");
	return out;
}

static long show_field(const char *unit, const char *field)
{
	char args[128], want[64], *out, *p;
	long v = -1;

	snprintf(args, sizeof(args), "show %s", unit);
	out = step_ok(args);
	snprintf(want, sizeof(want), "%s=", field);
	p = strstr(out, want);
	if (p)
		v = strtol(p + strlen(want), NULL, 10);
	free(out);
	return v;
}

static int show_has(const char *unit, const char *line)
{
	char args[128], *out;
	int has;

	snprintf(args, sizeof(args), "show %s", unit);
	out = step_ok(args);
	has = strstr(out, line) != NULL;
	free(out);
	return has;
}

/* The exporter's value of one metric inside the machine, as text; "" when it serves none. */
static char *read_metric(const char *name)
{
	char args[128];
	int st;
	char *out;

	snprintf(args, sizeof(args), "metric %s", name);
	out = step(&st, args);
	if (out && st != 0)
		out[0] = '\0';
	return out;
}

/* Polls the exporter inside the machine until the metric is want (as text). */
static int wait_metric(const char *name, const char *want, int timeout_ms)
{
	for (int t = 0; t < timeout_ms; t += 500) {
		char *out = read_metric(name);
		int hit = out && strncmp(out, want, strlen(want)) == 0 && out[strlen(want)] == '\n';

		free(out);
		if (hit)
			return 0;
		tu_sleep_ms(500);
	}
	return -1;
}

/* A count the exporter serves, or -1 where it serves none. */
static long long metric_count(const char *name)
{
	char *out = read_metric(name);
	long long n = out && out[0] ? atoll(out) : -1;

	free(out);
	return n;
}

/*
 * Polls the exporter until it has seen the collector it followed go: the
 * segment stale (zernel_collector_up 0), or already another collector's,
 * whose publishes count again from nothing.  A restart quicker than the
 * stale limit (three publish intervals) shows only the second.
 */
static int wait_collector_gone(long long publishes_before, int timeout_ms)
{
	for (int t = 0; t < timeout_ms; t += 500) {
		long long n = metric_count("zernel_collector_publishes_total");
		char *up = read_metric("zernel_collector_up");
		int stale = up && strcmp(up, "0\n") == 0, another = n >= 0 && n < publishes_before;

		free(up);
		if (stale || another) {
			fprintf(stderr, "booted: the exporter saw the killed collector go: %s\n",
				stale ? "zernel_collector_up 0" : "publishes counting from nothing");
			return 0;
		}
		tu_sleep_ms(500);
	}
	return -1;
}

/* The host PID of the machine's process named comm (one of it), or 0. */
static pid_t host_pid_of(const char *name)
{
	char comm[16];
	char path[300], ns[64], mine[64], *text;
	struct dirent *d;
	DIR *dir = opendir("/proc");
	pid_t found = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)machine_init);
	n = readlink(path, ns, sizeof(ns) - 1);
	if (!dir || n <= 0) {
		if (dir)
			closedir(dir);
		return 0;
	}
	ns[n] = '\0';
	/* The kernel keeps 15 characters of a command's name. */
	snprintf(comm, sizeof(comm), "%s", name);
	while (!found && (d = readdir(dir))) {
		if (atoi(d->d_name) <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		text = tu_read_file(path, NULL);
		if (text && strncmp(text, comm, strlen(comm)) == 0 && text[strlen(comm)] == '\n') {
			snprintf(path, sizeof(path), "/proc/%s/ns/pid", d->d_name);
			n = readlink(path, mine, sizeof(mine) - 1);
			if (n > 0 && (mine[n] = '\0', strcmp(mine, ns) == 0))
				found = atoi(d->d_name);
		}
		free(text);
	}
	closedir(dir);
	return found;
}

static void boot_machine(void)
{
	char tree[512], deb[512], tests[512], log[512], name[64], *out;
	char *argv[20];
	pid_t nspawn;
	int st, i = 0;

	out = td_capture(&st, "sh %s/tools/debian-tree.sh %s/debian-12 2>&1 && " MAKE
			 " -s -C %s BUILD=%s deb 2>&1", tu_src_dir(), tu_build_dir(),
			 tu_src_dir(), tu_build_dir());
	ck_assert_msg(out && st == 0, "the Debian tree or the package:\n%s", out ? out : "");
	free(out);
	tu_build_path(tree, sizeof(tree), "debian-12");
	snprintf(deb, sizeof(deb), "--bind-ro=%s/deb:/mnt/zernel-deb", tu_build_dir());
	snprintf(tests, sizeof(tests), "--bind-ro=%s/tests/deploy:/mnt/zernel-tests", tu_src_dir());
	snprintf(name, sizeof(name), "--machine=zernel-boot-%d", (int)runner_pid);
	snprintf(log, sizeof(log), "/tmp/zernel-boot-%d.log", (int)runner_pid);
	argv[i++] = "/usr/bin/systemd-nspawn";
	argv[i++] = "--quiet";
	argv[i++] = "--boot";
	argv[i++] = "--directory";
	argv[i++] = tree;
	/* The cached tree stays as it is: the machine writes to a tmpfs overlay. */
	argv[i++] = "--volatile=overlay";
	/* This host may have no systemd (nor machined) to register with. */
	argv[i++] = "--register=no";
	argv[i++] = "--keep-unit";
	argv[i++] = "--private-network";
	argv[i++] = "--console=passive";
	argv[i++] = "--capability=CAP_BPF,CAP_PERFMON";
	argv[i++] = "--system-call-filter=bpf perf_event_open";
	argv[i++] = name;
	argv[i++] = deb;
	argv[i++] = tests;
	argv[i] = NULL;
	nspawn = tu_spawn(argv, log);
	ck_assert_int_gt(nspawn, 0);

	/* Its PID 1 is nspawn's child running systemd. */
	for (int t = 0; t < 200 && !machine_init; t++) {
		char *kids, path[64], *comm;

		tu_sleep_ms(100);
		kids = td_capture(&st, "cat /proc/%d/task/*/children 2>/dev/null", (int)nspawn);
		if (kids && atoi(kids) > 0) {
			snprintf(path, sizeof(path), "/proc/%d/comm", atoi(kids));
			comm = tu_read_file(path, NULL);
			if (comm && strcmp(comm, "systemd\n") == 0)
				machine_init = atoi(kids);
			free(comm);
		}
		free(kids);
	}
	ck_assert_msg(machine_init > 0, "no systemd in the machine; see %s", log);
	out = td_capture(&st, "echo %d > %s", (int)machine_init, pidfile);
	free(out);
	/* systemctl answers once systemd listens on its private socket. */
	out = td_capture(&st, "for i in $(seq 120); do s=$(timeout 120 nsenter -t %d -a "
			 "systemctl is-system-running --wait 2>&1) && break; "
			 "case $s in *'connect to bus'*) sleep 0.5 ;; *) break ;; esac; done; "
			 "echo \"$s\"", (int)machine_init);
	ck_assert_msg(out && (strcmp(out, "running\n") == 0 || strcmp(out, "degraded\n") == 0),
		      "the machine did not come up: %s", out ? out : "");
	free(out);
}

START_TEST(units_run_under_systemd_in_booted_debian)
{
	char why[256], *out, *before, *after;
	long pid, restarts, stop_ms, timeout_s;
	long long publishes;
	pid_t exporter, collector;
	int st;

	if (tu_skip_unless_root("units_run_under_systemd_in_booted_debian"))
		return;
	if (access("/usr/bin/systemd-nspawn", X_OK) != 0 || access("/usr/sbin/debootstrap", X_OK)) {
		tu_skip_missing("systemd-nspawn or debootstrap is missing: run make test-deps");
		return;
	}
	boot_machine();
	free(step_ok("snapshot /run/before.txt"));

	/* Installing enables and starts nothing. */
	out = step_ok("install /mnt/zernel-deb/zernel_" ZERNEL_VERSION "_*.deb");
	ck_assert_msg(strstr(out, "\nzernel-collector.service disabled inactive\n"
			     "zernel-exporter.service disabled inactive\n"), "%s", out);
	free(out);

	/* The administrator turns them on. */
	free(step_ok("start"));
	ck_assert_msg(wait_metric("zernel_collector_up", "1", 30000) == 0,
		      "zernel_collector_up never 1 in the machine");
	ck_assert(show_has("zernel-collector.service", "ActiveState=active"));
	ck_assert(show_has("zernel-exporter.service", "ActiveState=active"));

	/* The exporter's sandbox, from the host's /proc. */
	exporter = host_pid_of("zernel-exporter");
	ck_assert_int_gt(exporter, 0);
	ck_assert_msg(td_exporter_sandboxed(exporter, why, sizeof(why)) == 0, "%s", why);

	/* systemd-analyze security: the running units score as their files do offline. */
	out = step_ok("security zernel-exporter.service");
	ck_assert_msg(strncmp(out, "same\n", 5) == 0, "%s", out);
	fprintf(stderr, "booted: %s", out + 5);
	free(out);
	out = step_ok("security zernel-collector.service");
	ck_assert_msg(strncmp(out, "same\n", 5) == 0, "%s", out);
	fprintf(stderr, "booted: %s", out + 5);
	free(out);

	/* A crashed collector is restarted; the same exporter sees it go and come back. */
	pid = show_field("zernel-collector.service", "MainPID");
	restarts = show_field("zernel-collector.service", "NRestarts");
	ck_assert_int_gt(pid, 0);
	collector = host_pid_of("zernel-collector");
	ck_assert_int_gt(collector, 0);
	/* Enough publishes that the next collector's count is plainly another's. */
	for (int t = 0; t < 60 && (publishes = metric_count("zernel_collector_publishes_total")) < 5; t++)
		tu_sleep_ms(500);
	ck_assert_msg(publishes >= 5, "%lld publishes before the kill", publishes);
	ck_assert_int_eq(kill(collector, SIGKILL), 0);
	ck_assert_msg(wait_collector_gone(publishes, 20000) == 0,
		      "the exporter still follows the killed collector (up 1, publishes from %lld on)",
		      publishes);
	ck_assert_msg(wait_metric("zernel_collector_up", "1", 30000) == 0,
		      "zernel_collector_up not back to 1 after the restart");
	ck_assert_int_eq(show_field("zernel-collector.service", "NRestarts"), restarts + 1);
	ck_assert_int_ne(show_field("zernel-collector.service", "MainPID"), pid);
	ck_assert_int_eq(host_pid_of("zernel-exporter"), exporter);

	/* An upgrade restarts the enabled units. */
	pid = show_field("zernel-exporter.service", "MainPID");
	out = step_ok("upgrade /mnt/zernel-deb/zernel_" ZERNEL_VERSION "_*.deb");
	ck_assert_str_eq(out, ZERNEL_VERSION "+1\n");
	free(out);
	ck_assert(show_has("zernel-exporter.service", "ActiveState=active"));
	ck_assert_int_ne(show_field("zernel-exporter.service", "MainPID"), pid);
	ck_assert_msg(wait_metric("zernel_collector_up", "1", 30000) == 0,
		      "zernel_collector_up not 1 after the upgrade");
	exporter = host_pid_of("zernel-exporter");
	ck_assert_msg(td_exporter_sandboxed(exporter, why, sizeof(why)) == 0, "%s", why);

	/*
	 * systemctl stop: well within the timeout, and a clean exit.  The
	 * collector's is 5 min, for the child that releases its uprobes;
	 * the exporter's systemd's default.
	 */
	ck_assert(show_has("zernel-collector.service", "TimeoutStopUSec=5min"));
	ck_assert(show_has("zernel-exporter.service", "TimeoutStopUSec=1min 30s"));
	for (int u = 0; u < 2; u++) {
		const char *unit = u ? "zernel-exporter.service" : "zernel-collector.service";
		char args[64];

		timeout_s = u ? 90 : 300;

		snprintf(args, sizeof(args), "stop %s", unit);
		out = step_ok(args);
		stop_ms = atol(out);
		free(out);
		fprintf(stderr, "booted: systemctl stop %s took %ld ms\n", unit, stop_ms);
		ck_assert_int_lt(stop_ms, timeout_s * 1000 / 2);
		ck_assert(show_has(unit, "ActiveState=inactive"));
		ck_assert_msg(show_has(unit, "Result=success"), "%s did not stop cleanly", unit);
	}

	/* Removal stops what runs; purge leaves the system as it was. */
	free(step_ok("start"));
	ck_assert_msg(wait_metric("zernel_collector_up", "1", 30000) == 0, "not up again");
	out = step_ok("remove");
	ck_assert_str_eq(out, "zernel-collector.service inactive\nzernel-exporter.service inactive\n");
	free(out);
	free(step_ok("purge"));
	free(step_ok("snapshot /run/after.txt"));
	out = td_capture(&st, "nsenter -t %d -a diff /run/before.txt /run/after.txt 2>&1",
			 (int)machine_init);
	ck_assert_msg(out && st == 0 && out[0] == '\0', "purge left:\n%s", out ? out : "");
	free(out);
	before = td_capture(&st, "nsenter -t %d -a ls /dev/shm", (int)machine_init);
	ck_assert_msg(before && before[0] == '\0', "/dev/shm holds: %s", before ? before : "");
	free(before);
	after = td_capture(&st, "nsenter -t %d -a sh -c 'ls /var/lib/systemd/deb-systemd-helper-enabled "
			   "/etc/systemd/system/*.wants | grep zernel'", (int)machine_init);
	ck_assert_msg(after && after[0] == '\0', "left enabled: %s", after ? after : "");
	free(after);

	/* The machine powers off. */
	ck_assert_int_eq(kill(machine_init, SIGRTMIN + 4), 0);
	for (int t = 0; t < 300 && kill(machine_init, 0) == 0; t++)
		tu_sleep_ms(100);
	ck_assert_msg(kill(machine_init, 0) != 0, "the machine did not power off");
}
END_TEST

Suite *boot_suite(void);

Suite *boot_suite(void)
{
	Suite *s = suite_create("boot");
	TCase *t = tcase_create("systemd");

	tcase_add_unchecked_fixture(t, runner_setup, runner_teardown);
	tcase_add_test(t, units_run_under_systemd_in_booted_debian);
	/* May make the Debian tree and the package first. */
	tcase_set_timeout(t, 900);
	suite_add_tcase(s, t);
	return s;
}
