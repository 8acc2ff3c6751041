/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `make bench-sched`: what the scheduler probe costs, in one run.
 *   1. An unwatched process, with and without zernel-collector loaded:
 *      getppid and 1-byte reads of /dev/zero (no probe is on any syscall
 *      path: targets within 1%), and a pipe ping-pong between two threads
 *      on one CPU, where every switch and wakeup passes a program (target
 *      within 3%), next to the kernel's floor: the same ping-pong with
 *      empty programs on the same two tracepoints.
 *   2. A watched process: the same reads, and the same ping-pong, whose
 *      every trip blocks twice: the cost per watched wait.
 *   3. A real workload: a PyTorch training loop on the CPU with a
 *      two-worker DataLoader (bench/torch_train.py), steps per second
 *      without the collector and with it watching, rounds interleaved;
 *      the median ratio (target: at most 1% slower), and that of the CPU
 *      time a step took.  Rounds on a small VM spread wider than that,
 *      so three more rounds account for the
 *      cost instead: the collector's CPU time, its programs' run time and
 *      that of the task works that read Python frames after stalls,
 *      against the workload's CPU time, and what an empty program on
 *      sched_switch costs alone in rounds of its own (the kernel's floor).
 * Minimum of several runs for the loops, to keep other load out.  Flags
 * after the two paths go to every collector started (a configuration to
 * compare, such as --no-python-frames).  Needs root.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench/sched_floor.skel.h"
#include "bpf/sched_profile.h"
#include "common/util.h"
#include "shm/shm_reader.h"

#define BS_SYSCALLS	1000000ull
#define BS_PINGPONG	20000ull
#define BS_RUNS		3
#define BS_CYCLES	5
#define BS_TORCH_ROUNDS	8		/* pairs of rounds */
#define BS_TORCH_SECONDS "5"		/* per round */
#define BS_ACCOUNT_ROUNDS 3		/* accounted, one collector: one alone varies by a fifth */
/*
 * The collector's first second (loading and verifying the programs, the
 * first /proc scan) is start-up, not what watching costs: rounds with it
 * begin this long after it first publishes.
 */
#define BS_SETTLE_US	1500000

enum bs_mode { BS_GETPPID = 1, BS_READ, BS_PINGPONG_MODE };

struct bs_child {
	pid_t pid;
	int cmd;		/* parent -> child: mode, n */
	int res;		/* child -> parent: elapsed ns */
};

/* --- the measured loops, run in a child process ------------------------- */

static int pp_a[2], pp_b[2];

static void *pp_echo(void *arg)
{
	uint64_t n = *(uint64_t *)arg;
	char c;

	for (uint64_t i = 0; i < n; i++) {
		if (read(pp_a[0], &c, 1) != 1 || write(pp_b[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

static uint64_t bs_run(enum bs_mode mode, uint64_t n)
{
	uint64_t t0, t1;
	pthread_t echo;
	cpu_set_t one;
	char c = 'x';
	int fd;

	switch (mode) {
	case BS_GETPPID:
		t0 = now_mono_ns();
		for (uint64_t i = 0; i < n; i++)
			syscall(SYS_getppid);
		return now_mono_ns() - t0;
	case BS_READ:
		fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
		t0 = now_mono_ns();
		for (uint64_t i = 0; i < n; i++)
			if (read(fd, &c, 1) != 1)
				break;
		t1 = now_mono_ns();
		close(fd);
		return t1 - t0;
	case BS_PINGPONG_MODE:
		/* One CPU for both threads: each trip is two plain switches, no IPI. */
		CPU_ZERO(&one);
		CPU_SET(0, &one);
		if (sched_setaffinity(0, sizeof(one), &one) != 0)
			return 0;
		if (pipe(pp_a) != 0 || pipe(pp_b) != 0)
			return 0;
		if (pthread_create(&echo, NULL, pp_echo, &n) != 0)
			return 0;
		t0 = now_mono_ns();
		for (uint64_t i = 0; i < n; i++)
			if (write(pp_a[1], &c, 1) != 1 || read(pp_b[0], &c, 1) != 1)
				break;
		t1 = now_mono_ns();
		pthread_join(echo, NULL);
		close(pp_a[0]);
		close(pp_a[1]);
		close(pp_b[0]);
		close(pp_b[1]);
		return t1 - t0;
	}
	return 0;
}

static void bs_child_loop(int cmd, int res)
{
	uint64_t req[2], ns;

	while (read(cmd, req, sizeof(req)) == (ssize_t)sizeof(req)) {
		ns = bs_run((enum bs_mode)req[0], req[1]);
		if (write(res, &ns, sizeof(ns)) != (ssize_t)sizeof(ns))
			break;
	}
	_exit(0);
}

static int bs_child_start(struct bs_child *c)
{
	int cmd[2], res[2];

	if (pipe2(cmd, O_CLOEXEC) != 0 || pipe2(res, O_CLOEXEC) != 0)
		return -errno;
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (c->pid == 0) {
		close(cmd[1]);
		close(res[0]);
		bs_child_loop(cmd[0], res[1]);
	}
	close(cmd[0]);
	close(res[1]);
	c->cmd = cmd[1];
	c->res = res[0];
	return 0;
}

static void bs_child_stop(struct bs_child *c)
{
	/* Its siblings hold copies of its command pipe: no EOF to wait for. */
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	close(c->cmd);
	close(c->res);
}

static void bs_min(double *best, double v)
{
	if (v > 0 && v < *best)
		*best = v;
}

/* Best of BS_RUNS: ns per operation. */
static double bs_measure(struct bs_child *c, enum bs_mode mode, uint64_t n)
{
	uint64_t req[2] = { mode, n }, ns, best = UINT64_MAX;

	for (int r = 0; r < BS_RUNS; r++) {
		if (write(c->cmd, req, sizeof(req)) != (ssize_t)sizeof(req) ||
		    read(c->res, &ns, sizeof(ns)) != (ssize_t)sizeof(ns) || ns == 0)
			return -1;
		if (ns < best)
			best = ns;
	}
	return (double)best / (double)n;
}

/* --- the collector ------------------------------------------------------- */

/* Flags given after the two paths, for every collector started (a configuration to compare). */
#define BS_MAX_FLAGS	8
static char *bs_flags[BS_MAX_FLAGS];
static int bs_n_flags;

/*
 * How the whole switch program read Python frames ("switch" or "stall",
 * as --python-frames-walk names them), which every collector with parts
 * of it off is held to: a kernel that refuses the task work to the whole
 * program may take the program without its frames at a switch back,
 * whose task work is then no code, and the part off would be the other
 * program.  NULL until the whole program ran.
 */
static const char *bs_frames_walk;

/* A collector watching watch; held: held to the whole program's way of reading frames. */
static pid_t bs_collector_start_held(const char *bin, const char *shm, pid_t watch, int held)
{
	char pid[16];
	/*
	 * Steady state only: the node's libraries would be attached during
	 * the first measurements, and a collector's links released during
	 * the next cycle's (uprobes cost only the processes that call their
	 * library, which these do not).
	 */
	char *argv[7 + BS_MAX_FLAGS + 2 + 1] = { (char *)bin, "--shm", (char *)shm, "--pid", pid,
						 "--no-node-libs", "--exit-when-released" };
	int argc = 7;
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	char reason[256];
	pid_t cp;

	snprintf(pid, sizeof(pid), "%d", (int)watch);
	for (int i = 0; i < bs_n_flags; i++)
		argv[argc++] = bs_flags[i];
	if (held && bs_frames_walk) {
		argv[argc++] = "--python-frames-walk";
		argv[argc++] = (char *)bs_frames_walk;
	}
	cp = fork();
	if (cp == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDERR_FILENO);
		execv(bin, argv);
		_exit(127);
	}
	if (cp < 0)
		return -1;
	shm_reader_init(&r, shm);
	/*
	 * Loaded once it publishes a row for the watched process; on a busy
	 * node probing every CUDA library found first takes a while.
	 */
	for (int i = 0; i < 1200; i++) {
		uint32_t n = 0;

		usleep(50000);
		if (shm_reader_snapshot(&r, &s, reason, sizeof(reason)) == SHM_READ_OK &&
		    shm_snapshot_procs(&s, &n) && n > 0) {
			shm_snapshot_free(&s);
			shm_reader_close(&r);
			return cp;
		}
	}
	shm_snapshot_free(&s);
	shm_reader_close(&r);
	kill(cp, SIGKILL);
	waitpid(cp, NULL, 0);
	return -1;
}

static pid_t bs_collector_start(const char *bin, const char *shm, pid_t watch)
{
	return bs_collector_start_held(bin, shm, watch, 0);
}

static uint64_t bs_events(const char *shm)
{
	struct shm_reader r;
	struct shm_snapshot s = { 0 };
	char reason[256];
	uint64_t n = 0;

	/* After two publishes (1 s apart, the default) everything sent so far is counted. */
	usleep(2100000);
	shm_reader_init(&r, shm);
	if (shm_reader_snapshot(&r, &s, reason, sizeof(reason)) == SHM_READ_OK)
		n = s.hdr->stats.events_total;
	shm_snapshot_free(&s);
	shm_reader_close(&r);
	return n;
}

static void bs_warn_other_loaders(void)
{
	/* Another collector, or an older one on syscall tracepoints, taxes the baseline. */
	if (system("bpftool prog show 2>/dev/null | grep -q 'name zs_switch\\|name zs_dl_enter'") == 0)
		printf("warning: zernel probes are already loaded by another process; "
		       "the baseline includes their cost\n");
}

/*
 * Empty programs on sched_switch, and on sched_wakeup when wakeup (the
 * collector has its own there); NULL when they cannot load.
 */
static struct sched_floor_bpf *bs_floor_start(int wakeup)
{
	struct sched_floor_bpf *skel = sched_floor_bpf__open();

	if (skel && bpf_program__set_autoload(skel->progs.floor_wakeup, wakeup) == 0 &&
	    sched_floor_bpf__load(skel) == 0 && sched_floor_bpf__attach(skel) == 0)
		return skel;
	sched_floor_bpf__destroy(skel);
	return NULL;
}

/* --- the PyTorch training loop ------------------------------------------ */

struct bs_torch {
	pid_t pid;
	FILE *in;
	FILE *out;
	double floor_ns;	/* an empty program's run on sched_switch alone (0: not known) */
};

static int bs_torch_start(struct bs_torch *t, const char *script)
{
	int in[2], out[2];
	char line[128];

	if (access("/usr/bin/python3", X_OK) != 0 ||
	    system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0)
		return -ENOENT;
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
		return -errno;
	t->pid = fork();
	if (t->pid < 0)
		return -errno;
	if (t->pid == 0) {
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		execl("/usr/bin/python3", "python3", script, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	t->in = fdopen(in[1], "w");
	t->out = fdopen(out[0], "r");
	if (!t->in || !t->out || !fgets(line, sizeof(line), t->out) ||
	    strcmp(line, "ready\n") != 0)
		return -EIO;
	return 0;
}

struct bs_round {
	double steps_per_s;
	double cpu_s;		/* the trainer's and its workers' CPU time */
};

/* One round: 0, or -1 when the script did not answer. */
static int bs_torch_round(struct bs_torch *t, struct bs_round *r)
{
	char line[128];

	fputs(BS_TORCH_SECONDS "\n", t->in);
	fflush(t->in);
	if (fgets(line, sizeof(line), t->out) &&
	    sscanf(line, "steps_per_s=%lf cpu_s=%lf", &r->steps_per_s, &r->cpu_s) == 2 &&
	    r->steps_per_s > 0)
		return 0;
	return -1;
}

static void bs_torch_stop(struct bs_torch *t)
{
	if (t->in)
		fclose(t->in);
	if (t->out)
		fclose(t->out);
	if (t->pid > 0)
		waitpid(t->pid, NULL, 0);
}

static int bs_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of v[0..n) (n > 0), which it leaves sorted. */
static double bs_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), bs_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * CPU time of pid (all its threads), seconds, to the nanosecond: the
 * collector spends a few clock ticks in a round, too few to count in ticks.
 */
static double bs_cpu_s(pid_t pid)
{
	struct timespec ts;
	clockid_t clock;

	if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &ts) != 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define BS_MAX_PROGS	256

/* The BPF programs one process holds, with the kernel's run-time counts. */
struct bs_progs {
	unsigned int n;
	struct {
		unsigned int id;
		char name[BPF_OBJ_NAME_LEN];
		unsigned long long ns, runs;
	} p[BS_MAX_PROGS];
};

/*
 * The id of the next BPF object of a kind among pid's descriptors in d
 * (kind: the descriptor's link, "anon_inode:bpf-prog" or "anon_inode:bpf-map";
 * key: its id's line in fdinfo, "prog_id: %u" or "map_id: %u"); 0 at
 * their end.
 */
static unsigned int bs_next_id(DIR *d, pid_t pid, const char *kind, const char *key)
{
	char path[384], link[64], line[128];
	struct dirent *e;

	while ((e = readdir(d))) {
		unsigned int id = 0;
		ssize_t n;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/fd/%s", (int)pid, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strcmp(link, kind) != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", (int)pid, e->d_name);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f))
			sscanf(line, key, &id);
		if (f)
			fclose(f);
		if (id)
			return id;
	}
	return 0;
}

static DIR *bs_open_fds(pid_t pid)
{
	char dir[64];

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	return opendir(dir);
}

/* The programs pid holds descriptors of (each once), while statistics are on. */
static void bs_progs_read(pid_t pid, struct bs_progs *out)
{
	DIR *d = bs_open_fds(pid);
	unsigned int id, k;

	out->n = 0;
	while (d && out->n < BS_MAX_PROGS &&
	       (id = bs_next_id(d, pid, "anon_inode:bpf-prog", "prog_id: %u"))) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd;

		for (k = 0; k < out->n && out->p[k].id != id; k++)
			;
		fd = k == out->n ? bpf_prog_get_fd_by_id(id) : -1;
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
			out->p[out->n].id = id;
			snprintf(out->p[out->n].name, sizeof(out->p[0].name), "%s", info.name);
			out->p[out->n].ns = info.run_time_ns;
			out->p[out->n].runs = info.run_cnt;
			out->n++;
		}
		close(fd);
	}
	if (d)
		closedir(d);
}

/*
 * What the Python frames' task works cost so far (bpf/pystack_walk.h,
 * zp_walk_cost, summed over CPUs): they run in the stalled threads, outside
 * the programs' statistics.  0 when pid holds no such map.
 */
static int bs_walk_cost(pid_t pid, unsigned long long *runs, unsigned long long *ns)
{
	int ncpu = libbpf_num_possible_cpus(), found = 0;
	DIR *d = ncpu > 0 ? bs_open_fds(pid) : NULL;
	unsigned int id;

	*runs = *ns = 0;
	while (d && !found && (id = bs_next_id(d, pid, "anon_inode:bpf-map", "map_id: %u"))) {
		unsigned long long v[2] = { 0, 0 }, cpu[ncpu];
		struct bpf_map_info info;
		__u32 len = sizeof(info);
		int fd = bpf_map_get_fd_by_id(id);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
		    strcmp(info.name, "zp_walk_cost") == 0) {
			for (__u32 key = 0; key < 2; key++)
				if (bpf_map_lookup_elem(fd, &key, cpu) == 0)
					for (int c = 0; c < ncpu; c++)
						v[key] += cpu[c];
			*runs = v[0];
			*ns = v[1];
			found = 1;
		}
		close(fd);
	}
	if (d)
		closedir(d);
	return found;
}

