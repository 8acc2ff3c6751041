/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections from many loopback addresses (127.0.0.0/8 is all local), as
 * the many peers of a cluster network: the exporter shares its slots by
 * source address.
 */
#ifndef ZERNEL_TU_NET_H
#define ZERNEL_TU_NET_H

#include <stddef.h>
#include <stdint.h>

/*
 * A TCP connection from 127.x.y.z (host: the low 24 bits) to 127.0.0.1:port,
 * with a receive buffer of rcvbuf bytes when not 0 (set before connecting,
 * so the window stays that small).  Returns the descriptor, or -1.
 */
int tu_connect_from(unsigned int host, uint16_t port, int nonblock, int rcvbuf);

/*
 * A slow client: a connection from 127.x.y.z (blocking connect) that has
 * sent the first byte of a request and nothing more.  The exporter sees a
 * connection with its first bytes only (TCP_DEFER_ACCEPT), so this is the
 * least a client does to hold a slot.  Returns the descriptor, or -1.
 */
int tu_connect_slow(unsigned int host, uint16_t port);

/*
 * n slow clients, from hosts first to first + n - 1, into fd[]: every
 * connection made at once, then the byte sent on each (blocking
 * descriptors, as tu_connect_slow's).  Made one after another, the last
 * would come seconds after the first on a machine whose loopback packets
 * wait for a CPU, and the exporter would have closed the first for their
 * unfinished requests by then.  0, or -1 with none left open.
 */
int tu_connect_slow_many(int *fd, unsigned int n, unsigned int first, uint16_t port);

/*
 * Connections to 127.0.0.1:port the kernel holds half-open (SYN_RECV in
 * /proc/net/tcp): handed to no process yet; -1 unread.
 */
int tu_tcp_half_open(uint16_t port);

/* Connections waiting in the accept queue of the listener on 127.0.0.1:port; -1 unread. */
int tu_tcp_accept_queue(uint16_t port);

/*
 * Connections to 127.0.0.1:port from 127.x.y.z, host first up to n of them,
 * that a process has accepted and still holds open (ESTABLISHED, with an
 * inode); -1 unread.
 */
int tu_tcp_accepted_from(uint16_t port, unsigned int first, unsigned int n);

/* Sends text and reads the first answer line into line; "" when closed. */
void tu_exchange_line(int fd, const char *text, char *line, size_t len);

/* The descriptor limit raised to its hard limit, for thousands of connections (and children's). */
void tu_raise_nofile(void);

/* TCP memory of the whole host, in bytes (/proc/net/sockstat "TCP: ... mem"); -1 unread. */
long long tu_tcp_mem_bytes(void);

#endif /* ZERNEL_TU_NET_H */
