/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The soak: the real collector and exporter for ZERNEL_SOAK_SECONDS (180
 * in `make test`, an hour in `make soak`) under load: a watched process
 * handing a futex back and forth (scheduler events) while it launches and
 * allocates, thousands of short-lived watched children with reused pids,
 * feed clients coming and going and a scrape every second.  Samples the
 * RSS and CPU of both programs, and at the end compares the launches and
 * memory the collector published with what the workloads did.  Root (BPF).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "tests/collector/tu_probes.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define SOAK_SECONDS		180
#define SOAK_SAMPLE_S		10
#define SOAK_WARMUP_S		60	/* at least; a tenth of longer runs */
#define SOAK_HANDOFFS		50000	/* per second: about 100k events/s */
#define SOAK_CHILDREN		20	/* short-lived processes per second */
#define SOAK_CHILD_LAUNCHES	50
#define SOAK_WS_THREADS		4	/* feed clients connected at once, at most */
#define SOAK_RSS_DRIFT		0.05	/* flat within 5% after warm-up */
#define SOAK_LOG_LINES		200	/* the collector's log stays short under churn */
#define SOAK_SAMPLES_MAX	(24 * 3600 / SOAK_SAMPLE_S)

struct soak_sample {
	double at_s;
	long rss_kb[2];		/* collector, exporter */
	double cpu_s[2];	/* user + system so far */
	uint64_t events, dropped;
};

struct soak_traffic {
	uint16_t metrics_port, ws_port;
	atomic_int stop;
	atomic_uint scrapes, scrapes_failed;
	atomic_uint ws_sessions, ws_failed;
	atomic_uint scrape_worst_ms;
};

/* ZERNEL_SOAK_SECONDS, or the default; 0 when it is not 120 to 86400. */
static unsigned int soak_seconds(void)
{
	const char *v = getenv("ZERNEL_SOAK_SECONDS");
	char *end;
	unsigned long n;

	if (!v || !*v)
		return SOAK_SECONDS;
	n = strtoul(v, &end, 10);
	return !*end && n >= 120 && n <= 24 * 3600 ? (unsigned int)n : 0;
}

static long rss_kb(pid_t pid)
{
	char path[64], *text, *at;
	long kb = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	text = tu_read_file(path, NULL);
	at = text ? strstr(text, "\nVmRSS:") : NULL;
	if (at)
		kb = strtol(at + 7, NULL, 10);
	free(text);
	return kb;
}

/* utime + stime of pid, seconds (fields 14 and 15 of its stat). */
static double cpu_s(pid_t pid)
{
	char path[64], *text, *at;
	unsigned long long ut = 0, st = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	text = tu_read_file(path, NULL);
	at = text ? strrchr(text, ')') : NULL;
	if (!at || sscanf(at + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			  &ut, &st) != 2)
		ut = st = 0;
	free(text);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* A Prometheus-style scrape every second. */
static void *scraper(void *arg)
{
	struct soak_traffic *t = arg;

	while (!atomic_load(&t->stop)) {
		uint64_t t0 = now_mono_ns();
		char *m = tu_scrape(t->metrics_port);
		double up = 0;
		unsigned int ms = (unsigned int)((now_mono_ns() - t0) / 1000000);

		if (!m || tu_metric(m, "zernel_collector_up", NULL, &up) != 0 || up != 1)
			atomic_fetch_add(&t->scrapes_failed, 1);
		atomic_fetch_add(&t->scrapes, 1);
		if (ms > atomic_load(&t->scrape_worst_ms))
			atomic_store(&t->scrape_worst_ms, ms);
		free(m);
		if (ms < 1000)
			tu_sleep_ms(1000 - ms);
	}
	return NULL;
}

/*
 * One feed session: the handshake, then frames until the first snapshot
 * has come and hold_ms has passed; half close with a close frame, half
 * just hang up.  0 when a snapshot came.
 */
static int ws_session(uint16_t port, unsigned int hold_ms, int polite)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
				  "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
				  "Sec-WebSocket-Version: 13\r\n\r\n";
	/* A masked close frame with code 1000. */
	static const unsigned char bye[] = { 0x88, 0x82, 1, 2, 3, 4, 0x03 ^ 1, 0xe8 ^ 2 };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 1 };
	char buf[65536];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), upgraded = 0, got = 0;
	uint64_t until = now_mono_ns() + (uint64_t)hold_ms * 1000000ull;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1)
		goto out;
	for (int timeouts = 0; timeouts < 10 && (!got || now_mono_ns() < until);) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		char *end;

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			break;
		if (n < 0) {
			timeouts += errno != EINTR;
			continue;
		}
		if (upgraded) {
			got = 1;	/* whatever follows the handshake is the feed */
			continue;
		}
		buf[n] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (strncmp(buf, "HTTP/1.1 101", 12) != 0 || !end)
			break;
		upgraded = 1;
		got = end + 4 < buf + n;
	}
	if (polite && got && write(fd, bye, sizeof(bye)) != (ssize_t)sizeof(bye))
		got = 0;