/* Whether pid holds a BPF program called name. */
static int bs_holds_program(pid_t pid, const char *name)
{
	static struct bs_progs progs;

	bs_progs_read(pid, &progs);
	for (unsigned int i = 0; i < progs.n; i++)
		if (strcmp(progs.p[i].name, name) == 0)
			return 1;
	return 0;
}

/* after - before, program by program; the total, seconds; the top ones printed. */
static double bs_progs_delta(const struct bs_progs *before, struct bs_progs *after)
{
	unsigned long long total = 0;

	for (unsigned int i = 0; i < after->n; i++) {
		for (unsigned int k = 0; k < before->n; k++) {
			if (before->p[k].id == after->p[i].id) {
				after->p[i].ns -= before->p[k].ns;
				after->p[i].runs -= before->p[k].runs;
				break;
			}
		}
		total += after->p[i].ns;
	}
	for (int top = 0; top < 3; top++) {
		unsigned int best = after->n;

		for (unsigned int i = 0; i < after->n; i++)
			if (after->p[i].runs && (best == after->n || after->p[i].ns > after->p[best].ns))
				best = i;
		if (best == after->n)
			break;
		printf("    %-16s %9llu runs %8.1f ms %6.0f ns a run\n", after->p[best].name,
		       after->p[best].runs, after->p[best].ns / 1e6,
		       (double)after->p[best].ns / (double)after->p[best].runs);
		after->p[best].runs = 0;
	}
	return (double)total / 1e9;
}

