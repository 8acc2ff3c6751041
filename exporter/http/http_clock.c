/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The clock h2o's event loop reads.  libh2o-evloop times every request,
 * idle and write timeout with gettimeofday(), the wall clock.  When that
 * clock steps back (NTP, date -s), a timeout set before the step waits as
 * long as the step on top of its own length, and so does every timeout set
 * after it, h2o's lists being in the order they were set: slow connections
 * are no longer cut.  A step forward expires them all at once, cutting
 * responses in flight.
 *
 * This gettimeofday() is the wall clock as it read at start plus
 * CLOCK_MONOTONIC since: it never steps.  Defined in the program, it is the
 * one the libraries' calls bind to.  The exporter's own wall-clock stamps
 * (alerts, its start time) read CLOCK_REALTIME and follow the steps.
 * Unprivileged; no system call but the vDSO's clock reads.
 */
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static int64_t mono_to_real_ns;	/* CLOCK_REALTIME - CLOCK_MONOTONIC at start */
static int have_base;

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Before main: the threads that read the clock start later. */
__attribute__((constructor)) static void http_clock_init(void)
{
	mono_to_real_ns = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
	have_base = 1;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	/* A library's constructor may ask before ours ran: the wall clock then. */
	int64_t t = have_base ? clock_ns(CLOCK_MONOTONIC) + mono_to_real_ns :
				clock_ns(CLOCK_REALTIME);

	tv->tv_sec = (time_t)(t / 1000000000);
	tv->tv_usec = (suseconds_t)(t % 1000000000 / 1000);
	if (tz)
		memset(tz, 0, sizeof(struct timezone));
	return 0;
}
