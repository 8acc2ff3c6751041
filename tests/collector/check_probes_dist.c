/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Distributed-sync waits against ground truth: a condition variable
 * signalled after a known delay (futex waits), and a two-thread barrier
 * where one thread arrives a known time late (barrier waits, whose own
 * futex waits must not count again).  Root (BPF).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/testutil.h"
#include "tests/collector/tu_waits.h"

#define DS_ITEMS	20
#define DS_DELAY_MS	15

/*
 * Ground truth: the workload times each pthread_cond_wait and
 * pthread_barrier_wait itself and asks the kernel whether it slept, so the
 * tests know how many waits lasted about the delay, (10 ms, 50 ms], even
 * when a busy machine makes a thread fall behind now and then.  The median
 * of the waits lies in [delay - 1 ms - 1/64, delay + 5 ms].  Other waits
 * (pthread_join, short mutex handovers, the late thread's barrier calls)
 * fall outside that range.
 */
#define DS_P50_LO	(DS_DELAY_MS * TW_MS - DS_DELAY_MS * TW_MS / 64 - TW_MS)
#define DS_P50_HI	((DS_DELAY_MS + 5) * TW_MS)

struct ds_run {
	struct tp_collector c;
	struct tw_work watched, twin;
};

static void ds_run_pair(struct ds_run *r, const char *const *args)
{
	ck_assert_int_eq(tw_start(&r->watched, args), 0);
	ck_assert_int_eq(tw_start(&r->twin, args), 0);
	ck_assert_msg(tw_collector_watch_pid(&r->c, r->watched.pid) == 0,
		      "collector did not start; see %s", r->c.log);
	tw_go(&r->watched);
	tw_go(&r->twin);
	ck_assert_int_eq(tw_wait_line(&r->watched, "done", 10000), 0);
	ck_assert_int_eq(tw_wait_line(&r->twin, "done", 10000), 0);
	ck_assert_int_eq(tw_settle(&r->c), 0);
	/* The same work in a process nobody asked for is not reported. */
	ck_assert_ptr_null(tp_proc(&r->c, (uint32_t)r->twin.pid));
}

static void ds_run_end(struct ds_run *r)
{
	tw_finish(&r->watched);
	tw_finish(&r->twin);
	tp_collector_stop(&r->c);
}

START_TEST(dist_condvar_waits_match_signal_delay)
{
	static const char *const args[] = { "futex", "20", "15", NULL };
	struct ds_run r;
	const struct shm_proc *p;
	const struct shm_latency *l;
	long long longs;

	if (tu_skip_unless_root("dist_condvar_waits_match_signal_delay"))
		return;
	ds_run_pair(&r, args);
	p = tp_proc(&r.c, (uint32_t)r.watched.pid);
	ck_assert_ptr_nonnull(p);
	l = &p->lat[SHM_FAMILY_FUTEX_WAIT];
	longs = tw_value(&r.watched, "cond_long");
	ck_assert_int_ge(longs, DS_ITEMS / 2);
	tw_assert_band(tw_bucket_count(l, 10 * TW_MS, 50 * TW_MS), &r.watched, "cond_long",
		       "condition waits in (10 ms, 50 ms]");
	/* Plus maybe pthread_join and a few short mutex handovers. */
	ck_assert_uint_ge(l->count, (uint64_t)tw_value(&r.watched, "cond_waits"));
	ck_assert_uint_le(l->count, 2 * DS_ITEMS + 1);
	ck_assert_uint_ge(l->window_p50_ns, DS_P50_LO);
	ck_assert_uint_le(l->window_p50_ns, DS_P50_HI);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_BARRIER_WAIT].count, 0);
	ds_run_end(&r);
}
END_TEST

START_TEST(dist_barrier_waits_counted_once_as_barrier)
{
	static const char *const args[] = { "barrier", "20", "15", NULL };
	struct ds_run r;
	const struct shm_proc *p;
	const struct shm_latency *b, *f;

	if (tu_skip_unless_root("dist_barrier_waits_counted_once_as_barrier"))
		return;
	ds_run_pair(&r, args);
	p = tp_proc(&r.c, (uint32_t)r.watched.pid);
	ck_assert_ptr_nonnull(p);
	b = &p->lat[SHM_FAMILY_BARRIER_WAIT];
	f = &p->lat[SHM_FAMILY_FUTEX_WAIT];
	/* Every call, the early thread's (the delay) and the late one's (~0). */
	ck_assert_uint_eq(b->count, 2 * DS_ITEMS);
	ck_assert_int_eq(tw_value(&r.watched, "barrier_calls"), 2 * DS_ITEMS);
	ck_assert_int_ge(tw_value(&r.watched, "barrier_long"), DS_ITEMS / 2);
	tw_assert_band(tw_bucket_count(b, 10 * TW_MS, 50 * TW_MS), &r.watched, "barrier_long",
		       "barrier waits in (10 ms, 50 ms]");
	tw_assert_band(tw_bucket_count(b, 0, 10 * TW_MS), &r.watched, "barrier_short",
		       "barrier waits in (0, 10 ms]");
	/*
	 * The barrier's futex waits are not counted a second time: counted
	 * again, each of its long waits would be a long futex wait too.  A
	 * mutex handover or the final join that a busy machine stretches past
	 * 10 ms may be one, so the bound is half the long barrier waits.
	 */
	ck_assert_msg(2 * tw_bucket_count(f, 10 * TW_MS, 50 * TW_MS) <
		      (uint64_t)tw_value(&r.watched, "barrier_long"),
		      "%llu long futex waits beside %lld long barrier waits",
		      (unsigned long long)tw_bucket_count(f, 10 * TW_MS, 50 * TW_MS),
		      tw_value(&r.watched, "barrier_long"));
	ds_run_end(&r);
}
END_TEST

