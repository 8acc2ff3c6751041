/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Python frames at stalls, against CPython itself: the line table decoder
 * against co_lines() of Debian's /usr/bin/python3 for every instruction
 * of real code; the 3.11 layout against offsetof() compiled with the
 * installed interpreter's own headers; then (root, BPF) a script that
 * sleeps, waits on a lock and waits on a real PyTorch DataLoader at
 * known lines, with the frames read after each stall (BPF task work) and
 * at every switch away; the same for Debian's CPython 3.13 and 3.14 (each
 * run in a root file system of its own, its layout read from its
 * _Py_DebugOffsets); pyenv's CPython 3.12 where it is installed (its own
 * row, against its headers and its co_lines()); a script in a PID namespace
 * of its own; and a CPython 3.9 stand-in that must be refused.
 */
#include <check.h>
#include <glob.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/python/pyfind.h"
#include "collector/python/pyline.h"
#include "collector/python/pyoffsets.h"
#include "collector/privsep/privileges.h"
#include "common/util.h"
#include "tests/collector/tu_waits.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define PYTHON	"/usr/bin/python3"

static int have_python(const char *test)
{
	if (access(PYTHON, X_OK) == 0)
		return 1;
	tu_skip_missing("%s: %s is not installed", test, PYTHON);
	return 0;
}

/*
 * Debian's CPython 3.13 and 3.14 (the versions whose layout is read from
 * the interpreter), each unpacked under the build folder by `make
 * test-deps` (tools/python-tree.sh): a root file system run with chroot,
 * as a container runs its own interpreter.
 */
static const struct {
	const char *version;
	unsigned int debug_words;	/* sizeof(_Py_DebugOffsets) / 8 */
} trees[] = { { "3.13", 73 }, { "3.14", 95 } };

#define CHROOT		"/usr/sbin/chroot"

/* Tree i's root into root, its interpreter's path inside it into python. */
static int have_tree(int i, char *root, size_t len, char *python, size_t python_len,
		     const char *test)
{
	char rel[32], bin[PATH_MAX + 32];

	snprintf(rel, sizeof(rel), "python%s", trees[i].version);
	tu_build_path(root, len, rel);
	snprintf(python, python_len, "/usr/bin/python%s", trees[i].version);
	snprintf(bin, sizeof(bin), "%s%s", root, python);
	if (access(bin, X_OK) == 0)
		return 1;
	tu_skip_missing("%s: %s is missing (make test-deps unpacks Debian's python%s there)",
			test, bin, trees[i].version);
	return 0;
}

/* tests/py/SCRIPT copied into root at the same path, so that its frames name the same file. */
static void copy_script_into(const char *root, const char *script)
{
	ck_assert_int_eq(tu_system("mkdir -p '%s%s/tests/py' && cp '%s/tests/py/%s' '%s%s/tests/py/'",
				   root, tu_src_dir(), tu_src_dir(), script, root, tu_src_dir()), 0);
}

/* tests/py/SCRIPT ARGS under python in root, started as tw_start_py does. */
static int start_in_tree(struct tw_work *w, const char *root, const char *python,
			 const char *script, const char *const *args)
{
	const char *const interp[] = { CHROOT, root, python, NULL };

	copy_script_into(root, script);
	return tw_start_py_in(w, interp, script, args);
}

/*
 * CPython prints, for each code object of its own standard library
 * modules: firstlineno, the line table in hex, then every (start, end,
 * line) of co_lines(); we decode each address and compare.
 */
static const char lines_script[] =
	"import dis, threading, json, argparse, collections, types\n"
	"def walk(co):\n"
	"    yield co\n"
	"    for c in co.co_consts:\n"
	"        if isinstance(c, types.CodeType):\n"
	"            yield from walk(c)\n"
	"n = 0\n"
	"for m in (threading, json.decoder, argparse, collections):\n"
	"    src = open(m.__file__).read()\n"
	"    for co in walk(compile(src, m.__file__, 'exec')):\n"
	"        print('C', co.co_firstlineno, co.co_linetable.hex())\n"
	"        for s, e, l in co.co_lines():\n"
	"            print('L', s, e, -1 if l is None else l)\n"
	"        n += 1\n"
	"print('E', n)\n";

static int hexval(char c)
{
	return c >= 'a' ? c - 'a' + 10 : c - '0';
}

/* A line table decoder: pyline_310 or pyline_311. */
typedef int (*line_decoder)(const uint8_t *tab, size_t len, int firstlineno, uint64_t addr);

/* The line table decoder lines against co_lines() of the interpreter python (a command). */
static void check_line_table(const char *python, line_decoder lines)
{
	static uint8_t tab[1 << 16];
	char cmd[3 * PATH_MAX], *out;
	char *line, *save = NULL;
	size_t tab_len = 0;
	long codes = 0, checked = 0, first = 0;
	int status;

	snprintf(cmd, sizeof(cmd), "%s -c \"$(cat <<'PYEOF'\n%sPYEOF\n)\"", python, lines_script);
	out = tu_capture(cmd, &status);
	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(status, 0);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == 'C') {
			char *hex = strchr(line + 2, ' ');

			ck_assert_ptr_nonnull(hex);
			first = atol(line + 2);
			hex++;
			tab_len = strlen(hex) / 2;
			ck_assert_uint_le(tab_len, sizeof(tab));
			for (size_t i = 0; i < tab_len; i++)
				tab[i] = (uint8_t)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
			codes++;
		} else if (line[0] == 'L') {
			long s, e, l;

			ck_assert_int_eq(sscanf(line, "L %ld %ld %ld", &s, &e, &l), 3);
			for (long a = s; a < e; a += 2) {
				int got = lines(tab, tab_len, (int)first, (uint64_t)a);

				ck_assert_msg(got == (int)l, "code at line %ld, offset %ld: %d, CPython says %ld",
					      first, a, got, l);
				checked++;
			}
		} else if (line[0] == 'E') {
			ck_assert_int_eq(atol(line + 2), codes);
		}
	}
	/* Thousands of code objects and instructions, not a handful. */
	ck_assert_int_gt(codes, 500);
	ck_assert_int_gt(checked, 10000);
	free(out);
}

/* Malformed tables: no line, no read past the end. */
START_TEST(pystack_malformed_line_tables_give_no_line)
{
	uint8_t tab[4] = { 0 };

	ck_assert_int_eq(pyline_311(tab, 0, 1, 0), -1);
	tab[0] = 0x7f;
	ck_assert_int_eq(pyline_311(tab, 1, 1, 0), -1);
	tab[0] = 0xf0 | 0x80;	/* long form with its varints cut off */
	ck_assert_int_eq(pyline_311(tab, 1, 1, 0), -1);
	{
		/*
		 * A line delta of 2^63 - 1 (eleven varint bytes): no line.  A
		 * build without sanitizers gave none before either; the fuzz
		 * target's seed of it (tests/fuzz/corpus/pycode) is what fails
		 * where the sum overflows.
		 */
		uint8_t huge[15] = { 0xf0, 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f,
				     0x7f, 0x7f, 0x7f, 0x0f, 0, 0, 0 };

		ck_assert_int_eq(pyline_311(huge, sizeof(huge), 14, 0), -1);
		huge[1] = 0x04;	/* the same entry, 2 lines on: it reads */
		huge[2] = 0;
		huge[3] = 0;
		huge[4] = 0;
		ck_assert_int_eq(pyline_311(huge, 5, 14, 0), 16);
	}

	ck_assert_int_eq(pyline_310(tab, 0, 1, 0), -1);
	tab[0] = 8;		/* a pair cut in half */
	ck_assert_int_eq(pyline_310(tab, 1, 1, 0), -1);
	tab[1] = 2;
	ck_assert_int_eq(pyline_310(tab, 2, 1, 6), 3);
	ck_assert_int_eq(pyline_310(tab, 2, 1, 8), -1);	/* past the table */
	tab[1] = 0x80;		/* -128: no line */
	ck_assert_int_eq(pyline_310(tab, 2, 1, 0), -1);
	tab[1] = 0x81;		/* a line before the file's first */
	ck_assert_int_eq(pyline_310(tab, 2, 1, 0), -1);
}
END_TEST

