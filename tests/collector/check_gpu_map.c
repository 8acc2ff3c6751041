/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUDA ordinals to physical GPUs: a table of environments against a node
 * of four GPUs whose NVML indices, minor numbers and PCI order differ on
 * purpose, and, as root, real processes holding real NVIDIA device nodes
 * (character devices 195:N in a private /dev, as a container has).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/gpu/gpu_fds.h"
#include "collector/gpu/gpu_map.h"
#include "collector/proc/proc_env.h"
#include "tests/collector/tu_identity.h"
#include "tests/support/testutil.h"

#define U0	"GPU-aaaa0000-0000-4000-8000-000000000000"
#define U1	"GPU-aaaa1111-1111-4111-8111-111111111111"
#define U2	"GPU-bbbb2222-2222-4222-8222-222222222222"
#define U3	"GPU-cccc3333-3333-4333-8333-333333333333"

/*
 * NVML index i, in nodes[] out of order; minors 1,0,3,2 (not the index);
 * PCI bus ids ascending with the index, in mixed spellings.
 */
static const struct gpu_node NODES[4] = {
	{ .index = 2, .minor = 3, .uuid = U2, .pci_bus_id = "00000000:86:00.0", .name = "NVIDIA H100 80GB HBM3" },
	{ .index = 0, .minor = 1, .uuid = U0, .pci_bus_id = "0000:1b:00.0", .name = "NVIDIA H100 80GB HBM3" },
	{ .index = 3, .minor = 2, .uuid = U3, .pci_bus_id = "00000000:AF:00.0", .name = "NVIDIA H100 80GB HBM3" },
	{ .index = 1, .minor = 0, .uuid = U1, .pci_bus_id = "00000000:3B:00.0", .name = "NVIDIA H100 80GB HBM3" },
};

#define INVALID	"\x01invalid"	/* marks a variable proc_env refused */

static void env_set(struct proc_env *e, const char *cvd, const char *nvd, const char *order)
{
	memset(e, 0, sizeof(*e));
	if (cvd) {
		e->cuda_visible_devices.state = strcmp(cvd, INVALID) ? PROC_ENV_SET : PROC_ENV_INVALID;
		if (strcmp(cvd, INVALID))
			snprintf(e->cuda_visible_devices.value, sizeof(e->cuda_visible_devices.value), "%s", cvd);
	}
	if (nvd) {
		e->nvidia_visible_devices.state = strcmp(nvd, INVALID) ? PROC_ENV_SET : PROC_ENV_INVALID;
		if (strcmp(nvd, INVALID))
			snprintf(e->nvidia_visible_devices.value, sizeof(e->nvidia_visible_devices.value), "%s", nvd);
	}
	if (order) {
		e->cuda_device_order.state = PROC_ENV_SET;
		snprintf(e->cuda_device_order.value, sizeof(e->cuda_device_order.value), "%s", order);
	}
}

/* "index/how" per ordinal, comma separated. */
static const char *render(const struct gpu_map *m)
{
	static char buf[4096];
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t k = 0; k < m->n; k++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%d/%s", k ? "," : "",
				      m->ord[k].index, gpu_how_name(m->ord[k].how));
	return buf;
}

enum { NODES_NONE, NODES_ALL, NODES_NO_PCI, NODES_MIG };

