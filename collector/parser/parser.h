/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The parser child.  What watched processes control is parsed outside the
 * collector's privileged process, as OpenSSH's and OpenBSD's privilege-
 * separated daemons do it: in a child with no capability, NO_NEW_PRIVS
 * and a seccomp filter that lets it read the descriptors it is handed,
 * manage its memory and answer, nothing else (no open, no exec, no new
 * socket, no signal to another process).  The collector opens each file
 * (it holds the capabilities that reach another container's files) and
 * hands the child the descriptor over a socket pair; the child answers
 * with a few typed figures.  Parsed there: the ELF files the probes attach
 * to (elfsyms.h) and the interpreters the Python finder reads (pyelf.h).
 *
 * A file that crashes or stalls the child costs the child: the collector
 * kills it, counts the restart (zernel_collector_parser_restarts_total),
 * and that file is an error; the next request starts another child.  The
 * child starts at the first request and ends when the collector closes
 * its end or dies.  Thread-safe: one request at a time.
 */
#ifndef ZERNEL_PARSER_H
#define ZERNEL_PARSER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collector/parser/pyelf.h"

#define PARSER_MAX_NAMES	256u	/* symbols in one request */
#define PARSER_TIMEOUT_MS	20000	/* one file's parse, libnccl's included */

/*
 * elfsyms_resolve_fd() of the file open at fd, in the child: offsets[i]
 * for names[i], 0 when none.  The number found, or -errno (-ECHILD: the
 * child died or stalled on this file, and was restarted).
 */
int parser_elf_functions(int fd, const char *const *names, size_t n, uint64_t *offsets);

/* pyelf_symbols() of the file open at fd, in the child: 0 or -errno, as above. */
int parser_elf_python(int fd, struct pyelf_syms *out);

/* Children killed or lost mid-request since start. */
uint64_t parser_restarts(void);

/* The running child's pid, 0 when none runs now. */
pid_t parser_pid(void);

/* Ends the child (it exits when its socket closes) and waits for it. */
void parser_stop(void);

#endif /* ZERNEL_PARSER_H */