/* By loop index: Debian's 3.11, then each tree's (the same table format). */
START_TEST(pystack_line_table_matches_cpython_co_lines)
{
	char python[PATH_MAX + 128], root[PATH_MAX], tree_python[64];

	if (_i == 0 && !have_python("pystack_line_table_matches_cpython_co_lines"))
		return;
	if (_i > 0 && (tu_skip_unless_root("pystack_line_table_matches_cpython_co_lines") ||
		       !have_tree(_i - 1, root, sizeof(root), tree_python, sizeof(tree_python),
				  "pystack_line_table_matches_cpython_co_lines")))
		return;
	if (_i == 0)
		snprintf(python, sizeof(python), "%s", PYTHON);
	else
		snprintf(python, sizeof(python), "%s '%s' %s", CHROOT, root, tree_python);
	check_line_table(python, pyline_311);
}
END_TEST

/*
 * What a layout test prints, compiled against an interpreter's own headers:
 * the version, then offsetof() of each field a layout holds, in the order
 * check_layout_fields compares them; LAYOUT_TAIL is appended by the caller.
 */
#define LAYOUT_PROG_HEAD							\
	"#define Py_BUILD_CORE 1\n"						\
	"#include <Python.h>\n"							\
	"#include <internal/pycore_runtime.h>\n"				\
	"#include <internal/pycore_interp.h>\n"					\
	"#include <internal/pycore_frame.h>\n"					\
	"#include <stdio.h>\n"							\
	"#include <stddef.h>\n"							\
	"#define O(t, f) printf(\"%zu \", offsetof(t, f))\n"			\
	"int main(void) {\n"							\
	"printf(\"%d %d \", PY_MAJOR_VERSION, PY_MINOR_VERSION);\n"		\
	"O(_PyRuntimeState, interpreters.head); O(PyInterpreterState, threads.head);\n" \
	"O(PyThreadState, next); O(PyThreadState, native_thread_id);\n"
#define LAYOUT_PROG_TAIL							\
	"O(_PyInterpreterFrame, previous);\n"					\
	"O(PyThreadState, interp);\n"						\
	"O(PyObject, ob_type); O(PyCodeObject, co_filename);\n"			\
	"O(PyCodeObject, co_qualname); O(PyCodeObject, co_firstlineno);\n"	\
	"O(PyCodeObject, co_linetable); O(PyCodeObject, co_code_adaptive);\n"	\
	"O(PyVarObject, ob_size); O(PyBytesObject, ob_sval);\n"			\
	"O(PyASCIIObject, length); O(PyASCIIObject, state);\n"			\
	"printf(\"%zu %zu \", sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject));\n" \
	"printf(\"0 \");\n"	/* _PyRuntimeState.main_thread: not used */
#define LAYOUT_VALUES	25

/* The layout test's program for 3.11 and 3.12. */
static const char layout_prog_311[] = LAYOUT_PROG_HEAD
	"O(PyThreadState, cframe); O(_PyCFrame, current_frame);\n"
	"O(_PyInterpreterFrame, f_code); O(_PyInterpreterFrame, prev_instr);\n"
	LAYOUT_PROG_TAIL "return 0; }\n";

/*
 * The same for 3.10, in the same order: frame objects, a thread named by
 * thread_id (pthread_self()), co_name for co_qualname; no _PyCFrame, no
 * co_code_adaptive (0s).
 */
static const char layout_prog_310[] =
	"#define Py_BUILD_CORE 1\n"
	"#include <Python.h>\n"
	"#include <frameobject.h>\n"
	"#include <internal/pycore_runtime.h>\n"
	"#include <internal/pycore_interp.h>\n"
	"#include <stdio.h>\n"
	"#include <stddef.h>\n"
	"#define O(t, f) printf(\"%zu \", offsetof(t, f))\n"
	"int main(void) {\n"
	"printf(\"%d %d \", PY_MAJOR_VERSION, PY_MINOR_VERSION);\n"
	"O(_PyRuntimeState, interpreters.head); O(PyInterpreterState, tstate_head);\n"
	"O(PyThreadState, next); O(PyThreadState, thread_id);\n"
	"printf(\"0 \"); O(PyThreadState, frame);\n"
	"O(PyFrameObject, f_code); O(PyFrameObject, f_lasti); O(PyFrameObject, f_back);\n"
	"O(PyThreadState, interp);\n"
	"O(PyObject, ob_type); O(PyCodeObject, co_filename);\n"
	"O(PyCodeObject, co_name); O(PyCodeObject, co_firstlineno);\n"
	"O(PyCodeObject, co_linetable); printf(\"0 \");\n"
	"O(PyVarObject, ob_size); O(PyBytesObject, ob_sval);\n"
	"O(PyASCIIObject, length); O(PyASCIIObject, state);\n"
	"printf(\"%zu %zu \", sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject));\n"
	"O(_PyRuntimeState, main_thread);\n"
	"return 0; }\n";

/*
 * prog built with cflags and run: its numbers into v (n of them), as the
 * interpreter's own headers give them.
 */
static void header_numbers(const char *prog, const char *cflags, unsigned long *v, int n)
{
	char dir[] = "/tmp/zernel-pylayout-XXXXXX", path[256], cmd[2048], *out, *p, *end;
	FILE *f;
	int status;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/layout.c", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(prog, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc %s %s -o %s/layout && %s/layout", cflags, path, dir, dir);
	out = tu_capture(cmd, &status);
	ck_assert_ptr_nonnull(out);
	ck_assert_msg(status == 0, "could not build against the headers: %s", out);
	p = out;
	for (int i = 0; i < n; i++, p = end) {
		v[i] = strtoul(p, &end, 10);
		ck_assert_msg(end != p, "%d numbers expected: %s", n, out);
	}
	free(out);
	tu_system("rm -rf %s", dir);
}

/* l against the numbers a LAYOUT_PROG printed (v[0], v[1]: the version). */
static void check_layout_fields(const struct py_layout *l, const unsigned long *v)
{
	const unsigned long got[LAYOUT_VALUES - 2] = {
		l->walk.runtime_interp_head, l->walk.interp_threads_head, l->walk.tstate_next,
		l->walk.tstate_native_tid, l->walk.tstate_cframe, l->walk.cframe_current_frame,
		l->walk.frame_code, l->walk.frame_prev_instr, l->walk.frame_previous,
		l->tstate_interp, l->object_type, l->code_filename, l->code_qualname,
		l->code_firstlineno, l->code_linetable, l->code_units, l->var_size, l->bytes_data,
		l->str_length, l->str_state, l->str_ascii_data, l->str_compact_data,
		l->walk.runtime_main_thread,
	};

	ck_assert_uint_eq(l->major, v[0]);
	ck_assert_uint_eq(l->minor, v[1]);
	for (int i = 0; i < LAYOUT_VALUES - 2; i++)
		ck_assert_msg(got[i] == v[i + 2], "%u.%u layout field %d: %lu, the headers say %lu",
			      l->major, l->minor, i, got[i], v[i + 2]);
}

START_TEST(pystack_layout_matches_interpreter_headers)
{
	unsigned long v[LAYOUT_VALUES];
	const struct py_layout *l;

	if (tu_system("python3.11-config --includes >/dev/null 2>&1") != 0) {
		tu_skip_missing("pystack_layout_matches_interpreter_headers: "
				"python3.11-dev (python3.11-config) is not installed");
		return;
	}
	header_numbers(layout_prog_311, "$(python3.11-config --includes)", v, LAYOUT_VALUES);
	l = py_layout_find((uint32_t)v[0], (uint32_t)v[1]);
	ck_assert_msg(l != NULL, "no layout for the installed CPython %lu.%lu", v[0], v[1]);
	check_layout_fields(l, v);
	/* Versions without a row are refused, not guessed. */
	ck_assert_ptr_null(py_layout_find(3, 9));
	ck_assert_ptr_null(py_layout_find(3, 13));
	ck_assert(py_layout_fits(l));
}
END_TEST