out:
	close(fd);
	return got ? 0 : -1;
}

static void *ws_churner(void *arg)
{
	struct soak_traffic *t = arg;
	unsigned int seed = (unsigned int)(uintptr_t)pthread_self();

	for (unsigned int i = 0; !atomic_load(&t->stop); i++) {
		if (ws_session(t->ws_port, (unsigned int)rand_r(&seed) % 4000, i % 2) != 0)
			atomic_fetch_add(&t->ws_failed, 1);
		atomic_fetch_add(&t->ws_sessions, 1);
		tu_sleep_ms((unsigned int)rand_r(&seed) % 500);
	}
	return NULL;
}

/*
 * A snapshot for the figures.  A stale or busy segment is a finding, not
 * a reason to stop: it is logged and counted, and read again.
 */
static void soak_snapshot(struct tp_collector *c, unsigned int *not_ok)
{
	char reason[256];

	for (int tries = 0; tries < 100; tries++) {
		enum shm_read_status st = shm_reader_snapshot(&c->reader, &c->snap, reason,
							      sizeof(reason));

		if (st == SHM_READ_OK)
			return;
		fprintf(stderr, "soak: segment %s: %s\n", shm_read_status_name(st), reason);
		(*not_ok)++;
		tu_sleep_ms(100);
	}
	ck_abort_msg("no valid snapshot for 10 s");
}

static void sample(struct soak_sample *s, double at_s, struct tp_collector *c, pid_t exporter,
		   unsigned int *not_ok)
{
	s->at_s = at_s;
	s->rss_kb[0] = rss_kb(c->pid);
	s->rss_kb[1] = rss_kb(exporter);
	s->cpu_s[0] = cpu_s(c->pid);
	s->cpu_s[1] = cpu_s(exporter);
	soak_snapshot(c, not_ok);
	s->events = c->snap.hdr->stats.events_total;
	s->dropped = c->snap.hdr->stats.events_dropped;
}

/* Still running (not a zombie): a crash is a failure at once. */
static void assert_alive(pid_t pid, const char *who)
{
	int st;

	ck_assert_msg(waitpid(pid, &st, WNOHANG) == 0, "%s died during the soak (status 0x%x)",
		      who, st);
}

/* The value after key in a workload's totals line. */
static uint64_t total(const char *line, const char *key)
{
	const char *at = strstr(line, key);

	ck_assert_msg(at, "no %s in: %s", key, line);
	return strtoull(at + strlen(key), NULL, 10);
}

static unsigned int log_lines(const char *path)
{
	char *text = tu_read_file(path, NULL);
	unsigned int n = 0;

	for (const char *at = text; at && (at = strchr(at, '\n')); at++)
		n++;
	free(text);
	return n;
}

static uint64_t node_launches(const struct tp_collector *c)
{
	return c->snap.hdr->node[SHM_FAMILY_CUDA_LAUNCH].count;
}

