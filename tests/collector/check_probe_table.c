/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The loader's attach table against the BPF objects it attaches: every
 * program of every object has a row, every row names a program of its
 * object whose section fits how the row attaches it, and every uprobe
 * entry row is followed by its return.  Opening an object needs no
 * privilege, so neither does this.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "collector/probe_loader.h"

static const char *section_of(const struct probe_attach *r, struct bpf_object *obj)
{
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, r->prog);

	return prog ? bpf_program__section_name(prog) : NULL;
}

static int prefixed(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

START_TEST(every_program_has_a_row_and_every_row_a_program)
{
	struct bpf_object *obj[PROBE_OBJ_COUNT];
	void *skel[PROBE_OBJ_COUNT];

	for (int i = 0; i < PROBE_OBJ_COUNT; i++) {
		skel[i] = probe_objects[i].open(&obj[i]);
		ck_assert_msg(skel[i] != NULL, "%s: %s", probe_objects[i].name, strerror(errno));
	}
	for (size_t i = 0; i < probe_attach_count; i++) {
		const struct probe_attach *r = &probe_attach_table[i];
		const char *sec;

		ck_assert_int_lt(r->obj, PROBE_OBJ_COUNT);
		sec = section_of(r, obj[r->obj]);
		ck_assert_msg(sec != NULL, "row %zu: no program %s in %s", i, r->prog,
			      probe_objects[r->obj].name);
		switch (r->how) {
		case PROBE_AUTO:
			ck_assert_msg(prefixed(sec, "tp_btf/"), "%s: %s", r->prog, sec);
			break;
		case PROBE_SYS_ENTER:
		case PROBE_SYS_EXIT:
			ck_assert_msg(prefixed(sec, "tracepoint/syscalls/"), "%s: %s", r->prog, sec);
			ck_assert(r->syscalls && r->syscalls[0]);
			break;
		case PROBE_UPROBE:
			ck_assert_msg(strcmp(sec, "uprobe") == 0, "%s: %s", r->prog, sec);
			ck_assert(r->symbol && r->libs && !(r->libs & ~(PROBE_LIB_GPU | PROBE_LIB_LIBC)));
			/*
			 * Its return row, when it has one, comes next (a failed
			 * entry skips it); an entry alone (ncclGroupStart) is
			 * followed by another symbol's row.
			 */
			if (i + 1 < probe_attach_count &&
			    probe_attach_table[i + 1].how == PROBE_URETPROBE &&
			    probe_attach_table[i + 1].symbol &&
			    strcmp(probe_attach_table[i + 1].symbol, r->symbol) == 0)
				ck_assert_uint_eq(probe_attach_table[i + 1].libs, r->libs);
			break;
		case PROBE_URETPROBE:
			ck_assert_msg(strcmp(sec, "uretprobe") == 0, "%s: %s", r->prog, sec);
			ck_assert(r->symbol && r->libs && !(r->libs & ~(PROBE_LIB_GPU | PROBE_LIB_LIBC)));
			break;
		default:
			ck_abort_msg("row %zu: how %d", i, r->how);
		}
	}
	for (int o = 0; o < PROBE_OBJ_COUNT; o++) {
		struct bpf_program *prog;

		bpf_object__for_each_program(prog, obj[o]) {
			int rows = 0;

			for (size_t i = 0; i < probe_attach_count; i++)
				rows += probe_attach_table[i].obj == (enum probe_obj)o &&
					strcmp(probe_attach_table[i].prog, bpf_program__name(prog)) == 0;
			ck_assert_msg(rows > 0, "%s: program %s is never attached",
				      probe_objects[o].name, bpf_program__name(prog));
		}
	}
	for (int i = PROBE_OBJ_COUNT; i > 0; i--)
		probe_objects[i - 1].destroy(skel[i - 1]);
}
END_TEST

/* The barrier probe is a libc row like any other, and the only one. */
START_TEST(libc_rows_are_the_barrier_pair)
{
	int n = 0;

	for (size_t i = 0; i < probe_attach_count; i++) {
		const struct probe_attach *r = &probe_attach_table[i];

		if (!(r->libs & PROBE_LIB_LIBC))
			continue;
		ck_assert_uint_eq(r->libs, PROBE_LIB_LIBC);
		ck_assert_str_eq(r->symbol, "pthread_barrier_wait");
		ck_assert_int_eq(r->obj, PROBE_OBJ_DIST);
		n++;
	}
	ck_assert_int_eq(n, 2);
}
END_TEST

Suite *probe_table_suite(void);
Suite *probe_table_suite(void)
{
	Suite *s = suite_create("probe_table");
	TCase *tc = tcase_create("objects");

	tcase_add_test(tc, every_program_has_a_row_and_every_row_a_program);
	tcase_add_test(tc, libc_rows_are_the_barrier_pair);
	suite_add_tcase(s, tc);
	return s;
}