/*
 * 3.13 and 3.14 have no row: their layout is read from the live
 * interpreter's _Py_DebugOffsets, and must be what its own headers say,
 * the shape of the debug offsets included.  By loop index, a tree; its
 * interpreter is chrooted, so its maps name its file by the path the
 * collector sees, not the one it has in its own root.
 */
START_TEST(pystack_layout_from_the_interpreters_debug_offsets)
{
	static const char prog[] = LAYOUT_PROG_HEAD
		"printf(\"0 \"); O(PyThreadState, current_frame);\n"
		"O(_PyInterpreterFrame, f_executable); O(_PyInterpreterFrame, instr_ptr);\n"
		LAYOUT_PROG_TAIL "printf(\"%zu\\n\", sizeof(_Py_DebugOffsets));\n"
		"return 0; }\n";
	char root[PATH_MAX], python[64], cflags[2 * PATH_MAX + 64], why[256];
	char *argv[] = { CHROOT, root, python, "-c",
			 "import time\nprint('ready', flush=True)\ntime.sleep(60)\n", NULL };
	unsigned long v[LAYOUT_VALUES + 1];
	struct py_interp pi;
	struct tw_work w;
	int err;

	if (tu_skip_unless_root("pystack_layout_from_the_interpreters_debug_offsets") ||
	    !have_tree(_i, root, sizeof(root), python, sizeof(python),
		       "pystack_layout_from_the_interpreters_debug_offsets"))
		return;
	snprintf(cflags, sizeof(cflags), "-I%s/usr/include/python%s -I%s/usr/include", root,
		 trees[_i].version, root);
	header_numbers(prog, cflags, v, LAYOUT_VALUES + 1);
	ck_assert_uint_eq(v[LAYOUT_VALUES], trees[_i].debug_words * 8);
	ck_assert_int_eq(tw_start_argv(&w, argv), 0);
	/*
	 * With the capabilities the collector keeps while it runs, as for
	 * an interpreter started after it; printing "ready" came after the
	 * interpreter's start-up, so there is no waiting for it.
	 */
	ck_assert_int_eq(privileges_drop_to_steady(0), 0);
	err = pyfind((uint32_t)w.pid, &pi, why, sizeof(why));
	kill(w.pid, SIGKILL);
	tw_finish(&w);
	ck_assert_msg(err == 0, "pyfind: %s (%d)", why, err);
	check_layout_fields(&pi.layout, v);
	ck_assert(py_layout_fits(&pi.layout));
}
END_TEST

/* The line of "# site: NAME" in tests/py/stall_sites.py. */
static uint32_t site_line(const char *name)
{
	uint32_t line = tu_stall_site_line(name);

	ck_assert_msg(line > 0, "stall_sites.py marks no site %s", name);
	return line;
}

static const struct shm_stall_site *find_site(const struct tp_collector *c, uint32_t pid,
					      uint32_t line, uint32_t state)
{
	const struct shm_header_fields *h = c->snap.hdr;
	const struct shm_stall_site *r = (const void *)((const char *)c->snap.buf +
							h->table[SHM_TABLE_STALL_SITES].offset);

	for (uint32_t i = 0; i < h->table[SHM_TABLE_STALL_SITES].count; i++)
		if (r[i].pid == pid && r[i].line == line && r[i].state == state &&
		    strstr(r[i].file, "stall_sites.py"))
			return &r[i];
	return NULL;
}

static const struct shm_py_proc *find_py(const struct tp_collector *c, uint32_t pid)
{
	const struct shm_header_fields *h = c->snap.hdr;
	const struct shm_py_proc *r = (const void *)((const char *)c->snap.buf +
						     h->table[SHM_TABLE_PY_PROCS].offset);

	for (uint32_t i = 0; i < h->table[SHM_TABLE_PY_PROCS].count; i++)
		if (r[i].pid == pid)
			return &r[i];
	return NULL;
}

/*
 * The ways frames are walked, by loop index: the kernel's default (after
 * stalls, where the kernel has BPF task work), and at every switch away
 * (older kernels' way, which must keep working).
 */
static const char *const walks[] = { NULL, "switch" };

/*
 * The collector watching pid, frames walked the walk way (NULL: the
 * default), libs probed (--lib) and one flag more (NULL: none), once it
 * has looked at pid's interpreter.
 */
static int start_collector_flag(struct tp_collector *c, pid_t pid, const char *walk,
				const char *const *libs, const char *flag)
{
	char pidbuf[16];
	/* --pid, --stall-rate, --python-frames-walk, three --lib, the flag: 13, and the NULL. */
	const char *extra[14] = { "--pid", pidbuf, "--stall-rate", "1000" };
	unsigned int n_libs = 0;
	size_t n = 4;

	if (flag)
		extra[n++] = flag;
	if (walk) {
		extra[n++] = "--python-frames-walk";
		extra[n++] = walk;
	}
	for (size_t i = 0; libs && libs[i] && n + 2 < ARRAY_SIZE(extra); i++) {
		extra[n++] = "--lib";
		extra[n++] = libs[i];
		n_libs++;
	}
	extra[n] = NULL;
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	/*
	 * Its libraries probed before the script calls them (a call into one
	 * still being attached is seen in part).  Still starting is not
	 * failing: a node with many CUDA libraries mapped (other jobs, other
	 * tests) takes the collector longer to probe.
	 */
	if (tp_collector_start(c, extra, n_libs) != 0 && c->pid <= 0)
		return -1;
	for (int waited = 0; waited < 120000; waited += 50) {
		const struct shm_py_proc *py;

		if (tp_snapshot(c) == 0 && (py = find_py(c, (uint32_t)pid)) && py->status)
			return 0;
		tu_sleep_ms(50);
	}
	return -1;
}

static int start_collector_with(struct tp_collector *c, pid_t pid, const char *walk,
				const char *const *libs)
{
	return start_collector_flag(c, pid, walk, libs, NULL);
}

static int start_collector(struct tp_collector *c, pid_t pid)
{
	return start_collector_with(c, pid, NULL, NULL);
}

/*
 * Two publishes after now, so that everything sent so far is in: with
 * the patience of a loaded node, where the collector's loop also probes
 * the CUDA libraries other processes keep mapping.
 */
static int settle(struct tp_collector *c)
{
	uint64_t since = now_mono_ns();
	int seen = 0;

	for (int waited = 0; waited < 120000; waited += 50) {
		if (tp_snapshot(c) == 0 && c->snap.hdr->heartbeat_mono_ns > since) {
			since = c->snap.hdr->heartbeat_mono_ns;
			if (++seen == 2)
				return 0;
		}
		tu_sleep_ms(50);
	}
	return -1;
}

/*
 * A site's time against what the script measured around the call: the
 * collector counts from leaving the CPU to getting it back, which the
 * script's timing contains, less the call's own CPU time; one stall may
 * also fall under the threshold on a loaded machine.  So: within
 * [90% - 10 ms, 100% + 5 ms] of the script's.
 */
