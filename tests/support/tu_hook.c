/* SPDX-License-Identifier: BSD-2-Clause */
/* Test webhook receiver; see tu_hook.h. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "tests/support/testutil.h"
#include "tests/support/tu_hook.h"

/* Reads one request (headers and Content-Length body) within 2 s. */
static int read_request(int c, struct tu_hook_request *r)
{
	static __thread char buf[16384];
	size_t got = 0, need = 0;
	uint64_t deadline = now_mono_ns() + 2 * NSEC_PER_SEC;

	for (;;) {
		struct pollfd p = { .fd = c, .events = POLLIN };
		char *end;
		ssize_t k;

		if (now_mono_ns() > deadline || poll(&p, 1, 100) < 0)
			return -1;
		if (!(p.revents & POLLIN))
			continue;
		k = recv(c, buf + got, sizeof(buf) - 1 - got, 0);
		if (k <= 0)
			return -1;
		got += (size_t)k;
		buf[got] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end && !need) {
			const char *cl = strcasestr(buf, "\r\nContent-Length:");
			size_t hl = (size_t)(end - buf) + 4;

			need = hl + (cl ? strtoul(cl + 17, NULL, 10) : 0);
			snprintf(r->head, sizeof(r->head), "%.*s", (int)hl, buf);
		}
		if (need && got >= need) {
			size_t hl = strlen(r->head);

			snprintf(r->body, sizeof(r->body), "%.*s", (int)(need - hl), buf + hl);
			return 0;
		}
		if (got == sizeof(buf) - 1)
			return -1;
	}
}

static void *hook_thread(void *arg)
{
	struct tu_hook *h = arg;
	struct tu_hook_request *r = calloc(1, sizeof(*r));

	while (r && !atomic_load(&h->stop)) {
		struct pollfd p = { .fd = h->fd, .events = POLLIN };
		char resp[128];
		int c, st = 0, i;

		if (poll(&p, 1, 50) <= 0)
			continue;
		c = accept(h->fd, NULL, NULL);
		if (c < 0)
			continue;
		memset(r, 0, sizeof(*r));
		if (read_request(c, r) == 0) {
			r->at_ns = now_mono_ns();
			pthread_mutex_lock(&h->mu);
			i = h->n < TU_HOOK_MAX_REQ ? h->n : TU_HOOK_MAX_REQ - 1;
			if (h->n < TU_HOOK_MAX_REQ)
				h->req[i] = *r;
			h->n++;
			for (int k = i; !st && k >= 0; k--)
				st = h->statuses[k];
			pthread_mutex_unlock(&h->mu);
			if (h->mute) {
				while (!atomic_load(&h->stop))
					tu_sleep_ms(20);
			} else {
				snprintf(resp, sizeof(resp), "HTTP/1.1 %d X\r\nContent-Length: 2\r\n"
					 "Connection: close\r\n\r\nok", st ? st : 200);
				if (send(c, resp, strlen(resp), MSG_NOSIGNAL) < 0)
					perror("tu_hook: send");
			}
		}
		close(c);
	}
	free(r);
	return NULL;
}

void tu_hook_start(struct tu_hook *h, const int *statuses, int n_statuses, int mute)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t sl = sizeof(a);

	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->mu, NULL);
	for (int i = 0; statuses && i < n_statuses && i < TU_HOOK_MAX_REQ; i++)
		h->statuses[i] = statuses[i];
	h->mute = mute;
	h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(h->fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(h->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(h->fd, 64), 0);
	ck_assert_int_eq(getsockname(h->fd, (struct sockaddr *)&a, &sl), 0);
	h->port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&h->thread, NULL, hook_thread, h), 0);
}

void tu_hook_stop(struct tu_hook *h)
{
	atomic_store(&h->stop, 1);
	pthread_join(h->thread, NULL);
	close(h->fd);
	pthread_mutex_destroy(&h->mu);
}

int tu_hook_count(struct tu_hook *h)
{
	int n;

	pthread_mutex_lock(&h->mu);
	n = h->n;
	pthread_mutex_unlock(&h->mu);
	return n;
}

int tu_hook_wait(struct tu_hook *h, int n, int timeout_ms)
{
	for (int t = 0; t < timeout_ms; t += 10) {
		if (tu_hook_count(h) >= n)
			return 0;
		tu_sleep_ms(10);
	}
	return tu_hook_count(h) >= n ? 0 : -1;
}

void tu_hook_get(struct tu_hook *h, int i, struct tu_hook_request *out)
{
	pthread_mutex_lock(&h->mu);
	*out = h->req[i < TU_HOOK_MAX_REQ ? i : TU_HOOK_MAX_REQ - 1];
	pthread_mutex_unlock(&h->mu);
}
