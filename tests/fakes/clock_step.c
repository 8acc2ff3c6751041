// SPDX-License-Identifier: BSD-2-Clause
/*
 * An LD_PRELOAD shim that steps the wall clock of one process, as NTP or
 * `date -s` would, without touching the machine's clock.  Test code.
 *
 *   ZERNEL_CLOCK_STEPS="AT:BY[,AT:BY...]"	(at most CLOCK_STEP_MAX)
 *
 * From CLOCK_MONOTONIC second AT on, CLOCK_REALTIME (and its coarse and
 * TAI forms, gettimeofday and time) reads BY seconds off the true time;
 * steps add up.  AT is absolute, so two processes given one string step
 * at one instant; "+AT" counts from this process's start instead.
 * CLOCK_MONOTONIC itself is never moved: that is a time namespace's job.
 *
 * The settings are read in the constructor: afterwards the shim makes no
 * system call of its own (the exporter's seccomp filter is in place by
 * then), only the clock reads the process was making anyway.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))
#define CLOCK_STEP_MAX	8
#define NS		1000000000ll

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime;
static struct { int64_t at_ns, by_ns; } steps[CLOCK_STEP_MAX];
static int n_steps;

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * NS + ts->tv_nsec;
}

static void resolve(void)
{
	/* Another library's constructor may read the clock before ours runs. */
	if (!real_clock_gettime)
		real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
}

__attribute__((constructor)) static void clock_step_init(void)
{
	const char *spec = getenv("ZERNEL_CLOCK_STEPS");
	struct timespec now;
	int64_t start_ns;

	resolve();
	if (!spec || !real_clock_gettime || real_clock_gettime(CLOCK_MONOTONIC, &now) != 0)
		return;
	start_ns = ts_ns(&now);
	while (*spec && n_steps < CLOCK_STEP_MAX) {
		int relative = *spec == '+';
		char *end;
		double at = strtod(spec + relative, &end), by;

		if (*end != ':')
			break;
		by = strtod(end + 1, &end);
		steps[n_steps].at_ns = (int64_t)(at * 1e9) + (relative ? start_ns : 0);
		steps[n_steps].by_ns = (int64_t)(by * 1e9);
		n_steps++;
		if (*end != ',')
			break;
		spec = end + 1;
	}
}

/* The wall clock's offset now, by the true monotonic clock. */
static int64_t offset_ns(void)
{
	struct timespec now;
	int64_t off = 0, mono;

	if (!n_steps || real_clock_gettime(CLOCK_MONOTONIC, &now) != 0)
		return 0;
	mono = ts_ns(&now);
	for (int i = 0; i < n_steps; i++)
		if (mono >= steps[i].at_ns)
			off += steps[i].by_ns;
	return off;
}

EXPORT int clock_gettime(clockid_t id, struct timespec *ts)
{
	int64_t t;
	int r;

	resolve();
	r = real_clock_gettime(id, ts);
	if (r != 0 || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE && id != CLOCK_TAI))
		return r;
	t = ts_ns(ts) + offset_ns();
	ts->tv_sec = (time_t)(t / NS);
	ts->tv_nsec = (long)(t % NS);
	return 0;
}

EXPORT int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	/* glibc declares tv nonnull; h2o always passes one. */
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	if (tz)
		memset(tz, 0, sizeof(struct timezone));
	return 0;
}

EXPORT time_t time(time_t *t)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
