/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The webhook sender: the exporter's second process, the only one that
 * makes connections.  Forked before the sandbox, it enters a sandbox of its
 * own (sandbox.h, SANDBOX_ROLE_WEBHOOK: the allowlist with connect and name
 * lookups, no listening socket), runs the webhook queues and threads
 * (webhook.h), and takes rendered payloads from the serving process over a
 * socket pair; the serving process's allowlist then has no connect.  The
 * counts it keeps are in memory both processes share, so /metrics shows
 * them as before.  It ends when its socket reads EOF: the serving process
 * closed it (webhook_free) or is gone.
 */
#ifndef ZERNEL_WEBHOOK_SENDER_H
#define ZERNEL_WEBHOOK_SENDER_H

#include "exporter/alerts/webhook.h"
#include "exporter/sandbox/sandbox.h"

/*
 * Forks the sender for w's targets (none: nothing to do, 0).  sandbox is
 * the sandbox it enters, NULL for none (--no-sandbox).  Call while the
 * process has one thread, before the serving process's own sandbox; returns
 * once the sender is sandboxed and sending.  Returns 0 or -errno
 * (-ECHILD: the sender did not start, its log line says why).
 */
int webhook_sender_fork(struct webhook *w, const struct sandbox_opts *sandbox);

#endif /* ZERNEL_WEBHOOK_SENDER_H */
