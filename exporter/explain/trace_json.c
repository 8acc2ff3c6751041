/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trace_json.h.  The document:
 *   {"traceEvents": [...], "displayTimeUnit": "ms",
 *    "otherData": {"source": "zernel", "seconds": N, "dropped": overflows}}
 * Metadata first: a process_name per process ("comm (pid N)") and a
 * thread_name per thread ("main" for the thread whose id is the pid).
 * Stalls and NCCL calls are complete events ("X", ts and dur in
 * microseconds of CLOCK_MONOTONIC) on their thread; NCCL waits, which
 * overlap the calls that follow, are async pairs ("b"/"e") on the same
 * thread.  Complete events of one thread nest: sorted by start (longest
 * first), an event that would outlast the one it starts inside is cut at
 * that one's end, so the file draws the same in every viewer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "exporter/explain/json_text.h"
#include "exporter/explain/trace_json.h"

#define NEST_MAX	64	/* deeper nesting is cut: never happens in practice */

static uint64_t start_of(const struct shm_trace_event *e)
{
	return e->end_mono_ns - e->dur_ns;
}

static int by_thread_then_start(const void *a, const void *b)
{
	const struct shm_trace_event *x = *(const struct shm_trace_event *const *)a;
	const struct shm_trace_event *y = *(const struct shm_trace_event *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (start_of(x) != start_of(y))
		return start_of(x) < start_of(y) ? -1 : 1;
	return x->dur_ns > y->dur_ns ? -1 : x->dur_ns < y->dur_ns ? 1 : 0;
}

/* Segment text (untrusted): bounded, printable ASCII. */
static struct json_object *text(const char *s, size_t cap)
{
	char buf[SHM_TRACE_NAME_LEN + 1];
	size_t n = strnlen(s, cap < SHM_TRACE_NAME_LEN ? cap : SHM_TRACE_NAME_LEN);

	for (size_t i = 0; i < n; i++)
		buf[i] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
	buf[n] = '\0';
	return json_object_new_string(buf);
}

static struct json_object *meta(const char *what, uint32_t pid, uint32_t tid,
				struct json_object *name)
{
	struct json_object *o = json_object_new_object(), *args = json_object_new_object();

	json_object_object_add(o, "ph", json_object_new_string("M"));
	json_object_object_add(o, "name", json_object_new_string(what));
	json_object_object_add(o, "pid", json_object_new_uint64(pid));
	json_object_object_add(o, "tid", json_object_new_uint64(tid));
	json_object_object_add(args, "name", name);
	json_object_object_add(o, "args", args);
	return o;
}

static struct json_object *us(uint64_t ns)
{
	return json_object_new_double((double)ns / 1000.0);
}

/* "nccl all_reduce": the op's label, which every op has. */
static struct json_object *nccl_call_name(uint32_t op)
{
	const char *name = shm_nccl_op_name(op);
	char text[64];

	snprintf(text, sizeof(text), "nccl %s", name ? name : "?");
	return json_object_new_string(text);
}

static struct json_object *event(const struct shm_trace_event *e, uint64_t end_ns)
{
	struct json_object *o = json_object_new_object(), *args = json_object_new_object();
	const char *state = shm_stall_state_name(e->detail);

	json_object_object_add(o, "ph", json_object_new_string("X"));
	json_object_object_add(o, "pid", json_object_new_uint64(e->pid));
	json_object_object_add(o, "tid", json_object_new_uint64(e->tid));
	json_object_object_add(o, "ts", us(start_of(e)));
	json_object_object_add(o, "dur", us(end_ns - start_of(e)));
	if (e->kind == SHM_TRACE_STALL) {
		json_object_object_add(o, "name", e->name[0] ? text(e->name, sizeof(e->name)) :
					json_object_new_string("stall (no Python frame)"));
		json_object_object_add(o, "cat", json_object_new_string("stall"));
		json_object_object_add(args, "state", json_object_new_string(state ? state : "?"));
	} else {
		json_object_object_add(o, "name", nccl_call_name(e->detail));
		json_object_object_add(o, "cat", json_object_new_string("nccl"));
	}
	json_object_object_add(args, "duration_ms", json_object_new_double((double)e->dur_ns / 1e6));
	json_object_object_add(o, "args", args);
	return o;
}

static void wait_pair(struct json_object *list, const struct shm_trace_event *e, uint64_t id)
{
	const char *op = shm_nccl_op_name(e->detail);
	char name[64], idtext[24];

	snprintf(name, sizeof(name), "%s wait", op ? op : "nccl");
	snprintf(idtext, sizeof(idtext), "0x%llx", (unsigned long long)id);
	for (int end = 0; end < 2; end++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "ph", json_object_new_string(end ? "e" : "b"));
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "cat", json_object_new_string("nccl_wait"));
		json_object_object_add(o, "id", json_object_new_string(idtext));
		json_object_object_add(o, "pid", json_object_new_uint64(e->pid));
		json_object_object_add(o, "tid", json_object_new_uint64(e->tid));
		json_object_object_add(o, "ts", us(end ? e->end_mono_ns : start_of(e)));
		json_object_array_add(list, o);
	}
}

