/* SPDX-License-Identifier: BSD-2-Clause */
/* `zernel watch --once` plain-text report (see text.h).  No privilege. */
#include <stdio.h>
#include <time.h>

#include "cli/fmt.h"
#include "cli/text.h"
#include "common/util.h"

#define OOM_FRACTION 0.95	/* the mark drawn on the live view's bars */

static void header(struct sbuf *o, const struct cli_feed *f, const char *source)
{
	char when[32], age[CLI_FMT_LEN];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	sbuf_printf(o, "zernel snapshot from %s at %s\n", source, when);
	sbuf_printf(o, "collector: %s", f->collector_up == 1 ? "up" :
		       f->collector_up == 0 ? "DOWN" : "unknown");
	if (f->mode[0])
		sbuf_printf(o, " (%s%s%s)", f->mode, f->scenario[0] ? ", scenario " : "",
			       f->scenario);
	if (f->status[0])
		sbuf_printf(o, "  status %s", f->status);
	if (f->stale_reason[0])
		sbuf_printf(o, "  reason: %s", f->stale_reason);
	if (f->generation >= 0)
		sbuf_printf(o, "  generation %.0f", f->generation);
	sbuf_printf(o, "  snapshot age %s\n",
		       cli_fmt_dur(age, sizeof(age), f->age_ms >= 0 ? f->age_ms * 1e6 : -1));
}

static void alerts(struct sbuf *o, const struct cli_feed *f)
{
	sbuf_printf(o, "\nALERTS (%zu firing)\n", cli_feed_firing(f));
	for (size_t i = 0; i < f->n_alert; i++) {
		const struct cli_alert *a = &f->alert[i];

		sbuf_printf(o, "  %-8s %-9s %s: %s%s%s\n", a->firing ? "FIRING" : a->pending ? "pending" : "inactive",
			       a->severity[0] ? a->severity : "-", a->name, a->summary,
			       a->starts_at[0] ? "  since " : "", a->starts_at);
	}
	if (f->n_alert == 0)
		sbuf_puts(o, "  none\n");
}

static void gpus(struct sbuf *o, const struct cli_feed *f)
{
	char u[CLI_FMT_LEN], t[CLI_FMT_LEN];

	sbuf_puts(o, "\nGPUS\n   gpu        used       total    use  over-95%  procs"
		     "       used_bytes      total_bytes\n");
	for (size_t i = 0; i < f->n_gpu; i++) {
		const struct cli_gpu *g = &f->gpu[i];
		double frac = g->total_bytes ? (double)g->used_bytes / (double)g->total_bytes : -1;

		sbuf_printf(o, "  %4u  %10s  %10s  ", g->gpu_id,
			       cli_fmt_bytes(u, sizeof(u), (double)g->used_bytes),
			       g->total_bytes ? cli_fmt_bytes(t, sizeof(t), (double)g->total_bytes) : "unknown");
		if (frac >= 0)
			sbuf_printf(o, "%4.1f%%  %-8s", frac * 100, frac >= OOM_FRACTION ? "YES" : "no");
		else
			sbuf_printf(o, "%5s  %-8s", "-", "-");
		sbuf_printf(o, "  %5u  %15llu  %15llu\n", g->processes,
			       (unsigned long long)g->used_bytes, (unsigned long long)g->total_bytes);
	}
	if (f->n_gpu == 0)
		sbuf_puts(o, "  none seen\n");

	sbuf_puts(o, "\nGPU MEMORY PER PROCESS\n      pid   gpu  comm                    used        peak"
		     "       used_bytes       peak_bytes\n");
	for (size_t i = 0; i < f->n_mem; i++) {
		const struct cli_mem *m = &f->mem[i];
		const struct cli_proc *p = cli_feed_proc(f, m->pid);

		sbuf_printf(o, "  %7u  %4u  %-16s  %10s  %10s  %15llu  %15llu\n", m->pid, m->gpu_id,
			       p && p->comm[0] ? p->comm : "-",
			       cli_fmt_bytes(u, sizeof(u), (double)m->used_bytes),
			       cli_fmt_bytes(t, sizeof(t), (double)m->peak_bytes),
			       (unsigned long long)m->used_bytes, (unsigned long long)m->peak_bytes);
	}
	if (f->n_mem == 0)
		sbuf_puts(o, "  none\n");
	if (f->mem_dropped)
		sbuf_printf(o, "  (%zu more rows not shown)\n", f->mem_dropped);
}

static void node(struct sbuf *o, const struct cli_feed *f)
{
	char a[CLI_FMT_LEN], b[CLI_FMT_LEN];

	sbuf_printf(o, "\nCUDA LAUNCH (node)       p50 %s  p99 %s\n",
		       cli_fmt_dur(a, sizeof(a), f->cuda_p50_ns), cli_fmt_dur(b, sizeof(b), f->cuda_p99_ns));
	sbuf_printf(o, "NCCL ALLREDUCE (node)    p50 %s  p99 %s\n",
		       cli_fmt_dur(a, sizeof(a), f->nccl_allreduce_p50_ns),
		       cli_fmt_dur(b, sizeof(b), f->nccl_allreduce_p99_ns));
	sbuf_printf(o, "DATALOADER WAIT (node)   p50 %s  p99 %s\n",
		       cli_fmt_dur(a, sizeof(a), f->dataloader_p50_ns),
		       cli_fmt_dur(b, sizeof(b), f->dataloader_p99_ns));
}

