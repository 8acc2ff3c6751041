/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What parsing in the sandboxed child costs the collector: a watched
 * process's environment and cgroup file read and parsed in process
 * (proc_env_read, cgroup_id_read) against the same through the parser
 * child (parser_environ, parser_cgroup: the file opened here, the
 * descriptor passed, the answer checked), on one real process with a
 * training job's environment, and the refresh's look at files that did
 * not change (ident_source.h: both read and digested, nothing parsed).
 * Time per read and CPU per read, the child's included, then what the
 * identity refresh (every watched process every IDENT_REFRESH_NS) costs
 * at 1,000 processes, parsing each time and as it runs.  Prints figures;
 * judges nothing.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/identity/cgroup_id.h"
#include "collector/identity/ident_scan.h"
#include "collector/identity/ident_source.h"
#include "collector/parser/parser.h"
#include "collector/proc/proc_env.h"

#define READS		2000
#define WARM_UP		100
#define PROCESSES	1000

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(clockid_t clock)
{
	struct timespec ts;

	if (clock_gettime(clock, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The CPU clock of pid (0: none), for the child's share. */
static uint64_t process_cpu_ns(pid_t pid)
{
	clockid_t clock;

	if (pid <= 0 || clock_getcpuclockid(pid, &clock) != 0)
		return 0;
	return cpu_ns(clock);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * A process with what a rank of a training job has in its environment:
 * the launcher's and the scheduler's variables among a shell's.
 */
static pid_t start_rank(void)
{
	static char *const argv[] = { "sleep", "600", NULL };
	static char *const envp[] = {
		"PATH=/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin",
		"HOME=/home/trainer", "LANG=C.UTF-8", "SHELL=/bin/bash", "USER=trainer",
		"RANK=3", "LOCAL_RANK=3", "WORLD_SIZE=16", "LOCAL_WORLD_SIZE=8",
		"MASTER_ADDR=10.0.12.7", "MASTER_PORT=29500", "GROUP_RANK=0",
		"TORCHELASTIC_RUN_ID=job-4711", "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
		"CUDA_DEVICE_ORDER=PCI_BUS_ID", "NCCL_DEBUG=WARN", "NCCL_SOCKET_IFNAME=eth0",
		"SLURM_JOB_ID=123456", "SLURM_STEP_ID=0", "SLURM_PROCID=3", "SLURM_LOCALID=3",
		"SLURM_JOB_GPUS=0,1,2,3,4,5,6,7", "SLURM_STEP_GPUS=0,1,2,3,4,5,6,7",
		"PYTHONUNBUFFERED=1", "OMP_NUM_THREADS=8",
		"LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib64",
		NULL
	};
	pid_t pid = fork();

	char path[64], comm[32] = "";

	if (pid == 0) {
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	/* Read once it runs sleep with that environment, not the fork before. */
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	for (int i = 0; i < 1000 && strcmp(comm, "sleep\n") != 0; i++) {
		FILE *f = fopen(path, "r");

		comm[0] = '\0';
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = '\0';
			fclose(f);
		}
		usleep(1000);
	}
	return pid;
}

struct figures {
	uint64_t p50_ns, p99_ns;	/* time per read */
	double cpu_ns;			/* CPU per read, this process and the child */
	int err;
};

/* read(pid) READS times after WARM_UP, timed. */
static struct figures measure(int (*read)(pid_t, void *), pid_t pid, void *out)
{
	static uint64_t t[READS];
	struct figures f = { 0 };
	uint64_t cpu0, child0;

	for (int i = 0; i < WARM_UP; i++)
		if ((f.err = read(pid, out)) != 0)
			return f;
	cpu0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
	child0 = process_cpu_ns(parser_pid());
	for (int i = 0; i < READS; i++) {
		uint64_t t0 = mono_ns();

		if ((f.err = read(pid, out)) != 0)
			return f;
		t[i] = mono_ns() - t0;
	}
	f.cpu_ns = (double)(cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0 +
			    process_cpu_ns(parser_pid()) - child0) / READS;
	qsort(t, READS, sizeof(t[0]), cmp_u64);
	f.p50_ns = t[READS / 2];
	f.p99_ns = t[READS * 99 / 100];
	return f;
}

static int env_here(pid_t pid, void *out)
{
	return proc_env_read(pid, out);
}

static int env_child(pid_t pid, void *out)
{
	return parser_environ(pid, out);
}

static int cgroup_here(pid_t pid, void *out)
{
	return cgroup_id_read(pid, out);
}

static int cgroup_child(pid_t pid, void *out)
{
	return parser_cgroup(pid, out);
}

static int files_unchanged(pid_t pid, void *out)
{
	struct ident_source *src = out;

	ident_source_open(pid, src);
	ident_source_close(src);
	return src->digest ? 0 : -EIO;
}

static void row(const char *what, const struct figures *here, const struct figures *child)
{
	printf("  %-12s %8.1f %8.1f %8.1f   %8.1f %8.1f %8.1f   %5.1fx\n", what,
	       here->p50_ns / 1e3, here->p99_ns / 1e3, here->cpu_ns / 1e3,
	       child->p50_ns / 1e3, child->p99_ns / 1e3, child->cpu_ns / 1e3,
	       here->cpu_ns > 0 ? child->cpu_ns / here->cpu_ns : 0.0);
}

int main(void)
{
	static struct proc_env env;
	static struct cgroup_id cg;
	struct ident_source src;
	struct figures eh, ec, ch, cc, kept;
	pid_t rank = start_rank();
	double per_proc_ns, share;

	if (rank < 0) {
		perror("fork");
		return 1;
	}
	eh = measure(env_here, rank, &env);
	ec = measure(env_child, rank, &env);
	ch = measure(cgroup_here, rank, &cg);
	cc = measure(cgroup_child, rank, &cg);
	kept = measure(files_unchanged, rank, &src);
	kill(rank, SIGKILL);
	waitpid(rank, NULL, 0);
	parser_stop();
	if (eh.err || ec.err || ch.err || cc.err || kept.err) {
		fprintf(stderr, "bench_parser: a read failed: environment %s / %s, cgroup %s / %s, "
			"digest %s\n", strerror(-eh.err), strerror(-ec.err), strerror(-ch.err),
			strerror(-cc.err), strerror(-kept.err));
		return 1;
	}
	printf("one watched process's files, %d reads each (us):\n", READS);
	printf("  %-12s %8s %8s %8s   %8s %8s %8s   %6s\n", "", "here p50", "p99", "cpu",
	       "child p50", "p99", "cpu", "cpu");
	row("environment", &eh, &ec);
	row("cgroup", &ch, &cc);
	printf("  %-12s %8.1f %8.1f %8.1f   (both files read and digested, nothing parsed)\n",
	       "unchanged", kept.p50_ns / 1e3, kept.p99_ns / 1e3, kept.cpu_ns / 1e3);
	per_proc_ns = ec.cpu_ns + cc.cpu_ns;
	share = per_proc_ns * PROCESSES / (double)IDENT_REFRESH_NS;
	printf("identity refresh at %d processes, every %.0f s, of a core: %.3f%% parsing every "
	       "file in the child, %.3f%% for files as they were (%.3f%% parsing in process)\n",
	       PROCESSES, IDENT_REFRESH_NS / 1e9, 100.0 * share,
	       100.0 * kept.cpu_ns * PROCESSES / (double)IDENT_REFRESH_NS,
	       100.0 * (eh.cpu_ns + ch.cpu_ns) * PROCESSES / (double)IDENT_REFRESH_NS);
	return 0;
}