/* The run time (seconds) and runs of the floor's programs so far. */
static double bs_floor_runs(const struct sched_floor_bpf *floor, unsigned long long *runs)
{
	const struct bpf_program *progs[] = { floor->progs.floor_switch, floor->progs.floor_wakeup };
	unsigned long long ns = 0;

	*runs = 0;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(progs[i]);

		memset(&info, 0, sizeof(info));
		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
			ns += info.run_time_ns;
			*runs += info.run_cnt;
		}
	}
	return (double)ns / 1e9;
}

/* BS_ACCOUNT_ROUNDS rounds: 0, with the CPU time of all in r, or -1. */
static int bs_torch_rounds(struct bs_torch *t, struct bs_round *r)
{
	struct bs_round one;

	r->cpu_s = 0;
	for (int i = 0; i < BS_ACCOUNT_ROUNDS; i++) {
		if (bs_torch_round(t, &one) != 0)
			return -1;
		r->cpu_s += one.cpu_s;
	}
	return 0;
}

/*
 * The floor's empty program alone on sched_switch for BS_ACCOUNT_ROUNDS
 * rounds: in ns_per_run, what one run of a program there costs.  0, or -1.
 */
static int bs_floor_alone(struct bs_torch *t, double *ns_per_run)
{
	struct sched_floor_bpf *floor = bs_floor_start(0);
	unsigned long long runs0, runs;
	double s0, s;
	struct bs_round r;

	if (!floor) {
		fprintf(stderr, "bench_sched: the floor's empty programs do not load\n");
		return -1;
	}
	s0 = bs_floor_runs(floor, &runs0);
	if (bs_torch_rounds(t, &r) != 0) {
		sched_floor_bpf__destroy(floor);
		return -1;
	}
	s = bs_floor_runs(floor, &runs) - s0;
	runs -= runs0;
	sched_floor_bpf__destroy(floor);
	*ns_per_run = runs ? s * 1e9 / (double)runs : 0;
	return 0;
}

