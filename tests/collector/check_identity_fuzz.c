/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The identity parsers fed mutated real inputs (a fixed seed, so a failure
 * repeats): they must never crash, read or write out of bounds (the
 * sanitizer build runs this suite too), and whatever they keep must still
 * pass its own checks.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "collector/gpu/gpu_visible.h"
#include "collector/identity/cgroup_id.h"
#include "collector/identity/cgroup_path.h"
#include "common/idtext.h"
#include "collector/identity/kube_logdir.h"
#include "collector/proc/proc_env.h"

#define ROUNDS	20000
#define CAP	4096

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* Bytes the formats give meaning to, and some they must refuse. */
static const char special[] = "/:\n,=\0_-.@ GPUMIG0123456789abcdef\x01\x7f\xc3\xa9\xff\xed\xa0";

/* Mutates buf[0..*len) in place a few times; keeps it under CAP. */
static void mutate(char *buf, size_t *len)
{
	for (uint32_t m = 1 + rnd(4); m > 0; m--) {
		size_t n = *len, at = n ? rnd((uint32_t)n) : 0;

		switch (rnd(6)) {
		case 0:		/* flip a byte */
			if (n)
				buf[at] = (char)rnd(256);
			break;
		case 1:		/* a meaningful byte */
			if (n)
				buf[at] = special[rnd(sizeof(special) - 1)];
			break;
		case 2:		/* delete a run */
			if (n) {
				size_t k = 1 + rnd(16);

				k = k > n - at ? n - at : k;
				memmove(buf + at, buf + at + k, n - at - k);
				*len -= k;
			}
			break;
		case 3:		/* insert a byte */
			if (n + 1 < CAP) {
				memmove(buf + at + 1, buf + at, n - at);
				buf[at] = special[rnd(sizeof(special) - 1)];
				(*len)++;
			}
			break;
		case 4:		/* repeat a run */
			if (n && n * 2 < CAP) {
				size_t k = 1 + rnd((uint32_t)(n - at));

				memmove(buf + at + k, buf + at, n - at);
				*len += k;
			}
			break;
		default:	/* cut */
			*len = at;
			break;
		}
	}
}

static void seed_pick(const char *const *seeds, size_t n_seeds, char *buf, size_t *len)
{
	const char *s = seeds[rnd((uint32_t)n_seeds)];

	*len = strlen(s);
	memcpy(buf, s, *len);
	/* environ seeds use '|' for NUL */
	for (size_t i = 0; i < *len; i++)
		if (buf[i] == '|')
			buf[i] = '\0';
}

/* A string field: terminated inside its buffer, and printable. */
static void assert_text(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	ck_assert_uint_lt(n, cap);
	ck_assert(idtext_printable_utf8(s, n));
}

static void assert_num(const struct proc_env_num *v)
{
	ck_assert_uint_le(v->state, PROC_ENV_INVALID);
	if (v->state != PROC_ENV_SET)
		ck_assert_uint_eq(v->value, 0);
}

static void assert_id(const struct proc_env_id *v)
{
	ck_assert_uint_le(v->state, PROC_ENV_INVALID);
	assert_text(v->value, sizeof(v->value));
	if (v->state != PROC_ENV_SET)
		ck_assert_str_eq(v->value, "");
}

START_TEST(environ_images)
{
	static const char *const seeds[] = {
		"RANK=3|LOCAL_RANK=1|WORLD_SIZE=8|AWS_SECRET_ACCESS_KEY=zz|",
		"CUDA_VISIBLE_DEVICES=GPU-8932f937,1|NVIDIA_VISIBLE_DEVICES=all|CUDA_DEVICE_ORDER=PCI_BUS_ID|",
		"TORCHELASTIC_RUN_ID=r\xc3\xa9|MASTER_ADDR=10.0.0.1|MASTER_PORT=29500|SLURM_JOB_ID=9|",
		"OMPI_COMM_WORLD_RANK=2|SLURM_STEP_ID=0|SLURM_ARRAY_TASK_ID=3|RANK=3|RANK=4|",
	};
	static char buf[CAP];
	struct proc_env e;
	size_t len;

	for (int r = 0; r < ROUNDS; r++) {
		seed_pick(seeds, sizeof(seeds) / sizeof(seeds[0]), buf, &len);
		mutate(buf, &len);
		proc_env_parse(buf, len, &e);
		assert_num(&e.rank);
		assert_num(&e.world_size);
		assert_num(&e.master_port);
		assert_num(&e.slurm_job_id);
		assert_num(&e.ompi_rank);
		if (e.rank.state == PROC_ENV_SET)
			ck_assert_uint_le(e.rank.value, PROC_ENV_RANK_MAX);
		if (e.master_port.state == PROC_ENV_SET)
			ck_assert(e.master_port.value >= 1 && e.master_port.value <= 65535);
		assert_id(&e.run_id);
		assert_id(&e.master_addr);
		assert_id(&e.cuda_device_order);
		assert_text(e.cuda_visible_devices.value, sizeof(e.cuda_visible_devices.value));
		assert_text(e.nvidia_visible_devices.value, sizeof(e.nvidia_visible_devices.value));
		ck_assert_uint_le(e.bytes, len);
	}
}
END_TEST

