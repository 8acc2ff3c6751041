/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reads /proc/PID/cgroup, checks that it is what the kernel writes, and
 * picks the line the identity comes from; see cgroup_id.h.  The names are
 * matched in cgroup_path.c.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "collector/identity/cgroup_id.h"
#include "collector/identity/cgroup_path.h"
#include "collector/proc/proc_file.h"
#include "common/util.h"

/* More lines than any kernel has hierarchies (v1 has at most 16, plus v2). */
#define CGROUP_ID_LINES_MAX	32

struct cg_line {
	uint32_t source;
	uint32_t hierarchy;
	const char *path;
	size_t len;
};

#define NAME_OF(tail, name)	name,

const char *cgroup_runtime_name(uint32_t runtime)
{
	static const char *const names[] = { CGROUP_RUNTIME_LIST(NAME_OF) };

	return runtime < ARRAY_SIZE(names) ? names[runtime] : "unknown";
}

const char *cgroup_qos_name(uint32_t qos)
{
	static const char *const names[] = { CGROUP_QOS_LIST(NAME_OF) };

	return qos < ARRAY_SIZE(names) ? names[qos] : "";
}

void cgroup_id_reset(struct cgroup_id *out)
{
	memset(out, 0, sizeof(*out));
	out->slurm_uid = CGROUP_ID_NO_UID;
}

static void id_reset(struct cgroup_id *out, uint32_t keep_flags)
{
	cgroup_id_reset(out);
	out->flags = keep_flags;
}

/* Controller list: "" (v2), "name=systemd", "cpu,cpuacct", "name=foo", ... */
static int controllers_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == ',' || c == '=' || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

/*
 * Parses one "ID:CONTROLLERS:PATH" line.  Returns 1 when usable, 0 when
 * skipped (too long), -EBADMSG when it is not a cgroup line at all.
 */
static int line_parse(const char *s, size_t n, struct cg_line *l, uint32_t *flags)
{
	const char *c1 = memchr(s, ':', n), *c2;
	uint64_t id;
	char num[12];
	size_t clen;

	if (!c1 || c1 == s || (size_t)(c1 - s) > 10)
		return -EBADMSG;
	c2 = memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - s));
	if (!c2)
		return -EBADMSG;
	memcpy(num, s, (size_t)(c1 - s));
	num[c1 - s] = '\0';
	if (parse_u64(num, 0, UINT32_MAX, &id) != 0)
		return -EBADMSG;
	clen = (size_t)(c2 - c1 - 1);
	if (!controllers_ok(c1 + 1, clen) || (clen == 0) != (id == 0))
		return -EBADMSG;	/* v2 is hierarchy 0 with no controllers, and only it */
	l->hierarchy = (uint32_t)id;
	l->path = c2 + 1;
	l->len = n - (size_t)(c2 + 1 - s);
	if (l->len == 0 || l->path[0] != '/')
		return -EBADMSG;
	if (id == 0)
		l->source = CGROUP_SOURCE_V2;
	else if (clen == 12 && memcmp(c1 + 1, "name=systemd", 12) == 0)
		l->source = CGROUP_SOURCE_V1_SYSTEMD;
	else
		l->source = CGROUP_SOURCE_V1_CONTROLLER;
	if (l->len >= CGROUP_ID_PATH_MAX) {
		*flags |= CGROUP_ID_F_TOO_LONG;
		return 0;
	}
	return 1;
}

/* Splits text into lines; a last line without '\n' was cut and is dropped. */
static int lines_split(const char *text, size_t len, struct cg_line *lines, size_t *n,
		       uint32_t *flags)
{
	size_t i = 0;

	*n = 0;
	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		struct cg_line l;
		int rc;

		if (!nl) {
			*flags |= CGROUP_ID_F_TRUNCATED;
			break;
		}
		rc = line_parse(text + i, (size_t)(nl - text - i), &l, flags);
		i = (size_t)(nl - text) + 1;
		if (rc < 0)
			return rc;
		for (size_t k = 0; k < *n; k++)
			if (lines[k].hierarchy == l.hierarchy)
				return -EBADMSG;	/* a path with '\n' forging a line */
		if (rc == 0)
			continue;
		if (*n == CGROUP_ID_LINES_MAX)
			return -EBADMSG;
		lines[(*n)++] = l;
	}
	return 0;
}

static int root_path(const struct cg_line *l)
{
	return l->len == 1;
}

/* Matches one line into out; file_flags are the flags about the whole file. */
static int try_line(const struct cg_line *l, uint32_t file_flags, struct cgroup_id *out)
{
	int rc;

	id_reset(out, file_flags);
	rc = cgroup_path_match(l->path, l->len, out);
	out->source = l->source;
	if (idtext_copy(out->path, sizeof(out->path), l->path, l->len) != 0)
		out->flags |= CGROUP_ID_F_ODD_BYTES;
	return rc;
}

