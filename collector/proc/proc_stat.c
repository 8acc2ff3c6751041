/* SPDX-License-Identifier: BSD-2-Clause */
/* What a process is, from /proc (proc_stat.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/probe_abi.h"
#include "collector/proc/proc_stat.h"

static int read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -errno;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -EIO;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int proc_comm(uint32_t pid, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	return read_small(path, buf, len);
}

/*
 * ppid, start time (boot-relative ns) and state letter from
 * /proc/PID/stat; 0 or -errno.
 */
int proc_stat_read(uint32_t pid, uint32_t *ppid, uint64_t *start_ns, char *state)
{
	char path[64], buf[1024], *s;
	unsigned long long start = 0;
	long hz = sysconf(_SC_CLK_TCK);
	int pp = 0, err;
	char st = '?';

	*ppid = 0;
	*start_ns = 0;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	err = read_small(path, buf, sizeof(buf));
	if (err != 0)
		return err;
	/* The name may hold spaces and parentheses: parse after the last ')'. */
	s = strrchr(buf, ')');
	if (!s || sscanf(s + 1, " %c %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			 "%*s %*s %*s %*s %llu", &st, &pp, &start) != 3)
		return -EINVAL;
	*ppid = (uint32_t)pp;
	if (hz > 0)
		*start_ns = start * (1000000000ull / (unsigned long long)hz);
	if (state)
		*state = st;
	return 0;
}

int proc_start_time(uint32_t pid, uint64_t *start_ns)
{
	uint32_t ppid;

	return proc_stat_read(pid, &ppid, start_ns, NULL);
}

int proc_parent(uint32_t pid, uint32_t *ppid)
{
	uint64_t start_ns;

	return proc_stat_read(pid, ppid, &start_ns, NULL);
}

/* Whether pid has a thread besides its main one. */
static int other_threads(uint32_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *task;
	int other = 0;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	task = opendir(path);
	if (!task)
		return 0;
	while (!other && (e = readdir(task)))
		other = isdigit((unsigned char)e->d_name[0]) &&
			strtoul(e->d_name, NULL, 10) != pid;
	closedir(task);
	return other;
}

int proc_live_start(uint32_t pid, uint64_t *start_ns)
{
	uint32_t ppid;
	char state = '?';

	if (proc_stat_read(pid, &ppid, start_ns, &state) != 0)
		return 0;
	/*
	 * A zombie has passed its exit: the kernel will not report it again.
	 * The stat is its main thread's, which may have ended (pthread_exit)
	 * while other threads run on.
	 */
	return !((state == 'Z' || state == 'X' || state == 'x') && !other_threads(pid));
}

int proc_alive(uint32_t pid, uint64_t start_ns)
{
	uint64_t now_start;

	if (!proc_live_start(pid, &now_start))
		return 0;
	return !start_ns || ZW_SAME_START(now_start, start_ns);
}

int proc_tgid(uint32_t tid, uint32_t *tgid)
{
	char path[64], line[128];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "Tgid: %u", tgid) == 1;
	fclose(f);
	return found ? 0 : -EINVAL;
}
