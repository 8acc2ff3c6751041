/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parser.h: the collector's side.  The child is forked at the first
 * request; a reply is checked before it is believed (the child has read
 * hostile files and may be anyone's by then), and a child that does not
 * answer in time, answers nonsense or dies is killed and counted.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/parser/parser_proto.h"
#include "common/helper_proc.h"
#include "common/log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int sock = -1;
static pid_t child;
static uint64_t restarts;
static uint64_t requests;

static int start_child(void)
{
	int end;
	pid_t pid = helper_fork(&end);

	if (pid < 0)
		return (int)pid;
	if (pid == 0)
		parser_child_main(end);
	sock = end;
	child = pid;
	return 0;
}

/* The child is gone or no longer trusted: killed, reaped and counted. */
static void lose_child(const char *why)
{
	int status = 0;

	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	close(sock);
	sock = -1;
	restarts++;
	if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
		log_warnx("parser child %d died of signal %d %s: the next file gets a new one "
			  "(%llu restarts)", (int)child, WTERMSIG(status), why,
			  (unsigned long long)restarts);
	else
		log_warnx("parser child %d %s: killed, the next file gets a new one "
			  "(%llu restarts)", (int)child, why, (unsigned long long)restarts);
	child = 0;
}

/* rq with fd attached; fd < 0: names alone. */
static int send_request(const struct parser_request *rq, size_t len, int fd)
{
	char control[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = (void *)rq, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
			      .msg_controllen = sizeof(control) };
	struct cmsghdr *c;

	if (fd < 0) {
		msg.msg_control = NULL;
		msg.msg_controllen = 0;
		return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -errno;
	}
	memset(control, 0, sizeof(control));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -errno;
}

/* One reply of at most max items of op's kind, within the timeout: 0, or -ECHILD. */
static int receive_reply(uint32_t op, struct parser_reply *rp, uint32_t max, const char *what)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	ssize_t n;
	int r;

	do
		r = poll(&pfd, 1, PARSER_TIMEOUT_MS);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		lose_child(what);
		return -ECHILD;
	}
	n = recv(sock, rp, sizeof(*rp), MSG_DONTWAIT);
	if (n <= 0) {
		lose_child(what);
		return -ECHILD;
	}
	if ((size_t)n < offsetof(struct parser_reply, v) || rp->n > max ||
	    (size_t)n != parser_reply_len(op, rp->n) ||
	    rp->status > (int32_t)max || rp->status < -4095) {
		lose_child("answered out of its protocol");
		return -ECHILD;
	}
	return 0;
}

static const char *request_what(uint32_t op)
{
	switch (op) {
	case PARSER_OP_ELF_PYTHON:
		return "on an interpreter's ELF file";
	case PARSER_OP_ENVIRON:
		return "on a process's environment";
	case PARSER_OP_CGROUP:
		return "on a process's cgroup file";
	case PARSER_OP_KUBE_POD_DIR:
	case PARSER_OP_KUBE_LINK:
		return "on a kubelet log directory's name";
	case PARSER_OP_PY_CODE:
		return "on a Python code object";
	case PARSER_OP_PY_LAYOUT:
		return "on an interpreter's published offsets";
	default:
		return "on a library's ELF file";
	}
}

/*
 * Sends rq with fd and takes the reply, starting a child first when none
 * runs.  believe, when given, judges a well-formed reply: a reply it
 * refuses (the child lies) costs the child, as a crash does.
 */
static int request(const struct parser_request *rq, size_t len, int fd,
		   struct parser_reply *rp, uint32_t max,
		   int (*believe)(struct parser_reply *rp))
{
	int err;

	pthread_mutex_lock(&lock);
	if (sock < 0 && (err = start_child()) < 0) {
		log_warnx("cannot start the parser child: %s", strerror(-err));
		goto out;
	}
	requests++;
	err = send_request(rq, len, fd);
	if (err < 0) {
		lose_child("took no request");
		err = -ECHILD;
		goto out;
	}
	err = receive_reply(rq->op, rp, max, request_what(rq->op));
	if (err == 0 && believe && !believe(rp)) {
		lose_child("answered what no parse gives");
		err = -ECHILD;
	}
out:
	pthread_mutex_unlock(&lock);
	return err;
}

/*
 * Names n texts into rq, texts[i] of lens[i] bytes each with a NUL after:
 * the request's length, or -E2BIG.  A text with a NUL inside would split:
 * -EINVAL.
 */
static ssize_t put_names(struct parser_request *rq, const char *const *texts, const size_t *lens,
			 size_t n)
{
	size_t used = 0;

	if (n > PARSER_MAX_NAMES)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		if (memchr(texts[i], '\0', lens[i]))
			return -EINVAL;
		if (used + lens[i] + 1 > sizeof(rq->names))
			return -E2BIG;
		memcpy(rq->names + used, texts[i], lens[i]);
		rq->names[used + lens[i]] = '\0';
		used += lens[i] + 1;
	}
	rq->n = (uint32_t)n;
	return (ssize_t)(offsetof(struct parser_request, names) + used);
}