/*
 * What watching costs, accounted instead of timed: more rounds with the
 * collector and the kernel's program statistics on, the collector's CPU
 * time and its programs' run time against the workload's CPU time.  The
 * floor's empty programs run beside them on the same tracepoints, and
 * alone in rounds of their own first: beside, they run after the
 * collector's programs, on the cache lines those warmed, and cost about
 * half what one program there costs alone.  Zernel's own work is what
 * its programs cost above the floor alone, for each time they ran.
 */
static int bs_torch_accounting(struct bs_torch *t, const char *collector, const char *shm)
{
	static struct bs_progs before, after;
	struct sched_floor_bpf *floor = NULL;
	unsigned long long floor_runs0 = 0, floor_runs, walks0, walk_ns0, walks, walk_ns;
	double col0, col_s, bpf_s, walk_s, floor0 = 0, floor_s, alone_ns, alone_s;
	struct bs_round r;
	int stats, rc = -1;
	pid_t col;

	stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats < 0) {
		printf("  accounted cost: skipped (no BPF statistics: %s)\n", strerror(errno));
		return 0;
	}
	if (bs_floor_alone(t, &alone_ns) != 0)
		goto out;
	t->floor_ns = alone_ns;
	col = bs_collector_start(collector, shm, t->pid);
	if (col < 0)
		goto out;
	floor = bs_floor_start(bs_holds_program(col, "zs_wakeup"));
	usleep(BS_SETTLE_US);
	col0 = bs_cpu_s(col);
	bs_progs_read(col, &before);
	bs_walk_cost(col, &walks0, &walk_ns0);
	if (floor)
		floor0 = bs_floor_runs(floor, &floor_runs0);
	if (bs_torch_rounds(t, &r) == 0) {
		col_s = bs_cpu_s(col) - col0;
		bs_progs_read(col, &after);
		bs_walk_cost(col, &walks, &walk_ns);
		walks -= walks0;
		walk_ns -= walk_ns0;
		walk_s = (double)walk_ns / 1e9;
		printf("  accounted cost over %d rounds of %s s, the programs that ran longest:\n",
		       BS_ACCOUNT_ROUNDS, BS_TORCH_SECONDS);
		bpf_s = bs_progs_delta(&before, &after);
		printf("    and the task works that read Python frames after stalls: %llu runs "
		       "%.1f ms %.0f ns a run (in the stalled threads, outside the programs' "
		       "statistics)\n", walks, walk_s * 1e3,
		       walks ? (double)walk_ns / (double)walks : 0.0);
		bpf_s += walk_s;
		printf("  the workload used %.2f CPU s; the collector %.3f s (%.2f%%), its programs "
		       "and task works %.3f s (%.2f%%); together %.2f%%\n",
		       r.cpu_s, col_s, 100 * col_s / r.cpu_s, bpf_s, 100 * bpf_s / r.cpu_s,
		       100 * (col_s + bpf_s) / r.cpu_s);
		if (floor) {
			floor_s = bs_floor_runs(floor, &floor_runs) - floor0;
			floor_runs -= floor_runs0;
			/* The floor's runs beside are the tracepoints' hits, the collector's runs there. */
			alone_s = alone_ns * (double)floor_runs / 1e9;
			printf("  the kernel's floor, empty programs on the same tracepoints: %.0f ns a "
			       "run alone, %.0f ns beside the collector's (%llu runs); at %.0f ns for "
			       "each of those runs, %.3f s (%.2f%%); Zernel's own work above it "
			       "%.2f%%\n", alone_ns,
			       floor_runs ? floor_s * 1e9 / (double)floor_runs : 0.0, floor_runs,
			       alone_ns, alone_s, 100 * alone_s / r.cpu_s,
			       100 * (col_s + bpf_s - alone_s) / r.cpu_s);
		}
		rc = 0;
	}
	kill(col, SIGTERM);
	waitpid(col, NULL, 0);
	shm_unlink(shm);
