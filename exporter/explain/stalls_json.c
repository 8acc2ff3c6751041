/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stalls_json.h.  Shape:
 *   {"window_seconds": the collector's window (header.window_ns); with
 *                      ?since, the span the answer covers,
 *    with ?since=SECONDS only: "since_seconds_asked", "covered" (false:
 *      the history is shorter than asked, and the answer covers all of
 *      it), "history": {"period_seconds", "max_seconds", "seconds" (held
 *      now), "processes_dropped", "sites_dropped" (over a sample's
 *      bounds, in the newest sample; stall_history.h)},
 *    "overflows": {"sites": N, "processes": N},
 *    "processes": [{"pid", "comm", "rank", "nranks" (-1: no communicator),
 *                   "python": {"status", "version"},
 *                   "unsampled_stalls", "unsampled_seconds",
 *                   "recent": {"seconds" (span covered), "input_wait",
 *                              "futex_wait", "barrier_wait",
 *                              "collective_wait", "runq", "blocked",
 *                              "preempted" (seconds), "involuntary_switches",
 *                              "failed_allocs", "stalls": {state: seconds},
 *                              "stall_sites"},
 *                   "gpus": [{"gpu", "used_bytes", "peak_bytes",
 *                             "total_bytes" (0 unknown), "failed_calls"}],
 *                   "explain" (training processes: a rank, a process that
 *                              launches kernels, or Python frames read):
 *                              {"window_seconds", "shares":
 *                              {state: fraction of wall time}, "verdict",
 *                              "evidence", "recommendation"},
 *                   "sites": [{"state", "file", "line", "function",
 *                              "leaf": {"file", "line", "function"},
 *                              "stalls", "seconds", "share",
 *                              "max_seconds", "native_stack",
 *                              "truncated"}]}]}
 * Sites of a process are sorted by time, longest first, and written by
 * stall_sites.c, as the feed's processes[].stall_sites are (there without
 * leaf and the three keys after share); a site's share is its part of the
 * time of all its process's sites.  With ?since, "explain" (its
 * window_seconds: from the process's first sample when it came later) and
 * "sites" are over that span: differences of cumulative figures with the
 * exporter's sample nearest to its start (stall_history.h); a site is
 * listed only with time in it, its "stalls", "seconds" and "share" those
 * of the span ("max_seconds" stays its longest ever); "recent" stays the
 * collector's window.  The shares of explain come from the scheduler's
 * states of its training threads (they add up to those threads' wall
 * time); where the scheduler has none for it, from the Python stalls of
 * its main thread by state when its frames are read, else from its wait
 * counters (DataLoader, futex, barrier and collective waits, run-queue
 * delay); the rest of the wall time is "on CPU or short waits".  Over a
 * ?since span those fallbacks are its sites' time by state (every
 * thread's) and its communicators' waits added up: the segment keeps no
 * running total of the main thread's stalls or of the collector's merged
 * collective waits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "exporter/explain/explain_verdict.h"
#include "exporter/explain/json_text.h"
#include "exporter/explain/stall_history.h"
#include "exporter/explain/stall_sites.h"
#include "exporter/explain/stalls_json.h"

static struct json_object *seconds(uint64_t ns)
{
	return json_object_new_double((double)ns / 1e9);
}

static const char *status_name(uint32_t status)
{
	static const char *const names[] = { "none", "frames", "unsupported", "mismatch" };

	return status <= SHM_PY_MAX_STATUS ? names[status] : "none";
}

static struct json_object *recent_json(const struct shm_snapshot *snap, uint32_t pid)
{
	const struct shm_proc_recent *r = NULL, *rows_;
	struct json_object *o = json_object_new_object(), *st = json_object_new_object();
	uint32_t n;

