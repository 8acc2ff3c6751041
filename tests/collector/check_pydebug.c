/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The layout read from a 3.13 _Py_DebugOffsets that the watched process
 * could have written anything into: crafted ones in a memory file that
 * stands in for /proc/PID/mem, in-process and through the parser child,
 * which the collector asks.  A real interpreter's is checked against its
 * own headers in check_pystack.c.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/parser/parser.h"
#include "collector/python/pydebug.h"

#define RUNTIME_AT	0x1000u		/* where _PyRuntime lies in the stand-in */

/* Offsets of the shape a default 3.13 build publishes. */
static struct py_debug_313 plausible(void)
{
	struct py_debug_313 d = { .version = 0x030d05f0 };

	memcpy(d.cookie, PY_DEBUG_COOKIE, sizeof(d.cookie));
	d.runtime_state.size = 1600;
	d.runtime_state.interpreters_head = 632;
	d.interpreter_state.size = 120000;
	d.interpreter_state.threads_head = 7344;
	d.thread_state.size = 400;
	d.thread_state.next = 8;
	d.thread_state.interp = 16;
	d.thread_state.current_frame = 72;
	d.thread_state.native_thread_id = 160;
	d.frame.size = 80;
	d.frame.previous = 8;
	d.frame.executable = 0;
	d.frame.instr_ptr = 56;
	d.code_object.size = 208;
	d.code_object.filename = 112;
	d.code_object.qualname = 128;
	d.code_object.linetable = 136;
	d.code_object.firstlineno = 68;
	d.code_object.co_code_adaptive = 200;
	d.objects.pyobject.size = 16;
	d.objects.pyobject.ob_type = 8;
	d.text.bytes_object.size = 40;
	d.text.bytes_object.ob_size = 16;
	d.text.bytes_object.ob_sval = 32;
	d.text.unicode_object.size = 40;
	d.text.unicode_object.length = 16;
	d.text.unicode_object.state = 32;
	d.text.unicode_object.asciiobject_size = 40;
	return d;
}

/*
 * The collector asks its parser child (collector/parser/parser.h), which
 * must answer as pydebug_layout did in-process (err, l, why), or, where
 * the stand-in does not begin with the cookie, that nothing is published.
 */
static void same_in_the_child(int fd, uint32_t minor, int err, const struct py_layout *l,
			      const char *why)
{
	struct py_layout cl;
	char cwhy[256] = "";
	int cerr;

	/* Under qemu-user (tools/test-arm64.sh), where no seccomp filter loads. */
	if (getenv("ZERNEL_TESTS_NO_SECCOMP"))
		return;
	cerr = parser_py_layout(fd, RUNTIME_AT, 3, minor, &cl, cwhy, sizeof(cwhy));
	if (!pydebug_published(fd, RUNTIME_AT)) {
		ck_assert_int_eq(cerr, -EPROTONOSUPPORT);
		return;
	}
	/* Offsets pydebug admits but the collector cannot read by: refused there. */
	if (err == 0 && !py_layout_fits(l)) {
		ck_assert_int_eq(cerr, -EPROTO);
		ck_assert(strstr(cwhy, "outside what the collector reads"));
		return;
	}
	ck_assert_int_eq(cerr, err);
	if (err == 0)
		ck_assert_mem_eq(&cl, l, sizeof(cl));
	else
		ck_assert_str_eq(cwhy, why);
}

/* pydebug_layout over size bytes of d placed at RUNTIME_AT of a memory file. */
static int layout_at(const void *d, size_t size, uint32_t minor, struct py_layout *l,
		     char *why, size_t len)
{
	int fd = memfd_create("zernel-pydebug", MFD_CLOEXEC), err;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, d, size, RUNTIME_AT), (ssize_t)size);
	why[0] = '\0';
	err = pydebug_layout(fd, RUNTIME_AT, 3, minor, l, why, len);
	if (err)
		ck_assert_msg(why[0] != '\0', "error %d without a reason", err);
	same_in_the_child(fd, minor, err, l, why);
	close(fd);
	return err;
}

static int layout_of(const struct py_debug_313 *d, uint32_t minor, struct py_layout *l,
		     char *why, size_t len)
{
	return layout_at(d, sizeof(*d), minor, l, why, len);
}

START_TEST(published_offsets_become_the_layout)
{
	struct py_debug_313 d = plausible();
	struct py_layout l;
	char why[256];

	ck_assert_int_eq(layout_of(&d, 13, &l, why, sizeof(why)), 0);
	ck_assert_uint_eq(l.walk.runtime_interp_head, 632);
	ck_assert_uint_eq(l.walk.interp_threads_head, 7344);
	ck_assert_uint_eq(l.walk.tstate_cframe, 0);
	ck_assert_uint_eq(l.walk.cframe_current_frame, 72);
	ck_assert_uint_eq(l.walk.frame_prev_instr, 56);
	ck_assert_uint_eq(l.code_units, 200);
	ck_assert_uint_eq(l.str_ascii_data, 40);
	ck_assert_uint_eq(l.str_compact_data, 56);
	ck_assert(py_layout_fits(&l));
}
END_TEST

