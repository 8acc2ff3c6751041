/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pyprocs.h.  One entry per watched process looked at, in a bounded
 * table (the segment's SHM_PY_PROCS): a process that is not CPython is
 * looked at again every PYPROCS_RETRY_NS (it may exec one), one whose
 * interpreter is still starting every scan.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bpf/probe_abi.h"
#include "collector/python/pyfind.h"
#include "collector/python/pyprocs.h"
#include "collector/python/pyread.h"
#include "common/log.h"

#define PYPROCS_MAX		SHM_PY_PROCS
#define PYPROCS_RETRY_NS	5000000000ull

enum py_state { PY_UNSEEN = 0, PY_NOT_PYTHON, PY_STARTING, PY_READY, PY_REFUSED };

struct pyproc {
	uint32_t pid;
	enum py_state state;
	uint64_t next_look_ns;
	int mem;			/* /proc/PID/mem while READY, else -1 */
	struct py_interp pi;
	uint64_t loader_code;		/* its DataLoader's next(), told to zp_loaders; 0 none */
};

struct pyprocs {
	struct agg *agg;
	int procs_fd;
	int loaders_fd;
	struct pyproc e[PYPROCS_MAX];
	uint32_t n;
};

struct pyprocs *pyprocs_new(struct agg *agg, int procs_fd, int loaders_fd)
{
	struct pyprocs *pp = calloc(1, sizeof(*pp));

	if (!pp)
		return NULL;
	pp->agg = agg;
	pp->procs_fd = procs_fd;
	pp->loaders_fd = loaders_fd;
	return pp;
}

void pyprocs_free(struct pyprocs *pp)
{
	if (!pp)
		return;
	for (uint32_t i = 0; i < pp->n; i++)
		if (pp->e[i].mem >= 0)
			close(pp->e[i].mem);
	free(pp);
}

static struct pyproc *entry(struct pyprocs *pp, uint32_t pid, int create)
{
	for (uint32_t i = 0; i < pp->n; i++)
		if (pp->e[i].pid == pid)
			return &pp->e[i];
	if (!create || pp->n == PYPROCS_MAX)
		return NULL;
	memset(&pp->e[pp->n], 0, sizeof(pp->e[0]));
	pp->e[pp->n].pid = pid;
	pp->e[pp->n].mem = -1;
	return &pp->e[pp->n++];
}

static int ready(struct pyprocs *pp, struct pyproc *e)
{
	struct zp_proc row = { 0 };
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/mem", e->pid);
	e->mem = open(path, O_RDONLY | O_CLOEXEC);
	if (e->mem < 0)
		return -errno;
	row.runtime = e->pi.runtime;
	row.off = e->pi.layout.walk;
	if (bpf_map_update_elem(pp->procs_fd, &e->pid, &row, BPF_ANY) != 0) {
		int err = -errno;

		close(e->mem);
		e->mem = -1;
		return err;
	}
	return 0;
}

static void look(struct pyprocs *pp, struct pyproc *e, uint64_t now_ns)
{
	char why[256];
	int err = pyfind(e->pid, &e->pi, why, sizeof(why));

	e->next_look_ns = now_ns + PYPROCS_RETRY_NS;
	switch (err) {
	case 0:
		err = ready(pp, e);
		if (err) {
			log_warnx("pid %u: cannot follow its Python frames: %s", e->pid,
				  strerror(-err));
			e->state = PY_REFUSED;
			break;
		}
		e->state = PY_READY;
		agg_py_status(pp->agg, e->pid, SHM_PY_FRAMES, e->pi.major, e->pi.minor);
		if (e->pi.micro_known)
			log_info("pid %u runs CPython %u.%u.%u (%s): Python sites of its stalls are kept",
				 e->pid, e->pi.major, e->pi.minor, e->pi.micro, e->pi.path);
		else
			log_info("pid %u runs CPython %u.%u (%s): Python sites of its stalls are kept",
				 e->pid, e->pi.major, e->pi.minor, e->pi.path);
		break;
	case -EAGAIN:
		e->state = PY_STARTING;
		e->next_look_ns = now_ns;
		break;
	case -EPROTONOSUPPORT:
		e->state = PY_REFUSED;
		agg_py_status(pp->agg, e->pid, SHM_PY_UNSUPPORTED, e->pi.major, e->pi.minor);
		log_warnx("pid %u: %s", e->pid, why);
		break;
	case -EPROTO:
		e->state = PY_REFUSED;
		agg_py_status(pp->agg, e->pid, SHM_PY_MISMATCH, e->pi.major, e->pi.minor);
		log_warnx("pid %u: CPython %u.%u refused: %s", e->pid, e->pi.major,
			  e->pi.minor, why);
		break;
	default:
		e->state = PY_NOT_PYTHON;
		break;
	}
}

void pyprocs_scan(struct pyprocs *pp, uint64_t now_ns)
{
	uint32_t cursor = 0, pid;

	while (agg_proc_next(pp->agg, &cursor, &pid)) {
		struct pyproc *e = entry(pp, pid, 1);

		if (!e)
			return;		/* full: the rest wait for evictions */
		if (e->state == PY_READY || e->state == PY_REFUSED)
			continue;
		if (e->state == PY_UNSEEN || now_ns >= e->next_look_ns)
			look(pp, e, now_ns);
	}
}

void pyprocs_forget(struct pyprocs *pp, uint32_t pid)
{
	struct pyproc *e = entry(pp, pid, 0);

	if (!e)
		return;
	if (e->mem >= 0)
		close(e->mem);
	pyread_next_batch();
	bpf_map_delete_elem(pp->procs_fd, &pid);
	if (e->loader_code)
		bpf_map_delete_elem(pp->loaders_fd, &pid);
	*e = pp->e[--pp->n];
}

/*
 * e's DataLoader next() is code (a stall's frames passed through it): from
 * now on the scheduler probe places each block of its training threads
 * inside or outside it (bpf/pystack_walk.h, zp_loader_at).
 */
static void tell_loader(struct pyprocs *pp, struct pyproc *e, uint64_t code)
{
	struct zp_loader row = { .code = code & ~(uint64_t)e->pi.layout.code_tag_bits,
				 .tag_mask = e->pi.layout.code_tag_bits };

	if (bpf_map_update_elem(pp->loaders_fd, &e->pid, &row, BPF_ANY) != 0) {
		log_warnx("pid %u: cannot follow its DataLoader by its frames: %s", e->pid,
			  strerror(errno));
		return;
	}
	e->loader_code = code;
	log_info("pid %u: its DataLoader waits are told by their Python frames from now on",
		 e->pid);
}

int pyprocs_where(void *ctx, const struct zev_py_stall *rec, struct stall_where *out)
{
	struct pyprocs *pp = ctx;
	struct pyproc *e = entry(pp, rec->hdr.pid, 0);

	uint64_t loader_code;
	int err;

	if (!e || e->state != PY_READY || !rec->nframes)
		return -ENOENT;
	err = pyread_where(e->mem, &e->pi, rec, out, &loader_code);
	if (!err && loader_code && loader_code != e->loader_code)
		tell_loader(pp, e, loader_code);
	return err;
}