out:
	sched_floor_bpf__destroy(floor);
	close(stats);
	return rc;
}

/* The switch program's run time and runs between two reads (its name, cut at 15 characters). */
static void bs_switch_runs(const struct bs_progs *before, const struct bs_progs *after,
			   double *ns, unsigned long long *runs)
{
	*ns = 0;
	*runs = 0;
	for (unsigned int i = 0; i < after->n; i++) {
		unsigned long long ns0 = 0, runs0 = 0;

		if (strncmp(after->p[i].name, "zs_switch", 9) != 0)
			continue;
		for (unsigned int k = 0; k < before->n; k++)
			if (before->p[k].id == after->p[i].id)
				ns0 = before->p[k].ns, runs0 = before->p[k].runs;
		*ns += (double)(after->p[i].ns - ns0);
		*runs += after->p[i].runs - runs0;
	}
}

/*
 * The switch program's run time, ns a run, in the watched loop's rounds
 * under a collector with the parts skip off (bpf/sched_profile.h): 1; 0
 * when its rounds did not run or ran no switch, -1 when the collector did
 * not start.
 */
static int bs_switch_run_time(struct bs_torch *t, const char *collector, const char *shm,
			      unsigned int skip, double *ns, unsigned long long *runs)
{
	static struct bs_progs before, after;
	struct bs_round r;
	char bits[16];
	int ran = 0;
	pid_t col;

	if (skip && !bs_frames_walk) {
		fprintf(stderr, "bench_sched: a part of the switch program off before the whole "
			"program ran\n");
		return -1;
	}
	snprintf(bits, sizeof(bits), "%u", skip);
	setenv("ZERNEL_BENCH_SCHED_SKIP", bits, 1);
	col = bs_collector_start_held(collector, shm, t->pid, skip != 0);
	unsetenv("ZERNEL_BENCH_SCHED_SKIP");
	if (col < 0)
		return -1;
	if (!skip)
		bs_frames_walk = bs_holds_program(col, "zs_switch_defer") ? "stall" : "switch";
	usleep(BS_SETTLE_US);
	bs_progs_read(col, &before);
	if (bs_torch_rounds(t, &r) == 0) {
		bs_progs_read(col, &after);
		bs_switch_runs(&before, &after, ns, runs);
		ran = *runs > 0;
		*ns = ran ? *ns / (double)*runs : 0;
	}
	kill(col, SIGTERM);
	waitpid(col, NULL, 0);
	shm_unlink(shm);
	return ran;
}

/*
 * Where a run of the switch program goes, by section: the watched loop
 * again, with one part of the program off at a time (bpf/sched_profile.h),
 * each against the whole program in the same run.  A part's cost is what
 * the run loses without it; parts overlap (without the switch away, the
 * switch back has less to time), so the costs do not add up exactly.
 */