static void nccl(struct sbuf *o, const struct cli_feed *f)
{
	char c[CLI_FMT_LEN], by[CLI_FMT_LEN], d50[CLI_FMT_LEN], d99[CLI_FMT_LEN];
	char w50[CLI_FMT_LEN], w99[CLI_FMT_LEN];

	sbuf_puts(o, "\nNCCL PER OP\n  op                   calls       bytes     p50       p99"
		     "       wait p50  wait p99  errors\n");
	for (size_t i = 0; i < f->n_nccl; i++) {
		const struct cli_nccl *n = &f->nccl[i];

		sbuf_printf(o, "  %-16s  %8s  %10s  %-8s  %-8s  %-8s  %-8s  %.0f\n", n->op,
			       cli_fmt_count(c, sizeof(c), n->calls),
			       cli_fmt_bytes(by, sizeof(by), n->bytes),
			       cli_fmt_dur(d50, sizeof(d50), n->duration.p50_ns),
			       cli_fmt_dur(d99, sizeof(d99), n->duration.p99_ns),
			       cli_fmt_dur(w50, sizeof(w50), n->wait.p50_ns),
			       cli_fmt_dur(w99, sizeof(w99), n->wait.p99_ns),
			       n->errors > 0 ? n->errors : 0);
	}
	if (f->n_nccl == 0)
		sbuf_puts(o, "  none\n");
}

static void procs(struct sbuf *o, const struct cli_feed *f)
{
	char l50[CLI_FMT_LEN], l99[CLI_FMT_LEN], dl[CLI_FMT_LEN], fx[CLI_FMT_LEN];
	char br[CLI_FMT_LEN], rq[CLI_FMT_LEN], pre[CLI_FMT_LEN], mem[CLI_FMT_LEN];

	sbuf_puts(o, "\nPROCESSES\n      pid     ppid  comm              pod/rank                  gpu mem    launch p50"
		     "  launch p99  launches  dl p99    futex p99  barrier p99  runq p99"
		     "  preempted  invol  migr\n");
	for (size_t i = 0; i < f->n_proc; i++) {
		const struct cli_proc *p = &f->proc[i];
		char who[CLI_FEED_NAME_LEN + 32];

		cli_proc_who(who, sizeof(who), p, 24);
		sbuf_printf(o, "  %7u  %7u  %-16s  %-24.24s  %-9s  %-10s  %-10s  %8.0f  %-8s  %-9s  %-11s  %-8s  %-9s  %5.0f  %4.0f\n",
			       p->pid, p->ppid, p->comm[0] ? p->comm : "-", who,
			       cli_fmt_bytes(mem, sizeof(mem), p->gpu_bytes),
			       cli_fmt_dur(l50, sizeof(l50), p->launch.p50_ns),
			       cli_fmt_dur(l99, sizeof(l99), p->launch.p99_ns),
			       p->launch.count > 0 ? p->launch.count : 0,
			       cli_fmt_dur(dl, sizeof(dl), p->dataloader.p99_ns),
			       cli_fmt_dur(fx, sizeof(fx), p->futex.p99_ns),
			       cli_fmt_dur(br, sizeof(br), p->barrier.p99_ns),
			       cli_fmt_dur(rq, sizeof(rq), p->runq.p99_ns),
			       cli_fmt_dur(pre, sizeof(pre), p->offcpu_preempted_ns),
			       p->involuntary_switches > 0 ? p->involuntary_switches : 0,
			       p->migrations > 0 ? p->migrations : 0);
	}
	if (f->n_proc == 0)
		sbuf_puts(o, "  none watched\n");
	if (f->proc_dropped)
		sbuf_printf(o, "  (%zu more processes not shown)\n", f->proc_dropped);
}

static void telemetry(struct sbuf *o, const struct cli_feed *f)
{
	sbuf_puts(o, "\nTELEMETRY\n");
	for (size_t i = 0; i < f->n_telemetry; i++)
		sbuf_printf(o, "  %-24s %.0f\n", f->telemetry[i].key, f->telemetry[i].value);
	if (f->n_telemetry == 0)
		sbuf_puts(o, "  none\n");
	if (f->rows_skipped)
		sbuf_printf(o, "  (%zu malformed feed rows ignored)\n", f->rows_skipped);
}

int cli_text_report(struct sbuf *out, const struct cli_feed *f, const char *source)
{
	header(out, f, source);
	alerts(out, f);
	gpus(out, f);
	node(out, f);
	nccl(out, f);
	procs(out, f);
	telemetry(out, f);
	return out->error;
}