static const char *comm_of(const struct shm_snapshot *snap, uint32_t pid, char *buf, size_t len)
{
	const struct shm_proc *p;
	uint32_t n;

	p = shm_snapshot_rows(snap, SHM_TABLE_PROCS, &n);
	for (uint32_t i = 0; i < n; i++) {
		if (p[i].pid == pid) {
			size_t k = strnlen(p[i].comm, sizeof(p[i].comm));

			for (size_t j = 0; j < k && j + 1 < len; j++)
				buf[j] = (p[i].comm[j] >= 32 && p[i].comm[j] < 127) ? p[i].comm[j] : '?';
			buf[k < len ? k : len - 1] = '\0';
			return buf;
		}
	}
	snprintf(buf, len, "process");
	return buf;
}

/* Names, then events, thread by thread. */
static void emit(const struct shm_snapshot *snap, const struct shm_trace_event **ev, uint32_t n,
		 struct json_object *list)
{
	uint64_t stack[NEST_MAX], async_id = 1;
	uint32_t depth = 0;
	char comm[SHM_COMM_LEN + 1], name[64];

	for (uint32_t i = 0; i < n; i++) {
		const struct shm_trace_event *e = ev[i];
		uint64_t end = e->end_mono_ns;

		if (i == 0 || e->pid != ev[i - 1]->pid) {
			snprintf(name, sizeof(name), "%s (pid %u)", comm_of(snap, e->pid, comm,
									 sizeof(comm)), e->pid);
			json_object_array_add(list, meta("process_name", e->pid, e->pid,
							 json_object_new_string(name)));
		}
		if (i == 0 || e->pid != ev[i - 1]->pid || e->tid != ev[i - 1]->tid) {
			if (e->tid == e->pid)
				snprintf(name, sizeof(name), "main (tid %u)", e->tid);
			else
				snprintf(name, sizeof(name), "thread %u", e->tid);
			json_object_array_add(list, meta("thread_name", e->pid, e->tid,
							 json_object_new_string(name)));
			depth = 0;
		}
		if (e->kind == SHM_TRACE_NCCL_WAIT) {
			wait_pair(list, e, async_id++);
			continue;
		}
		while (depth && stack[depth - 1] <= start_of(e))
			depth--;
		if (depth && end > stack[depth - 1])
			end = stack[depth - 1];
		if (depth < NEST_MAX)
			stack[depth++] = end;
		json_object_array_add(list, event(e, end));
	}
}

char *trace_json_render(const struct shm_snapshot *snap, uint32_t seconds, size_t *len)
{
	const struct shm_trace_event *all, **ev;
	struct json_object *doc, *list, *other;
	uint64_t now = snap->hdr->heartbeat_mono_ns, since;
	uint32_t n_all, n = 0;

	since = (uint64_t)seconds * 1000000000ull < now ? now - (uint64_t)seconds * 1000000000ull : 0;
	all = shm_snapshot_rows(snap, SHM_TABLE_TRACE, &n_all);
	ev = calloc(n_all ? n_all : 1, sizeof(*ev));
	doc = json_object_new_object();
	list = json_object_new_array();
	other = json_object_new_object();
	if (!ev || !doc || !list || !other) {
		free(ev);
		json_object_put(doc);
		json_object_put(list);
		json_object_put(other);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < n_all; i++)
		if (all[i].end_mono_ns >= since && all[i].kind < SHM_TRACE_KIND_COUNT &&
		    all[i].dur_ns <= all[i].end_mono_ns)
			ev[n++] = &all[i];
	qsort(ev, n, sizeof(*ev), by_thread_then_start);
	emit(snap, ev, n, list);
	free(ev);
	json_object_object_add(doc, "traceEvents", list);
	json_object_object_add(doc, "displayTimeUnit", json_object_new_string("ms"));
	json_object_object_add(other, "source", json_object_new_string("zernel"));
	json_object_object_add(other, "seconds", json_object_new_uint64(seconds));
	json_object_object_add(other, "dropped",
			       json_object_new_uint64(snap->hdr->table[SHM_TABLE_TRACE].overflows));
	json_object_object_add(doc, "otherData", other);
	return json_text_take(doc, len);
}