static int bs_switch_profile(struct bs_torch *t, const char *collector, const char *shm)
{
	static const struct { const char *what; unsigned int skip; } part[] = {
		{ "the whole program", 0 },
		{ "without Python frames at a switch away", ZS_SKIP_FRAMES_OUT },
		{ "without Python frames at a switch back", ZS_SKIP_FRAMES_IN },
		{ "without the DataLoader check at a switch away", ZS_SKIP_LOADER },
		{ "frames read one at a time, not in one span", ZS_SKIP_SPAN },
		{ "the walk reading again what the DataLoader check read", ZS_SKIP_SHARED },
		{ "without returns no switch showed", ZS_SKIP_UNSEEN },
		{ "without the switch away (state, frames)",
		  ZS_SKIP_OUT | ZS_SKIP_FRAMES_OUT | ZS_SKIP_UNSEEN },
		{ "without the switch back (time off, accounting, frames)",
		  ZS_SKIP_IN | ZS_SKIP_FRAMES_IN },
		{ "the watched tests and the clock only", ZS_SKIP_ALL },
	};
	double whole = 0;
	int stats = bpf_enable_stats(BPF_STATS_RUN_TIME);

	if (stats < 0) {
		printf("  the switch program by section: skipped (no BPF statistics: %s)\n",
		       strerror(errno));
		return 0;
	}
	printf("  the switch program by section, %d rounds of %s s each, with a part off:\n",
	       BS_ACCOUNT_ROUNDS, BS_TORCH_SECONDS);
	for (size_t i = 0; i < sizeof(part) / sizeof(part[0]); i++) {
		unsigned long long runs;
		double ns;
		int ran = bs_switch_run_time(t, collector, shm, part[i].skip, &ns, &runs);

		if (ran < 0) {
			close(stats);
			return -1;
		}
		if (!ran)
			continue;
		if (i == 0)
			whole = ns;
		printf("    %-56s %5.0f ns a run (%9llu runs)", part[i].what, ns, runs);
		/* Against the whole program only when its rounds ran. */
		if (i > 0 && whole > 0)
			printf(", %+5.0f ns", ns - whole);
		if (t->floor_ns > 0)
			printf(", %.1fx the floor", ns / t->floor_ns);
		printf("\n");
	}
	if (t->floor_ns > 0)
		printf("    goal: the whole program at most 3x the floor, %.0f ns a run\n",
		       3 * t->floor_ns);
	close(stats);
	return 0;
}

/*
 * BENCH_SCHED_AB=BITS: in place of the PyTorch loop's rounds, the whole
 * switch program against it with the parts BITS off, BS_AB_PAIRS pairs,
 * which of the two comes first alternating from pair to pair: one
 * section's cost from runs seconds apart, where the profile's rows, a
 * minute apart, move by more than a small part costs on a busy host.
 */
#define BS_AB_PAIRS	6

/* BENCH_SCHED_AB set and not empty (make passes an empty one as unset). */
static int bs_ab_wanted(void)
{
	const char *v = getenv("BENCH_SCHED_AB");

	return v && *v;
}

/* BENCH_SCHED_AB's value as a set of the profile's parts into *skip; -1 (said) when it is none. */
static int bs_ab_parts(const char *bits, unsigned long *skip)
{
	char *end;

	errno = 0;
	*skip = strtoul(bits, &end, 0);
	if (errno || end == bits || *end || !*skip || *skip > ZS_SKIP_ALL) {
		fprintf(stderr, "bench_sched: BENCH_SCHED_AB=%s is not a set of the profile's parts "
				"(1 to %u, bpf/sched_profile.h)\n", bits, ZS_SKIP_ALL);
		return -1;
	}
	return 0;
}

static int bs_switch_ab(struct bs_torch *t, const char *collector, const char *shm,
			const char *bits)
{
	double whole[BS_AB_PAIRS], part[BS_AB_PAIRS], diff[BS_AB_PAIRS];
	double mid_whole, mid_part, mid_diff;
	unsigned long long runs;
	int stats, n = 0, err = 0;
	unsigned long skip;

	if (bs_ab_parts(bits, &skip) != 0)
		return -1;
	stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats < 0) {
		fprintf(stderr, "bench_sched: no BPF statistics: %s\n", strerror(-stats));
		return -1;
	}
	printf("  the whole switch program against it with parts %#lx off, %d pairs of %d "
	       "rounds of %s s, which comes first alternating:\n", skip, BS_AB_PAIRS,
	       BS_ACCOUNT_ROUNDS, BS_TORCH_SECONDS);
	for (int i = 0; i < BS_AB_PAIRS && !err; i++) {
		int got = 1;

		for (int k = 0; k < 2 && got > 0; k++) {
			int first_whole = i % 2 == 0, is_whole = (k == 0) == first_whole;

			got = bs_switch_run_time(t, collector, shm,
						 is_whole ? 0 : (unsigned int)skip,
						 is_whole ? &whole[n] : &part[n], &runs);
		}
		if (got < 0)
			err = -1;
		if (got <= 0)
			continue;
		diff[n] = part[n] - whole[n];
		printf("    pair %d (%s first): %5.0f ns a run whole, %5.0f with the parts off "
		       "(%+.0f ns)\n", i, i % 2 == 0 ? "whole" : "parts off", whole[n], part[n],
		       diff[n]);
		n++;
	}
	close(stats);
	if (err || n == 0) {
		fprintf(stderr, "bench_sched: %s\n", err ? "a collector did not start" :
			"no pair ran (the loop's rounds, or its switches)");
		return -1;
	}
	mid_whole = bs_median(whole, n);
	mid_part = bs_median(part, n);
	mid_diff = bs_median(diff, n);	/* sorts diff: its ends are the range */
	printf("    medians: %.0f ns a run whole, %.0f with the parts off; the pairs' "
	       "difference %+.0f ns (from %+.0f to %+.0f)\n", mid_whole, mid_part, mid_diff,
	       diff[0], diff[n - 1]);
	return 0;
}

