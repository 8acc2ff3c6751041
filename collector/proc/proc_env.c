/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Allowlisted reader of /proc/PID/environ; see proc_env.h.  Root.  The
 * environment is scanned as it is read, a chunk at a time, so that the
 * value of a variable not on the list is never copied anywhere.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/idtext.h"
#include "collector/proc/proc_env.h"
#include "collector/proc/proc_file.h"
#include "common/util.h"

enum env_kind {
	/* Decimal integers in their kind's range (number_range) */
	ENV_RANK,	/* a rank: 0..PROC_ENV_RANK_MAX */
	ENV_SIZE,	/* a count of ranks or tasks: 1..PROC_ENV_RANK_MAX */
	ENV_ID,		/* a scheduler's id: any uint32_t */
	ENV_PORT,	/* a TCP port */
	/* Text */
	ENV_TEXT,	/* printable UTF-8 id */
	ENV_HOST,	/* host name or IPv4/IPv6 address */
	ENV_TOKEN,	/* one word of [A-Za-z0-9_.-] */
	ENV_DEVICES,	/* printable ASCII list; may be empty, which means "none" */
};

static const struct {
	uint64_t min, max;
} number_range[] = {
	[ENV_RANK] = { 0, PROC_ENV_RANK_MAX },
	[ENV_SIZE] = { 1, PROC_ENV_RANK_MAX },
	[ENV_ID] = { 0, UINT32_MAX },
	[ENV_PORT] = { 1, 65535 },
};

static int is_number(enum env_kind kind)
{
	return kind < ARRAY_SIZE(number_range);
}

struct env_var {
	const char *name;
	enum env_kind kind;
	size_t off;
};

#define VAR(n, k, f)	{ n, k, offsetof(struct proc_env, f) }

/* The allowlist: the one place a variable name is admitted. */
static const struct env_var env_vars[] = {
	/* torchrun (torch.distributed.elastic) */
	VAR("RANK", ENV_RANK, rank),
	VAR("LOCAL_RANK", ENV_RANK, local_rank),
	VAR("WORLD_SIZE", ENV_SIZE, world_size),
	VAR("LOCAL_WORLD_SIZE", ENV_SIZE, local_world_size),
	VAR("GROUP_RANK", ENV_RANK, group_rank),
	/* the elastic agent's run and restarts */
	VAR("TORCHELASTIC_RESTART_COUNT", ENV_RANK, restart_count),
	VAR("TORCHELASTIC_RUN_ID", ENV_TEXT, run_id),
	/* the rendezvous of torch.distributed's env:// */
	VAR("MASTER_ADDR", ENV_HOST, master_addr),
	VAR("MASTER_PORT", ENV_PORT, master_port),
	/* mpirun (Open MPI) */
	VAR("OMPI_COMM_WORLD_RANK", ENV_RANK, ompi_rank),
	VAR("OMPI_COMM_WORLD_LOCAL_RANK", ENV_RANK, ompi_local_rank),
	VAR("OMPI_COMM_WORLD_SIZE", ENV_SIZE, ompi_size),
	/* srun (Slurm): the job and step */
	VAR("SLURM_JOB_ID", ENV_ID, slurm_job_id),
	VAR("SLURM_STEP_ID", ENV_ID, slurm_step_id),
	VAR("SLURM_ARRAY_JOB_ID", ENV_ID, slurm_array_job_id),
	VAR("SLURM_ARRAY_TASK_ID", ENV_ID, slurm_array_task_id),
	/* srun: the task */
	VAR("SLURM_PROCID", ENV_RANK, slurm_procid),
	VAR("SLURM_LOCALID", ENV_RANK, slurm_localid),
	VAR("SLURM_NTASKS", ENV_SIZE, slurm_ntasks),
	/* the GPUs a process may see: Slurm's, CUDA's and the container runtime's */
	VAR("SLURM_STEP_GPUS", ENV_DEVICES, slurm_step_gpus),
	VAR("SLURM_JOB_GPUS", ENV_DEVICES, slurm_job_gpus),
	VAR("CUDA_VISIBLE_DEVICES", ENV_DEVICES, cuda_visible_devices),
	VAR("NVIDIA_VISIBLE_DEVICES", ENV_DEVICES, nvidia_visible_devices),
	VAR("CUDA_DEVICE_ORDER", ENV_TOKEN, cuda_device_order),
};

/* Longer than any name above, so a longer name is simply not listed. */
#define ENV_NAME_MAX	32
/* Bytes of a value kept while scanning: the longest field, plus one to see overflow. */
#define ENV_VALUE_MAX	PROC_ENV_DEVICES_MAX

enum scan_state { SCAN_NAME, SCAN_VALUE, SCAN_SKIP };

struct env_scan {
	struct proc_env *out;
	enum scan_state state;
	const struct env_var *var;
	size_t len;		/* bytes in name[] or value[] */
	int overflow;		/* the value outgrew value[] */
	char name[ENV_NAME_MAX];
	char value[ENV_VALUE_MAX + 1];
	/* One decoded field, compared with what an earlier entry stored. */
	union {
		struct proc_env_num num;
		struct proc_env_id id;
		struct proc_env_devices devices;
	} field;
};