static const struct map_case {
	const char *cvd, *nvd, *order;
	int container;
	int nodes;		/* NODES_* */
	int fd_minor;		/* one open /dev/nvidiaN, or -1 */
	uint32_t count;
	const char *ords;
	uint32_t why;		/* when count is unknown */
	uint64_t candidates;	/* bits over NODES[] */
	uint32_t flags;
} cases[] = {
	/* Bare metal: every GPU; only PCI order gives indices. */
	{ NULL, NULL, "PCI_BUS_ID", 0, NODES_ALL, -1, GPU_COUNT_EXACT,
	  "0/pci_order,1/pci_order,2/pci_order,3/pci_order", 0, 0xf, 0 },
	{ NULL, NULL, NULL, 0, NODES_ALL, -1, GPU_COUNT_EXACT,
	  "-1/fastest_first,-1/fastest_first,-1/fastest_first,-1/fastest_first", 0, 0xf, 0 },
	{ NULL, NULL, "FASTEST_FIRST", 0, NODES_ALL, -1, GPU_COUNT_EXACT,
	  "-1/fastest_first,-1/fastest_first,-1/fastest_first,-1/fastest_first", 0, 0xf, 0 },
	{ "2,0", NULL, "PCI_BUS_ID", 0, NODES_ALL, -1, GPU_COUNT_EXACT, "2/pci_order,0/pci_order", 0, 0x3, 0 },
	{ "2,0", NULL, NULL, 0, NODES_ALL, -1, GPU_COUNT_EXACT, "-1/fastest_first,-1/fastest_first", 0, 0xf, 0 },
	/* NVIDIA's rule: the list ends at the first invalid index. */
	{ "0,5,1", NULL, "PCI_BUS_ID", 0, NODES_ALL, -1, GPU_COUNT_EXACT, "0/pci_order", 0, 0x2, 0 },
	{ "0,2,-1,1", NULL, "PCI_BUS_ID", 0, NODES_ALL, -1, GPU_COUNT_EXACT, "0/pci_order,2/pci_order", 0, 0x3, 0 },
	{ "", NULL, "PCI_BUS_ID", 0, NODES_ALL, -1, GPU_COUNT_EXACT, "", 0, 0, 0 },
	{ "1,1", NULL, "PCI_BUS_ID", 0, NODES_ALL, -1, GPU_COUNT_EXACT, "", 0, 0, 0 },
	/* UUIDs resolve in any order; a prefix must be unique. */
	{ U3, NULL, NULL, 0, NODES_ALL, -1, GPU_COUNT_EXACT, "3/uuid", 0, 0x4, 0 },
	{ "GPU-bbbb," U0, NULL, NULL, 0, NODES_ALL, -1, GPU_COUNT_EXACT, "2/uuid,0/uuid", 0, 0x3, 0 },
	{ "GPU-aaaa", NULL, NULL, 0, NODES_ALL, -1, GPU_COUNT_EXACT, "", 0, 0, 0 },
	{ "GPU-ffff", NULL, NULL, 0, NODES_ALL, -1, GPU_COUNT_EXACT, "", 0, 0, 0 },
	/* One ordinal, one open node: that GPU (minor 3 is NVML index 2). */
	{ "1", NULL, NULL, 0, NODES_ALL, 3, GPU_COUNT_EXACT, "2/open_node", 0, 0x1, 0 },
	/* A resolved GPU whose node is not the one open. */
	{ "0", NULL, "PCI_BUS_ID", 0, NODES_ALL, 2, GPU_COUNT_EXACT, "0/pci_order", 0, 0x2,
	  GPU_MAP_F_NODE_MISMATCH },
	/* Without NVML's list. */
	{ NULL, NULL, "PCI_BUS_ID", 0, NODES_NONE, -1, GPU_COUNT_UNKNOWN, "", GPU_WHY_NO_NODE_LIST, 0, 0 },
	{ "1,0", NULL, "PCI_BUS_ID", 0, NODES_NONE, -1, GPU_COUNT_AT_MOST,
	  "-1/no_node_list,-1/no_node_list", 0, 0, 0 },
	{ U1, NULL, NULL, 0, NODES_NONE, -1, GPU_COUNT_AT_MOST, "-1/no_node_list", 0, 0, 0 },
	{ "1", NULL, NULL, 0, NODES_NONE, 3, GPU_COUNT_AT_MOST, "-1/open_node", 0, 0, 0 },
	/* Containers: NVIDIA_VISIBLE_DEVICES names the set (U2 and U0: NVML 2 and 0). */
	{ NULL, U2 "," U0, "PCI_BUS_ID", 1, NODES_ALL, -1, GPU_COUNT_EXACT, "0/pci_order,2/pci_order", 0, 0x3, 0 },
	{ "1", U2 "," U0, "PCI_BUS_ID", 1, NODES_ALL, -1, GPU_COUNT_EXACT, "2/pci_order", 0, 0x1, 0 },
	{ "2", U2 "," U0, "PCI_BUS_ID", 1, NODES_ALL, -1, GPU_COUNT_EXACT, "", 0, 0, 0 },
	{ NULL, U2 "," U0, NULL, 1, NODES_ALL, -1, GPU_COUNT_EXACT, "-1/fastest_first,-1/fastest_first", 0, 0x3, 0 },
	{ U1, U2 "," U0, NULL, 1, NODES_ALL, -1, GPU_COUNT_EXACT, "", 0, 0, 0 },	/* not in the container */
	{ NULL, "3", NULL, 1, NODES_ALL, -1, GPU_COUNT_EXACT, "3/only_one", 0, 0x4, 0 },
	{ NULL, "3", NULL, 1, NODES_NONE, -1, GPU_COUNT_EXACT, "3/only_one", 0, 0, 0 },
	{ NULL, "7", NULL, 1, NODES_ALL, -1, GPU_COUNT_UNKNOWN, "", GPU_WHY_NOT_ON_NODE, 0, 0 },
	{ NULL, "all", NULL, 1, NODES_ALL, -1, GPU_COUNT_EXACT,
	  "-1/fastest_first,-1/fastest_first,-1/fastest_first,-1/fastest_first", 0, 0xf, 0 },
	{ NULL, "none", NULL, 1, NODES_ALL, -1, GPU_COUNT_EXACT, "", 0, 0, 0 },
	{ NULL, "void", NULL, 1, NODES_ALL, -1, GPU_COUNT_UNKNOWN, "", GPU_WHY_CONTAINER, 0, 0 },
	{ NULL, "/var/run/nvidia-container-devices", NULL, 1, NODES_ALL, -1, GPU_COUNT_UNKNOWN, "",
	  GPU_WHY_CONTAINER, 0, 0 },
	/* Unnamed container GPUs: what it has open it can see (minor 0 is NVML 1). */
	{ NULL, NULL, NULL, 1, NODES_ALL, 0, GPU_COUNT_UNKNOWN, "", GPU_WHY_CONTAINER, 0x8, 0 },
	{ U1, NULL, NULL, 1, NODES_ALL, -1, GPU_COUNT_AT_MOST, "1/uuid", 0, 0x8, 0 },
	/* MIG. */
	{ NULL, "0:1", NULL, 1, NODES_ALL, -1, GPU_COUNT_EXACT, "0/mig_parent", 0, 0x2, 0 },
	{ NULL, "0:1,2:0", "PCI_BUS_ID", 1, NODES_ALL, -1, GPU_COUNT_EXACT, "-1/mig,-1/mig", 0, 0x3, 0 },
	{ "MIG-" U1 "/1/0", NULL, NULL, 0, NODES_ALL, -1, GPU_COUNT_AT_MOST, "1/mig_parent", 0, 0x8, 0 },
	{ "MIG-9f4b1d1e-5c3a-5a4e-9b1a-2c3d4e5f6a7b", NULL, NULL, 0, NODES_ALL, -1, GPU_COUNT_AT_MOST,
	  "-1/mig", 0, 0xf, 0 },
	{ "MIG-9f4b1d1e-5c3a-5a4e-9b1a-2c3d4e5f6a7b", NULL, NULL, 0, NODES_ALL, 0, GPU_COUNT_AT_MOST,
	  "1/open_node", 0, 0x8, 0 },
	{ NULL, NULL, "PCI_BUS_ID", 0, NODES_MIG, -1, GPU_COUNT_UNKNOWN, "", GPU_WHY_MIG, 0, 0 },
	/* Odd settings. */
	{ NULL, "1", "PCI_BUS_ID", 0, NODES_ALL, -1, GPU_COUNT_EXACT,
	  "0/pci_order,1/pci_order,2/pci_order,3/pci_order", 0, 0xf, GPU_MAP_F_NVIDIA_IGNORED },
	{ "0", NULL, "pci_bus_id", 0, NODES_ALL, -1, GPU_COUNT_EXACT, "-1/order_value", 0, 0xf, 0 },
	{ "0", NULL, "PCI_BUS_ID", 0, NODES_NO_PCI, -1, GPU_COUNT_EXACT, "-1/no_pci_id", 0, 0xf, 0 },
	{ INVALID, NULL, NULL, 0, NODES_ALL, -1, GPU_COUNT_UNKNOWN, "", GPU_WHY_INVALID_ENV, 0xf, 0 },
	{ NULL, INVALID, NULL, 1, NODES_ALL, -1, GPU_COUNT_UNKNOWN, "", GPU_WHY_INVALID_ENV, 0, 0 },
};