int cgroup_id_parse(const char *text, size_t len, struct cgroup_id *out)
{
	static const uint32_t order[] = {
		CGROUP_SOURCE_V2, CGROUP_SOURCE_V1_SYSTEMD, CGROUP_SOURCE_V1_CONTROLLER,
	};
	struct cg_line lines[CGROUP_ID_LINES_MAX];
	const struct cg_line *first = NULL;
	uint32_t flags = 0;
	size_t n;
	int rc;

	id_reset(out, 0);
	rc = lines_split(text, len, lines, &n, &flags);
	if (rc < 0) {
		id_reset(out, flags | CGROUP_ID_F_MALFORMED);
		return rc;
	}
	for (size_t o = 0; o < ARRAY_SIZE(order); o++) {
		for (size_t i = 0; i < n; i++) {
			if (lines[i].source != order[o] || root_path(&lines[i]))
				continue;
			if (!first)
				first = &lines[i];
			if (try_line(&lines[i], flags, out) > 0)
				return 0;
		}
	}
	/* No workload named anywhere: the preferred line's unit and slice. */
	if (first)
		try_line(first, flags, out);
	else
		id_reset(out, flags);
	return n ? 0 : -ENODATA;
}

int cgroup_id_open(pid_t pid)
{
	return proc_file_open_pid(pid, "cgroup", -ENOENT);
}

int cgroup_id_read_fd(int fd, struct cgroup_id *out)
{
	char buf[CGROUP_ID_READ_MAX + 1];
	size_t len = 0;
	int rc;

	id_reset(out, 0);
	/* One byte more than kept, to tell a full buffer from a longer file. */
	while (len < sizeof(buf)) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno == ESRCH ? -ENOENT : -errno;
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len > CGROUP_ID_READ_MAX) {
		/* Keep the whole lines before the limit; the cut one is dropped. */
		rc = cgroup_id_parse(buf, CGROUP_ID_READ_MAX, out);
		out->flags |= CGROUP_ID_F_TRUNCATED;
		return rc;
	}
	return cgroup_id_parse(buf, len, out);
}

/* Reads the file open as fd, or a read of nothing when it is -errno; closes it. */
static int read_opened(int fd, struct cgroup_id *out)
{
	int rc;

	id_reset(out, 0);
	if (fd < 0)
		return fd;
	rc = cgroup_id_read_fd(fd, out);
	close(fd);
	return rc;
}

int cgroup_id_read_file(const char *path, struct cgroup_id *out)
{
	return read_opened(proc_file_open(path, -ENOENT), out);
}

int cgroup_id_read(pid_t pid, struct cgroup_id *out)
{
	return read_opened(cgroup_id_open(pid), out);
}

/* A Slurm step as cgroup_path.c keeps one: a number, batch, extern or interactive. */
static int is_slurm_step(const char *s, size_t n)
{
	static const char *const named[] = { "batch", "extern", "interactive" };

	for (size_t i = 0; i < ARRAY_SIZE(named); i++)
		if (n == strlen(named[i]) && memcmp(s, named[i], n) == 0)
			return 1;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

int cgroup_id_admit(struct cgroup_id *id)
{
	const uint32_t flags = CGROUP_ID_F_CONMON | CGROUP_ID_F_DELEGATED |
			       CGROUP_ID_F_OUTSIDE_NS | CGROUP_ID_F_MALFORMED |
			       CGROUP_ID_F_TOO_LONG | CGROUP_ID_F_TRUNCATED | CGROUP_ID_F_ODD_BYTES;

	if (id->source > CGROUP_SOURCE_V1_CONTROLLER || id->runtime > CGROUP_RUNTIME_PODMAN ||
	    id->qos > CGROUP_QOS_UNKNOWN || (id->flags & ~flags))
		return -EPROTO;
	if (!idtext_admit_field(id->container_id, sizeof(id->container_id), idtext_is_container_id) ||
	    !idtext_admit_field(id->pod_uid, sizeof(id->pod_uid), idtext_is_pod_uid) ||
	    !idtext_admit_field(id->slurm_step, sizeof(id->slurm_step), is_slurm_step) ||
	    !idtext_admit_field(id->unit, sizeof(id->unit), idtext_printable_utf8) ||
	    !idtext_admit_field(id->slice, sizeof(id->slice), idtext_printable_utf8) ||
	    !idtext_admit_field(id->path, sizeof(id->path), idtext_printable_utf8))
		return -EPROTO;
	return 0;
}
