/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A webhook receiver for tests: an HTTP/1.1 server on 127.0.0.1 in a
 * thread of the test process, which records every request (head, body,
 * arrival time) and answers with scripted statuses, or never answers.
 */
#ifndef ZERNEL_TU_HOOK_H
#define ZERNEL_TU_HOOK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define TU_HOOK_MAX_REQ 32

struct tu_hook_request {
	char head[2048];
	char body[8192];
	uint64_t at_ns;		/* CLOCK_MONOTONIC when it was read */
};

struct tu_hook {
	int fd;
	uint16_t port;
	pthread_t thread;
	atomic_int stop;
	int statuses[TU_HOOK_MAX_REQ];	/* answer to request i; 0: as the one before (200 first) */
	int mute;			/* read requests, never answer */
	pthread_mutex_t mu;
	struct tu_hook_request req[TU_HOOK_MAX_REQ];	/* the first ones */
	int n;				/* requests received */
};

/* Starts h on a free loopback port; statuses may be NULL. */
void tu_hook_start(struct tu_hook *h, const int *statuses, int n_statuses, int mute);
void tu_hook_stop(struct tu_hook *h);
/* Requests received so far. */
int tu_hook_count(struct tu_hook *h);
/* Waits until at least n requests arrived: 0, or -1 after timeout_ms. */
int tu_hook_wait(struct tu_hook *h, int n, int timeout_ms);
/* A copy of request i (i < TU_HOOK_MAX_REQ, i < count). */
void tu_hook_get(struct tu_hook *h, int i, struct tu_hook_request *out);

#endif /* ZERNEL_TU_HOOK_H */