static void check_site(const struct tp_collector *c, pid_t pid, const char *name,
		       uint32_t state, long long truth_ns, uint32_t rounds)
{
	/* Each site of stall_sites.py and the function it is in. */
	static const char *const funcs[][2] = {
		{ "sleep", "sleeper" }, { "lock", "locked" }, { "block", "blocker" },
		{ "collective", "collective" }, { "data", "train" }, { "helper", "helper" },
	};
	const struct shm_stall_site *r = find_site(c, (uint32_t)pid, site_line(name), state);
	const struct shm_py_proc *py = find_py(c, (uint32_t)pid);
	const char *func = NULL;

	ck_assert_msg(r != NULL, "no %s stall site at the %s line %u", shm_stall_state_name(state),
		      name, site_line(name));
	for (size_t i = 0; i < ARRAY_SIZE(funcs); i++)
		if (!strcmp(funcs[i][0], name))
			func = funcs[i][1];
	ck_assert_ptr_nonnull(func);
	ck_assert_str_eq(r->func, func);
	ck_assert_int_gt(truth_ns, 0);
	/*
	 * A stall is at its site or in the process's unsampled time (a return
	 * no switch showed, frames not readable): never lost, so the two
	 * together bound the site from below; most stalls reach the site.
	 */
	ck_assert_msg(r->total_ns + (py ? py->unsampled_ns : 0) >=
			      (uint64_t)truth_ns * 9 / 10 - 10 * TW_MS &&
		      r->total_ns <= (uint64_t)truth_ns + 5 * TW_MS,
		      "%s: collector %llu ns in %llu stalls, script %lld ns in %u rounds; "
		      "the process's stalls with no site: %llu, %llu ns", name,
		      (unsigned long long)r->total_ns, (unsigned long long)r->stalls, truth_ns,
		      rounds, py ? (unsigned long long)py->unsampled_stalls : 0,
		      py ? (unsigned long long)py->unsampled_ns : 0);
	ck_assert_uint_ge(r->stalls + (py ? py->unsampled_stalls : 0), rounds - 1);
	ck_assert_uint_ge(r->stalls, rounds / 2);
	/* A wait woken early (a spurious futex wakeup) blocks again: two stalls, one call. */
	ck_assert_uint_le(r->stalls, 2 * rounds);
	/* A site that stalls again gets the user stack it is entered from. */
	ck_assert_int_ge(r->native_stack, 0);
}

static void check_data_site(const struct tp_collector *c, pid_t pid, long long truth_ns,
			    uint32_t rounds)
{
	const struct shm_stall_site *r = find_site(c, (uint32_t)pid, site_line("data"),
						   SHM_STALL_INPUT);

	ck_assert_msg(r != NULL, "no input stall site at the DataLoader line %u", site_line("data"));
	ck_assert_str_eq(r->func, "train");
	ck_assert_int_gt(truth_ns, 0);
	ck_assert_msg(r->total_ns >= (uint64_t)truth_ns * 7 / 10 &&
		      r->total_ns <= (uint64_t)truth_ns + 5 * TW_MS,
		      "data: collector %llu ns, script %lld ns",
		      (unsigned long long)r->total_ns, truth_ns);
	ck_assert_uint_ge(r->stalls, rounds - 1);
	/* Each batch is one wait, sometimes cut in two by a wakeup that was not the data's. */
	ck_assert_uint_le(r->stalls, 2 * rounds + 1);
	/* The innermost frame is inside PyTorch or multiprocessing, not the script. */
	ck_assert_ptr_null(strstr(r->leaf_file, "stall_sites.py"));
}

/* `zernel ARGS` through a real exporter on the collector's segment: its output. */
static char *through_exporter(const struct tp_collector *c, const char *args)
{
	struct tu_stack st;
	char cmd[1200], bin[1024], *out;
	int status;

	tu_stack_init(&st);
	snprintf(st.shm, sizeof(st.shm), "%s", c->shm);
	ck_assert_int_eq(tu_stack_start_exporter(&st), 0);
	ck_assert_int_eq(tu_stack_wait_up(&st, 10000), 0);
	snprintf(cmd, sizeof(cmd), "%s %s --url http://127.0.0.1:%u",
		 tu_build_path(bin, sizeof(bin), "zernel"), args, st.metrics_port);
	out = tu_capture(cmd, &status);
	tu_stack_stop_exporter(&st);
	ck_assert_ptr_nonnull(out);
	ck_assert_msg(status == 0, "zernel %s: %s", args, out);
	return out;
}

/* `zernel explain --pid --json`: the process's entry, parsed. */
static struct json_object *explain(const struct tp_collector *c, pid_t pid)
{
	struct json_object *doc, *list = NULL, *p;
	char args[64], *out;

	snprintf(args, sizeof(args), "explain --pid %d --json", (int)pid);
	out = through_exporter(c, args);
	doc = json_tokener_parse(out);
	ck_assert_msg(doc && json_object_object_get_ex(doc, "processes", &list) &&
		      json_object_array_length(list) == 1, "explain: %s", out);
	p = json_object_get(json_object_array_get_idx(list, 0));
	json_object_put(doc);
	free(out);
	return p;
}

/* explain's top site at line of stall_sites.py, with its time: seconds. */
static double explained_site(struct json_object *p, uint32_t line, const char *state)
{
	struct json_object *sites = NULL;

	ck_assert(json_object_object_get_ex(p, "top_sites", &sites));
	for (size_t i = 0; i < json_object_array_length(sites); i++) {
		struct json_object *s = json_object_array_get_idx(sites, i), *v;
		const char *file, *st;

		file = json_object_get_string(json_object_object_get(s, "file"));
		st = json_object_get_string(json_object_object_get(s, "state"));
		v = json_object_object_get(s, "line");
		if (file && strstr(file, "/tests/py/stall_sites.py") && v &&
		    json_object_get_int(v) == (int)line && st && strcmp(st, state) == 0)
			return json_object_get_double(json_object_object_get(s, "seconds"));
	}
	ck_abort_msg("explain names no %s site at stall_sites.py:%u", state, line);
	return 0;
}

/*
 * The helper thread slept as long as the main thread did, at its own
 * line, and is no training thread: none of its sleeps is a site.
 */
static void check_no_helper_site(const struct tp_collector *c, pid_t pid, struct tw_work *w)
{
	ck_assert_int_ge(tw_value(w, "helper_ns"), 15 * 30 * TW_MS);
	ck_assert_msg(!find_site(c, (uint32_t)pid, site_line("helper"), SHM_STALL_SLEEP),
		      "the helper thread's sleep at line %u is a stall site", site_line("helper"));
}

/*
 * The script's 15 sleeps and 15 lock waits (stall_sites.py 15 30), done:
 * each at its line against the script's own times, none at the helper's
 * (or, where every thread counts, the helper thread's at its line too),
 * and explain names both with the times the segment holds.
 */
static void check_sites_of(struct tp_collector *c, pid_t pid, struct tw_work *w,
			   int every_thread)
{
	static const struct {
		const char *name;
		uint32_t state;
		const char *truth;
	} sites[] = {
		{ "sleep", SHM_STALL_SLEEP, "sleep_ns" },
		{ "lock", SHM_STALL_LOCK, "lock_ns" },
	};
	struct json_object *p;

	ck_assert_int_eq(tw_wait_line(w, "done", 30000), 0);
	ck_assert_int_eq(settle(c), 0);
	for (size_t i = 0; i < ARRAY_SIZE(sites); i++)
		check_site(c, pid, sites[i].name, sites[i].state, tw_value(w, sites[i].truth), 15);
	if (every_thread)
		check_site(c, pid, "helper", SHM_STALL_SLEEP, tw_value(w, "helper_ns"), 15);
	else
		check_no_helper_site(c, pid, w);
	p = explain(c, pid);
	for (size_t i = 0; i < ARRAY_SIZE(sites); i++)
		ck_assert_double_eq_tol(explained_site(p, site_line(sites[i].name),
						       shm_stall_state_name(sites[i].state)),
					find_site(c, (uint32_t)pid, site_line(sites[i].name),
						  sites[i].state)->total_ns / 1e9, 1e-6);
	json_object_put(p);
}