/* Slurm jobs: SLURM_STEP_GPUS, and what the same row of cases[] would say. */
static const struct slurm_case {
	const char *step_gpus;
	struct map_case c;
} slurm_cases[] = {
	/*
	 * ConstrainDevices=yes: CUDA sees the job's GPUs only (their minors:
	 * 3 is NVML 2, 1 is NVML 0), numbered from 0.
	 */
	{ "3", { "0", NULL, "PCI_BUS_ID", 0, NODES_ALL, -1, GPU_COUNT_EXACT, "2/only_one", 0, 0x1, 0 } },
	{ "1,3", { "0,1", NULL, "PCI_BUS_ID", 0, NODES_ALL, -1, GPU_COUNT_EXACT,
		   "0/pci_order,2/pci_order", 0, 0x3, 0 } },
	{ "1,3", { "0,1", NULL, NULL, 0, NODES_ALL, -1, GPU_COUNT_EXACT,
		   "-1/fastest_first,-1/fastest_first", 0, 0x3, 0 } },
	{ "7", { "0", NULL, NULL, 0, NODES_ALL, -1, GPU_COUNT_AT_MOST, "-1/not_on_node", 0, 0, 0 } },
	/* Not constrained: CUDA_VISIBLE_DEVICES repeats the ids, and CUDA sees every GPU. */
	{ "1,3", { "1,3", NULL, "PCI_BUS_ID", 0, NODES_ALL, -1, GPU_COUNT_EXACT,
		   "1/pci_order,3/pci_order", 0, 0xc, 0 } },
	/*
	 * Device 1 reads both ways against the list 1,3: job-local (the second
	 * of the job's GPUs, minor 3) or the node's.  Nothing open: unknown;
	 * minor 3 open: job-local; minor 0 open, outside the job's list: no
	 * constrained job could open it, so the node's numbering.
	 */
	{ "1,3", { "1", NULL, "PCI_BUS_ID", 0, NODES_ALL, -1, GPU_COUNT_AT_MOST, "-1/ambiguous", 0,
		   0, 0 } },
	{ "1,3", { "1", NULL, "PCI_BUS_ID", 0, NODES_ALL, 3, GPU_COUNT_EXACT, "2/pci_order", 0, 0x1,
		   0 } },
	{ "1,3", { "1", NULL, "PCI_BUS_ID", 0, NODES_ALL, 0, GPU_COUNT_EXACT, "1/pci_order", 0, 0x8,
		   0 } },
	/*
	 * A device cgroup per task: of the step's GPUs 1,3 this task can open
	 * minor 3 alone, which CUDA numbers 0; so with the step's list 0,1
	 * and minor 0 open.
	 */
	{ "1,3", { "0", NULL, "PCI_BUS_ID", 0, NODES_ALL, 3, GPU_COUNT_EXACT, "2/only_one", 0, 0x1,
		   0 } },
	{ "0,1", { "0", NULL, "PCI_BUS_ID", 0, NODES_ALL, 0, GPU_COUNT_EXACT, "1/only_one", 0, 0x8,
		   0 } },
	/*
	 * A launcher's own CUDA_VISIBLE_DEVICES in an unconstrained step on
	 * 2,3: minor 0 is open, which no constrained job could open, so the
	 * node's numbering, and the GPU it has open.
	 */
	{ "2,3", { "0", NULL, "PCI_BUS_ID", 0, NODES_ALL, 0, GPU_COUNT_EXACT, "1/only_one", 0, 0x8,
		   0 } },
	/* In a container its own variables say. */
	{ "1", { "0", U2, NULL, 1, NODES_ALL, -1, GPU_COUNT_EXACT, "2/only_one", 0, 0x1, 0 } },
};