/* RSS over the samples after warm-up: the first, the least and the most. */
static void rss_after_warmup(const struct soak_sample *s, unsigned int n, unsigned int first,
			     int who, long *at_warm, long *lo, long *hi)
{
	*at_warm = *lo = *hi = s[first].rss_kb[who];
	for (unsigned int i = first; i < n; i++) {
		*lo = s[i].rss_kb[who] < *lo ? s[i].rss_kb[who] : *lo;
		*hi = s[i].rss_kb[who] > *hi ? s[i].rss_kb[who] : *hi;
	}
}

static void report_process(const char *who, const struct soak_sample *s, unsigned int n,
			   unsigned int first, int k)
{
	long warm, lo, hi;
	double secs = s[n - 1].at_s - s[first].at_s;
	double cpu_lo = 1e9, cpu_hi = 0;

	rss_after_warmup(s, n, first, k, &warm, &lo, &hi);
	for (unsigned int i = first + 1; i < n; i++) {
		double pct = 100.0 * (s[i].cpu_s[k] - s[i - 1].cpu_s[k]) /
			     (s[i].at_s - s[i - 1].at_s);

		cpu_lo = pct < cpu_lo ? pct : cpu_lo;
		cpu_hi = pct > cpu_hi ? pct : cpu_hi;
	}
	fprintf(stderr, "soak: %s RSS %ld kB after warm-up, %ld..%ld kB after (%+.1f%%..%+.1f%%), "
		"%ld kB at the end; CPU %.1f%% of a core on average, %.1f..%.1f%% per %d s\n",
		who, warm, lo, hi, 100.0 * ((double)lo - (double)warm) / (double)warm,
		100.0 * ((double)hi - (double)warm) / (double)warm, s[n - 1].rss_kb[k],
		100.0 * (s[n - 1].cpu_s[k] - s[first].cpu_s[k]) / secs, cpu_lo, cpu_hi,
		SOAK_SAMPLE_S);
}

static void start_load(struct tp_workload *steady, struct tp_workload *churn)
{
	char zw[512], lib[512], rate[16], children[16], each[16];
	char *steady_argv[] = { zw, lib, "steady", rate, NULL };
	char *churn_argv[] = { zw, lib, "churn", children, each, NULL };

	tu_build_path(zw, sizeof(zw), "tests/workloads/zw_soak");
	tp_fake(lib, sizeof(lib), "libcuda.so.1");
	snprintf(rate, sizeof(rate), "%d", SOAK_HANDOFFS);
	snprintf(children, sizeof(children), "%d", SOAK_CHILDREN);
	snprintf(each, sizeof(each), "%d", SOAK_CHILD_LAUNCHES);
	ck_assert_int_eq(tp_workload_start(steady, steady_argv), 0);
	ck_assert_int_eq(tp_workload_expect(steady, "READY", 5000), 0);
	ck_assert_int_eq(tp_workload_start(churn, churn_argv), 0);
	ck_assert_int_eq(tp_workload_expect(churn, "READY", 5000), 0);
}

/* Stops a workload and reads its totals line. */
static void stop_load(struct tp_workload *w, char *line, size_t len)
{
	tp_workload_go(w);
	ck_assert_int_eq(tp_workload_collect(w, "DONE", line, len, 30000), 0);
	line[strcspn(line, "\n")] = '\0';
}

