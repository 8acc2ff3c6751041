/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The probe families' attachments against the BPF objects they attach: every
 * program of every object has a row, every row names a program of its
 * object whose section fits how the row attaches it, and every return row
 * comes right before its entry row.  No program is on a
 * syscall tracepoint: those put every system call of every task on the
 * slow path.  And the table against what NVIDIA's runtime asks the driver
 * for (cuGetProcAddress_v2, recorded in
 * tests/fakes/fake_driver/cudart13_requests.txt): every driver function it
 * gets for an allocation, a free, a launch, a graph launch or a
 * synchronisation is probed, unless listed here as not counted and why,
 * and every driver symbol probed is one it asks for or one programs call
 * by themselves.  Opening an object needs no privilege, so neither does
 * this.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "bpf/probe_abi.h"
#include "collector/probes/probe_family.h"
#include "collector/probes/probe_loader.h"
#include "tests/collector/tu_attach.h"
#include "tests/support/testutil.h"

#define REQUESTS	"tests/fakes/fake_driver/cudart13_requests.txt"

static const char *section_of(const struct probe_attach *r, struct bpf_object *obj)
{
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, r->prog);

	return prog ? bpf_program__section_name(prog) : NULL;
}

static int prefixed(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * A section that would put a program on every system call of every task:
 * the syscall tracepoints (one call's or all of them), raw tracepoints
 * and BTF tracepoints on sys_enter/sys_exit, and kprobes, fentry and
 * ksyscall programs on the syscall entry points.
 */
static int on_a_syscall_path(const char *sec)
{
	static const char *const paths[] = {
		"tracepoint/syscalls/", "tp/syscalls/", "tracepoint/raw_syscalls/",
		"tp/raw_syscalls/", "raw_tracepoint/sys_", "raw_tp/sys_", "tp_btf/sys_",
		"raw_tracepoint.w/sys_", "raw_tp.w/sys_", "ksyscall/", "kretsyscall/",
	};
	static const char *const entries[] = { "__x64_sys_", "__ia32_sys_", "__arm64_sys_",
					       "__se_sys_", "__do_sys_", "do_syscall_64" };
	const char *fn = strchr(sec, '/');

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (prefixed(sec, paths[i]))
			return 1;
	if (!fn || !(prefixed(sec, "kprobe/") || prefixed(sec, "kretprobe/") ||
		     prefixed(sec, "fentry/") || prefixed(sec, "fexit/") ||
		     prefixed(sec, "fmod_ret/") || prefixed(sec, "kprobe.multi/")))
		return 0;
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		if (strstr(fn + 1, entries[i]))
			return 1;
	return 0;
}

/* The guard itself catches each way onto a syscall path, and passes the scheduler's. */
START_TEST(the_syscall_path_guard_knows_every_way_on)
{
	static const char *const on[] = {
		"tracepoint/syscalls/sys_enter_read", "tp/syscalls/sys_exit_poll",
		"tp/raw_syscalls/sys_enter", "tracepoint/raw_syscalls/sys_exit",
		"raw_tp/sys_enter", "raw_tracepoint/sys_exit", "tp_btf/sys_enter",
		"ksyscall/read", "kprobe/__x64_sys_read", "fentry/__x64_sys_futex",
		"fexit/__arm64_sys_ppoll", "kprobe.multi/__x64_sys_*",
	};
	static const char *const off[] = { "tp_btf/sched_switch", "iter/task", "uprobe",
					   "uretprobe", "tp_btf/sched_process_exec" };

	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++)
		ck_assert_msg(on_a_syscall_path(on[i]), "%s passed", on[i]);
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
		ck_assert_msg(!on_a_syscall_path(off[i]), "%s refused", off[i]);
}
END_TEST

START_TEST(every_program_has_a_row_and_every_row_a_program)
{
	struct bpf_object *obj[PROBE_OBJ_COUNT];
	void *skel[PROBE_OBJ_COUNT];

	for (int i = 0; i < PROBE_OBJ_COUNT; i++) {
		skel[i] = probe_families[i]->object.open(&obj[i]);
		ck_assert_msg(skel[i] != NULL, "%s: %s", probe_families[i]->object.name, strerror(errno));
	}
	for (size_t i = 0; i < tu_attach_count(); i++) {
		const struct probe_attach *r = &tu_attach_rows()[i];
		const char *sec;

		ck_assert_int_lt(r->obj, PROBE_OBJ_COUNT);
		sec = section_of(r, obj[r->obj]);
		ck_assert_msg(sec != NULL, "row %zu: no program %s in %s", i, r->prog,
			      probe_families[r->obj]->object.name);
		switch (r->how) {
		case PROBE_AUTO:
			ck_assert_msg(prefixed(sec, "tp_btf/"), "%s: %s", r->prog, sec);
			break;
		case PROBE_ITER:
			ck_assert_msg(strcmp(sec, "iter/task") == 0, "%s: %s", r->prog, sec);
			break;
		case PROBE_URETPROBE:
			ck_assert_msg(strcmp(sec, "uretprobe") == 0, "%s: %s", r->prog, sec);
			ck_assert(r->symbol && r->libs && !(r->libs & ~(PROBE_LIB_GPU | PROBE_LIB_LIBC | PROBE_LIB_LOADER)));
			/*
			 * A return comes right before its entry (probe_loader.h):
			 * attached the other way round, a call entering between the
			 * two attaches would leave an entry without its return.
			 */
			ck_assert_msg(i + 1 < tu_attach_count() &&
				      tu_attach_rows()[i + 1].how == PROBE_UPROBE,
				      "row %zu: the return of %s is not followed by its entry", i,
				      r->symbol);
			ck_assert_str_eq(tu_attach_rows()[i + 1].symbol, r->symbol);
			ck_assert_uint_eq(tu_attach_rows()[i + 1].libs, r->libs);
			ck_assert_int_eq(tu_attach_rows()[i + 1].obj, r->obj);
			break;
		case PROBE_UPROBE:
			ck_assert_msg(strcmp(sec, "uprobe") == 0, "%s: %s", r->prog, sec);
			ck_assert(r->symbol && r->libs && !(r->libs & ~(PROBE_LIB_GPU | PROBE_LIB_LIBC | PROBE_LIB_LOADER)));
			/* Never a return after an entry: that return would be another symbol's. */
			ck_assert_msg(i + 1 == tu_attach_count() ||
				      tu_attach_rows()[i + 1].how != PROBE_URETPROBE ||
				      strcmp(tu_attach_rows()[i + 1].symbol, r->symbol) != 0,
				      "row %zu: %s's return comes after its entry", i, r->symbol);
			break;
		default:
			ck_abort_msg("row %zu: how %d", i, r->how);
		}
	}
	for (int o = 0; o < PROBE_OBJ_COUNT; o++) {
		struct bpf_program *prog;

		bpf_object__for_each_program(prog, obj[o]) {
			const char *sec = bpf_program__section_name(prog);
			int rows = 0;

			ck_assert_msg(!on_a_syscall_path(sec), "%s: %s is on a syscall path",
				      bpf_program__name(prog), sec);
			for (size_t i = 0; i < tu_attach_count(); i++)
				rows += tu_attach_rows()[i].obj == (enum probe_obj)o &&
					strcmp(tu_attach_rows()[i].prog, bpf_program__name(prog)) == 0;
			ck_assert_msg(rows > 0, "%s: program %s is never attached",
				      probe_families[o]->object.name, bpf_program__name(prog));
		}
	}
	for (int i = PROBE_OBJ_COUNT; i > 0; i--)
		probe_families[i - 1]->object.destroy(skel[i - 1]);
}
END_TEST

/* The barrier probe is a libc row like any other, and the only one. */
START_TEST(libc_rows_are_the_barrier_pair)
{
	int n = 0;

	for (size_t i = 0; i < tu_attach_count(); i++) {
		const struct probe_attach *r = &tu_attach_rows()[i];

		if (!(r->libs & PROBE_LIB_LIBC))
			continue;
		ck_assert_uint_eq(r->libs, PROBE_LIB_LIBC);
		ck_assert_str_eq(r->symbol, "pthread_barrier_wait");
		ck_assert_int_eq(r->obj, PROBE_OBJ_SCHED);
		n++;
	}
	ck_assert_int_eq(n, 2);
}
END_TEST

/* Driver symbol names that count memory, launches or waits, by their start. */
static const char *const counted_prefixes[] = {
	"cuMemAlloc", "cuMemFree", "cuMemCreate", "cuMemRelease", "cuLaunch", "cuGraphLaunch",
	"cuStreamSynchronize", "cuCtxSynchronize", NULL,
};

/* Asked for, of a counted kind, and deliberately not probed. */
static const char *const not_counted[] = {
	"cuMemAllocManaged",		/* managed memory: host and device, migrates */
	"cuMemFreeHost",		/* page-locked host memory */
	"cuLaunchHostFunc",		/* a host function on a stream, not a kernel */
	"cuLaunchHostFunc_ptsz",
	NULL,
};

/* Probed without the runtime asking: programs and frameworks call them themselves. */
static const char *const called_directly[] = {
	"cuCtxCreate_v3", "cuCtxCreate_v4",	/* newer context creation */
	"cuMemCreate", "cuMemRelease",		/* VMM: PyTorch's expandable segments */
	NULL,
};

static int listed(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (strcmp(*list, name) == 0)
			return 1;
	return 0;
}

static int counted_kind(const char *name)
{
	for (const char *const *p = counted_prefixes; *p; p++)
		if (strncmp(name, *p, strlen(*p)) == 0)
			return 1;
	return 0;
}

static int probed_in_driver(const char *sym)
{
	for (size_t i = 0; i < tu_attach_count(); i++)
		if (tu_attach_rows()[i].how == PROBE_UPROBE &&
		    (tu_attach_rows()[i].libs & PROBE_LIB_CUDA) &&
		    strcmp(tu_attach_rows()[i].symbol, sym) == 0)
			return 1;
	return 0;
}

/* The driver symbols the runtime's requests resolve to, one per line, into syms. */
static size_t requested_symbols(char syms[][64], size_t max)
{
	char path[512], *text, *line, *save = NULL;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/%s", tu_src_dir(), REQUESTS);
	text = tu_read_file(path, NULL);
	ck_assert_msg(text != NULL, "cannot read %s", path);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[64], sym[64];
		unsigned int version, flags;
		int result;

		if (line[0] == '#')
			continue;
		if (sscanf(line, "%63s %u %u %63s %d", name, &version, &flags, sym, &result) != 5)
			ck_abort_msg("%s: cannot read \"%s\"", REQUESTS, line);
		if (result != 0 || n >= max)
			continue;
		snprintf(syms[n++], 64, "%s", sym);
	}
	free(text);
	return n;
}