/* Resolves case c (number i, SLURM_STEP_GPUS slurm or NULL) and checks every field. */
static void check_case(const struct map_case *c, const char *slurm, int i)
{
	struct gpu_node nodes[4];
	struct gpu_fds fds;
	struct proc_env env;
	struct gpu_map m;

	memcpy(nodes, NODES, sizeof(nodes));
	if (c->nodes == NODES_NO_PCI)
		nodes[2].pci_bus_id[0] = '\0';
	if (c->nodes == NODES_MIG)
		nodes[1].flags |= GPU_NODE_F_MIG;
	memset(&fds, 0, sizeof(fds));
	if (c->fd_minor >= 0) {
		fds.minors[c->fd_minor / 64] |= 1ull << (c->fd_minor % 64);
		fds.n = 1;
	}
	env_set(&env, c->cvd, c->nvd, c->order);
	if (slurm) {
		env.slurm_step_gpus.state = PROC_ENV_SET;
		snprintf(env.slurm_step_gpus.value, sizeof(env.slurm_step_gpus.value), "%s", slurm);
	}
	ck_assert_int_eq(gpu_map_resolve(&env, c->container, c->fd_minor >= 0 ? &fds : NULL,
					 c->nodes == NODES_NONE ? NULL : nodes,
					 c->nodes == NODES_NONE ? 0 : 4, &m), 0);
	ck_assert_msg(m.count == c->count, "case %d: count %u", i, m.count);
	ck_assert_msg(strcmp(render(&m), c->ords) == 0, "case %d: ordinals %s", i, render(&m));
	if (c->count == GPU_COUNT_UNKNOWN)
		ck_assert_msg(m.why == c->why, "case %d: why %s", i, gpu_how_name(m.why));
	ck_assert_msg(m.candidates == c->candidates, "case %d: candidates %#llx", i,
		      (unsigned long long)m.candidates);
	ck_assert_msg(m.flags == c->flags, "case %d: flags %#x", i, m.flags);
}