START_TEST(test_soak)
{
	unsigned int secs = soak_seconds();
	unsigned int warm = secs / 10 > SOAK_WARMUP_S ? secs / 10 : SOAK_WARMUP_S;
	struct soak_sample *s = calloc(SOAK_SAMPLES_MAX + 2, sizeof(*s));
	struct soak_traffic t = { 0 };
	struct tp_collector c;
	struct tu_stack x;
	struct tp_workload steady, churn;
	pthread_t scrape_th, ws_th[SOAK_WS_THREADS];
	char steady_line[512], churn_line[512];
	uint64_t t0, launches0, want_launches, evicted0;
	unsigned int n = 0, first = 0, not_ok = 0;
	const struct shm_proc *p;
	const struct shm_gpu_mem *m = NULL;
	uint64_t overflows = 0;
	long warm_kb, lo, hi;

	if (tu_skip_unless_root("test_soak"))
		return;
	ck_assert_msg(secs, "ZERNEL_SOAK_SECONDS=%s: want 120 to 86400",
		      getenv("ZERNEL_SOAK_SECONDS"));
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(tp_collector_start_fakes(&c) == 0, "collector did not start, see %s", c.log);
	tu_stack_init(&x);
	snprintf(x.shm, sizeof(x.shm), "%s", c.shm);
	ck_assert_int_eq(tu_stack_start_exporter(&x), 0);
	ck_assert_int_eq(tu_stack_wait_up(&x, 10000), 0);
	ck_assert_int_eq(tp_snapshot(&c), 0);
	launches0 = node_launches(&c);
	evicted0 = c.snap.hdr->stats.processes_evicted;

	start_load(&steady, &churn);
	t.metrics_port = x.metrics_port;
	t.ws_port = x.ws_port;
	pthread_create(&scrape_th, NULL, scraper, &t);
	for (int i = 0; i < SOAK_WS_THREADS; i++)
		pthread_create(&ws_th[i], NULL, ws_churner, &t);

	t0 = now_mono_ns();
	for (;;) {
		double at = (double)(now_mono_ns() - t0) / 1e9;

		assert_alive(c.pid, "zernel-collector");
		assert_alive(x.exporter, "zernel-exporter");
		sample(&s[n], at, &c, x.exporter, &not_ok);
		if (n)
			fprintf(stderr, "soak: %5.0f s: %6.0f events/s, %6.0f dropped/s; RSS %ld + "
				"%ld kB\n", at,
				(double)(s[n].events - s[n - 1].events) / (at - s[n - 1].at_s),
				(double)(s[n].dropped - s[n - 1].dropped) / (at - s[n - 1].at_s),
				s[n].rss_kb[0], s[n].rss_kb[1]);
		if (!first && at >= warm)
			first = n;
		if (++n > SOAK_SAMPLES_MAX || at >= secs)
			break;
		tu_sleep_ms(SOAK_SAMPLE_S * 1000);
	}
	atomic_store(&t.stop, 1);
	pthread_join(scrape_th, NULL);
	for (int i = 0; i < SOAK_WS_THREADS; i++)
		pthread_join(ws_th[i], NULL);
	stop_load(&steady, steady_line, sizeof(steady_line));
	stop_load(&churn, churn_line, sizeof(churn_line));

	/* What the workloads did, published once the children have gone. */
	want_launches = total(steady_line, "launches ") + total(churn_line, "launches ");
	for (int tries = 0; tries < 100; tries++) {
		ck_assert_int_eq(tp_wait_publish(&c), 0);
		p = tp_proc(&c, (uint32_t)steady.pid);
		if (p && p->lat[SHM_FAMILY_CUDA_LAUNCH].count == total(steady_line, "launches ") &&
		    node_launches(&c) - launches0 >= want_launches &&
		    c.snap.hdr->stats.processes_evicted - evicted0 >= total(churn_line, "children "))
			break;
		tu_sleep_ms(100);
	}
	for (unsigned int i = 0; i < SHM_TABLE_COUNT; i++)
		overflows += c.snap.hdr->table[i].overflows;
	{
		uint32_t rows;
		const struct shm_gpu_mem *all = shm_snapshot_gpu_mem(&c.snap, &rows);

		for (uint32_t i = 0; all && i < rows; i++)
			if (all[i].pid == (uint32_t)steady.pid)
				m = &all[i];
	}
	p = tp_proc(&c, (uint32_t)steady.pid);

	fprintf(stderr, "soak: %u s, %u samples, warm-up %u s; %s; %s\n", secs, n, warm,
		steady_line, churn_line);
	fprintf(stderr, "soak: %.0f events/s after warm-up, %llu dropped, %llu table overflows, "
		"%llu processes evicted\n",
		(double)(s[n - 1].events - s[first].events) / (s[n - 1].at_s - s[first].at_s),
		(unsigned long long)c.snap.hdr->stats.events_dropped,
		(unsigned long long)overflows,
		(unsigned long long)(c.snap.hdr->stats.processes_evicted - evicted0));
	fprintf(stderr, "soak: launches done %llu, published %llu; steady launches %llu published, "
		"memory %llu bytes in %llu allocs and %llu frees published\n",
		(unsigned long long)want_launches,
		(unsigned long long)(node_launches(&c) - launches0),
		(unsigned long long)(p ? p->lat[SHM_FAMILY_CUDA_LAUNCH].count : 0),
		(unsigned long long)(m ? m->used_bytes : 0),
		(unsigned long long)(m ? m->alloc_calls : 0),
		(unsigned long long)(m ? m->free_calls : 0));
	fprintf(stderr, "soak: scrapes %u, failed %u, slowest %u ms; feed sessions %u, failed %u; "
		"segment not fresh at %u of %u samples\n",
		atomic_load(&t.scrapes), atomic_load(&t.scrapes_failed),
		atomic_load(&t.scrape_worst_ms), atomic_load(&t.ws_sessions),
		atomic_load(&t.ws_failed), not_ok, n);
	fprintf(stderr, "soak: the collector logged %u lines\n", log_lines(c.log));
	report_process("collector", s, n, first, 0);
	report_process("exporter", s, n, first, 1);

	/* Nothing lost that was not counted as lost. */
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->lat[SHM_FAMILY_CUDA_LAUNCH].count, total(steady_line, "launches "));
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->used_bytes, total(steady_line, "held "));
	ck_assert_uint_eq(m->alloc_calls, total(steady_line, "allocs "));
	ck_assert_uint_eq(m->free_calls, total(steady_line, "frees "));
	ck_assert_uint_eq(node_launches(&c) - launches0, want_launches);
	ck_assert_uint_ge(c.snap.hdr->stats.processes_evicted - evicted0,
			  total(churn_line, "children "));
	ck_assert_uint_eq(total(churn_line, "failed "), 0);
	/* Pids are reused where ns_last_pid may be written (root, outside a container). */
	if (access("/proc/sys/kernel/ns_last_pid", W_OK) == 0)
		ck_assert_uint_gt(total(churn_line, "reused "), 0);
	ck_assert_uint_eq(overflows, 0);
	/* Thousands of processes come and go without a line each. */
	ck_assert_uint_lt(log_lines(c.log), SOAK_LOG_LINES);
	/* Every scrape and feed session but one in a hundred answered. */
	ck_assert_uint_le(atomic_load(&t.scrapes_failed) * 100, atomic_load(&t.scrapes));
	ck_assert_uint_le(atomic_load(&t.ws_failed) * 100, atomic_load(&t.ws_sessions));
	/* Flat memory after warm-up. */
	for (int k = 0; k < 2; k++) {
		rss_after_warmup(s, n, first, k, &warm_kb, &lo, &hi);
		ck_assert_msg(fabs((double)(hi - warm_kb)) <= SOAK_RSS_DRIFT * (double)warm_kb &&
			      fabs((double)(warm_kb - lo)) <= SOAK_RSS_DRIFT * (double)warm_kb,
			      "%s RSS %ld kB after warm-up, then %ld..%ld kB",
			      k ? "exporter" : "collector", warm_kb, lo, hi);
	}

	tp_workload_finish(&steady);
	tp_workload_finish(&churn);
	tu_stack_stop_exporter(&x);
	tp_collector_stop(&c);
	tu_stack_stop(&x);
	free(s);
}
END_TEST

Suite *soak_suite(void);
Suite *soak_suite(void)
{
	Suite *s = suite_create("soak");
	TCase *tc = tcase_create("soak");

	/* The run, then up to ten minutes for start-up and the final figures. */
	tcase_set_timeout(tc, (double)soak_seconds() + 600);
	tcase_add_test(tc, test_soak);
	suite_add_tcase(s, tc);
	return s;
}
