/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The messages between the collector and its parser child (parser.h): one
 * request, with the file's descriptor attached (SCM_RIGHTS) or names to
 * parse, and one reply (figures, an environment's allowlisted variables,
 * what a cgroup file names, a log directory name's parts, a Python code
 * object's names and line, an interpreter's published layout), on
 * a SOCK_SEQPACKET socket pair, so each message arrives whole or not at
 * all.  The child checks every field of a request before it acts on it.
 */
#ifndef ZERNEL_PARSER_PROTO_H
#define ZERNEL_PARSER_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "collector/parser/parser.h"
#include "collector/identity/cgroup_id.h"
#include "collector/identity/kube_names.h"
#include "collector/proc/proc_env.h"
#include "collector/python/pycode.h"

enum parser_op {
	PARSER_OP_ELF_FUNCTIONS = 1,	/* names: function symbols; v: their file offsets */
	PARSER_OP_ELF_PYTHON,		/* v: runtime, version, code_type, first_load */
	PARSER_OP_ENVIRON,		/* env: the allowlisted variables of an environ file */
	PARSER_OP_CGROUP,		/* cgroup: what a /proc/PID/cgroup file names */
	PARSER_OP_KUBE_POD_DIR,		/* names: a pod log directory's; pod: its parts */
	PARSER_OP_KUBE_LINK,		/* names: a container log link's, its target; container */
	PARSER_OP_PY_CODE,		/* names: a py_code_query, with /proc/PID/mem; code */
	PARSER_OP_PY_LAYOUT,		/* names: a parser_py_where, with /proc/PID/mem; layout */
};

/* Where an interpreter's _Py_DebugOffsets lie, and the version they must be. */
struct parser_py_where {
	uint64_t runtime;		/* &_PyRuntime */
	uint32_t major, minor;
};

/* The layout they give, or why not (a sentence for the log). */
struct parser_py_layout {
	struct py_layout layout;
	char why[160];
};

#define PARSER_NAMES_BYTES	16384u

struct parser_request {
	uint32_t op;			/* enum parser_op */
	uint32_t n;			/* names, each NUL-terminated, one after another */
	char names[PARSER_NAMES_BYTES];
};

struct parser_reply {
	int32_t status;			/* what the parse returned: >= 0, or -errno */
	uint32_t n;			/* figures in v, or answers in the others (0 or 1) */
	union {
		uint64_t v[PARSER_MAX_NAMES];
		struct proc_env env;
		struct cgroup_id cgroup;
		struct kube_pod_entry pod;
		struct kube_container_entry container;
		struct py_code_names code;
		struct parser_py_layout layout;
	};
};

/* Bytes of a reply of n items of op's kind (figures for the ELF ops). */
static inline size_t parser_reply_len(uint32_t op, uint32_t n)
{
	static const size_t item[] = {
		[PARSER_OP_ENVIRON] = sizeof(struct proc_env),
		[PARSER_OP_CGROUP] = sizeof(struct cgroup_id),
		[PARSER_OP_KUBE_POD_DIR] = sizeof(struct kube_pod_entry),
		[PARSER_OP_KUBE_LINK] = sizeof(struct kube_container_entry),
		[PARSER_OP_PY_CODE] = sizeof(struct py_code_names),
		[PARSER_OP_PY_LAYOUT] = sizeof(struct parser_py_layout),
	};
	size_t size = op < sizeof(item) / sizeof(item[0]) && item[op] ? item[op] : sizeof(uint64_t);

	return offsetof(struct parser_reply, v) + n * size;
}

/*
 * No capability, NO_NEW_PRIVS, then the allowlist: from here on any other
 * system call kills the process.  0 or -errno.
 */
int parser_child_sandbox(void);

/* The child's side: serves requests on sock until it closes.  Never returns. */
void parser_child_main(int sock) __attribute__((noreturn));

#endif /* ZERNEL_PARSER_PROTO_H */
