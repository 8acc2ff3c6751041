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
 * to (elfsyms.h), the interpreters the Python finder reads (pyelf.h) and
 * the environments of watched processes (proc_env.h: ranks, job, GPU
 * selection), their cgroup files (cgroup_id.h: container, pod, Slurm
 * job), the kubelet's log directory names (kube_names.h: namespace, pod,
 * container), the code objects of Python frames (pycode.h: the str
 * objects and line tables of the watched process) and the structure
 * offsets an interpreter publishes (pydebug.h: _Py_DebugOffsets), read
 * through the /proc/PID/mem the collector opened, whose answers the
 * collector checks field by field before it keeps them.
 *
 * A file that crashes or stalls the child costs the child: the collector
 * kills it, counts the restart (zernel_collector_parser_restarts_total),
 * and that file is an error; so is an answer that no honest parse gives; the next request starts another child.  The
 * child starts at the first request and ends when the collector closes
 * its end or dies.  Thread-safe: one request at a time.
 */
#ifndef ZERNEL_PARSER_H
#define ZERNEL_PARSER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collector/identity/cgroup_id.h"
#include "collector/identity/kube_names.h"
#include "collector/parser/pyelf.h"
#include "collector/proc/proc_env.h"
#include "collector/python/pycode.h"

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

/*
 * proc_env_read() of pid, with the environment opened here and read and
 * parsed in the child: 0, -errno as proc_env_read() returns them, or
 * -ECHILD (the child died, stalled or lied on it, and was restarted).  out
 * is always fully written; nothing is kept but on 0.
 */
int parser_environ(pid_t pid, struct proc_env *out);
/* The same of the environment open at fd (proc_env_open, at its start), which it closes. */
int parser_environ_fd(int fd, struct proc_env *out);

/*
 * cgroup_id_read() of pid, the file opened here and read and parsed in
 * the child: 0 or -errno as cgroup_id_read() returns them (out says what
 * the file named, even with -EBADMSG), or -ECHILD as above (out empty).
 */
int parser_cgroup(pid_t pid, struct cgroup_id *out);
/* The same of the cgroup file open at fd (cgroup_id_open, at its start), which it closes. */
int parser_cgroup_fd(int fd, struct cgroup_id *out);

/*
 * py_code_names() of q, in the child, which reads the process's memory
 * through mem (its /proc/PID/mem, left open): 0, -errno as py_code_names
 * returns them, or -ECHILD as above.  out is always fully written.
 */
int parser_py_code(int mem, const struct py_code_query *q, struct py_code_names *out);

/*
 * pydebug_layout() in the child, of the interpreter whose _PyRuntime is at
 * runtime in the process whose /proc/PID/mem is mem (left open), which
 * must be major.minor: 0, -EPROTONOSUPPORT where the interpreter publishes
 * no offsets, -errno as pydebug_layout returns them, or -ECHILD as above.
 * An answer is believed only when py_layout_fits admits it.
 */
int parser_py_layout(int mem, uint64_t runtime, uint32_t major, uint32_t minor,
		     struct py_layout *out, char *why, size_t why_len);

/*
 * The kubelet's log directory names parsed in the child, for kube_pods:
 * as kube_parsers_here, or -ECHILD as above.
 */
extern const struct kube_parsers parser_kube_parsers;

/* Children killed or lost mid-request since start. */
uint64_t parser_restarts(void);
/* Requests sent to a child since start. */
uint64_t parser_requests(void);

/* The running child's pid, 0 when none runs now. */
pid_t parser_pid(void);

/* Ends the child (it exits when its socket closes) and waits for it. */
void parser_stop(void);

#endif /* ZERNEL_PARSER_H */