int parser_elf_functions(int fd, const char *const *names, size_t n, uint64_t *offsets)
{
	struct parser_request rq = { .op = PARSER_OP_ELF_FUNCTIONS };
	size_t lens[PARSER_MAX_NAMES];
	struct parser_reply rp;
	ssize_t len;
	int err;

	memset(offsets, 0, n * sizeof(*offsets));
	if (n > PARSER_MAX_NAMES)
		return -E2BIG;
	for (size_t i = 0; i < n; i++)
		lens[i] = strlen(names[i]);
	len = put_names(&rq, names, lens, n);
	if (len < 0)
		return (int)len;
	err = request(&rq, (size_t)len, fd, &rp, (uint32_t)n, NULL);
	if (err < 0)
		return err;
	if (rp.status >= 0 && rp.n != n)
		return -EPROTO;
	if (rp.status >= 0)
		memcpy(offsets, rp.v, n * sizeof(*offsets));
	return rp.status;
}

int parser_elf_python(int fd, struct pyelf_syms *out)
{
	struct parser_request rq = { .op = PARSER_OP_ELF_PYTHON };
	struct parser_reply rp;
	int err;

	memset(out, 0, sizeof(*out));
	err = request(&rq, offsetof(struct parser_request, names), fd, &rp, 4, NULL);
	if (err < 0)
		return err;
	if (rp.status > 0 || (rp.status == 0 && rp.n != 4))
		return -EPROTO;
	if (rp.status == 0) {
		out->runtime = rp.v[0];
		out->version = rp.v[1];
		out->code_type = rp.v[2];
		out->first_load = rp.v[3];
	}
	return rp.status;
}

/*
 * One request whose reply is one answer of size bytes, copied to out when
 * the child gives it (even beside an error, as a cgroup file's): the
 * parse's status, or -errno.  The reply is some 10 KiB: off the stack of
 * whichever thread asks.
 */
static int ask(const struct parser_request *rq, size_t len, int fd,
	       int (*believe)(struct parser_reply *rp), void *out, size_t size)
{
	struct parser_reply *rp = malloc(sizeof(*rp));
	int err;

	if (!rp)
		return -ENOMEM;
	err = request(rq, len, fd, rp, 1, believe);
	if (err == 0 && rp->n == 1)
		memcpy(out, &rp->v, size);
	if (err == 0)
		err = rp->status;
	free(rp);
	return err;
}

/* An error with no answer, or success with one. */
static int one_answer_or_error(const struct parser_reply *rp)
{
	return rp->status <= 0 && (rp->status == 0) == (rp->n == 1);
}

/* An environment reply: as above, the environment one the readers could write. */
static int environ_believable(struct parser_reply *rp)
{
	return one_answer_or_error(rp) && (rp->status < 0 || proc_env_check(&rp->env) == 0);
}

/* ask() about the file open at fd, which it closes. */
static int ask_file(uint32_t op, int fd, int (*believe)(struct parser_reply *rp), void *out,
		    size_t size)
{
	const struct parser_request rq = { .op = op };
	int err = ask(&rq, offsetof(struct parser_request, names), fd, believe, out, size);

	close(fd);
	return err;
}

int parser_environ(pid_t pid, struct proc_env *out)
{
	int fd = proc_env_open(pid);

	memset(out, 0, sizeof(*out));
	return fd < 0 ? fd : parser_environ_fd(fd, out);
}

int parser_environ_fd(int fd, struct proc_env *out)
{
	memset(out, 0, sizeof(*out));
	return ask_file(PARSER_OP_ENVIRON, fd, environ_believable, out, sizeof(*out));
}

/* A cgroup reply: one answer, with a status a read gives, that cgroup_id_admit admits. */
static int cgroup_believable(struct parser_reply *rp)
{
	return rp->status <= 0 && rp->n == 1 && cgroup_id_admit(&rp->cgroup) == 0;
}

int parser_cgroup(pid_t pid, struct cgroup_id *out)
{
	int fd = cgroup_id_open(pid);

	cgroup_id_reset(out);
	return fd < 0 ? fd : parser_cgroup_fd(fd, out);
}

int parser_cgroup_fd(int fd, struct cgroup_id *out)
{
	cgroup_id_reset(out);
	return ask_file(PARSER_OP_CGROUP, fd, cgroup_believable, out, sizeof(*out));
}

/* A log directory name's reply: as above, the entry admitted. */
static int pod_believable(struct parser_reply *rp)
{
	return one_answer_or_error(rp) && (rp->status < 0 || kube_names_admit_pod(&rp->pod) == 0);
}

