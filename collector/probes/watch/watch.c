/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The watch family (probe_family.h): which processes are watched.  Its
 * programs (watch.bpf.c) follow forks, execs and exits from the first
 * watched process and each process's library loads; its records start and
 * end a process's row, and ask the loader to look at a process's
 * libraries.  Loaded first: its maps are the watched set every other
 * family reads.  Root.
 */
#include <string.h>

#include "bpf/probe_abi.h"
#include "bpf/watch.skel.h"
#include "collector/probes/decode.h"
#include "collector/probes/family_rows.h"
#include "common/log.h"

PROBE_SKELETON(watch)

/* --comm names, matched by the kernel at exec. */
static int watch_configure(void *skel, struct probes *p)
{
	struct watch_bpf *s = skel;
	size_t n = p->opts.n_comms;

	if (n > ZW_MAX_COMMS) {
		log_warnx("only the first %d --comm names are matched at exec", ZW_MAX_COMMS);
		n = ZW_MAX_COMMS;
	}
	for (size_t i = 0; i < n; i++)
		strncpy((char *)s->rodata->comms[i], p->opts.comms[i], SHM_COMM_LEN - 1);
	s->rodata->n_comms = (__u32)n;
	return 0;
}

static const struct probe_attach attach[] = {
	/* The watched set follows forks, execs and exits from the first. */
	AUTO(PROBE_OBJ_WATCH, "zw_fork"),
	AUTO(PROBE_OBJ_WATCH, "zw_exec"),
	AUTO(PROBE_OBJ_WATCH, "zw_exit"),
	/* Each process's library loads, in the loader it maps. */
	UPROBE(PROBE_OBJ_WATCH, LOADER, "_dl_debug_state", "zw_dl_state"),
};

static int dec_watch(struct decode *d, const void *rec)
{
	const struct zev_watch *e = rec;
	char comm[SHM_COMM_LEN + 1];

	memcpy(comm, e->comm, SHM_COMM_LEN);
	comm[SHM_COMM_LEN] = '\0';
	decode_proc_seen(d, e->hdr.pid, e->ppid, e->reasons & SHM_WATCH_ALL_BITS, comm, e->start_ns,
			 (e->reasons & ZEV_WATCH_F_EXEC) != 0);
	return 0;
}

static int dec_exit(struct decode *d, const void *rec)
{
	const struct zev_exit *e = rec;
	uint64_t known = 0;

	/*
	 * The exit of an earlier process under a pid that /proc showed
	 * watched again before this record was read: not the one watched now.
	 */
	if (e->start_ns && agg_proc_start_time(d->agg, e->hdr.pid, &known) == 0 && known &&
	    !ZW_SAME_START(known, e->start_ns))
		return 0;
	if (d->ops.proc_exit)
		d->ops.proc_exit(d->ops.ctx, e->hdr.pid, e->start_ns);
	decode_proc_gone(d, e->hdr.pid);
	return 0;
}

static int dec_libc_probe(struct decode *d, const void *rec)
{
	const struct zev_libc_probe *e = rec;

	if (d->ops.libc_probe)
		d->ops.libc_probe(d->ops.ctx, e->hdr.pid);
	return 0;
}

static int dec_lib_loaded(struct decode *d, const void *rec)
{
	const struct zev_lib_loaded *e = rec;

	if (d->ops.lib_loaded)
		d->ops.lib_loaded(d->ops.ctx, e->hdr.pid);
	return 0;
}

static const struct probe_decoder decoders[] = {
	DECODER(ZEV_WATCH,	zev_watch,	dec_watch),
	DECODER(ZEV_EXIT,	zev_exit,	dec_exit),
	DECODER(ZEV_LIBC_PROBE,	zev_libc_probe,	dec_libc_probe),
	DECODER(ZEV_LIB_LOADED,	zev_lib_loaded,	dec_lib_loaded),
};

PROBE_FAMILY(watch, watch_configure, NULL, NULL);
