/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The parser child (parser.h): gives up every capability and the means to
 * get one back, loads its seccomp allowlist, then answers requests until
 * the collector closes its end.  Whatever it is made to do by a hostile
 * file, it can only read the descriptors it was handed, map memory that is
 * not executable, and answer on its socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector/identity/cgroup_id.h"
#include "collector/identity/kube_names.h"
#include "collector/parser/elfsyms.h"
#include "collector/parser/parser_proto.h"
#include "collector/parser/pyelf.h"
#include "collector/proc/proc_env.h"
#include "collector/python/pycode.h"
#include "collector/python/pydebug.h"
#include "collector/privsep/privileges.h"
#include "common/helper_proc.h"

#define CHILD_SOCK	3

/* Allowed with any arguments: reading, answering, memory, leaving. */
static const int allowed[] = {
	SCMP_SYS(read), SCMP_SYS(pread64), SCMP_SYS(recvmsg), SCMP_SYS(write),
	SCMP_SYS(sendmsg), SCMP_SYS(sendto), SCMP_SYS(close), SCMP_SYS(lseek), SCMP_SYS(fstat),
	SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(brk), SCMP_SYS(madvise),
	SCMP_SYS(futex), SCMP_SYS(getrandom), SCMP_SYS(rt_sigreturn),
	SCMP_SYS(exit), SCMP_SYS(exit_group),
};

static int load_filter(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	int err = ctx ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < sizeof(allowed) / sizeof(allowed[0]); i++)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
	/* Memory, never executable: libelf maps the file, malloc its heap. */
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* libelf asks whether a descriptor is open, and nothing else of fcntl. */
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1,
				       SCMP_A1(SCMP_CMP_EQ, F_GETFD));
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1,
				       SCMP_A1(SCMP_CMP_EQ, F_GETFL));
	/* glibc's fstat(): newfstatat on the descriptor itself, never a path. */
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(newfstatat), 1,
				       SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH));
	if (!err)
		err = seccomp_load(ctx);
	seccomp_release(ctx);
	return err;
}

/*
 * No capability in any set, none to be had again: the collector's own
 * drop (privileges.h), which --simulate uses too, then the filter.
 */
int parser_child_sandbox(void)
{
	int err = privileges_drop_all();

	return err ? err : load_filter();
}

/* The names of rq (n of them in len bytes), NUL-terminated within it; -1 if not. */
static int split_names(const struct parser_request *rq, size_t len, const char **names)
{
	size_t at = 0, room = len - offsetof(struct parser_request, names);

	if (rq->n > PARSER_MAX_NAMES)
		return -1;
	for (uint32_t i = 0; i < rq->n; i++) {
		const char *end = memchr(rq->names + at, '\0', room - at);

		if (at >= room || !end)
			return -1;
		names[i] = rq->names + at;
		at = (size_t)(end - rq->names) + 1;
	}
	return 0;
}

/* rq's fixed-size content (size bytes, exactly what came) into to: 0, or -1. */
static int take(const struct parser_request *rq, size_t len, void *to, size_t size)
{
	if (len != offsetof(struct parser_request, names) + size)
		return -1;
	memcpy(to, rq->names, size);
	return 0;
}

static void handle(const struct parser_request *rq, size_t len, int fd, struct parser_reply *rp)
{
	const char *names[PARSER_MAX_NAMES];
	struct parser_py_where where;
	struct py_code_query q;
	struct pyelf_syms py;

	memset(rp, 0, sizeof(*rp));
	rp->status = -EINVAL;
	if (len < offsetof(struct parser_request, names))
		return;
	/* Names alone for the log directory's names; a descriptor for the rest. */
	if ((fd < 0) != (rq->op == PARSER_OP_KUBE_POD_DIR || rq->op == PARSER_OP_KUBE_LINK))
		return;
	switch (rq->op) {
	case PARSER_OP_ELF_FUNCTIONS:
		if (split_names(rq, len, names) != 0)
			return;
		rp->status = elfsyms_resolve_fd(fd, names, rq->n, rp->v);
		rp->n = rp->status >= 0 ? rq->n : 0;
		break;
	case PARSER_OP_ELF_PYTHON:
		rp->status = pyelf_symbols(fd, &py);
		if (rp->status == 0) {
			rp->v[0] = py.runtime;
			rp->v[1] = py.version;
			rp->v[2] = py.code_type;
			rp->v[3] = py.first_load;
			rp->n = 4;
		}
		break;
	case PARSER_OP_ENVIRON:
		rp->status = proc_env_read_fd(fd, &rp->env);
		rp->n = rp->status == 0;
		break;
	case PARSER_OP_CGROUP:
		/* What the file said, even with an error: a malformed one is flagged. */
		rp->status = cgroup_id_read_fd(fd, &rp->cgroup);
		rp->n = 1;
		break;
	case PARSER_OP_KUBE_POD_DIR:
		if (rq->n != 1 || split_names(rq, len, names) != 0)
			return;
		rp->status = kube_names_parse_pod_dir(names[0], strlen(names[0]), &rp->pod);
		rp->n = rp->status == 0;
		break;
	case PARSER_OP_KUBE_LINK:
		if (rq->n != 2 || split_names(rq, len, names) != 0)
			return;
		rp->status = kube_names_link(names[0], strlen(names[0]), names[1], strlen(names[1]),
					     &rp->container);
		rp->n = rp->status == 0;
		break;
	case PARSER_OP_PY_CODE:
		if (take(rq, len, &q, sizeof(q)) != 0)
			return;
		rp->status = py_code_names(fd, &q, &rp->code);
		rp->n = rp->status == 0;
		break;
	case PARSER_OP_PY_LAYOUT:
		if (take(rq, len, &where, sizeof(where)) != 0)
			return;
		rp->n = 1;
		if (!pydebug_published(fd, where.runtime)) {
			rp->status = -EPROTONOSUPPORT;
			break;
		}
		rp->status = pydebug_layout(fd, where.runtime, where.major, where.minor,
					    &rp->layout.layout, rp->layout.why,
					    sizeof(rp->layout.why));
		/* Offsets in bounds of their own, but not of what the collector reads. */
		if (rp->status == 0 && !py_layout_fits(&rp->layout.layout)) {
			rp->status = -EPROTO;
			snprintf(rp->layout.why, sizeof(rp->layout.why),
				 "the %u.%u layout is outside what the collector reads",
				 where.major, where.minor);
		}
		break;
	default:
		break;
	}
}

/* One request and the descriptor with it (-1: none); its length, 0 at the end. */
static ssize_t receive(struct parser_request *rq, int *fd)
{
	char control[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov = { .iov_base = rq, .iov_len = sizeof(*rq) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
			      .msg_controllen = sizeof(control) };
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(CHILD_SOCK, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); n > 0 && c; c = CMSG_NXTHDR(&msg, c)) {
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < k; i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = got;
			else
				close(got);
		}
	}
	return n;
}

void parser_child_main(int sock)
{
	struct parser_request rq;
	struct parser_reply rp;

	/* Gone with the collector, whenever it goes; only its socket kept. */
	if (helper_begin("zernel-parser", sock, CHILD_SOCK, 1) != 0)
		_exit(2);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	if (parser_child_sandbox() != 0)
		_exit(2);
	for (;;) {
		int fd;
		ssize_t n = receive(&rq, &fd);

		if (n <= 0)
			_exit(0);
		handle(&rq, (size_t)n, fd, &rp);
		if (fd >= 0)
			close(fd);
		if (send(CHILD_SOCK, &rp, parser_reply_len(rq.op, rp.n), MSG_NOSIGNAL) < 0)
			_exit(0);
	}
}
