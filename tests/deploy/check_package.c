/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Debian package: `make deb` builds it with dpkg-buildpackage from a
 * copy of the tree, lintian finds nothing (each override in
 * debian/zernel.lintian-overrides carries its reason, and lintian does
 * report those tags when told to ignore the overrides), and the package
 * carries the binaries, the units pointing at them, the docs, the manual
 * pages, the example alert rules and the Grafana dashboard.  Installing,
 * upgrading and removing it under a real systemd is check_boot.c's part.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/testutil.h"

/* A nested make must not inherit the test runner's jobserver. */
#define MAKE		"env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make"

static char deb[512];

/* Builds the package once per runner (make skips it when up to date). */
static void build_package(void)
{
	char *out, arch[64] = "";
	int st;

	if (deb[0])
		return;
	out = tu_capture("dpkg --print-architecture", &st);
	ck_assert_msg(out && st == 0, "dpkg --print-architecture failed");
	sscanf(out, "%63s", arch);
	free(out);
	out = tu_capture(MAKE " -s -C $ZERNEL_SRC BUILD=$ZERNEL_BUILD deb 2>&1", &st);
	ck_assert_msg(out && st == 0, "make deb failed:\n%s", out ? out : "");
	free(out);
	snprintf(deb, sizeof(deb), "%s/deb/zernel_%s_%s.deb", tu_build_dir(), ZERNEL_VERSION, arch);
	ck_assert_msg(access(deb, R_OK) == 0, "make deb left no %s", deb);
}

static void need_tools(void)
{
	static const char *const tools[] = { "/usr/bin/dpkg-buildpackage", "/usr/bin/lintian",
					     "/usr/bin/dh", "/usr/bin/help2man" };

	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		if (access(tools[i], X_OK) != 0) {
			tu_skip_missing("%s is missing: run make test-deps", tools[i]);
			ck_abort_msg("%s is missing", tools[i]);
		}
}