	rows_ = shm_snapshot_rows(snap, SHM_TABLE_PROC_RECENT, &n);
	for (uint32_t i = 0; i < n && !r; i++)
		if (rows_[i].pid == pid)
			r = &rows_[i];
	if (!r) {
		json_object_put(st);
		json_object_put(o);
		return NULL;
	}
	json_object_object_add(o, "seconds", seconds(r->covered_ns));
	json_object_object_add(o, "input_wait", seconds(r->input_wait_ns));
	json_object_object_add(o, "futex_wait", seconds(r->futex_wait_ns));
	json_object_object_add(o, "barrier_wait", seconds(r->barrier_wait_ns));
	json_object_object_add(o, "collective_wait", seconds(r->collective_wait_ns));
	json_object_object_add(o, "runq", seconds(r->runq_ns));
	json_object_object_add(o, "blocked", seconds(r->blocked_ns));
	json_object_object_add(o, "preempted", seconds(r->preempted_ns));
	json_object_object_add(o, "involuntary_switches",
			       json_object_new_uint64(r->involuntary_switches));
	json_object_object_add(o, "failed_allocs", json_object_new_uint64(r->failed_allocs));
	for (uint32_t s = 0; s < SHM_STALL_STATE_COUNT; s++)
		json_object_object_add(st, shm_stall_state_name(s), seconds(r->stall_ns[s]));
	json_object_object_add(o, "stalls", st);
	json_object_object_add(o, "stall_sites", seconds(r->stall_sites_ns));
	return o;
}

static const struct shm_proc_recent *recent_of(const struct shm_snapshot *snap, uint32_t pid)
{
	const struct shm_proc_recent *r;
	uint32_t n;

	r = shm_snapshot_rows(snap, SHM_TABLE_PROC_RECENT, &n);
	for (uint32_t i = 0; i < n; i++)
		if (r[i].pid == pid)
			return &r[i];
	return NULL;
}

static double frac(uint64_t ns, double window_s)
{
	double f = (double)ns / 1e9 / window_s;

	return f > 1 ? 1 : f;	/* waits of several threads overlap */
}

/* What the verdict is drawn from; 0, or -1 when there is no window yet. */
static int ev_fill(const struct shm_snapshot *snap, const struct shm_proc_recent *r, int frames,
		   struct ev_process *ev)
{
	const struct shm_gpu_mem *mem;
	const struct shm_gpu *gpu;
	double w, sum = 0;
	uint32_t n, n_gpu;

	ev->window_s = w = (double)r->covered_ns / 1e9;
	if (w <= 0)
		return -1;
	for (uint32_t st = 0; st < SHM_STATE_COUNT; st++)
		sum += (double)r->thread_state_ns[st];
	if (sum > 0) {
		/* The scheduler's states of its training threads: they add up to their time. */
		static const enum ev_share of_thread[SHM_STATE_COUNT] = {
			[SHM_STATE_ONCPU] = EV_ONCPU, [SHM_STATE_RUNQ] = EV_RUNQ,
			[SHM_STATE_INPUT] = EV_INPUT, [SHM_STATE_GPU] = EV_GPU,
			[SHM_STATE_COLLECTIVE] = EV_COLLECTIVE, [SHM_STATE_LOCK] = EV_LOCK,
			[SHM_STATE_SLEEP] = EV_SLEEP, [SHM_STATE_OTHER] = EV_OTHER,
		};

		for (uint32_t st = 0; st < SHM_STATE_COUNT; st++)
			ev->share[of_thread[st]] = (double)r->thread_state_ns[st] / sum;
		sum = 0;
		goto rest;
	}
	sum = 0;
	if (frames) {
		static const enum ev_share of_state[SHM_STALL_STATE_COUNT] = {
			[SHM_STALL_RUNQ] = EV_RUNQ, [SHM_STALL_INPUT] = EV_INPUT,
			[SHM_STALL_GPU] = EV_GPU, [SHM_STALL_COLLECTIVE] = EV_COLLECTIVE,
			[SHM_STALL_LOCK] = EV_LOCK, [SHM_STALL_SLEEP] = EV_SLEEP,
			[SHM_STALL_OTHER] = EV_OTHER,
		};

		for (uint32_t st = 0; st < SHM_STALL_STATE_COUNT; st++)
			ev->share[of_state[st]] = frac(r->stall_ns[st], w);
	} else {
		ev->share[EV_INPUT] = frac(r->input_wait_ns, w);
		ev->share[EV_LOCK] = frac(r->futex_wait_ns, w);
		ev->share[EV_COLLECTIVE] = frac(r->barrier_wait_ns + r->collective_wait_ns, w);
		ev->share[EV_RUNQ] = frac(r->runq_ns, w);
	}
	for (int i = 0; i < EV_ONCPU; i++)
		sum += ev->share[i];
	ev->share[EV_ONCPU] = sum < 1 ? 1 - sum : 0;
rest:
	if (ev->share[EV_GPU] > 0)
		ev->uses_gpu = 1;
	ev->involuntary_per_s = (double)r->involuntary_switches / w;
	ev->failed_allocs = r->failed_allocs;
	mem = shm_snapshot_rows(snap, SHM_TABLE_GPU_MEM, &n);
	gpu = shm_snapshot_rows(snap, SHM_TABLE_GPUS, &n_gpu);
	for (uint32_t i = 0; i < n; i++) {
		if (mem[i].pid != ev->pid)
			continue;
		ev->uses_gpu = 1;
		for (uint32_t k = 0; k < n_gpu; k++) {
			double f;

			if (gpu[k].gpu_id != mem[i].gpu_id || !gpu[k].total_bytes)
				continue;
			f = (double)mem[i].peak_bytes / (double)gpu[k].total_bytes;
			if (f > ev->gpu_peak_fraction) {
				ev->gpu_peak_fraction = f;
				ev->gpu_peak_id = mem[i].gpu_id;
			}
		}
	}
	return 0;
}

