// SPDX-License-Identifier: BSD-2-Clause
/*
 * The webhook sender's process (see webhook_sender.h).  Unprivileged once
 * its sandbox is entered; its only input is whole payloads from the
 * serving process, one message each (SOCK_SEQPACKET keeps them whole).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/helper_proc.h"
#include "common/log.h"
#include "exporter/alerts/webhook_sender.h"

/* Where the sender keeps its end of the socket pair: nothing else stays open. */
#define SENDER_SOCK	3

static __attribute__((noreturn)) void sender_main(struct webhook *w, int sock,
						  const struct sandbox_opts *sandbox)
{
	char *buf;

	/*
	 * Its socket and the standard descriptors kept, no listening socket,
	 * no segment.  It ends when its socket reads EOF: the serving process
	 * closed it or is gone (a death signal would not outlive the
	 * sandbox's change of uid, and would cut the tries in flight short).
	 */
	if (helper_begin("zernel-webhook", sock, SENDER_SOCK, 0) != 0)
		_exit(2);
	/* The serving process's signals are its own: this one ends on EOF. */
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (sandbox) {
		struct sandbox_opts so = *sandbox;

		so.role = SANDBOX_ROLE_WEBHOOK;
		if (sandbox_enter(&so) < 0)
			_exit(2);	/* fail closed; the step is logged */
	}
	buf = malloc(WEBHOOK_MAX_PAYLOAD + 1);
	if (!buf || webhook_start(w) < 0) {
		log_error("webhook sender: cannot start: %s", strerror(ENOMEM));
		_exit(2);
	}
	/* Sandboxed and sending: the serving process may go on. */
	if (send(SENDER_SOCK, "R", 1, MSG_NOSIGNAL) != 1)
		_exit(2);
	for (;;) {
		ssize_t n = recv(SENDER_SOCK, buf, WEBHOOK_MAX_PAYLOAD + 1, MSG_TRUNC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		/* Rendered within the bound by the serving process: longer is not ours. */
		if ((size_t)n > WEBHOOK_MAX_PAYLOAD) {
			log_warnx("webhook sender: a payload of %zd bytes refused", n);
			continue;
		}
		webhook_queue_payload(w, buf, (size_t)n);
	}
	/* The serving process ended: the tries in flight end, then out. */
	webhook_free(w);
	free(buf);
	_exit(0);
}

/* The sender's "R": sandboxed and its threads started, within 10 s. */
static int sender_ready(int sock)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	char r = 0;

	return poll(&pfd, 1, 10000) == 1 && recv(sock, &r, 1, MSG_DONTWAIT) == 1 && r == 'R';
}

int webhook_sender_fork(struct webhook *w, const struct sandbox_opts *sandbox)
{
	int end, size = 4 * WEBHOOK_MAX_PAYLOAD;
	pid_t pid;

	if (!webhook_count(w))
		return 0;
	pid = helper_fork(&end);
	if (pid < 0)
		return (int)pid;
	if (pid == 0)
		sender_main(w, end, sandbox);
	/*
	 * Fail closed, as the serving process's own sandbox does: a sender
	 * that could not enter its sandbox or start says nothing but EOF
	 * (its log line names the step), and the exporter does not start.
	 */
	if (!sender_ready(end)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(end);
		return -ECHILD;
	}
	/* Room for a burst of transitions; beyond that they are dropped, counted. */
	setsockopt(end, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	webhook_use_sender(w, end);
	log_info("webhook sender: process %d sends to %zu webhooks", (int)pid, webhook_count(w));
	return 0;
}