static int container_believable(struct parser_reply *rp)
{
	return one_answer_or_error(rp) &&
	       (rp->status < 0 || kube_names_admit_container(&rp->container) == 0);
}

/* One request of names alone (a log directory's), answered with an entry of size bytes. */
static int parse_names(uint32_t op, const char *const *texts, const size_t *lens, size_t n,
		       int (*believe)(struct parser_reply *rp), void *out, size_t size)
{
	struct parser_request *rq = malloc(sizeof(*rq));
	ssize_t len;
	int err;

	memset(out, 0, size);
	if (!rq)
		return -ENOMEM;
	rq->op = op;
	len = put_names(rq, texts, lens, n);
	err = len < 0 ? (int)len : ask(rq, (size_t)len, -1, believe, out, size);
	free(rq);
	return err;
}

static int kube_pod_dir(const char *name, size_t n, struct kube_pod_entry *e)
{
	return parse_names(PARSER_OP_KUBE_POD_DIR, &name, &n, 1, pod_believable, e, sizeof(*e));
}

static int kube_link(const char *name, size_t n, const char *target, size_t tn,
		     struct kube_container_entry *e)
{
	const char *const texts[2] = { name, target };
	const size_t lens[2] = { n, tn };

	return parse_names(PARSER_OP_KUBE_LINK, texts, lens, 2, container_believable, e,
			   sizeof(*e));
}

const struct kube_parsers parser_kube_parsers = {
	.pod_dir = kube_pod_dir,
	.link = kube_link,
};

/* A code object's reply: as above, its texts as py_code_names writes them. */
static int code_believable(struct parser_reply *rp)
{
	return one_answer_or_error(rp) && (rp->status < 0 || py_code_names_admit(&rp->code) == 0);
}

/* ask() with a request of op that carries what (size bytes) and fd. */
static int ask_with(uint32_t op, const void *what, size_t size, int fd,
		    int (*believe)(struct parser_reply *rp), void *out, size_t out_size)
{
	struct parser_request *rq = malloc(sizeof(*rq));
	int err;

	if (!rq)
		return -ENOMEM;
	rq->op = op;
	rq->n = 0;
	memcpy(rq->names, what, size);
	err = ask(rq, offsetof(struct parser_request, names) + size, fd, believe, out, out_size);
	free(rq);
	return err;
}

int parser_py_code(int mem, const struct py_code_query *q, struct py_code_names *out)
{
	memset(out, 0, sizeof(*out));
	return ask_with(PARSER_OP_PY_CODE, q, sizeof(*q), mem, code_believable, out, sizeof(*out));
}

/*
 * A layout reply: one answer, its sentence ended in its field, and on
 * success a layout the collector can read by.
 */
static int layout_believable(struct parser_reply *rp)
{
	return rp->status <= 0 && rp->n == 1 &&
	       memchr(rp->layout.why, '\0', sizeof(rp->layout.why)) &&
	       (rp->status < 0 || py_layout_fits(&rp->layout.layout));
}

int parser_py_layout(int mem, uint64_t runtime, uint32_t major, uint32_t minor,
		     struct py_layout *out, char *why, size_t why_len)
{
	const struct parser_py_where where = { .runtime = runtime, .major = major, .minor = minor };
	struct parser_py_layout answer;
	int err;

	memset(&answer, 0, sizeof(answer));
	err = ask_with(PARSER_OP_PY_LAYOUT, &where, sizeof(where), mem, layout_believable, &answer,
		       sizeof(answer));
	if (err == 0 && (answer.layout.major != major || answer.layout.minor != minor))
		err = -EPROTO;
	if (err == 0)
		*out = answer.layout;
	else if (err == -ECHILD)
		snprintf(why, why_len, "the parser child gave no answer on its offsets");
	else if (answer.why[0] || err == -EPROTONOSUPPORT)
		snprintf(why, why_len, "%s", answer.why);	/* none published: nothing to add */
	else
		snprintf(why, why_len, "its _Py_DebugOffsets: %s", strerror(-err));
	return err;
}

/* The running child (0: none), the restarts and the requests so far, read together. */
struct parser_state {
	pid_t pid;
	uint64_t lost, asked;
};

static struct parser_state state(void)
{
	struct parser_state st;

	pthread_mutex_lock(&lock);
	st.pid = child;
	st.lost = restarts;
	st.asked = requests;
	pthread_mutex_unlock(&lock);
	return st;
}

uint64_t parser_restarts(void)
{
	return state().lost;
}

uint64_t parser_requests(void)
{
	return state().asked;
}

pid_t parser_pid(void)
{
	return state().pid;
}

void parser_stop(void)
{
	pthread_mutex_lock(&lock);
	if (sock >= 0) {
		close(sock);
		sock = -1;
		/* It holds nothing worth a goodbye, and may be stuck in a file. */
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = 0;
	}
	pthread_mutex_unlock(&lock);
}