static const struct env_var *var_find(const char *name, size_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(env_vars); i++)
		if (strlen(env_vars[i].name) == n && memcmp(env_vars[i].name, name, n) == 0)
			return &env_vars[i];
	return NULL;
}

static size_t field_size(enum env_kind kind)
{
	if (is_number(kind))
		return sizeof(struct proc_env_num);
	return kind == ENV_DEVICES ? sizeof(struct proc_env_devices) : sizeof(struct proc_env_id);
}

static int chars_in(const char *s, size_t n, const char *extra, int alnum)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		int ok = alnum && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				   (c >= '0' && c <= '9'));

		if (!ok && (c == '\0' || !strchr(extra, c)))
			return 0;
	}
	return 1;
}

static int ascii_printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return 0;
	return 1;
}

/* Decodes the value in sc->value into sc->field; returns 0 or -EINVAL. */
static int field_decode(struct env_scan *sc)
{
	const struct env_var *v = sc->var;
	const char *s = sc->value;
	size_t n = sc->len;

	memset(&sc->field, 0, sizeof(sc->field));
	if (sc->overflow)
		return -EINVAL;
	if (is_number(v->kind)) {
		/* Twenty digits hold any uint64_t; parse_u64 wants a string. */
		if (n == 0 || n > 20 || !chars_in(s, n, "0123456789", 0) ||
		    parse_u64(s, number_range[v->kind].min, number_range[v->kind].max,
			      &sc->field.num.value) != 0)
			return -EINVAL;
		sc->field.num.state = PROC_ENV_SET;
		return 0;
	}
	switch (v->kind) {
	case ENV_TEXT:
		if (n == 0 || idtext_copy(sc->field.id.value, sizeof(sc->field.id.value), s, n))
			return -EINVAL;
		break;
	case ENV_HOST:
	case ENV_TOKEN:
		if (n == 0 || n >= sizeof(sc->field.id.value) ||
		    !chars_in(s, n, v->kind == ENV_HOST ? ".-_:%[]" : "_.-", 1))
			return -EINVAL;
		memcpy(sc->field.id.value, s, n);
		break;
	case ENV_DEVICES:
		if (n >= sizeof(sc->field.devices.value) || !ascii_printable(s, n))
			return -EINVAL;
		memcpy(sc->field.devices.value, s, n);
		sc->field.devices.state = PROC_ENV_SET;
		return 0;
	default:	/* the numbers, decoded above */
		return -EINVAL;
	}
	sc->field.id.state = PROC_ENV_SET;
	return 0;
}

/* Stores the completed entry's field; a second, different value voids it. */
static void field_store(struct env_scan *sc)
{
	char *dst = (char *)sc->out + sc->var->off;
	size_t size = field_size(sc->var->kind);
	uint32_t *state = (uint32_t *)dst;	/* every field type starts with state */

	sc->value[sc->len < ENV_VALUE_MAX ? sc->len : ENV_VALUE_MAX] = '\0';
	if (field_decode(sc) != 0) {
		memset(&sc->field, 0, sizeof(sc->field));
		sc->field.num.state = PROC_ENV_INVALID;
		sc->out->refused++;
	}
	if (*state == PROC_ENV_ABSENT) {
		memcpy(dst, &sc->field, size);
	} else if (memcmp(dst, &sc->field, size) != 0) {
		memset(dst, 0, size);
		*state = PROC_ENV_INVALID;
		sc->out->flags |= PROC_ENV_F_CONFLICT;
	}
}

static void scan_init(struct env_scan *sc, struct proc_env *out)
{
	memset(out, 0, sizeof(*out));
	sc->out = out;
	sc->state = SCAN_NAME;
	sc->var = NULL;
	sc->len = 0;
	sc->overflow = 0;
}

static void entry_end(struct env_scan *sc)
{
	sc->out->entries++;
	if (sc->state == SCAN_NAME)
		sc->out->flags |= PROC_ENV_F_MALFORMED;
	else if (sc->state == SCAN_VALUE)
		field_store(sc);
	sc->state = SCAN_NAME;
	sc->var = NULL;
	sc->len = 0;
	sc->overflow = 0;
}

static void scan_feed(struct env_scan *sc, const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (c == '\0') {
			entry_end(sc);
			continue;
		}
		switch (sc->state) {
		case SCAN_NAME:
			if (c == '=') {
				sc->var = var_find(sc->name, sc->len);
				sc->state = sc->var ? SCAN_VALUE : SCAN_SKIP;
				sc->len = 0;
			} else if (sc->len < sizeof(sc->name)) {
				sc->name[sc->len++] = c;
			} else {
				sc->state = SCAN_SKIP;	/* no listed name is this long */
			}
			break;
		case SCAN_VALUE:
			if (sc->len < ENV_VALUE_MAX)
				sc->value[sc->len++] = c;
			else
				sc->overflow = 1;
			break;
		case SCAN_SKIP:
			break;
		}
	}
}

