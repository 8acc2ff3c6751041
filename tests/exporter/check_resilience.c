/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The running exporter and collector under damage: a live segment whose
 * header fields and table descriptors have bits flipped (reported invalid
 * at once, healed by the next publish, nothing restarted) and a writer
 * stuck mid-publish (answered "busy" at once, at the normal request rate).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "shm/shm_layout.h"
#include "shm/shm_writer.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_exporter.h"

#define BODY_MAX	(16u << 20)

static struct tu_stack rig;

static void rig_teardown(void)
{
	tu_stack_stop(&rig);
}

/* zernel_collector_up and the status the exporter gives now, from one scrape. */
static double scrape_up(char *status, size_t len)
{
	char *body = tu_scrape(rig.metrics_port);
	static const char *const names[] = { "ok", "stale", "busy", "missing", "invalid" };
	double up = NAN, v;

	ck_assert_ptr_nonnull(body);
	if (tu_metric(body, "zernel_collector_up", NULL, &v) == 0)
		up = v;
	status[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char want[32];

		snprintf(want, sizeof(want), "status=\"%s\"", names[i]);
		if (tu_metric(body, "zernel_collector_status", want, &v) == 0 && v == 1)
			snprintf(status, len, "%s", names[i]);
	}
	free(body);
	return up;
}

/* Waits for a publish to end: seq moves on and is even. */
static void wait_publish(const volatile struct shm_header_fields *h)
{
	uint64_t s0 = h->seq;

	for (int i = 0; i < 600; i++) {
		uint64_t s = h->seq;

		if (s != s0 && !(s & 1))
			return;
		tu_sleep_ms(5);
	}
	ck_abort_msg("the collector stopped publishing");
}

struct flip {
	const char *what;
	size_t off;		/* in the header */
	unsigned int width;	/* bytes */
	unsigned int bit;
};