/* 3.14's shape: the same offsets found at their own places, and its frames' code tagged. */
START_TEST(a_314_shape_is_read_at_its_places)
{
	struct py_debug_313 d13 = plausible();
	struct py_debug_314 d = { .version = 0x030e08f0 };
	struct py_layout l;
	char why[256];

	memcpy(d.cookie, PY_DEBUG_COOKIE, sizeof(d.cookie));
	d.runtime_state = d13.runtime_state;
	d.interpreter_state.size = d13.interpreter_state.size;
	d.interpreter_state.threads_head = 7400;
	d.thread_state = d13.thread_state;
	d.frame = (typeof(d.frame)){ .size = 96, .previous = 8, .instr_ptr = 56 };
	d.code_object = (typeof(d.code_object)){ .size = 216, .filename = 112, .qualname = 128,
						.linetable = 136, .firstlineno = 68,
						.co_code_adaptive = 208 };
	d.objects = d13.objects;
	d.text = d13.text;
	ck_assert_int_eq(layout_at(&d, sizeof(d), 14, &l, why, sizeof(why)), 0);
	ck_assert_uint_eq(l.walk.interp_threads_head, 7400);
	ck_assert_uint_eq(l.code_units, 208);
	ck_assert_uint_eq(l.code_tag_bits, 3);
	ck_assert(py_layout_fits(&l));
	/* A 3.13 reads no tag off its frames' code. */
	ck_assert_int_eq(layout_of(&d13, 13, &l, why, sizeof(why)), 0);
	ck_assert_uint_eq(l.code_tag_bits, 0);
}
END_TEST

START_TEST(anything_else_is_refused_with_its_reason)
{
	struct py_debug_313 d = plausible();
	struct py_layout l;
	char why[256];

	memcpy(d.cookie, "notdebug", sizeof(d.cookie));
	ck_assert_int_eq(layout_of(&d, 13, &l, why, sizeof(why)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(why, "does not begin with _Py_DebugOffsets"));

	d = plausible();
	d.version = 0x030c04f0;		/* 3.12's number in a 3.13 */
	ck_assert_int_eq(layout_of(&d, 13, &l, why, sizeof(why)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(why, "not 3.13"));

	d = plausible();
	d.free_threaded = 1;
	ck_assert_int_eq(layout_of(&d, 13, &l, why, sizeof(why)), -EPROTONOSUPPORT);
	ck_assert_ptr_nonnull(strstr(why, "free-threaded"));

	/* A later version's offsets have a shape not known here. */
	d = plausible();
	d.version = 0x030f00f0;
	ck_assert_int_eq(layout_of(&d, 15, &l, why, sizeof(why)), -EPROTONOSUPPORT);
	ck_assert_ptr_nonnull(strstr(why, "3.15 are not read yet"));

	/* An offset outside its structure, or past 16 bits. */
	d = plausible();
	d.thread_state.native_thread_id = 400;
	ck_assert_int_eq(layout_of(&d, 13, &l, why, sizeof(why)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(why, "the native thread id as 400"));
	d = plausible();
	d.interpreter_state.threads_head = 70000;
	ck_assert_int_eq(layout_of(&d, 13, &l, why, sizeof(why)), -EPROTO);

	/* Inside their structures, but past what the collector reads of an object. */
	d = plausible();
	d.code_object.size = 4000;
	d.code_object.co_code_adaptive = 3000;
	ck_assert_int_eq(layout_of(&d, 13, &l, why, sizeof(why)), 0);
	ck_assert(!py_layout_fits(&l));
	d = plausible();
	d.frame.size = 200;
	d.frame.instr_ptr = 104;	/* beyond the 8 words the probe reads of a frame */
	ck_assert_int_eq(layout_of(&d, 13, &l, why, sizeof(why)), 0);
	ck_assert(!py_layout_fits(&l));

	/* Nothing there to read. */
	{
		int fd = memfd_create("zernel-pydebug-empty", MFD_CLOEXEC);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pydebug_layout(fd, RUNTIME_AT, 3, 13, &l, why, sizeof(why)), -EIO);
		ck_assert(!pydebug_published(fd, RUNTIME_AT));
		close(fd);
	}
}
END_TEST

Suite *pydebug_suite(void);
Suite *pydebug_suite(void)
{
	Suite *s = suite_create("pydebug");
	TCase *tc = tcase_create("offsets");

	tcase_add_test(tc, published_offsets_become_the_layout);
	tcase_add_test(tc, a_314_shape_is_read_at_its_places);
	tcase_add_test(tc, anything_else_is_refused_with_its_reason);
	suite_add_tcase(s, tc);
	return s;
}