static void scan_finish(struct env_scan *sc)
{
	/* An entry without its NUL may be cut short: "RANK=12" read as "RANK=1". */
	if (sc->state != SCAN_NAME || sc->len > 0)
		sc->out->flags |= PROC_ENV_F_CUT_ENTRY;
	explicit_bzero(sc->name, sizeof(sc->name));
	explicit_bzero(sc->value, sizeof(sc->value));
	explicit_bzero(&sc->field, sizeof(sc->field));
}

void proc_env_parse(const char *buf, size_t len, struct proc_env *out)
{
	struct env_scan sc;

	scan_init(&sc, out);
	if (len > PROC_ENV_READ_MAX) {
		len = PROC_ENV_READ_MAX;
		out->flags |= PROC_ENV_F_TRUNCATED;
	}
	scan_feed(&sc, buf, len);
	out->bytes = (uint32_t)len;
	scan_finish(&sc);
}

int proc_env_open(pid_t pid)
{
	/* Recent kernels refuse to open a kernel thread's or zombie's environ. */
	return proc_file_open_pid(pid, "environ", -ENODATA);
}

int proc_env_read_fd(int fd, struct proc_env *out)
{
	struct env_scan sc;
	char chunk[4096];
	size_t total = 0;
	int err = 0;

	scan_init(&sc, out);
	while (total < PROC_ENV_READ_MAX) {
		size_t want = PROC_ENV_READ_MAX - total;
		ssize_t n = read(fd, chunk, want < sizeof(chunk) ? want : sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		scan_feed(&sc, chunk, (size_t)n);
		total += (size_t)n;
	}
	if (total == PROC_ENV_READ_MAX && read(fd, chunk, 1) > 0)
		out->flags |= PROC_ENV_F_TRUNCATED;
	out->bytes = (uint32_t)total;
	scan_finish(&sc);
	explicit_bzero(chunk, sizeof(chunk));
	if (total > 0)
		return 0;	/* what was read before an error still stands */
	/* Nothing kept from an unreadable or empty environment. */
	memset(out, 0, sizeof(*out));
	return err && err != -ESRCH ? err : -ENODATA;
}

/* Reads the environment open as fd, or keeps nothing when it is -errno; closes it. */
static int read_opened(int fd, struct proc_env *out)
{
	int err;

	if (fd < 0) {
		memset(out, 0, sizeof(*out));
		return fd;
	}
	err = proc_env_read_fd(fd, out);
	close(fd);
	return err;
}

int proc_env_read_file(const char *path, struct proc_env *out)
{
	return read_opened(proc_file_open(path, -ENODATA), out);
}

int proc_env_read(pid_t pid, struct proc_env *out)
{
	return read_opened(proc_env_open(pid), out);
}

/*
 * Whether field f of var holds what the scanner could have stored: its
 * value's text decoded again gives the same bytes, and a field absent or
 * refused is zero past its state.
 */
static int field_as_stored(const struct env_var *var, const char *f)
{
	struct env_scan sc = { .var = var };
	size_t size = field_size(var->kind), text;
	uint32_t state;
	const char *value;

	memcpy(&state, f, sizeof(state));
	if (state == PROC_ENV_ABSENT || state == PROC_ENV_INVALID) {
		memset(&sc.field, 0, sizeof(sc.field));
		sc.field.num.state = state;
		return memcmp(f, &sc.field, size) == 0;
	}
	if (state != PROC_ENV_SET)
		return 0;
	if (is_number(var->kind)) {
		const struct proc_env_num *num = (const void *)f;

		sc.len = (size_t)snprintf(sc.value, sizeof(sc.value), "%llu",
					  (unsigned long long)num->value);
	} else {
		value = f + offsetof(struct proc_env_id, value);
		text = size - offsetof(struct proc_env_id, value);
		sc.len = strnlen(value, text);
		if (sc.len == text)
			return 0;	/* not terminated inside its field */
		memcpy(sc.value, value, sc.len);
	}
	if (field_decode(&sc) != 0)
		return 0;
	return memcmp(f, &sc.field, size) == 0;
}

int proc_env_check(const struct proc_env *e)
{
	const uint32_t flags = PROC_ENV_F_TRUNCATED | PROC_ENV_F_CUT_ENTRY | PROC_ENV_F_CONFLICT |
			       PROC_ENV_F_MALFORMED;

	for (size_t i = 0; i < ARRAY_SIZE(env_vars); i++)
		if (!field_as_stored(&env_vars[i], (const char *)e + env_vars[i].off))
			return -EPROTO;
	/* Every entry ends with a NUL that was read; a refusal is an entry's. */
	if (e->bytes > PROC_ENV_READ_MAX || e->entries > e->bytes || e->refused > e->entries ||
	    (e->flags & ~flags))
		return -EPROTO;
	return 0;
}