static struct json_object *explain_json(const struct ev_process *ev)
{
	struct json_object *o = json_object_new_object(), *sh = json_object_new_object();
	const char *advice = "";
	char evidence[512];
	enum ev_verdict v = ev_decide(ev, evidence, sizeof(evidence), &advice);

	json_object_object_add(o, "window_seconds", json_object_new_double(ev->window_s));
	for (int s = 0; s < EV_SHARE_COUNT; s++)
		json_object_object_add(sh, ev_share_name(s), json_object_new_double(ev->share[s]));
	json_object_object_add(o, "shares", sh);
	json_object_object_add(o, "verdict", json_object_new_string(ev_verdict_name(v)));
	json_object_object_add(o, "evidence", json_object_new_string(evidence));
	json_object_object_add(o, "recommendation", json_object_new_string(advice));
	return o;
}

static void comm_and_gpus(const struct shm_snapshot *snap, uint32_t pid, struct json_object *o)
{
	const struct shm_nccl_comm *comm;
	const struct shm_gpu_mem *mem;
	const struct shm_gpu *gpu;
	struct json_object *list = json_object_new_array();
	int32_t rank = -1, nranks = -1;
	uint32_t n, n_gpu;

	comm = shm_snapshot_rows(snap, SHM_TABLE_NCCL_COMMS, &n);
	for (uint32_t i = 0; i < n; i++) {
		if (comm[i].pid == pid && (rank < 0 || comm[i].nranks > nranks)) {
			rank = comm[i].rank;
			nranks = comm[i].nranks;
		}
	}
	json_object_object_add(o, "rank", json_object_new_int(rank));
	json_object_object_add(o, "nranks", json_object_new_int(nranks));
	mem = shm_snapshot_rows(snap, SHM_TABLE_GPU_MEM, &n);
	gpu = shm_snapshot_rows(snap, SHM_TABLE_GPUS, &n_gpu);
	for (uint32_t i = 0; i < n; i++) {
		struct json_object *g;
		uint64_t total = 0;

		if (mem[i].pid != pid)
			continue;
		for (uint32_t k = 0; k < n_gpu; k++)
			if (gpu[k].gpu_id == mem[i].gpu_id)
				total = gpu[k].total_bytes;
		g = json_object_new_object();
		json_object_object_add(g, "gpu", json_object_new_uint64(mem[i].gpu_id));
		json_object_object_add(g, "used_bytes", json_object_new_uint64(mem[i].used_bytes));
		json_object_object_add(g, "peak_bytes", json_object_new_uint64(mem[i].peak_bytes));
		json_object_object_add(g, "total_bytes", json_object_new_uint64(total));
		json_object_object_add(g, "failed_calls", json_object_new_uint64(mem[i].failed_calls));
		json_object_array_add(list, g);
	}
	json_object_object_add(o, "gpus", list);
}

/*
 * It runs work on a GPU: a trainer, whatever its Python.  Its forked
 * DataLoader workers map the same libraries but launch nothing.
 */