START_TEST(package_is_lintian_clean)
{
	char path[600], *text, *out, *line;
	int st, overrides = 0;

	need_tools();
	build_package();
	/* make-deb ran lintian --pedantic and kept what it said. */
	snprintf(path, sizeof(path), "%s/deb/lintian.txt", tu_build_dir());
	text = tu_read_file(path, NULL);
	ck_assert_msg(text != NULL, "no %s", path);
	for (line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		ck_assert_msg(!(strchr("EWIPX", line[0]) && line[1] == ':'),
			      "lintian reports:\n%s", text);
	free(text);

	/* Every override has a comment with its reason right above it. */
	snprintf(path, sizeof(path), "%s/debian/zernel.lintian-overrides", tu_src_dir());
	text = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(text);
	for (char *prev = NULL, *l = strtok(text, "\n"); l; prev = l, l = strtok(NULL, "\n")) {
		if (l[0] == '#')
			continue;
		overrides++;
		ck_assert_msg(prev && (prev[0] == '#' || strstr(prev, ": ")),
			      "override without a reason: %s", l);
	}
	free(text);
	ck_assert_int_gt(overrides, 0);

	/* Control: without the overrides lintian names what they hide. */
	out = tu_capture("lintian --display-info --pedantic --no-override $(ls $ZERNEL_BUILD/deb/zernel_*.deb "
			 "| grep -v dbgsym) 2>&1", &st);
	ck_assert_ptr_nonnull(out);
	ck_assert_msg(strstr(out, "package-supports-alternative-init-but-no-init.d-script"),
		      "lintian --no-override said:\n%s", out);
	free(out);
}
END_TEST

START_TEST(package_carries_binaries_units_docs_examples)
{
	static const char *const files[] = {
		"./usr/bin/zernel-collector", "./usr/bin/zernel-exporter", "./usr/bin/zernel",
		"./usr/lib/zernel/libzernel-nccl-profiler.so",
		"./lib/systemd/system/zernel-collector.service",
		"./lib/systemd/system/zernel-exporter.service",
		"./usr/share/doc/zernel/README.md", "./usr/share/doc/zernel/copyright",
		"./usr/share/doc/zernel/docs/design.md", "./usr/share/doc/zernel/docs/metrics.md",
		"./usr/share/doc/zernel/examples/prometheus-rules.yml",
		"./usr/share/doc/zernel/examples/alerts.example.json",
		"./usr/share/doc/zernel/examples/grafana-dashboard.json",
		"./usr/share/man/man8/zernel-collector.8.gz",
		"./usr/share/man/man8/zernel-exporter.8.gz", "./usr/share/man/man1/zernel.1.gz",
	};
	char cmd[1200], want[200], *list, *out;
	int st;

	need_tools();
	build_package();
	snprintf(cmd, sizeof(cmd), "dpkg-deb -c %s | awk '{print $6}'", deb);
	list = tu_capture(cmd, &st);
	ck_assert_msg(list && st == 0, "dpkg-deb -c failed");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(want, sizeof(want), "%s\n", files[i]);
		ck_assert_msg(strstr(list, want), "%s not in the package:\n%s", files[i], list);
	}
	free(list);

	/* The packaged examples and units are the tree's, the units pointing at /usr. */
	snprintf(cmd, sizeof(cmd),
		 "set -e; d=$(mktemp -d); dpkg-deb -x %s $d; "
		 "for f in prometheus-rules.yml alerts.example.json grafana-dashboard.json; do "
		 "cmp $ZERNEL_SRC/docs/$f $d/usr/share/doc/zernel/examples/$f; done; "
		 "for f in $ZERNEL_SRC/docs/*.md; do "
		 "cmp $f $d/usr/share/doc/zernel/docs/$(basename $f); done; "
		 "sed -e 's|/usr/local/bin|/usr/bin|g' -e 's|/usr/local/share|/usr/share|g' "
		 "$ZERNEL_SRC/systemd/zernel-exporter.service | "
		 "cmp - $d/lib/systemd/system/zernel-exporter.service; "
		 "grep -x 'ExecStart=/usr/bin/zernel-collector --shm /zernel' "
		 "$d/lib/systemd/system/zernel-collector.service; "
		 "$d/usr/bin/zernel-exporter --version; rm -rf $d", deb);
	out = tu_capture(cmd, &st);
	ck_assert_msg(out && st == 0, "package contents differ from the tree:\n%s", out);
	ck_assert_msg(strstr(out, "zernel-exporter " ZERNEL_VERSION), "--version: %s", out);
	free(out);

	/* Its version is the Makefile's; its dependencies are Debian's library packages. */
	snprintf(cmd, sizeof(cmd), "dpkg-deb -f %s Version Depends", deb);
	out = tu_capture(cmd, &st);
	ck_assert_msg(out && st == 0, "dpkg-deb -f failed");
	ck_assert_msg(strstr(out, "Version: " ZERNEL_VERSION "\n"), "%s", out);
	ck_assert_msg(strstr(out, "libbpf1") && strstr(out, "libh2o-evloop0.13") &&
		      strstr(out, "libseccomp2"), "Depends: %s", out);
	free(out);
}
END_TEST

START_TEST(maintainer_scripts_enable_nothing)
{
	char cmd[700], *out;
	int st;

	need_tools();
	build_package();
	/*
	 * Installing must start and enable nothing: debhelper's code only
	 * re-enables units the administrator had enabled (was-enabled), and
	 * deb-systemd-invoke starts none that is disabled.  check_boot.c
	 * shows it on a booted system; here, no script has any other way.
	 */
	snprintf(cmd, sizeof(cmd), "d=$(mktemp -d); dpkg-deb -e %s $d; cat $d/postinst $d/prerm "
		 "$d/postrm; rm -rf $d", deb);
	out = tu_capture(cmd, &st);
	ck_assert_msg(out && st == 0, "dpkg-deb -e failed");
	ck_assert_ptr_null(strstr(out, "systemctl start"));
	ck_assert_ptr_null(strstr(out, "systemctl enable"));
	ck_assert_msg(strstr(out, "was-enabled 'zernel-collector.service'") &&
		      strstr(out, "was-enabled 'zernel-exporter.service'"), "%s", out);
	free(out);
}
END_TEST

Suite *package_suite(void);

Suite *package_suite(void)
{
	Suite *s = suite_create("package");
	TCase *t = tcase_create("deb");

	tcase_add_test(t, package_is_lintian_clean);
	tcase_add_test(t, package_carries_binaries_units_docs_examples);
	tcase_add_test(t, maintainer_scripts_enable_nothing);
	/* The first test builds the whole tree in a copy, then runs lintian. */
	tcase_set_timeout(t, 600);
	suite_add_tcase(s, t);
	return s;
}
