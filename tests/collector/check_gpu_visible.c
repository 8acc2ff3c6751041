/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES, every form: NVIDIA's
 * documented examples, the undocumented rules PyTorch models, and values
 * that are simply wrong.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collector/gpu/gpu_visible.h"

#define U1	"GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"
#define U2	"GPU-1d4e1b2a-0000-4000-8000-000000000002"
#define M1	"MIG-9f4b1d1e-5c3a-5a4e-9b1a-2c3d4e5f6a7b"
#define M450	"MIG-" U1 "/1/0"

/* The list as text: "2,1", "GPU-...", "0:1". */
static const char *render(const struct gpu_visible *v)
{
	static char buf[8192];
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < v->n; i++) {
		const struct gpu_ref *r = &v->ref[i];
		const char *sep = i ? "," : "";

		if (r->kind == GPU_REF_INDEX)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%u", sep, r->index);
		else if (r->kind == GPU_REF_MIG_INDEX)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%u:%u", sep, r->index, r->mig);
		else
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", sep, r->id);
	}
	return buf;
}

static const struct vis_case {
	const char *value;
	uint32_t mode;
	const char *list;
	uint32_t flags;
} cuda_cases[] = {
	{ NULL, GPU_LIST_UNSET, "", 0 },
	{ "", GPU_LIST_NONE, "", 0 },
	{ "0", GPU_LIST_DEVICES, "0", 0 },
	/* NVIDIA's examples: order kept; "-1" ends the list. */
	{ "2,1", GPU_LIST_DEVICES, "2,1", 0 },
	{ "0,2,-1,1", GPU_LIST_DEVICES, "0,2", GPU_VISIBLE_F_STOPPED },
	{ "-1", GPU_LIST_NONE, "", GPU_VISIBLE_F_STOPPED },
	/* strtoul-like entries. */
	{ "1gpu2,2ampere", GPU_LIST_DEVICES, "1,2", GPU_VISIBLE_F_LAX },
	{ " 1,\t2", GPU_LIST_DEVICES, "1,2", 0 },
	{ "0, 1 ,2", GPU_LIST_DEVICES, "0,1,2", GPU_VISIBLE_F_LAX },
	{ "+3", GPU_LIST_DEVICES, "3", 0 },
	{ "x", GPU_LIST_NONE, "", GPU_VISIBLE_F_STOPPED },
	{ "0,1,", GPU_LIST_DEVICES, "0,1", GPU_VISIBLE_F_STOPPED },
	{ ",0", GPU_LIST_NONE, "", GPU_VISIBLE_F_STOPPED },
	{ "9999999999", GPU_LIST_NONE, "", GPU_VISIBLE_F_STOPPED },
	/* A repeat hides everything. */
	{ "0,0", GPU_LIST_NONE, "", GPU_VISIBLE_F_REPEATED },
	{ "1,0,1", GPU_LIST_NONE, "", GPU_VISIBLE_F_REPEATED },
	{ "1,01", GPU_LIST_NONE, "", GPU_VISIBLE_F_REPEATED },
	/* UUIDs, full or prefixes ("GPU-" included). */
	{ "GPU-8932f937", GPU_LIST_DEVICES, "GPU-8932f937", 0 },
	{ U1 "," U2, GPU_LIST_DEVICES, U1 "," U2, 0 },
	{ U1 "," U1, GPU_LIST_NONE, "", GPU_VISIBLE_F_REPEATED },
	{ "GPU-", GPU_LIST_DEVICES, "GPU-", 0 },
	{ "GPU-8932F937", GPU_LIST_NONE, "", GPU_VISIBLE_F_STOPPED },
	{ "GPU-8932f937 ", GPU_LIST_NONE, "", GPU_VISIBLE_F_STOPPED },
	/* The first entry's form is the list's. */
	{ "0," U1, GPU_LIST_DEVICES, "0", GPU_VISIBLE_F_STOPPED | GPU_VISIBLE_F_MIXED },
	{ U1 ",1", GPU_LIST_DEVICES, U1, GPU_VISIBLE_F_STOPPED | GPU_VISIBLE_F_MIXED },
	{ M1 "," U1, GPU_LIST_DEVICES, M1, GPU_VISIBLE_F_STOPPED | GPU_VISIBLE_F_MIXED },
	/* MIG, both driver generations. */
	{ M1, GPU_LIST_DEVICES, M1, 0 },
	{ M450, GPU_LIST_DEVICES, M450, 0 },
	{ "MIG-" U1 "/1", GPU_LIST_NONE, "", GPU_VISIBLE_F_STOPPED },
	{ "MIG-" U1 "/a/0", GPU_LIST_NONE, "", GPU_VISIBLE_F_STOPPED },
	{ "MIG-", GPU_LIST_NONE, "", GPU_VISIBLE_F_STOPPED },
};