/*
 * Rounds without and with the collector, alternating which comes first
 * in each pair so that drift cancels; the median of the pairs' ratios,
 * with their spread, which on a small VM is wider than the target.
 */
static int bs_torch(const char *collector, const char *script, const char *shm)
{
	double ratio[BS_TORCH_ROUNDS], cpu_ratio[BS_TORCH_ROUNDS], off_sum = 0, on_sum = 0, median;
	struct bs_torch t = { 0 };
	int n = 0, err;

	err = bs_torch_start(&t, script);
	if (err == -ENOENT) {
		printf("  pytorch training loop%s: skipped (/usr/bin/python3 with python3-torch "
		       "is missing)\n", bs_ab_wanted() ? " and BENCH_SCHED_AB" : "");
		return 0;
	}
	if (!err && bs_ab_wanted()) {
		err = bs_switch_ab(&t, collector, shm, getenv("BENCH_SCHED_AB"));
		bs_torch_stop(&t);
		return err;
	}
	if (err) {
		fprintf(stderr, "bench_sched: %s did not start\n", script);
		bs_torch_stop(&t);
		return -1;
	}
	for (int r = 0; r < BS_TORCH_ROUNDS; r++) {
		struct bs_round off = { 0 }, on = { 0 };

		for (int k = 0; k < 2; k++) {
			if ((k == 0) == (r % 2 == 0)) {
				bs_torch_round(&t, &off);
				continue;
			}
			pid_t col = bs_collector_start(collector, shm, t.pid);

			if (col < 0)
				break;
			usleep(BS_SETTLE_US);
			bs_torch_round(&t, &on);
			kill(col, SIGTERM);
			waitpid(col, NULL, 0);
			shm_unlink(shm);
		}
		if (off.steps_per_s <= 0 || on.steps_per_s <= 0)
			continue;
		/* CPU time a step took, the workers' share included: the same seconds each round. */
		cpu_ratio[n] = (on.cpu_s / on.steps_per_s) / (off.cpu_s / off.steps_per_s);
		printf("  round %d: %.1f steps/s without, %.1f with (%.3f); CPU a step %.3f of "
		       "without\n", r, off.steps_per_s, on.steps_per_s,
		       on.steps_per_s / off.steps_per_s, cpu_ratio[n]);
		ratio[n++] = on.steps_per_s / off.steps_per_s;
		off_sum += off.steps_per_s;
		on_sum += on.steps_per_s;
	}
	if (n == 0) {
		bs_torch_stop(&t);
		return -1;
	}
	median = bs_median(ratio, n);
	printf("  pytorch training loop (2 DataLoader workers, %s s rounds): %.1f -> %.1f "
	       "steps/s on average; median ratio %.4f (%+.2f%%, target >= -1%%), pairs "
	       "from %.3f to %.3f\n",
	       BS_TORCH_SECONDS, off_sum / n, on_sum / n, median, 100 * (median - 1), ratio[0],
	       ratio[n - 1]);
	median = bs_median(cpu_ratio, n);
	printf("  CPU time a step took, with against without: median ratio %.4f (%+.2f%%), "
	       "pairs from %.3f to %.3f\n", median, 100 * (median - 1), cpu_ratio[0],
	       cpu_ratio[n - 1]);
	err = bs_torch_accounting(&t, collector, shm);
	if (!err)
		err = bs_switch_profile(&t, collector, shm);
	bs_torch_stop(&t);
	return err;
}