/* The path of the libc this process maps, into buf; 0 or -1. */
static int ds_own_libc(char *buf, size_t len)
{
	char *maps = tu_read_file("/proc/self/maps", NULL);
	int rc = -1;

	for (char *s = maps; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
		char *path = strchr(s, '/');
		size_t n = strcspn(s, "\n");

		if (!path || path > s + n)
			continue;
		n -= (size_t)(path - s);
		if (n > 10 && strncmp(path + n - 10, "/libc.so.6", 10) == 0 && n < len) {
			memcpy(buf, path, n);
			buf[n] = '\0';
			rc = 0;
			break;
		}
	}
	free(maps);
	return rc;
}

/* Whether pid's maps name a file under dir. */
static int ds_maps_under(pid_t pid, const char *dir)
{
	char path[64], *maps;
	int in;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(maps);
	in = strstr(maps, dir) != NULL;
	free(maps);
	return in;
}

/* Every barrier call of pid counted, the long ones as the workload timed them. */
static void ds_check_barriers(const struct ds_run *r, pid_t pid)
{
	const struct shm_proc *p = tp_proc(&r->c, (uint32_t)pid);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_BARRIER_WAIT].count, 2 * DS_ITEMS);
	tw_assert_band(tw_bucket_count(&p->lat[SHM_FAMILY_BARRIER_WAIT], 10 * TW_MS, 50 * TW_MS),
		       &r->watched, "barrier_long", "barrier waits in (10 ms, 50 ms]");
}

/*
 * A process with its own copy of libc (a container, a bundled runtime):
 * the collector finds that libc from the process's first futex wait and
 * probes pthread_barrier_wait there too.
 */
START_TEST(dist_barrier_in_private_libc_is_probed)
{
	static const char *const args[] = { "barrier", "20", "15", NULL };
	char libc[512], dir[128];
	struct ds_run r;

	if (tu_skip_unless_root("dist_barrier_in_private_libc_is_probed"))
		return;
	ck_assert_int_eq(ds_own_libc(libc, sizeof(libc)), 0);
	snprintf(dir, sizeof(dir), "/tmp/zernel-libc-%d", (int)getpid());
	ck_assert_int_eq(tu_system("mkdir -p %s && cp %s %s/libc.so.6", dir, libc, dir), 0);
	setenv("LD_LIBRARY_PATH", dir, 1);
	ds_run_pair(&r, args);
	unsetenv("LD_LIBRARY_PATH");

	/* It really ran on the copy. */
	ck_assert(ds_maps_under(r.watched.pid, dir));
	ds_check_barriers(&r, r.watched.pid);
	ds_run_end(&r);
	tu_system("rm -rf %s", dir);
}
END_TEST

/*
 * A child that runs a new program may map another libc than its parent's,
 * although it inherited the parent's "libc reported" at the fork: the exec
 * clears that, so its first futex wait asks for its own libc.  The parent
 * waits first on the node's libc; the child execs onto a private copy.
 */
START_TEST(dist_barrier_after_exec_onto_private_libc_is_probed)
{
	static const char *const args[] = { "barrier", "20", "15", "exec", NULL };
	char libc[512], dir[128];
	struct ds_run r;
	pid_t child;

	if (tu_skip_unless_root("dist_barrier_after_exec_onto_private_libc_is_probed"))
		return;
	ck_assert_int_eq(ds_own_libc(libc, sizeof(libc)), 0);
	snprintf(dir, sizeof(dir), "/tmp/zernel-libc-exec-%d", (int)getpid());
	ck_assert_int_eq(tu_system("mkdir -p %s && cp %s %s/libc.so.6", dir, libc, dir), 0);
	setenv("ZS_EXEC_LD_LIBRARY_PATH", dir, 1);
	ds_run_pair(&r, args);
	unsetenv("ZS_EXEC_LD_LIBRARY_PATH");

	child = (pid_t)tw_value(&r.watched, "worker");
	ck_assert_int_gt(child, 0);
	ck_assert_int_ne(child, r.watched.pid);
	/* The child really ran on the copy, its parent on the node's libc. */
	ck_assert(ds_maps_under(child, dir));
	ck_assert(!ds_maps_under(r.watched.pid, dir));
	ds_check_barriers(&r, child);
	ds_run_end(&r);
	tu_system("rm -rf %s", dir);
}
END_TEST

Suite *probes_dist_suite(void);
Suite *probes_dist_suite(void)
{
	Suite *s = suite_create("probes_dist");
	TCase *tc = tcase_create("sync");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, dist_condvar_waits_match_signal_delay);
	tcase_add_test(tc, dist_barrier_waits_counted_once_as_barrier);
	tcase_add_test(tc, dist_barrier_in_private_libc_is_probed);
	tcase_add_test(tc, dist_barrier_after_exec_onto_private_libc_is_probed);
	suite_add_tcase(s, tc);
	return s;
}