START_TEST(ordinals_resolve_or_say_why_not)
{
	check_case(&cases[_i], NULL, _i);
}
END_TEST

START_TEST(slurm_jobs_see_their_gpus_numbered_from_zero)
{
	check_case(&slurm_cases[_i].c, slurm_cases[_i].step_gpus, _i);
}
END_TEST

START_TEST(resolved_ordinals_carry_the_whole_identity)
{
	struct proc_env env;
	struct gpu_map m;

	env_set(&env, "GPU-bbbb", NULL, NULL);
	ck_assert_int_eq(gpu_map_resolve(&env, 0, NULL, NODES, 4, &m), 0);
	ck_assert_uint_eq(m.n, 1);
	ck_assert_int_eq(m.ord[0].index, 2);
	ck_assert_int_eq(m.ord[0].minor, 3);
	ck_assert_str_eq(m.ord[0].uuid, U2);

	/* A full UUID without NVML's list: the UUID, no index. */
	env_set(&env, U2, NULL, NULL);
	ck_assert_int_eq(gpu_map_resolve(&env, 0, NULL, NULL, 0, &m), 0);
	ck_assert_str_eq(m.ord[0].uuid, U2);
	ck_assert_int_eq(m.ord[0].index, -1);

	ck_assert_int_eq(gpu_map_resolve(&env, 0, NULL, NODES, GPU_NODES_MAX + 1, &m), -EINVAL);
	ck_assert_str_eq(gpu_how_name(999), "unknown");
}
END_TEST