START_TEST(every_counted_driver_function_the_runtime_asks_for_is_probed)
{
	static char syms[1024][64];
	size_t n = requested_symbols(syms, 1024), counted = 0;

	ck_assert_uint_gt(n, 400);
	for (size_t i = 0; i < n; i++) {
		if (!counted_kind(syms[i]) || listed(not_counted, syms[i]))
			continue;
		counted++;
		ck_assert_msg(probed_in_driver(syms[i]),
			      "the runtime calls %s and it is not probed in the driver", syms[i]);
	}
	/* cuCtxSynchronize_v2, the cooperative launches and the pool allocations among them. */
	ck_assert_uint_ge(counted, 20);
	ck_assert(probed_in_driver("cuCtxSynchronize_v2"));
	ck_assert(probed_in_driver("cuLaunchCooperativeKernel_ptsz"));
	ck_assert(probed_in_driver("cuMemAllocFromPoolAsync"));
}
END_TEST

START_TEST(every_probed_driver_symbol_is_one_the_runtime_asks_for_or_programs_call)
{
	static char syms[1024][64];
	size_t n = requested_symbols(syms, 1024);

	for (size_t i = 0; i < tu_attach_count(); i++) {
		const struct probe_attach *r = &tu_attach_rows()[i];
		int found = 0;

		if (r->how != PROBE_UPROBE || !(r->libs & PROBE_LIB_CUDA))
			continue;
		for (size_t k = 0; k < n && !found; k++)
			found = strcmp(syms[k], r->symbol) == 0;
		ck_assert_msg(found || listed(called_directly, r->symbol),
			      "%s is probed but no one asks the driver for it: a wrong name?",
			      r->symbol);
	}
}
END_TEST