static void check_sleep_and_lock_sites(struct tp_collector *c, pid_t pid, struct tw_work *w)
{
	check_sites_of(c, pid, w, 0);
}

START_TEST(pystack_sleep_and_lock_sites_at_their_lines)
{
	static const char *const args[] = { "15", "30", NULL };
	char want[128], *trace;
	struct tp_collector c;
	struct tw_work w;

	if (tu_skip_unless_root("pystack_sleep_and_lock_sites_at_their_lines") ||
	    !have_python("pystack_sleep_and_lock_sites_at_their_lines"))
		return;
	ck_assert_int_eq(tw_start_py(&w, "stall_sites.py", args), 0);
	ck_assert_msg(start_collector_with(&c, w.pid, walks[_i], NULL) == 0,
		      "collector did not start; see %s", c.log);
	ck_assert_uint_eq(find_py(&c, (uint32_t)w.pid)->status, SHM_PY_FRAMES);
	ck_assert_uint_eq(find_py(&c, (uint32_t)w.pid)->minor, 11);
	tw_go(&w);
	check_sleep_and_lock_sites(&c, w.pid, &w);
	/* The trace draws the stalls on the main thread, named by their line. */
	trace = through_exporter(&c, "trace --seconds 60 -o -");
	snprintf(want, sizeof(want), "stall_sites.py:%u in sleeper\"", site_line("sleep"));
	ck_assert_msg(strstr(trace, want) != NULL, "no %s in the trace", want);
	snprintf(want, sizeof(want), "stall_sites.py:%u in locked\"", site_line("lock"));
	ck_assert_msg(strstr(trace, want) != NULL, "no %s in the trace", want);
	snprintf(want, sizeof(want), "\"main (tid %d)\"", (int)w.pid);
	ck_assert_msg(strstr(trace, want) != NULL, "no %s in the trace", want);
	free(trace);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/* The first child of pid, as the host names it; -1 when none within 10 s. */
static pid_t first_child(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	for (int waited = 0; waited < 10000; waited += 20) {
		FILE *f = fopen(path, "re");
		int child = -1;

		if (f) {
			if (fscanf(f, "%d", &child) != 1)
				child = -1;
			fclose(f);
		}
		if (child > 0)
			return child;
		tu_sleep_ms(20);
	}
	return -1;
}

/*
 * The script in a PID namespace of its own, as every process in a pod
 * is (unshare -p -f --mount-proc): its main thread is 1 to itself, and
 * CPython names it so in its thread state.  The collector, in the host's
 * namespace, still finds its frames, and explain its lines.
 */
START_TEST(pystack_sites_in_its_own_pid_namespace)
{
	static const char *const unshared[] = {
		"/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child",
		"/usr/bin/python3",
		NULL,
	};
	static const char *const args[] = { "15", "30", NULL };
	struct tp_collector c;
	struct tw_work w;
	pid_t python;
	char *out;

	if (tu_skip_unless_root("pystack_sites_in_its_own_pid_namespace") ||
	    !have_python("pystack_sites_in_its_own_pid_namespace"))
		return;
	ck_assert_int_eq(tw_start_py_in(&w, unshared, "stall_sites.py", args), 0);
	/* It names itself pid 1; the host knows it as unshare's child. */
	out = tu_read_file(w.out, NULL);
	ck_assert_msg(out && strncmp(out, "ready pid=1\n", 12) == 0, "the script said: %s", out);
	free(out);
	python = first_child(w.pid);
	ck_assert_int_gt(python, 0);
	ck_assert_msg(start_collector_with(&c, python, walks[_i], NULL) == 0,
		      "collector did not start; see %s", c.log);
	ck_assert_uint_eq(find_py(&c, (uint32_t)python)->status, SHM_PY_FRAMES);
	kill(python, SIGUSR1);
	check_sleep_and_lock_sites(&c, python, &w);
	/* Its second signal ends it, and then unshare. */
	kill(python, SIGUSR1);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * CPython builds with a layout row of their own that Debian 12 does not
 * package (3.10: Ubuntu 22.04's; 3.12: Ubuntu 24.04's and NVIDIA's NGC
 * images'), as pyenv installs them, with the program that prints their
 * layout and their line table's decoder.  pyenv is no Debian package, so
 * test-deps cannot bring it: where it is missing the test says so and
 * checks nothing else.
 */
static const struct {
	const char *minor;
	const char *layout_prog;
	line_decoder lines;
} pyenv_builds[] = {
	{ "10", layout_prog_310, pyline_310 },
	{ "12", layout_prog_311, pyline_311 },
};

/* pyenv's build of 3.MINOR: its interpreter and include folder; 0 if none. */
static int have_pyenv(const char *minor, char *python, size_t len, char *include,
		      size_t include_len)
{
	const char *roots[] = { getenv("PYENV_ROOT"), "/root/.pyenv", NULL };
	char pattern[PATH_MAX];
	glob_t g;

	if (getenv("HOME"))
		roots[2] = getenv("HOME");
	for (size_t i = 0; i < ARRAY_SIZE(roots); i++) {
		if (!roots[i])
			continue;
		snprintf(pattern, sizeof(pattern), "%s%s/versions/3.%s.*/bin/python3.%s", roots[i],
			 i == 2 ? "/.pyenv" : "", minor, minor);
		if (glob(pattern, 0, NULL, &g) != 0)
			continue;
		snprintf(python, len, "%s", g.gl_pathv[g.gl_pathc - 1]);
		globfree(&g);
		snprintf(include, include_len, "%.*s/include/python3.%s",
			 (int)(strstr(python, "/bin/python3.") - python), python, minor);
		return access(python, X_OK) == 0;
	}
	fprintf(stderr, "pyenv has no CPython 3.%s here: its checks did not run\n", minor);
	return 0;
}

/*
 * By loop index, a pyenv interpreter: its row against offsetof() with its
 * own headers, the line table decoder against its co_lines(), and the
 * script's sleep and lock at their lines, named by explain; with every
 * thread counted, so that the helper thread's sleeps show that a thread
 * other than the main one is found in the interpreter's list (3.10 names
 * it by pthread_self(), which the probe derives from its thread pointer).
 */
START_TEST(pystack_pyenv_interpreter_sites_at_their_lines)
{
	static const char *const args[] = { "15", "30", NULL };
	char python[PATH_MAX], include[PATH_MAX], cflags[PATH_MAX + 8];
	const char *interp[] = { python, NULL };
	unsigned long v[LAYOUT_VALUES];
	const struct py_layout *l;
	const struct shm_py_proc *py;
	struct tp_collector c;
	struct tw_work w;

	if (tu_skip_unless_root("pystack_pyenv_interpreter_sites_at_their_lines") ||
	    !have_pyenv(pyenv_builds[_i].minor, python, sizeof(python), include, sizeof(include)))
		return;
	snprintf(cflags, sizeof(cflags), "-I%s", include);
	header_numbers(pyenv_builds[_i].layout_prog, cflags, v, LAYOUT_VALUES);
	l = py_layout_find((uint32_t)v[0], (uint32_t)v[1]);
	ck_assert_msg(l != NULL, "no layout for %s", python);
	check_layout_fields(l, v);
	ck_assert(py_layout_fits(l));
	check_line_table(python, pyenv_builds[_i].lines);

	ck_assert_int_eq(tw_start_py_in(&w, interp, "stall_sites.py", args), 0);
	ck_assert_msg(start_collector_flag(&c, w.pid, NULL, NULL, "--all-threads") == 0,
		      "collector did not start; see %s", c.log);
	py = find_py(&c, (uint32_t)w.pid);
	ck_assert_uint_eq(py->status, SHM_PY_FRAMES);
	ck_assert_uint_eq(py->minor, (uint32_t)atoi(pyenv_builds[_i].minor));
	tw_go(&w);
	check_sites_of(&c, w.pid, &w, 1);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * Files and functions named with characters beyond ASCII, in each of
 * CPython's three kinds of compact string (Latin-1, UCS-2, UCS-4): the
 * stall keeps its site, each such character shown as '?'.  The script
 * compiles three sleeping functions under a file name of its own (lines
 * 3, 5 and 7 of it).
 */
START_TEST(pystack_non_ascii_names_keep_their_sites)
{
	static const char *const args[] = { "5", "30", "unicode", NULL };
	static const struct {
		uint32_t line;
		const char *func;
	} want[] = { { 3, "sleep_?" }, { 5, "??" }, { 7, "?" } };
	const char *file = "/tmp/zernel-?n?code-??.py";
	const struct shm_header_fields *h;
	const struct shm_stall_site *r;
	struct tp_collector c;
	struct tw_work w;

	if (tu_skip_unless_root("pystack_non_ascii_names_keep_their_sites") ||
	    !have_python("pystack_non_ascii_names_keep_their_sites"))
		return;
	ck_assert_int_eq(tw_start_py(&w, "stall_sites.py", args), 0);
	ck_assert_msg(start_collector_with(&c, w.pid, walks[_i], NULL) == 0,
		      "collector did not start; see %s", c.log);
	tw_go(&w);
	ck_assert_int_eq(tw_wait_line(&w, "done", 30000), 0);
	ck_assert_int_eq(settle(&c), 0);
	h = c.snap.hdr;
	r = (const void *)((const char *)c.snap.buf + h->table[SHM_TABLE_STALL_SITES].offset);
	for (size_t k = 0; k < ARRAY_SIZE(want); k++) {
		const struct shm_stall_site *found = NULL;

		for (uint32_t i = 0; i < h->table[SHM_TABLE_STALL_SITES].count && !found; i++)
			if (r[i].pid == (uint32_t)w.pid && r[i].state == SHM_STALL_SLEEP &&
			    r[i].line == want[k].line && strcmp(r[i].file, file) == 0)
				found = &r[i];
		ck_assert_msg(found != NULL, "no sleep site at %s:%u (see %s)", file, want[k].line,
			      c.log);
		ck_assert_str_eq(found->func, want[k].func);
		/* Five sleeps of 30 ms; one may be preempted past its end and cut in two. */
		ck_assert_uint_ge(found->stalls, 4);
		ck_assert_uint_le(found->stalls, 10);
	}
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/* The collector's line for pid's interpreter, into buf. */
static const char *again_log(pid_t pid, char *buf, size_t len)
{
	snprintf(buf, len, "pid %d runs CPython ", (int)pid);
	return buf;
}

/* Polls c's log until it holds text at least count times, for up to ms. */
static int wait_log_count(const struct tp_collector *c, const char *text, int count, int ms)
{
	for (int waited = 0; waited <= ms; waited += 50) {
		char *log = tu_read_file(c->log, NULL);
		int n = 0;

		for (const char *p = log; p && (p = strstr(p, text)); p += strlen(text))
			n++;
		free(log);
		if (n >= count)
			return 0;
		tu_sleep_ms(50);
	}
	return -1;
}

/*
 * A Python process that runs a new interpreter in its place (exec): the
 * old one's addresses are forgotten, the new one is found at a later
 * scan, and its stalls are named at their lines.
 */
START_TEST(pystack_sites_after_exec)
{
	static const char *const args[] = { "15", "30", "exec", NULL };
	struct tp_collector c;
	struct tw_work w;
	char again[64];

	if (tu_skip_unless_root("pystack_sites_after_exec") ||
	    !have_python("pystack_sites_after_exec"))
		return;
	ck_assert_int_eq(tw_start_py(&w, "stall_sites.py", args), 0);
	ck_assert_msg(start_collector_with(&c, w.pid, NULL, NULL) == 0,
		      "collector did not start; see %s", c.log);
	ck_assert_uint_eq(find_py(&c, (uint32_t)w.pid)->status, SHM_PY_FRAMES);
	tw_go(&w);
	ck_assert_int_eq(tw_wait_line(&w, "exec", 10000), 0);
	snprintf(again, sizeof(again), "ready pid=%d again", (int)w.pid);
	ck_assert_int_eq(tw_wait_line(&w, again, 20000), 0);
	/*
	 * The exec reaches the collector at its next publish, the new
	 * interpreter its next scan: it says so a second time in its log.
	 */
	ck_assert_msg(wait_log_count(&c, again_log(w.pid, again, sizeof(again)), 2, 120000) == 0,
		      "the new interpreter of pid %d was not found (see %s)", (int)w.pid, c.log);
	tw_go(&w);
	ck_assert_int_eq(tw_wait_line(&w, "done", 30000), 0);
	ck_assert_int_eq(settle(&c), 0);
	ck_assert_uint_eq(find_py(&c, (uint32_t)w.pid)->status, SHM_PY_FRAMES);
	check_site(&c, w.pid, "sleep", SHM_STALL_SLEEP, tw_value(&w, "sleep_ns"), 15);
	check_site(&c, w.pid, "lock", SHM_STALL_LOCK, tw_value(&w, "lock_ns"), 15);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/* The same sites under each tree's CPython (by loop index), its layout read from it. */
START_TEST(pystack_tree_sleep_and_lock_sites_at_their_lines)
{
	static const char *const args[] = { "15", "30", NULL };
	char root[PATH_MAX], python[64];
	struct tp_collector c;
	struct tw_work w;

	if (tu_skip_unless_root("pystack_tree_sleep_and_lock_sites_at_their_lines") ||
	    !have_tree(_i, root, sizeof(root), python, sizeof(python),
		       "pystack_tree_sleep_and_lock_sites_at_their_lines"))
		return;
	ck_assert_int_eq(start_in_tree(&w, root, python, "stall_sites.py", args), 0);
	ck_assert_msg(start_collector(&c, w.pid) == 0, "collector did not start; see %s", c.log);
	ck_assert_uint_eq(find_py(&c, (uint32_t)w.pid)->status, SHM_PY_FRAMES);
	ck_assert_uint_eq(find_py(&c, (uint32_t)w.pid)->minor,
			  strtoul(trees[_i].version + 2, NULL, 10));
	tw_go(&w);
	check_sleep_and_lock_sites(&c, w.pid, &w);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * stall_sites.py with args under the fake libraries (the caller set the
 * environment they need, which is cleared before the collector starts),
 * watched with walk and libs, run to its end and settled.
 */
static void run_sites(struct tw_work *w, struct tp_collector *c, const char *const *args,
		      const char *const *env, const char *walk, const char *const *libs)
{
	ck_assert_int_eq(tw_start_py(w, "stall_sites.py", args), 0);
	for (size_t i = 0; env[i]; i++)
		unsetenv(env[i]);
	ck_assert_msg(start_collector_with(c, w->pid, walk, libs) == 0,
		      "collector did not start; see %s", c->log);
	tw_go(w);
	ck_assert_int_eq(tw_wait_line(w, "done", 30000), 0);
	ck_assert_int_eq(settle(c), 0);
}

/*
 * The trace draws each spinning call at the spin line, in its state, from
 * its entry to its return (its time off the CPU nested inside: the
 * run-queue stalls at the same line), not as its time on the CPU cut back
 * from the return: the events' time is the calls' wall time
 * (the probes' window lies inside the script's, whose edges are a
 * millisecond a call on a quiet machine; on a busy one the script can wait
 * for its CPU between its clock and the call: a tenth of the time is
 * allowed for that), one event per call that made it to the site.  Drawn
 * from the return back by the time on the CPU, as before, the calls of
 * this script come to a quarter of their time.
 */
static void check_spin_trace(const struct tp_collector *c, pid_t pid, const char *state_name,
			     uint64_t sampled, long long wall)
{
	struct json_object *doc, *events = NULL;
	char want[96], *out;
	double dur_us = 0;
	uint64_t spins = 0;

	snprintf(want, sizeof(want), "stall_sites.py:%u in spinner", site_line("spin"));
	out = through_exporter(c, "trace --seconds 60 -o -");
	doc = json_tokener_parse(out);
	ck_assert_msg(doc && json_object_object_get_ex(doc, "traceEvents", &events), "trace: %s",
		      out);
	for (size_t i = 0; i < json_object_array_length(events); i++) {
		struct json_object *e = json_object_array_get_idx(events, i);
		const char *ph = json_object_get_string(json_object_object_get(e, "ph"));
		const char *name = json_object_get_string(json_object_object_get(e, "name"));
		struct json_object *args = json_object_object_get(e, "args");
		const char *state = json_object_get_string(json_object_object_get(args, "state"));

		/* The name ends with the site; the file's path is cut from the front. */
		if (!ph || strcmp(ph, "X") || !name || strlen(name) < strlen(want) ||
		    strcmp(name + strlen(name) - strlen(want), want) || !state ||
		    strcmp(state, state_name) ||
		    json_object_get_int64(json_object_object_get(e, "tid")) != pid)
			continue;
		spins++;
		dur_us += json_object_get_double(json_object_object_get(e, "dur"));
	}
	fprintf(stderr, "spinning sync: the trace draws %llu calls over %.1f ms\n",
		(unsigned long long)spins, dur_us / 1e3);
	ck_assert_uint_eq(spins, sampled);
	if (sampled == 10)
		ck_assert_msg(dur_us * 1e3 <= (double)wall + 1e5 &&
			      dur_us * 1e3 + 10 * TW_MS + (double)wall / 10 >= (double)wall,
			      "the trace draws the calls over %.3f ms; they took %.3f ms",
			      dur_us / 1e3, (double)wall / 1e6);
	json_object_put(doc);
	free(out);
}

/* Each spinning synchronisation of stall_sites.py: its mode, its state. */
static const struct {
	const char *mode;
	uint32_t state;
} spinning_syncs[] = {
	{ "spin", SHM_STALL_GPU },
	{ "spin-collective", SHM_STALL_COLLECTIVE },
	{ "spin-collective-thread", SHM_STALL_COLLECTIVE },
};

/*
 * A synchronisation that spins on the CPU, as CUDA's does while CPUs are
 * free, never leaves it: its time is a stall at the calling line all the
 * same, once per call, GPU or, where the call completes an NCCL
 * collective the thread or another thread of its process queued before
 * it, collective (the state the scheduler probe gives the same call when
 * it blocks).  The collector
 * takes a call's time from its entry to its return less its time off the
 * CPU (a preemption inside it is a run-queue stall of its own), so the
 * truth is the same quantity as the script saw it: the calls' time by
 * CLOCK_MONOTONIC (the clock BPF reads) less the time the kernel
 * accounted to the thread waiting on a run queue in them
 * (/proc/thread-self/schedstat).  Time a hypervisor or an interrupt takes
 * from a running thread is in both; CPU time by CLOCK_THREAD_CPUTIME_ID is
 * not, and so is no truth for this.  The collector's window lies inside
 * the script's, whose edges (ctypes, the clock reads) are on the CPU: up
 * to 1 ms a call below the truth, and 0.5 ms above it for the probes' own
 * traps.  Loop index: a spinning_syncs row.
 */
START_TEST(pystack_spinning_sync_site_has_its_state)
{
	const uint32_t state = spinning_syncs[_i].state;
	const char *const args[] = { "10", "30", spinning_syncs[_i].mode, NULL };
	char rt[512], drv[512], nc[512];
	const char *const libs[] = { rt, drv, nc, NULL };
	static const char *const env[] = { "ZERNEL_FAKE_CUDART", "ZERNEL_FAKE_NCCL",
					   "FAKE_SYNC_SPIN_NS", NULL };
	const struct shm_stall_site *r;
	const struct shm_py_proc *py;
	struct tp_collector c;
	struct tw_work w;
	long long truth, wall, queued, cpu;

	if (tu_skip_unless_root("pystack_spinning_sync_site_has_its_state") ||
	    !have_python("pystack_spinning_sync_site_has_its_state"))
		return;
	tp_fake(drv, sizeof(drv), "libcuda.so.1");
	setenv("ZERNEL_FAKE_CUDART", tp_fake(rt, sizeof(rt), "libcudart.so"), 1);
	setenv("ZERNEL_FAKE_NCCL", tp_fake(nc, sizeof(nc), "libnccl.so.2"), 1);
	setenv("FAKE_SYNC_SPIN_NS", "30000000", 1);
	run_sites(&w, &c, args, env, NULL, libs);
	wall = tw_value(&w, "spin_ns");
	queued = tw_value(&w, "spin_queued_ns");
	cpu = tw_value(&w, "spin_cpu_ns");
	truth = wall - queued;
	r = find_site(&c, (uint32_t)w.pid, site_line("spin"), state);
	ck_assert_msg(r != NULL, "%s: no %s stall site at the spin line %u (see %s)",
		      spinning_syncs[_i].mode, shm_stall_state_name(state), site_line("spin"),
		      c.log);
	ck_assert_msg(!find_site(&c, (uint32_t)w.pid, site_line("spin"),
				 state == SHM_STALL_GPU ? SHM_STALL_COLLECTIVE : SHM_STALL_GPU),
		      "%s: a spin line site in the other state too", spinning_syncs[_i].mode);
	ck_assert_str_eq(r->func, "spinner");
	fprintf(stderr, "%s: collector %llu ns in %llu stalls, script %lld ns in the calls less "
		"%lld ns queued (%lld ns of CPU time)\n", spinning_syncs[_i].mode,
		(unsigned long long)r->total_ns, (unsigned long long)r->stalls, wall, queued, cpu);
	/* It spun (a sleeping sync would take next to no CPU), if beside other work. */
	ck_assert_int_ge(cpu, wall / 10);
	ck_assert_int_ge(queued, 0);
	ck_assert_int_gt(truth, 0);
	/*
	 * Each call is a stall at the line, or, where its frames could not be
	 * read as it returned, unsampled time of the process: never lost.
	 * The process's unsampled time may hold other stalls of its own (one
	 * preempted again before its frames were read), so it bounds from
	 * below only; the site alone is never over the truth, and when every
	 * call made it there it matches the truth both ways.
	 */
	py = find_py(&c, (uint32_t)w.pid);
	ck_assert_ptr_nonnull(py);
	fprintf(stderr, "%s: the process's unsampled stalls: %llu, %llu ns\n",
		spinning_syncs[_i].mode, (unsigned long long)py->unsampled_stalls,
		(unsigned long long)py->unsampled_ns);
	ck_assert_uint_le(r->stalls, 10);
	ck_assert_uint_ge(r->stalls + py->unsampled_stalls, 10);
	ck_assert_msg(r->total_ns + py->unsampled_ns + 10 * TW_MS >= (uint64_t)truth &&
		      r->total_ns <= (uint64_t)truth + 10 * TW_MS / 2 &&
		      (r->stalls < 10 || r->total_ns + 10 * TW_MS >= (uint64_t)truth),
		      "%s: collector %llu ns in %llu stalls (and %llu ns unsampled), script %lld "
		      "ns in the calls less %lld ns queued", spinning_syncs[_i].mode,
		      (unsigned long long)r->total_ns, (unsigned long long)r->stalls,
		      (unsigned long long)py->unsampled_ns, wall, queued);
	check_spin_trace(&c, w.pid, shm_stall_state_name(state), r->stalls, wall);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

/*
 * Ten synchronisations of stall_sites.py's MODE, each of which the fake
 * driver blocks 30 ms, must make one site at the MODE line in state, with
 * the time the script measured (its key), and none in the states it is
 * not: a thread blocked inside a CUDA call is waiting for the GPU, or for
 * a collective when the call completes one, whatever system call the
 * driver waits in.
 */
static void check_blocking_sync(const char *walk, const char *mode, const char *key,
				uint32_t state)
{
	const char *const args[] = { "10", "30", mode, NULL };
	static const uint32_t others[] = { SHM_STALL_SLEEP, SHM_STALL_GPU, SHM_STALL_COLLECTIVE };
	char rt[512], drv[512], nc[512];
	const char *const libs[] = { rt, drv, nc, NULL };
	static const char *const env[] = { "ZERNEL_FAKE_CUDART", "ZERNEL_FAKE_NCCL", NULL };
	struct tp_collector c;
	struct tw_work w;

	tp_fake(drv, sizeof(drv), "libcuda.so.1");
	setenv("ZERNEL_FAKE_CUDART", tp_fake(rt, sizeof(rt), "libcudart.so"), 1);
	setenv("ZERNEL_FAKE_NCCL", tp_fake(nc, sizeof(nc), "libnccl.so.2"), 1);
	run_sites(&w, &c, args, env, walk, libs);
	check_site(&c, w.pid, mode, state, tw_value(&w, key), 10);
	for (size_t i = 0; i < ARRAY_SIZE(others); i++)
		ck_assert_msg(others[i] == state ||
			      !find_site(&c, (uint32_t)w.pid, site_line(mode), others[i]),
			      "%s: a site in state %u too", mode, others[i]);
	tw_finish(&w);
	tp_collector_stop(&c);
}

/* Each blocking synchronisation of stall_sites.py, the script's time of it, its state. */
static const struct {
	const char *mode, *key;
	uint32_t state;
} blocking_syncs[] = {
	{ "block", "block_ns", SHM_STALL_GPU },
	{ "collective", "coll_ns", SHM_STALL_COLLECTIVE },
};

/* Loop index: a blocking_syncs row times the walks. */
START_TEST(pystack_blocking_sync_site_has_its_state)
{
	const size_t row = (size_t)_i / ARRAY_SIZE(walks);

	if (tu_skip_unless_root("pystack_blocking_sync_site_has_its_state") ||
	    !have_python("pystack_blocking_sync_site_has_its_state"))
		return;
	check_blocking_sync(walks[(size_t)_i % ARRAY_SIZE(walks)], blocking_syncs[row].mode,
			    blocking_syncs[row].key, blocking_syncs[row].state);
}
END_TEST

START_TEST(pystack_dataloader_wait_site_is_input)
{
	static const char *const args[] = { "20", "50", "torch-only", NULL };
	struct json_object *p;
	struct tp_collector c;
	struct tw_work w;
	double secs;

	if (tu_skip_unless_root("pystack_dataloader_wait_site_is_input") ||
	    !have_python("pystack_dataloader_wait_site_is_input"))
		return;
	if (tu_system("%s -c 'import torch' 2>/dev/null", PYTHON) != 0) {
		tu_skip_missing("pystack_dataloader_wait_site_is_input: python3-torch is not installed");
		return;
	}
	ck_assert_int_eq(tw_start_py(&w, "stall_sites.py", args), 0);
	ck_assert_msg(start_collector_with(&c, w.pid, walks[_i], NULL) == 0,
		      "collector did not start; see %s", c.log);
	tw_go(&w);
	ck_assert_int_eq(tw_wait_line(&w, "done", 60000), 0);
	ck_assert_int_eq(settle(&c), 0);
	/*
	 * Waiting for a batch is mostly blocked on the worker's pipe (input),
	 * and partly on-CPU work of next() and run-queue waits on this busy
	 * machine: the input row must hold at least 70% of the time the
	 * script measured, and no more than all of it.
	 */
	check_data_site(&c, w.pid, tw_value(&w, "data_ns"), 20);
	/* explain: the DataLoader line with its time, and the data-bound verdict. */
	p = explain(&c, w.pid);
	secs = explained_site(p, site_line("data"), "input");
	ck_assert_msg(secs * 1e9 >= tw_value(&w, "data_ns") * 0.7 &&
		      secs * 1e9 <= tw_value(&w, "data_ns") + 5e6, "explain: %f s, script %lld ns",
		      secs, tw_value(&w, "data_ns"));
	ck_assert_str_eq(json_object_get_string(json_object_object_get(p, "verdict")), "data-bound");
	json_object_put(p);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

START_TEST(pystack_unsupported_version_is_refused)
{
	char bin[512], *log;
	char *argv[] = { bin, NULL };
	const struct shm_py_proc *py;
	struct tp_collector c;
	struct tw_work w;

	if (tu_skip_unless_root("pystack_unsupported_version_is_refused"))
		return;
	tu_build_path(bin, sizeof(bin), "tests/workloads_py/python3.9");
	ck_assert_int_eq(tw_start_argv(&w, argv), 0);
	ck_assert_msg(start_collector(&c, w.pid) == 0, "collector did not start; see %s", c.log);
	py = find_py(&c, (uint32_t)w.pid);
	ck_assert_uint_eq(py->status, SHM_PY_UNSUPPORTED);
	ck_assert_uint_eq(py->major, 3);
	ck_assert_uint_eq(py->minor, 9);
	tu_sleep_ms(300);
	ck_assert_int_eq(settle(&c), 0);
	/* Its stalls (20 ms sleeps) are never given a site. */
	ck_assert_uint_eq(c.snap.hdr->table[SHM_TABLE_STALL_SITES].count, 0);
	log = tu_read_file(c.log, NULL);
	ck_assert_ptr_nonnull(log);
	ck_assert_msg(strstr(log, "CPython 3.9 is not supported for Python frames "
			      "(supported: 3.10, 3.11, 3.12, 3.13 and 3.14)"),
		      "no clear refusal in %s", c.log);
	free(log);
	kill(w.pid, SIGKILL);
	tw_finish(&w);
	tp_collector_stop(&c);
}
END_TEST

Suite *pystack_suite(void);
Suite *pystack_suite(void)
{
	Suite *s = suite_create("pystack");
	TCase *t = tcase_create("core");

	tcase_set_timeout(t, 400);
	tcase_add_loop_test(t, pystack_line_table_matches_cpython_co_lines, 0,
			    1 + (int)ARRAY_SIZE(trees));
	tcase_add_test(t, pystack_malformed_line_tables_give_no_line);
	tcase_add_test(t, pystack_layout_matches_interpreter_headers);
	tcase_add_loop_test(t, pystack_layout_from_the_interpreters_debug_offsets, 0,
			    (int)ARRAY_SIZE(trees));
	tcase_add_loop_test(t, pystack_sleep_and_lock_sites_at_their_lines, 0, ARRAY_SIZE(walks));
	tcase_add_loop_test(t, pystack_sites_in_its_own_pid_namespace, 0, ARRAY_SIZE(walks));
	tcase_add_loop_test(t, pystack_pyenv_interpreter_sites_at_their_lines, 0,
			    (int)ARRAY_SIZE(pyenv_builds));
	tcase_add_loop_test(t, pystack_non_ascii_names_keep_their_sites, 0, ARRAY_SIZE(walks));
	tcase_add_loop_test(t, pystack_tree_sleep_and_lock_sites_at_their_lines, 0,
			    (int)ARRAY_SIZE(trees));
	tcase_add_loop_test(t, pystack_dataloader_wait_site_is_input, 0, ARRAY_SIZE(walks));
	tcase_add_loop_test(t, pystack_spinning_sync_site_has_its_state, 0,
			    (int)ARRAY_SIZE(spinning_syncs));
	tcase_add_loop_test(t, pystack_blocking_sync_site_has_its_state, 0,
			    (int)(ARRAY_SIZE(blocking_syncs) * ARRAY_SIZE(walks)));
	tcase_add_test(t, pystack_sites_after_exec);
	tcase_add_test(t, pystack_unsupported_version_is_refused);
	suite_add_tcase(s, t);
	return s;
}