static void assert_cgroup(const struct cgroup_id *id)
{
	size_t n = strnlen(id->container_id, sizeof(id->container_id));

	ck_assert(n == 0 || idtext_is_container_id(id->container_id, n));
	n = strnlen(id->pod_uid, sizeof(id->pod_uid));
	ck_assert(n == 0 || n == 32 || n == 36);
	ck_assert_uint_le(id->runtime, CGROUP_RUNTIME_PODMAN);
	ck_assert_uint_le(id->qos, CGROUP_QOS_BESTEFFORT);
	ck_assert_uint_le(id->source, CGROUP_SOURCE_V1_CONTROLLER);
	ck_assert((id->runtime == CGROUP_RUNTIME_NONE) == (id->container_id[0] == '\0'));
	ck_assert((id->qos == CGROUP_QOS_NONE) == (id->pod_uid[0] == '\0'));
	assert_text(id->unit, sizeof(id->unit));
	assert_text(id->slice, sizeof(id->slice));
	assert_text(id->path, sizeof(id->path));
	assert_text(id->slurm_step, sizeof(id->slurm_step));
}

START_TEST(cgroup_files)
{
	static const char *const seeds[] = {
		"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d7cf2b4_5a3b_4c6e_9f1e_8b2a6c1d4e5f.slice/cri-containerd-ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb.scope\n",
		"9:name=systemd:/kubepods/besteffort/pod0d7cf2b4-5a3b-4c6e-9f1e-8b2a6c1d4e5f/crio-ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb\n0::/\n",
		"12:freezer:/slurm/uid_1000/job_31/step_batch/task_0\n4:memory:/x\n0::/system.slice/slurmstepd.scope/job_31/step_0/user\n",
		"0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-conmon-ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb.scope\n",
		"0::/../../system.slice/docker-ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb.scope\n",
	};
	static char buf[CAP];
	struct cgroup_id id;
	size_t len;

	for (int r = 0; r < ROUNDS; r++) {
		seed_pick(seeds, sizeof(seeds) / sizeof(seeds[0]), buf, &len);
		mutate(buf, &len);
		cgroup_id_parse(buf, len, &id);
		assert_cgroup(&id);
		/* The path matcher alone, on the mutated text as one path. */
		if (len && buf[0] == '/') {
			memset(&id, 0, sizeof(id));
			id.slurm_uid = CGROUP_ID_NO_UID;
			cgroup_path_match(buf, len, &id);
			assert_text(id.unit, sizeof(id.unit));
			assert_text(id.slice, sizeof(id.slice));
		}
	}
}
END_TEST

START_TEST(device_lists)
{
	static const char *const seeds[] = {
		"0,2,-1,1", "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6,GPU-1d4e", "1gpu2,2ampere",
		"MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0", "0:1,1:0", "all", "void",
		"MIG-9f4b1d1e-5c3a-5a4e-9b1a-2c3d4e5f6a7b,MIG-9f4b1d1e",
	};
	static char buf[CAP + 1];
	struct gpu_visible v;
	size_t len;

	for (int r = 0; r < ROUNDS; r++) {
		seed_pick(seeds, sizeof(seeds) / sizeof(seeds[0]), buf, &len);
		mutate(buf, &len);
		buf[len] = '\0';	/* the variables are strings: a NUL ends them */
		gpu_visible_parse_cuda(buf, &v);
		ck_assert_uint_le(v.n, GPU_VISIBLE_MAX);
		ck_assert((v.mode == GPU_LIST_DEVICES) == (v.n > 0));
		for (uint32_t i = 0; i < v.n; i++)
			ck_assert_uint_lt(strnlen(v.ref[i].id, sizeof(v.ref[i].id)), sizeof(v.ref[i].id));
		gpu_visible_parse_nvidia(buf, &v);
		ck_assert_uint_le(v.n, GPU_VISIBLE_MAX);
	}
}
END_TEST

START_TEST(log_dir_names)
{
	static const char *const seeds[] = {
		"ml-team_trainer-0_0d7cf2b4-5a3b-4c6e-9f1e-8b2a6c1d4e5f",
		"kube-system_kube-apiserver-node1.example.com_03c7c0ace395d80182db07ae2c30f034",
		"trainer-0_ml_trainer-ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb.log",
		"/var/log/pods/ml_p_0d7cf2b4-5a3b-4c6e-9f1e-8b2a6c1d4e5f/c-1/0.log",
	};
	static char buf[CAP];
	struct kube_container_entry c;
	struct kube_pod_entry p;
	size_t len;

	for (int r = 0; r < ROUNDS; r++) {
		seed_pick(seeds, sizeof(seeds) / sizeof(seeds[0]), buf, &len);
		mutate(buf, &len);
		if (kube_names_parse_pod_dir(buf, len, &p) == 0) {
			ck_assert(idtext_dns_label(p.namespace, strlen(p.namespace)));
			ck_assert(idtext_dns_subdomain(p.pod, strlen(p.pod)));
		}
		if (kube_names_parse_link(buf, len, &c) == 0) {
			ck_assert(idtext_dns_label(c.container, strlen(c.container)));
			ck_assert(idtext_is_container_id(c.id, strlen(c.id)));
			kube_names_parse_target(buf, len, &c);
		}
		strcpy(c.namespace, "ml");
		strcpy(c.pod, "p");
		strcpy(c.container, "c-1");
		kube_names_parse_target(buf, len, &c);
	}
}
END_TEST

Suite *identity_fuzz_suite(void);
Suite *identity_fuzz_suite(void)
{
	Suite *s = suite_create("identity_fuzz");
	TCase *tc = tcase_create("mutated");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, environ_images);
	tcase_add_test(tc, cgroup_files);
	tcase_add_test(tc, device_lists);
	tcase_add_test(tc, log_dir_names);
	suite_add_tcase(s, tc);
	return s;
}
