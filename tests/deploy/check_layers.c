/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The layers, as the link and the includes show them: only the collector
 * holds the segment writer (the one code that maps the segment writable),
 * common/ is a leaf, and the segment and catalog code include nothing of
 * the programs above them.  Reads the built binaries and the source tree.
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testutil.h"

/* Defined writer functions in a binary, counted with nm. */
static int writer_symbols(const char *binary)
{
	char path[512], cmd[768], *out;
	int status, n = 0;

	if (!tu_have_binary(binary)) {
		tu_skip_missing("%s is not built", binary);
		return -1;
	}
	tu_build_path(path, sizeof(path), binary);
	snprintf(cmd, sizeof(cmd), "nm '%s' | grep -E ' [TtWw] (shm_writer_|shm_capacity_default|shm_segment_size)'", path);
	out = tu_capture(cmd, &status);
	for (const char *s = out; s && *s; s++)
		n += *s == '\n';
	free(out);
	return n;
}

START_TEST(writer_is_linked_into_the_collector_alone)
{
	int collector = writer_symbols("zernel-collector");

	if (collector < 0)
		return;
	/* The check must be able to see the writer where it is. */
	ck_assert_int_gt(collector, 0);
	ck_assert_int_eq(writer_symbols("zernel-exporter"), 0);
	ck_assert_int_eq(writer_symbols("zernel"), 0);
}
END_TEST

/*
 * Every `#include "dir/..."` in the files of folder names a folder of
 * allowed (space separated).  Returns the number of offending lines,
 * printed.
 */
static int foreign_includes(const char *folder, const char *allowed)
{
	char dir[512], path[1024], line[512];
	struct dirent *d;
	int bad = 0, files = 0;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s/%s", tu_src_dir(), folder);
	dp = opendir(dir);
	if (!dp)
		return 0;	/* a folder not (yet) in the tree */
	while ((d = readdir(dp)) != NULL) {
		size_t n = strlen(d->d_name);
		FILE *f;

		if (n < 3 || (strcmp(d->d_name + n - 2, ".c") && strcmp(d->d_name + n - 2, ".h")))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		f = fopen(path, "re");
		ck_assert_msg(f != NULL, "cannot read %s", path);
		files++;
		while (fgets(line, sizeof(line), f)) {
			char inc[128], *slash;
			char want[256];

			if (sscanf(line, " #include \"%127[^\"]\"", inc) != 1)
				continue;
			slash = strchr(inc, '/');
			if (!slash)
				continue;	/* generated headers: vmlinux.h, skeletons */
			*slash = '\0';
			snprintf(want, sizeof(want), " %s ", allowed);
			snprintf(line, sizeof(line), " %s ", inc);
			if (!strstr(want, line)) {
				fprintf(stderr, "%s: includes %s/...\n", path, inc);
				bad++;
			}
		}
		fclose(f);
	}
	closedir(dp);
	ck_assert_msg(files > 0, "%s holds no source", dir);
	return bad;
}

START_TEST(common_is_a_leaf)
{
	ck_assert_int_eq(foreign_includes("common", "common"), 0);
}
END_TEST

START_TEST(segment_and_catalog_stay_below_the_programs)
{
	ck_assert_int_eq(foreign_includes("shm", "shm common"), 0);
	ck_assert_int_eq(foreign_includes("catalog", "catalog shm common"), 0);
}
END_TEST

Suite *layers_suite(void);
Suite *layers_suite(void)
{
	Suite *s = suite_create("layers");
	TCase *tc = tcase_create("layers");

	tcase_add_test(tc, writer_is_linked_into_the_collector_alone);
	tcase_add_test(tc, common_is_a_leaf);
	tcase_add_test(tc, segment_and_catalog_stay_below_the_programs);
	suite_add_tcase(s, tc);
	return s;
}