START_TEST(cuda_visible_devices_forms)
{
	const struct vis_case *c = &cuda_cases[_i];
	struct gpu_visible v;

	ck_assert_int_eq(gpu_visible_parse_cuda(c->value, &v), 0);
	ck_assert_msg(v.mode == c->mode, "\"%s\": mode %u", c->value ? c->value : "(unset)", v.mode);
	ck_assert_msg(strcmp(render(&v), c->list) == 0, "\"%s\": list %s", c->value, render(&v));
	ck_assert_msg(v.flags == c->flags, "\"%s\": flags %#x", c->value, v.flags);
}
END_TEST

START_TEST(cuda_lists_longer_than_kept_are_cut)
{
	char value[1024];
	struct gpu_visible v;
	size_t n = 0;

	for (int i = 0; i < GPU_VISIBLE_MAX + 6; i++)
		n += (size_t)snprintf(value + n, sizeof(value) - n, "%s%d", i ? "," : "", i);
	ck_assert_int_eq(gpu_visible_parse_cuda(value, &v), 0);
	ck_assert_uint_eq(v.n, GPU_VISIBLE_MAX);
	ck_assert(v.flags & GPU_VISIBLE_F_CUT);
	ck_assert_uint_eq(v.ref[GPU_VISIBLE_MAX - 1].index, GPU_VISIBLE_MAX - 1);
}
END_TEST

static const struct vis_case nvidia_cases[] = {
	{ NULL, GPU_LIST_UNSET, "", 0 },
	{ "", GPU_LIST_VOID, "", 0 },
	{ "void", GPU_LIST_VOID, "", 0 },
	{ "all", GPU_LIST_ALL, "", 0 },
	{ "none", GPU_LIST_NONE, "", 0 },
	{ "0,1", GPU_LIST_DEVICES, "0,1", 0 },
	{ "3," U1, GPU_LIST_DEVICES, "3," U1, 0 },
	{ "0:1,1:0", GPU_LIST_DEVICES, "0:1,1:0", 0 },
	{ M1 "," M450, GPU_LIST_DEVICES, M1 "," M450, 0 },
	/* The list is elsewhere (volume mounts, CDI): unknown. */
	{ "/var/run/nvidia-container-devices", GPU_LIST_INVALID, "", 0 },
	{ "nvidia.com/gpu=all", GPU_LIST_INVALID, "", 0 },
	/* Values the runtime would refuse. */
	{ "ALL", GPU_LIST_INVALID, "", 0 },
	{ "0,0", GPU_LIST_INVALID, "", 0 },
	{ "0,,1", GPU_LIST_INVALID, "", 0 },
	{ "0 ,1", GPU_LIST_INVALID, "", 0 },
	{ "-1", GPU_LIST_INVALID, "", 0 },
	{ "GPU-", GPU_LIST_INVALID, "", 0 },
	{ "0:", GPU_LIST_INVALID, "", 0 },
	{ "1gpu", GPU_LIST_INVALID, "", 0 },
};

START_TEST(nvidia_visible_devices_forms)
{
	const struct vis_case *c = &nvidia_cases[_i];
	struct gpu_visible v;
	int rc = gpu_visible_parse_nvidia(c->value, &v);

	ck_assert_int_eq(rc, c->mode == GPU_LIST_INVALID ? -EINVAL : 0);
	ck_assert_msg(v.mode == c->mode, "\"%s\": mode %u", c->value ? c->value : "(unset)", v.mode);
	ck_assert_msg(strcmp(render(&v), c->list) == 0, "\"%s\": list %s", c->value, render(&v));
}
END_TEST

START_TEST(mig_parents)
{
	struct gpu_visible v;
	char uuid[64];

	gpu_visible_parse_cuda(M450, &v);
	ck_assert_int_eq(gpu_ref_mig_parent(&v.ref[0], uuid, sizeof(uuid)), 0);
	ck_assert_str_eq(uuid, U1);
	ck_assert_int_eq(gpu_ref_mig_parent(&v.ref[0], uuid, 8), -ENAMETOOLONG);
	gpu_visible_parse_cuda(M1, &v);
	ck_assert_int_eq(gpu_ref_mig_parent(&v.ref[0], uuid, sizeof(uuid)), -ENOENT);
	gpu_visible_parse_cuda(U1, &v);
	ck_assert_int_eq(gpu_ref_mig_parent(&v.ref[0], uuid, sizeof(uuid)), -ENOENT);
}
END_TEST

Suite *gpu_visible_suite(void);
Suite *gpu_visible_suite(void)
{
	Suite *s = suite_create("gpu_visible");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, cuda_visible_devices_forms, 0,
			    (int)(sizeof(cuda_cases) / sizeof(cuda_cases[0])));
	tcase_add_test(tc, cuda_lists_longer_than_kept_are_cut);
	tcase_add_loop_test(tc, nvidia_visible_devices_forms, 0,
			    (int)(sizeof(nvidia_cases) / sizeof(nvidia_cases[0])));
	tcase_add_test(tc, mig_parents);
	suite_add_tcase(s, tc);
	return s;
}
