/* SPDX-License-Identifier: BSD-2-Clause */
/* uprobe_multi links through the bpf system call; see uprobe_multi.h.  Root. */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/bpf.h>

#include <bpf/btf.h>

#include "collector/probes/uprobe_multi.h"

/*
 * BPF_LINK_CREATE's attributes for a uprobe_multi link, as the kernel's
 * union bpf_attr lays them out (include/uapi/linux/bpf.h, 6.6): the common
 * head, then link_create.uprobe_multi in the union at offset 16.
 */
struct um_link_create {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;			/* char * */
	uint64_t offsets;		/* uint64_t * */
	uint64_t ref_ctr_offsets;	/* none */
	uint64_t cookies;		/* none */
	uint32_t cnt;
	uint32_t multi_flags;		/* UM_RETURN */
	uint32_t pid;			/* 0: every process */
	uint32_t pad;
};
_Static_assert(__builtin_offsetof(struct um_link_create, path) == 16,
	       "the link_create union begins after four 32-bit fields");
_Static_assert(sizeof(struct um_link_create) <= sizeof(union bpf_attr),
	       "no larger than the attributes the kernel reads");

#define UM_RETURN	1u	/* BPF_F_UPROBE_MULTI_RETURN */

static int enum_value(const char *type, const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	const struct btf_enum *e;
	int id, value = -ENOTSUP;

	if (!btf)
		return -ENOTSUP;
	id = btf__find_by_name_kind(btf, type, BTF_KIND_ENUM);
	if (id > 0) {
		t = btf__type_by_id(btf, id);
		e = btf_enum(t);
		for (int i = 0; i < btf_vlen(t); i++)
			if (strcmp(btf__name_by_offset(btf, e[i].name_off), name) == 0)
				value = (int)e[i].val;
	}
	btf__free(btf);
	return value;
}

int uprobe_multi_attach_type(void)
{
	static int cached = -EAGAIN;

	if (cached == -EAGAIN)
		cached = enum_value("bpf_attach_type", "BPF_TRACE_UPROBE_MULTI");
	return cached;
}

int uprobe_multi_link(int prog_fd, int attach_type, const char *path,
		      const uint64_t *offsets, size_t n, int ret)
{
	union bpf_attr attr;
	struct um_link_create lc = {
		.prog_fd = (uint32_t)prog_fd,
		.attach_type = (uint32_t)attach_type,
		.path = (uint64_t)(uintptr_t)path,
		.offsets = (uint64_t)(uintptr_t)offsets,
		.cnt = (uint32_t)n,
		.multi_flags = ret ? UM_RETURN : 0,
	};
	long fd;

	if (prog_fd < 0 || attach_type < 0 || n == 0 || n > UINT32_MAX)
		return -EINVAL;
	memset(&attr, 0, sizeof(attr));
	memcpy(&attr, &lc, sizeof(lc));
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : (int)fd;
}
