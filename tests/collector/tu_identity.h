/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers of the identity tests: processes started with an environment of
 * the test's choosing, and real cgroups (cgroup v2 and v1 hierarchies)
 * named like the ones kubelet, container runtimes and Slurm create, which
 * the test removes again whatever happens to it.  The cgroup helpers need
 * root.
 */
#ifndef ZERNEL_TU_IDENTITY_H
#define ZERNEL_TU_IDENTITY_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Starts /bin/sleep with exactly envp and returns its pid once the exec
 * is done (before that, /proc/PID/environ is the test's own); -1 on error.
 */
pid_t ti_spawn_env(char *const envp[]);
/*
 * Waits until pid has exec'd /bin/sleep and, with has_env, until its new
 * environment can be read.  Returns 0 or -ETIMEDOUT.
 */
int ti_wait_exec(pid_t pid, int has_env);
/* SIGKILLs and reaps pid. */
void ti_reap(pid_t pid);
/*
 * Removes /tmp/zernel-test-<pid>-* trees whose test process is gone: a
 * failed test exits before its teardown.  For unchecked fixtures.
 */
void ti_tmp_sweep(void);

/* The hierarchies the tests use, wherever this host mounts them. */
enum ti_hierarchy {
	TI_V2,			/* cgroup2 (/sys/fs/cgroup/unified on a hybrid host) */
	TI_V1_SYSTEMD,		/* the v1 name=systemd hierarchy of a hybrid host */
	TI_V1_FREEZER,		/* a v1 controller hierarchy, as Slurm's task/cgroup uses */
};

/* The hierarchy's mount point into buf; 0, or -ENOENT when this host has none. */
int ti_cgroup_mount(enum ti_hierarchy h, char *buf, size_t len);

/*
 * A test's own cgroup subtree: "<mount>/zernel-test-<pid>/<rel>".  The top
 * folder carries the test's pid so that a crashed run cannot collide with
 * the next; ti_cgroup_sweep() removes those whose test is gone.
 */
struct ti_cgroup {
	char mount[128];
	char top[512];		/* <mount>/zernel-test-<pid> */
	char dir[2048];		/* <top>/<rel> */
	char path[2048];	/* the same as /proc/PID/cgroup shows it: /zernel-test-<pid>/<rel> */
};

/*
 * Creates <mount>/zernel-test-<pid>/<rel> (with its parents) and moves pid
 * into it.  Returns 0 or -errno; 1 when the host has no such hierarchy
 * (the test should skip).
 */
int ti_cgroup_enter(struct ti_cgroup *cg, enum ti_hierarchy h, const char *rel, pid_t pid);
/*
 * Moves every process of the test's subtree back to the mount's root
 * cgroup and removes the subtree, deepest first.  Safe to call twice.
 */
void ti_cgroup_remove(struct ti_cgroup *cg);
/* Removes leftovers of tests whose process is gone, on every cgroup mount. */
void ti_cgroup_sweep(void);

#endif /* ZERNEL_TU_IDENTITY_H */