static int launches_kernels(const struct shm_proc *p)
{
	return p->lat[SHM_FAMILY_CUDA_LAUNCH].count || p->lat[SHM_FAMILY_CUDA_GRAPH_LAUNCH].count;
}

/*
 * The job a process runs in, from its identity (NULL: none read): its
 * torchelastic run, else its Slurm job step; "" when neither is known.
 * torchrun's run id is "none" unless given (--rdzv-id): then every job
 * of the node has that one, so it names none of them.
 */
static void job_of(const struct shm_identity *id, char *out, size_t len)
{
	char run[SHM_ID_RUN_ID_LEN + 1], step[SHM_ID_STEP_LEN + 1];

	out[0] = '\0';
	if (!id)
		return;
	snprintf(run, sizeof(run), "%.*s", (int)SHM_ID_RUN_ID_LEN, id->run_id);
	snprintf(step, sizeof(step), "%.*s", (int)SHM_ID_STEP_LEN, id->slurm_step);
	if (run[0] && strcmp(run, "none") != 0)
		snprintf(out, len, "torchelastic:%s", run);
	else if (id->slurm_job_id)
		snprintf(out, len, "slurm:%llu.%s", (unsigned long long)id->slurm_job_id, step);
}

static struct json_object *process_json(const struct shm_snapshot *snap,
					const struct stall_window *w,
					const struct shm_proc *p, const struct shm_identity *id,
					struct ev_process *ev, int *training)
{
	const struct shm_proc_recent *r = recent_of(snap, p->pid);
	struct shm_proc_recent windowed;
	const struct shm_nccl_comm *comm;
	uint32_t n_comm;
	const struct shm_py_proc *py;
	struct json_object *o = json_object_new_object(), *pj = json_object_new_object();
	const struct shm_py_proc *mine = NULL;
	uint32_t n_py;
	char version[16] = "";

	py = shm_snapshot_rows(snap, SHM_TABLE_PY_PROCS, &n_py);
	for (uint32_t i = 0; i < n_py && !mine; i++)
		if (py[i].pid == p->pid)
			mine = &py[i];
	json_object_object_add(o, "pid", json_object_new_uint64(p->pid));
	json_object_object_add(o, "comm", stall_sites_text(p->comm, sizeof(p->comm)));
	json_object_object_add(pj, "status", json_object_new_string(status_name(mine ? mine->status : 0)));
	if (mine && mine->major)
		snprintf(version, sizeof(version), "%u.%u", mine->major % 100, mine->minor % 1000);
	json_object_object_add(pj, "version", json_object_new_string(version));
	json_object_object_add(o, "python", pj);
	json_object_object_add(o, "unsampled_stalls",
			       json_object_new_uint64(mine ? mine->unsampled_stalls : 0));
	json_object_object_add(o, "unsampled_seconds", seconds(mine ? mine->unsampled_ns : 0));
	json_object_object_add(o, "recent", recent_json(snap, p->pid));
	comm_and_gpus(snap, p->pid, o);
	json_object_object_add(o, "sites", stall_sites_json(snap, w, p->pid, 0, 1));
	memset(ev, 0, sizeof(*ev));
	ev->pid = p->pid;
	ev->rank = ev->nranks = -1;
	comm = shm_snapshot_rows(snap, SHM_TABLE_NCCL_COMMS, &n_comm);
	for (uint32_t i = 0; i < n_comm; i++) {
		if (comm[i].pid == p->pid && comm[i].nranks > ev->nranks) {
			ev->rank = comm[i].rank;
			ev->nranks = comm[i].nranks;
			/* An id of its own (pid, handle) joins no other rank. */
			ev->comm_id = comm[i].flags & SHM_NCCL_COMM_LOCAL_ID ? 0 : comm[i].comm_id;
		}
	}
	job_of(id, ev->job, sizeof(ev->job));
	/* A span asked for: the verdict is drawn from it, not from the collector's window. */
	if (w)
		r = stall_window_proc(w, p, &windowed) == 0 ? &windowed : NULL;
	ev->uses_gpu = ev->rank >= 0 || launches_kernels(p);
	*training = r && (ev->rank >= 0 || launches_kernels(p) ||
			  (mine && mine->status == SHM_PY_FRAMES)) &&
		    ev_fill(snap, r, mine && mine->status == SHM_PY_FRAMES, ev) == 0;
	return o;
}