/*
 * Starts /bin/sleep with envp in a private mount namespace whose /dev is a
 * fresh tmpfs holding NVIDIA nodes, with descriptors open on those named
 * in `open_names` (NULL-terminated).  Returns its pid.
 */
static pid_t start_with_nodes(char *const envp[], const char *const *open_names)
{
	static const struct {
		const char *name;
		unsigned int minor;
	} nodes[] = {
		{ "/dev/nvidia0", 0 }, { "/dev/nvidia1", 1 }, { "/dev/nvidia2", 2 },
		{ "/dev/nvidiactl", GPU_FDS_MINOR_CTL }, { "/dev/renamed-gpu", 7 },
	};
	int ready[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	if (pid == 0) {
		char *const argv[] = { "sleep", "60", NULL };
		int fd;

		close(ready[0]);
		if (unshare(CLONE_NEWNS) != 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount("zernel-test-dev", "/dev", "tmpfs", 0, "mode=755") != 0)
			_exit(2);
		for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++)
			if (mknod(nodes[i].name, S_IFCHR | 0666,
				  makedev(GPU_FDS_NVIDIA_MAJOR, nodes[i].minor)) != 0)
				_exit(3);
		/* A decoy: a plain file with a GPU's name. */
		fd = open("/dev/nvidia9", O_CREAT | O_WRONLY, 0644);
		if (fd >= 0)
			close(fd);
		/* No driver here: O_PATH holds the node without opening the device. */
		for (; *open_names; open_names++)
			if (open(*open_names, O_PATH) < 0)
				_exit(4);
		if (write(ready[1], "r", 1) != 1)
			_exit(5);
		close(ready[1]);
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	/* Wait for the exec, which keeps the descriptors (no O_CLOEXEC). */
	if (ti_wait_exec(pid, envp[0] != NULL) == 0)
		return pid;
	ti_reap(pid);
	ck_abort_msg("the node holder did not start");
	return -1;
}

START_TEST(open_nodes_are_known_by_device_number)
{
	const char *const open_names[] = {
		"/dev/nvidia2", "/dev/nvidiactl", "/dev/nvidia9", "/dev/renamed-gpu", "/dev/nvidia2", NULL,
	};
	char *const envp[] = { "PATH=/bin", NULL };
	struct gpu_fds f;
	pid_t pid;

	if (tu_skip_unless_root("open_nodes_are_known_by_device_number"))
		return;
	pid = start_with_nodes(envp, open_names);
	ck_assert_int_eq(gpu_fds_read(pid, &f), 0);
	ti_reap(pid);
	/* 195:2 (twice), 195:7 under another name; not the plain file. */
	ck_assert_uint_eq(f.n, 2);
	ck_assert(gpu_fds_has(&f, 2));
	ck_assert(gpu_fds_has(&f, 7));
	ck_assert(!gpu_fds_has(&f, 9));
	ck_assert(f.flags & GPU_FDS_F_CTL);
	ck_assert_int_eq(gpu_fds_single(&f), -1);
	ck_assert_uint_ge(f.fds, 8);	/* stdio and the five above */

	ck_assert_int_eq(gpu_fds_read(pid, &f), -ENOENT);
	ck_assert_uint_eq(f.n, 0);
}
END_TEST

START_TEST(a_real_process_with_one_node_open)
{
	const char *const open_names[] = { "/dev/nvidia1", "/dev/nvidiactl", NULL };
	char *const envp[] = {
		"CUDA_VISIBLE_DEVICES=3", "AWS_SECRET_ACCESS_KEY=zSECRETz", "PATH=/bin", NULL,
	};
	struct gpu_fds f;
	struct proc_env env;
	struct gpu_map m;
	pid_t pid;

	if (tu_skip_unless_root("a_real_process_with_one_node_open"))
		return;
	pid = start_with_nodes(envp, open_names);
	ck_assert_int_eq(gpu_fds_read(pid, &f), 0);
	ck_assert_int_eq(proc_env_read(pid, &env), 0);
	ti_reap(pid);
	ck_assert_int_eq(gpu_fds_single(&f), 1);
	/* CUDA's default order over four GPUs says nothing; the open node does. */
	ck_assert_int_eq(gpu_map_resolve(&env, 0, &f, NODES, 4, &m), 0);
	ck_assert_uint_eq(m.count, GPU_COUNT_EXACT);
	ck_assert_str_eq(render(&m), "0/open_node");
	ck_assert_int_eq(m.ord[0].minor, 1);
	ck_assert_str_eq(m.ord[0].uuid, U0);
	ck_assert(!memmem(&m, sizeof(m), "zSECRETz", 8));
}
END_TEST

/*
 * A Slurm task of a step on minors 1 and 2, under a device cgroup per task:
 * CUDA_VISIBLE_DEVICES=0 as for every task, and it holds /dev/nvidia2
 * open, as CUDA does the nodes of the GPUs it uses.  Its GPU is minor 2,
 * not the step's first.
 */
START_TEST(a_slurm_task_is_on_the_gpu_it_has_open)
{
	const char *const open_names[] = { "/dev/nvidia2", "/dev/nvidiactl", NULL };
	char *const envp[] = {
		"CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=1,2", "CUDA_DEVICE_ORDER=PCI_BUS_ID",
		"PATH=/bin", NULL,
	};
	struct gpu_fds f;
	struct proc_env env;
	struct gpu_map m;
	pid_t pid;

	if (tu_skip_unless_root("a_slurm_task_is_on_the_gpu_it_has_open"))
		return;
	pid = start_with_nodes(envp, open_names);
	ck_assert_int_eq(gpu_fds_read(pid, &f), 0);
	ck_assert_int_eq(proc_env_read(pid, &env), 0);
	ti_reap(pid);
	ck_assert_int_eq(gpu_map_resolve(&env, 0, &f, NODES, 4, &m), 0);
	ck_assert_uint_eq(m.count, GPU_COUNT_EXACT);
	ck_assert_str_eq(render(&m), "3/only_one");
	ck_assert_int_eq(m.ord[0].minor, 2);
	ck_assert_str_eq(m.ord[0].uuid, U3);
	ck_assert_uint_eq(m.flags, 0);
}
END_TEST

Suite *gpu_map_suite(void);
Suite *gpu_map_suite(void)
{
	Suite *s = suite_create("gpu_map");
	TCase *tc = tcase_create("resolve");
	TCase *tr = tcase_create("root");

	tcase_add_loop_test(tc, ordinals_resolve_or_say_why_not, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_loop_test(tc, slurm_jobs_see_their_gpus_numbered_from_zero, 0,
			    (int)(sizeof(slurm_cases) / sizeof(slurm_cases[0])));
	tcase_add_test(tc, resolved_ordinals_carry_the_whole_identity);
	suite_add_tcase(s, tc);
	tcase_set_timeout(tr, 30);
	tcase_add_test(tr, open_nodes_are_known_by_device_number);
	tcase_add_test(tr, a_real_process_with_one_node_open);
	tcase_add_test(tr, a_slurm_task_is_on_the_gpu_it_has_open);
	suite_add_tcase(s, tr);
	return s;
}
