/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The segment fuzzer's seeds (tests/fuzz/corpus/segment/) are images the
 * simulator published.  A seed of an older layout never passes the
 * validator, and the fuzzer then spends its time on the header checks and
 * never reaches the renderers behind them.  Each seed must pass on this
 * layout, and each regress-* input must be refused for the reason it pins.
 * With ZERNEL_RECORD=1 (`make fuzz-seeds`) the seeds are recorded again
 * from the simulator.  Unprivileged.
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/shm_reader.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define SEED_DIR	"tests/fuzz/corpus/segment"
/* The fuzzer's -max_len for segments (FUZZ_SEGMENT_FLAGS in tests/fuzz/fuzz.mk). */
#define SEED_MAX_LEN	2097152u

/* What each regression input must be refused for. */
static const struct {
	const char *name;
	const char *reason;
} regressions[] = {
	{ "regress-duplicate-gpu-mem-row", "two rows with the same identity" },
};

static void seed_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/" SEED_DIR "/%s", tu_src_dir(), name);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_msg(f, "cannot write %s", path);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/* A published image of scenario, small enough for the fuzzer (a few hundred kB). */
static void *record(const char *scenario, size_t *len)
{
	const char *args[] = { "--scenario", scenario, "--processes", "8", "--max-procs", "8",
			       "--publish-interval", "100", NULL };
	struct tu_stack s;
	struct shm_reader r;
	struct shm_snapshot snap = { 0 };
	char why[256];
	void *img;

	tu_stack_init(&s);
	ck_assert_int_eq(tu_stack_start_collector(&s, args), 0);
	shm_reader_init(&r, s.shm);
	/* Three seconds of samples, so quantile windows and rates have values. */
	tu_sleep_ms(3000);
	ck_assert_int_eq(shm_reader_snapshot(&r, &snap, why, sizeof(why)), SHM_READ_OK);
	/* The header and the rows in use: a reader's copy leaves the rest undefined. */
	img = calloc(1, snap.size);
	ck_assert_ptr_nonnull(img);
	memcpy(img, snap.buf, SHM_HEADER_SIZE);
	for (int t = 0; t < SHM_TABLE_COUNT; t++) {
		const struct shm_table *tb = &snap.hdr->table[t];

		memcpy((char *)img + tb->offset, (const char *)snap.buf + tb->offset,
		       (size_t)tb->count * tb->entry_size);
	}
	*len = snap.size;
	shm_snapshot_free(&snap);
	shm_reader_close(&r);
	tu_stack_stop(&s);
	return img;
}

/* The steady image with its second memory row given the first one's identity. */
static void duplicate_gpu_mem_row(void *img)
{
	struct shm_header_fields *h = img;
	const struct shm_table *t = &h->table[SHM_TABLE_GPU_MEM];
	struct shm_gpu_mem *m = (struct shm_gpu_mem *)((char *)img + t->offset);

	ck_assert_uint_ge(t->count, 2);
	m[1].pid = m[0].pid;
	m[1].gpu_id = m[0].gpu_id;
}

START_TEST(seeds_pass_the_validator_of_this_layout)
{
	char path[1024], why[256];
	DIR *d;
	struct dirent *e;
	unsigned int seeds = 0, refused = 0;

	if (getenv("ZERNEL_RECORD") && strcmp(getenv("ZERNEL_RECORD"), "1") == 0) {
		static const char *const scenarios[] = { "steady", "straggler" };

		for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
			char name[64];
			size_t len;
			void *img = record(scenarios[i], &len);

			snprintf(name, sizeof(name), "%s.seg", scenarios[i]);
			seed_path(path, sizeof(path), name);
			write_file(path, img, len);
			if (i == 0) {
				duplicate_gpu_mem_row(img);
				seed_path(path, sizeof(path), regressions[0].name);
				write_file(path, img, len);
			}
			free(img);
		}
	}
	seed_path(path, sizeof(path), "");
	d = opendir(path);
	ck_assert_msg(d, "%s: no seeds", path);
	while ((e = readdir(d))) {
		size_t len = 0;
		char *img;
		int err;

		if (e->d_name[0] == '.')
			continue;
		seed_path(path, sizeof(path), e->d_name);
		img = tu_read_file(path, &len);
		ck_assert_ptr_nonnull(img);
		ck_assert_msg(len <= SEED_MAX_LEN, "seed %s is %zu bytes: the fuzzer cuts inputs "
			      "at %u (tests/fuzz/fuzz.mk), and a cut one never passes the validator",
			      e->d_name, len, SEED_MAX_LEN);
		why[0] = '\0';
		err = shm_validate(img, len, why, sizeof(why));
		free(img);
		if (strncmp(e->d_name, "regress-", 8) != 0) {
			ck_assert_msg(err == 0, "seed %s fails the validator (%s): "
				      "record the seeds again with `make fuzz-seeds`", e->d_name, why);
			seeds++;
			continue;
		}
		for (size_t i = 0; i < sizeof(regressions) / sizeof(regressions[0]); i++)
			if (strcmp(e->d_name, regressions[i].name) == 0) {
				ck_assert_msg(err != 0 && strstr(why, regressions[i].reason),
					      "%s: want refused for \"%s\", got \"%s\"", e->d_name,
					      regressions[i].reason, err ? why : "accepted");
				refused++;
			}
	}
	closedir(d);
	ck_assert_uint_ge(seeds, 2);
	ck_assert_uint_eq(refused, sizeof(regressions) / sizeof(regressions[0]));
}
END_TEST

Suite *fuzz_seeds_suite(void);
Suite *fuzz_seeds_suite(void)
{
	Suite *s = suite_create("fuzz_seeds");
	TCase *tc = tcase_create("segment");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, seeds_pass_the_validator_of_this_layout);
	suite_add_tcase(s, tc);
	return s;
}
