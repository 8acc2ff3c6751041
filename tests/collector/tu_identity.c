/* SPDX-License-Identifier: BSD-2-Clause */
/* Processes and real cgroups for the identity tests; see tu_identity.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <mntent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/collector/tu_identity.h"
#include "tests/support/testutil.h"

#define TI_PREFIX	"zernel-test-"

/*
 * 1 once pid runs /bin/sleep with its environment in place: the kernel
 * renames the process before it lays out the new environment, so the
 * name alone is not enough.
 */
static int exec_done(pid_t pid, int has_env)
{
	char path[64], comm[32] = "", c;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	if (strcmp(comm, "sleep\n") != 0)
		return 0;
	if (!has_env)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	ok = fread(&c, 1, 1, f) == 1;
	fclose(f);
	return ok;
}

int ti_wait_exec(pid_t pid, int has_env)
{
	for (int waited = 0; waited < 5000; waited += 2) {
		if (exec_done(pid, has_env))
			return 0;
		tu_sleep_ms(2);
	}
	return -ETIMEDOUT;
}

pid_t ti_spawn_env(char *const envp[])
{
	char *const argv[] = { "sleep", "60", NULL };
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	if (ti_wait_exec(pid, envp[0] != NULL) == 0)
		return pid;
	ti_reap(pid);
	return -1;
}

void ti_reap(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

void ti_tmp_sweep(void)
{
	DIR *d = opendir("/tmp");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		int pid;

		if (sscanf(e->d_name, TI_PREFIX "%d-", &pid) != 1 || pid <= 1)
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		tu_system("rm -rf '/tmp/%s'", e->d_name);
	}
	if (d)
		closedir(d);
}

static int write_pid(const char *dir, pid_t pid)
{
	char path[2200], buf[32];
	int fd, n, err = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	if (write(fd, buf, (size_t)n) != n)
		err = -errno;
	close(fd);
	return err;
}

static int mkdir_p(const char *dir)
{
	char tmp[2048];
	size_t n = strlen(dir);

	if (n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, dir, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Calls fn for every cgroup (v1 or v2) mount; stops early when fn returns nonzero. */
static int each_cgroup_mount(int (*fn)(const struct mntent *m, void *arg), void *arg)
{
	FILE *f = setmntent("/proc/self/mounts", "re");
	struct mntent *m;
	int rc = 0;

	while (f && !rc && (m = getmntent(f)))
		if (strcmp(m->mnt_type, "cgroup") == 0 || strcmp(m->mnt_type, "cgroup2") == 0)
			rc = fn(m, arg);
	if (f)
		endmntent(f);
	return rc;
}

struct mount_query {
	enum ti_hierarchy h;
	char *buf;
	size_t len;
};

static int mount_match(const struct mntent *m, void *arg)
{
	struct mount_query *q = arg;
	int v2 = strcmp(m->mnt_type, "cgroup2") == 0;
	int hit = (q->h == TI_V2 && v2) ||
		  (q->h == TI_V1_SYSTEMD && !v2 && hasmntopt(m, "name=systemd")) ||
		  (q->h == TI_V1_FREEZER && !v2 && hasmntopt(m, "freezer"));

	if (hit)
		snprintf(q->buf, q->len, "%s", m->mnt_dir);
	return hit;
}

int ti_cgroup_mount(enum ti_hierarchy h, char *buf, size_t len)
{
	struct mount_query q = { h, buf, len };

	return each_cgroup_mount(mount_match, &q) ? 0 : -ENOENT;
}

int ti_cgroup_enter(struct ti_cgroup *cg, enum ti_hierarchy h, const char *rel, pid_t pid)
{
	int err;

	memset(cg, 0, sizeof(*cg));
	if (ti_cgroup_mount(h, cg->mount, sizeof(cg->mount)) != 0)
		return 1;
	snprintf(cg->top, sizeof(cg->top), "%s/" TI_PREFIX "%d", cg->mount, (int)getpid());
	snprintf(cg->dir, sizeof(cg->dir), "%s/%s", cg->top, rel);
	snprintf(cg->path, sizeof(cg->path), "/" TI_PREFIX "%d/%s", (int)getpid(), rel);
	err = mkdir_p(cg->dir);
	if (err == 0)
		err = write_pid(cg->dir, pid);
	return err;
}

/* The mount whose subtree nftw() is walking, for evict_and_rmdir(). */
static char walk_mount[128];

/* Moves the folder's processes to the root cgroup, then removes it (deepest first). */
static int evict_and_rmdir(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char procs[4200];
	FILE *f;
	int pid;

	(void)st;
	(void)ftw;
	if (flag != FTW_DP)
		return 0;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
	f = fopen(procs, "re");
	while (f && fscanf(f, "%d", &pid) == 1)
		write_pid(walk_mount, pid);
	if (f)
		fclose(f);
	/* A process killed a moment ago may still be leaving its cgroup. */
	for (int tries = 0; rmdir(path) != 0 && errno == EBUSY && tries < 100; tries++)
		tu_sleep_ms(10);
	return 0;
}

void ti_cgroup_remove(struct ti_cgroup *cg)
{
	if (!cg->top[0])
		return;
	snprintf(walk_mount, sizeof(walk_mount), "%s", cg->mount);
	nftw(cg->top, evict_and_rmdir, 16, FTW_DEPTH | FTW_PHYS);
	cg->top[0] = '\0';
}

static int sweep_mount(const struct mntent *m, void *arg)
{
	DIR *d = opendir(m->mnt_dir);
	struct dirent *e;

	(void)arg;
	while (d && (e = readdir(d))) {
		struct ti_cgroup cg;
		int pid;

		if (sscanf(e->d_name, TI_PREFIX "%d", &pid) != 1 || pid <= 1)
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;	/* its test still runs */
		memset(&cg, 0, sizeof(cg));
		snprintf(cg.mount, sizeof(cg.mount), "%s", m->mnt_dir);
		snprintf(cg.top, sizeof(cg.top), "%s/%s", m->mnt_dir, e->d_name);
		ti_cgroup_remove(&cg);
	}
	if (d)
		closedir(d);
	return 0;
}

void ti_cgroup_sweep(void)
{
	each_cgroup_mount(sweep_mount, NULL);
}