/*
 * Every record type the programs send has one family that decodes it, at
 * its size, and the attach order keeps the families' own: a thread's
 * last state before the watched set forgets its process.
 */
START_TEST(every_record_type_has_one_family_and_rows_keep_their_order)
{
	unsigned int owners[ZEV_TYPE_COUNT] = { 0 };
	const struct probe_attach *rows = tu_attach_rows();
	size_t n = tu_attach_count(), expect = 0, task_exit = n, watch_exit = n;

	for (size_t f = 0; f < PROBE_OBJ_COUNT; f++) {
		const struct probe_family *fam = probe_families[f];

		ck_assert_msg(fam->n_attach > 0, "%s: no attachment", fam->object.name);
		expect += fam->n_attach_first + fam->n_attach;
		for (size_t i = 0; i < fam->n_decoders; i++) {
			const struct probe_decoder *d = &fam->decoders[i];

			ck_assert_uint_lt(d->type, ZEV_TYPE_COUNT);
			ck_assert_uint_ge(d->size, sizeof(struct zev_hdr));
			owners[d->type]++;
		}
		for (size_t i = 0; i < fam->n_attach; i++)
			ck_assert_msg(fam->attach[i].obj == (enum probe_obj)f,
				      "%s: a row of another object (%s)", fam->object.name,
				      fam->attach[i].prog);
		for (size_t i = 0; i < fam->n_attach_first; i++)
			ck_assert_msg(fam->attach_first[i].obj == (enum probe_obj)f,
				      "%s: a first row of another object (%s)", fam->object.name,
				      fam->attach_first[i].prog);
	}
	for (unsigned int t = ZEV_WATCH; t < ZEV_TYPE_COUNT; t++)
		ck_assert_msg(owners[t] == 1, "record type %u decoded by %u families", t,
			      owners[t]);
	ck_assert_uint_eq(n, expect);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].prog, "zs_task_exit") == 0)
			task_exit = i;
		if (strcmp(rows[i].prog, "zw_exit") == 0)
			watch_exit = i;
	}
	ck_assert_uint_lt(task_exit, watch_exit);
	ck_assert_uint_lt(watch_exit, n);
}
END_TEST

Suite *probe_table_suite(void);
Suite *probe_table_suite(void)
{
	Suite *s = suite_create("probe_table");
	TCase *tc = tcase_create("objects");

	tcase_add_test(tc, the_syscall_path_guard_knows_every_way_on);
	tcase_add_test(tc, every_record_type_has_one_family_and_rows_keep_their_order);
	tcase_add_test(tc, every_program_has_a_row_and_every_row_a_program);
	tcase_add_test(tc, libc_rows_are_the_barrier_pair);
	tcase_add_test(tc, every_counted_driver_function_the_runtime_asks_for_is_probed);
	tcase_add_test(tc, every_probed_driver_symbol_is_one_the_runtime_asks_for_or_programs_call);
	suite_add_tcase(s, tc);
	return s;
}