int main(int argc, char **argv)
{
	struct bs_child unwatched, watched;
	double base_ppid, base_read, base_pp, load_ppid, load_read, load_pp, floor_pp;
	struct sched_floor_bpf *floor;
	int wakeup = 1;
	double w_read, w_pp, ev_trip;
	uint64_t ev0, ev1;
	int rc = 1;
	char shm[64];
	pid_t col;

	if (argc < 3 || argc > 3 + BS_MAX_FLAGS) {
		fprintf(stderr, "usage: bench_sched PATH/zernel-collector PATH/torch_train.py "
				"[COLLECTOR-FLAG...] (at most %d)\n", BS_MAX_FLAGS);
		return 2;
	}
	/* A bad BENCH_SCHED_AB is said before minutes of measuring, not after. */
	if (bs_ab_wanted()) {
		unsigned long skip;

		if (bs_ab_parts(getenv("BENCH_SCHED_AB"), &skip) != 0)
			return 2;
	}
	bs_n_flags = argc - 3;
	memcpy(bs_flags, argv + 3, (size_t)bs_n_flags * sizeof(*bs_flags));
	if (geteuid() != 0) {
		fprintf(stderr, "bench_sched: needs root (it loads the BPF probes)\n");
		return 1;
	}
	snprintf(shm, sizeof(shm), "/zernel-bench-sched-%d", (int)getpid());
	bs_warn_other_loaders();
	if (bs_child_start(&unwatched) != 0 || bs_child_start(&watched) != 0) {
		perror("bench_sched: fork");
		return 1;
	}

	base_ppid = base_read = base_pp = load_ppid = load_read = load_pp = floor_pp = 1e18;
	w_read = w_pp = 1e18;
	ev_trip = 0;
	/* Alternate without and with the collector, keep the best of each. */
	for (int cycle = 0; cycle < BS_CYCLES; cycle++) {
		/* 1. baseline: no collector */
		bs_min(&base_ppid, bs_measure(&unwatched, BS_GETPPID, BS_SYSCALLS));
		bs_min(&base_read, bs_measure(&unwatched, BS_READ, BS_SYSCALLS));
		bs_min(&base_pp, bs_measure(&unwatched, BS_PINGPONG_MODE, BS_PINGPONG));

		/* 2. collector loaded, watching only the second child */
		col = bs_collector_start(argv[1], shm, watched.pid);
		if (col < 0) {
			fprintf(stderr, "bench_sched: %s did not start\n", argv[1]);
			goto cleanup;
		}
		wakeup = bs_holds_program(col, "zs_wakeup");
		bs_min(&load_ppid, bs_measure(&unwatched, BS_GETPPID, BS_SYSCALLS));
		bs_min(&load_read, bs_measure(&unwatched, BS_READ, BS_SYSCALLS));
		bs_min(&load_pp, bs_measure(&unwatched, BS_PINGPONG_MODE, BS_PINGPONG));
		/* 3. the watched child */
		bs_min(&w_read, bs_measure(&watched, BS_READ, BS_SYSCALLS));
		ev0 = bs_events(shm);
		bs_min(&w_pp, bs_measure(&watched, BS_PINGPONG_MODE, BS_PINGPONG));
		ev1 = bs_events(shm);
		if (ev1 > ev0)
			ev_trip = (double)(ev1 - ev0) / (double)(BS_PINGPONG * BS_RUNS);
		kill(col, SIGTERM);
		waitpid(col, NULL, 0);
		shm_unlink(shm);

		/* 4. the kernel's floor: empty programs where the collector had its own */
		floor = bs_floor_start(wakeup);
		if (!floor) {
			fprintf(stderr, "bench_sched: the floor's empty programs do not load\n");
			goto cleanup;
		}
		bs_min(&floor_pp, bs_measure(&unwatched, BS_PINGPONG_MODE, BS_PINGPONG));
		sched_floor_bpf__destroy(floor);
	}
	rc = 0;

	printf("zernel scheduler probe: cost (best of %d runs)\n", BS_RUNS * BS_CYCLES);
	printf("  unwatched getppid        %8.1f ns/call -> %8.1f ns/call loaded: %+6.1f ns "
	       "(%+.2f%%, target within 1%%)\n",
	       base_ppid, load_ppid, load_ppid - base_ppid, 100 * (load_ppid / base_ppid - 1));
	printf("  unwatched read(/dev/zero)%8.1f ns/call -> %8.1f ns/call loaded: %+6.1f ns "
	       "(%+.2f%%, target within 1%%)\n",
	       base_read, load_read, load_read - base_read, 100 * (load_read / base_read - 1));
	printf("  unwatched pipe ping-pong %8.0f ns/trip -> %8.0f ns/trip loaded: %+6.0f ns "
	       "(%+.2f%%, target within 3%%)\n",
	       base_pp, load_pp, load_pp - base_pp, 100 * (load_pp / base_pp - 1));
	printf("  kernel floor: the ping-pong with empty programs on sched_switch%s "
	       "%8.0f ns/trip: %+6.0f ns (%+.2f%%); zernel %+.0f ns over the floor "
	       "(%+.2f%%)\n",
	       wakeup ? " and sched_wakeup" : " (the collector has none on sched_wakeup)", floor_pp, floor_pp - base_pp, 100 * (floor_pp / base_pp - 1), load_pp - floor_pp,
	       100 * (load_pp / floor_pp - 1));
	printf("  watched read(/dev/zero), never blocks: %.1f ns/call, %+.1f ns over unwatched\n",
	       w_read, w_read - load_read);
	/* Each trip: both threads block once in read and switch twice. */
	printf("  watched pipe ping-pong: %.0f ns/trip, %+.0f ns over unwatched: %.0f ns per "
	       "watched wait (2 per trip)",
	       w_pp, w_pp - load_pp, (w_pp - load_pp) / 2);
	if (ev_trip > 0)
		printf(", %.2f events/trip", ev_trip);
	printf("\n");
	fflush(stdout);
	if (bs_torch(argv[1], argv[2], shm) != 0)
		rc = 1;
cleanup:
	bs_child_stop(&unwatched);
	bs_child_stop(&watched);
	return rc;
}