/* What a span asked for covers, for the document's head. */
static void window_head(const struct stall_window *w, uint64_t since_s, struct json_object *doc)
{
	struct json_object *h = json_object_new_object();

	json_object_object_add(doc, "since_seconds_asked", json_object_new_uint64(since_s));
	json_object_object_add(doc, "covered", json_object_new_boolean(w->covered));
	json_object_object_add(h, "period_seconds", seconds(STALL_HISTORY_PERIOD_NS));
	json_object_object_add(h, "max_seconds",
			       seconds((STALL_HISTORY_SAMPLES - 1) * STALL_HISTORY_PERIOD_NS));
	json_object_object_add(h, "seconds", seconds(w->held_ns));
	json_object_object_add(h, "processes_dropped", json_object_new_uint64(w->procs_dropped));
	json_object_object_add(h, "sites_dropped", json_object_new_uint64(w->sites_dropped));
	json_object_object_add(doc, "history", h);
}

static char *render(const struct shm_snapshot *snap, const struct stall_window *w,
		    uint64_t since_s, size_t *len)
{
	const struct shm_proc *procs;
	struct ev_process *ev, **evp;
	const struct shm_identity *ids;
	struct json_object **pj;
	int *training;
	size_t n_ev = 0;
	struct json_object *doc, *list, *ovf;
	uint32_t n_procs, n_ids;

	procs = shm_snapshot_rows(snap, SHM_TABLE_PROCS, &n_procs);
	ids = shm_snapshot_identity(snap, &n_ids);
	ev = calloc(n_procs ? n_procs : 1, sizeof(*ev));
	evp = calloc(n_procs ? n_procs : 1, sizeof(*evp));
	pj = calloc(n_procs ? n_procs : 1, sizeof(*pj));
	training = calloc(n_procs ? n_procs : 1, sizeof(*training));
	doc = json_object_new_object();
	list = json_object_new_array();
	ovf = json_object_new_object();
	if (!ev || !evp || !pj || !training || !doc || !list || !ovf) {
		free(ev);
		free(evp);
		free(pj);
		free(training);
		json_object_put(doc);
		json_object_put(list);
		json_object_put(ovf);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < n_procs; i++) {
		/* Identity row i describes procs row i while it names the same pid. */
		const struct shm_identity *id = i < n_ids && ids[i].pid == procs[i].pid ?
						&ids[i] : NULL;

		pj[i] = process_json(snap, w, &procs[i], id, &ev[i], &training[i]);
		json_object_array_add(list, pj[i]);
		if (training[i])
			evp[n_ev++] = &ev[i];
	}
	/* Ranks are judged together: the straggler is the one the others wait for. */
	ev_stragglers(evp, n_ev);
	for (uint32_t i = 0; i < n_procs; i++)
		if (training[i])
			json_object_object_add(pj[i], "explain", explain_json(&ev[i]));
	free(ev);
	free(evp);
	free(pj);
	free(training);
	json_object_object_add(ovf, "sites",
			       json_object_new_uint64(snap->hdr->table[SHM_TABLE_STALL_SITES].overflows));
	json_object_object_add(ovf, "processes",
			       json_object_new_uint64(snap->hdr->table[SHM_TABLE_PY_PROCS].overflows));
	json_object_object_add(doc, "window_seconds",
			       seconds(w ? w->span_ns : snap->hdr->window_ns));
	if (w)
		window_head(w, since_s, doc);
	json_object_object_add(doc, "overflows", ovf);
	json_object_object_add(doc, "processes", list);
	return json_text_take(doc, len);
}

char *stalls_json_render(const struct shm_snapshot *snap, size_t *len)
{
	return render(snap, NULL, 0, len);
}

char *stalls_json_render_since(const struct shm_snapshot *snap, const struct stall_history *h,
			       uint64_t since_s, size_t *len)
{
	struct stall_window w;
	uint64_t asked = since_s < UINT64_MAX / 1000000000ull ? since_s * 1000000000ull : UINT64_MAX;

	/* Longer than the history holds: all of it, and covered says it is less. */
	stall_history_window(h, snap, asked, &w);
	return render(snap, &w, since_s, len);
}