START_TEST(live_header_bit_flips_are_invalid_at_once_then_heal)
{
	struct flip flips[8 + 3 * SHM_TABLE_COUNT];
	size_t n = 0;
	volatile struct shm_header_fields *h;
	pid_t collector, exporter;
	char status[16];
	void *map;
	int fd;

	flips[n++] = (struct flip){ "magic", offsetof(struct shm_header_fields, magic), 8, 0 };
	flips[n++] = (struct flip){ "magic", offsetof(struct shm_header_fields, magic), 8, 63 };
	flips[n++] = (struct flip){ "layout_version",
				    offsetof(struct shm_header_fields, layout_version), 4, 0 };
	flips[n++] = (struct flip){ "header_size",
				    offsetof(struct shm_header_fields, header_size), 4, 31 };
	flips[n++] = (struct flip){ "total_size",
				    offsetof(struct shm_header_fields, total_size), 8, 6 };
	flips[n++] = (struct flip){ "mode", offsetof(struct shm_header_fields, mode), 4, 4 };
	for (int t = 0; t < SHM_TABLE_COUNT; t++) {
		size_t base = offsetof(struct shm_header_fields, table) +
			      (size_t)t * sizeof(struct shm_table);

		flips[n++] = (struct flip){ "table offset",
					    base + offsetof(struct shm_table, offset), 8, 63 };
		flips[n++] = (struct flip){ "table entry_size",
					    base + offsetof(struct shm_table, entry_size), 4, 0 };
		flips[n++] = (struct flip){ "table capacity",
					    base + offsetof(struct shm_table, capacity), 4, 31 };
	}

	ck_assert_int_eq(tu_stack_start(&rig, "steady", 1000, 0), 0);
	collector = rig.collector;
	exporter = rig.exporter;
	fd = shm_open(rig.shm, O_RDWR, 0);
	ck_assert_int_ge(fd, 0);
	map = mmap(NULL, SHM_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	h = map;

	for (size_t i = 0; i < n; i++) {
		volatile uint8_t *byte = (volatile uint8_t *)map + flips[i].off + flips[i].bit / 8;
		double up = 0;
		int healed_ms;

		wait_publish(h);
		*byte ^= (uint8_t)(1u << (flips[i].bit % 8));
		up = scrape_up(status, sizeof(status));
		ck_assert_msg(up == 0 && strcmp(status, "invalid") == 0,
			      "%s bit %u flipped: up %g, status %s", flips[i].what, flips[i].bit,
			      up, status);
		for (healed_ms = 0; healed_ms < 4000; healed_ms += 50) {
			tu_sleep_ms(50);
			if (scrape_up(status, sizeof(status)) == 1)
				break;
		}
		ck_assert_msg(healed_ms < 4000, "%s bit %u: not healed after 4 s (status %s)",
			      flips[i].what, flips[i].bit, status);
		fprintf(stderr, "flip %-16s bit %2u: invalid at once, up again after %d ms\n",
			flips[i].what, flips[i].bit, healed_ms + 50);
	}
	/* Nothing was restarted. */
	ck_assert_int_eq(rig.collector, collector);
	ck_assert_int_eq(rig.exporter, exporter);
	ck_assert_int_eq(waitpid(collector, NULL, WNOHANG), 0);
	ck_assert_int_eq(waitpid(exporter, NULL, WNOHANG), 0);
	munmap(map, SHM_HEADER_SIZE);
	close(fd);
}
END_TEST

/* Seconds that n scrapes of /metrics take, each answered 200. */
static double time_scrapes(unsigned int n, const char *want_status)
{
	char *body = malloc(BODY_MAX);
	uint64_t t0 = now_mono_ns();

	ck_assert_ptr_nonnull(body);
	for (unsigned int i = 0; i < n; i++) {
		double v;
		char want[32];

		ck_assert_int_eq(tu_http_request(rig.metrics_port, "GET", "/metrics", body,
						 BODY_MAX), 200);
		snprintf(want, sizeof(want), "status=\"%s\"", want_status);
		ck_assert_msg(tu_metric(body, "zernel_collector_status", want, &v) == 0 && v == 1,
			      "scrape %u: status is not %s", i, want_status);
	}
	free(body);
	return (double)(now_mono_ns() - t0) / 1e9;
}

/*
 * A writer that died mid-publish leaves seq odd.  Each request must answer
 * "busy" at once: no retry sleeps on the request thread.
 */
START_TEST(stuck_seqlock_costs_requests_nothing)
{
	struct shm_writer_opts o;
	struct shm_writer w;
	double normal, busy;
	const unsigned int n = 300;
	char health[512];

	tu_stack_init(&rig);
	tu_shm_opts(&o, rig.shm, (struct shm_capacity){ 64, 64, 8, 16 });
	o.publish_interval_ms = 10000;	/* stays fresh for the whole test */
	ck_assert_int_eq(shm_writer_create(&w, &o), 0);
	shm_writer_begin(&w);
	w.base->h.heartbeat_mono_ns = now_mono_ns();
	w.base->h.heartbeat_real_ns = now_real_ns();
	shm_writer_end(&w);
	ck_assert_int_eq(tu_stack_start_exporter(&rig), 0);

	normal = time_scrapes(n, "ok");
	shm_writer_begin(&w);		/* and never end */
	busy = time_scrapes(n, "busy");
	ck_assert_int_eq(tu_http_request(rig.metrics_port, "GET", "/healthz", health,
					 sizeof(health)), 503);
	ck_assert_msg(strstr(health, "busy"), "/healthz does not say busy: %s", health);
	fprintf(stderr, "stuck seqlock: %u scrapes %.3f s normal, %.3f s busy "
		"(%.0f and %.0f per second, ratio %.2f)\n", n, normal, busy, n / normal,
		n / busy, busy / normal);
	ck_assert_msg(busy < 2 * normal, "busy scrapes %.3f s, normal %.3f s", busy, normal);
	shm_writer_close(&w, 1);
}
END_TEST

Suite *resilience_suite(void);
Suite *resilience_suite(void)
{
	Suite *s = suite_create("resilience");
	TCase *seg = tcase_create("segment");

	tcase_add_checked_fixture(seg, NULL, rig_teardown);
	tcase_set_timeout(seg, 120);
	tcase_add_test(seg, live_header_bit_flips_are_invalid_at_once_then_heal);
	tcase_add_test(seg, stuck_seqlock_costs_requests_nothing);
	suite_add_tcase(s, seg);
	return s;
}
