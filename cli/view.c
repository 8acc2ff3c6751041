/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Frame rendering of the live terminal view (see view.h).  Lines are built
 * with their priority, then the least important are dropped until the
 * frame fits the terminal's height; each line is clipped to its width.
 * Text from the feed is already printable ASCII (feed.c), so the only
 * escape sequences in a frame are the ones written here.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/fmt.h"
#include "cli/frame.h"
#include "cli/view.h"
#include "common/util.h"

/* SGR parameters. */
#define S_RESET		"0"
#define S_BOLD		"1"
#define S_DIM		"2"
#define S_TITLE		"1;7"
#define S_RED		"31"
#define S_GREEN		"32"
#define S_YELLOW	"33"
#define S_CYAN		"36"
#define S_ALERT		"1;37;41"
#define S_WARN		"1;30;43"

#define P_MUST	CLI_P_MUST
#define P_HIGH	CLI_P_HIGH
#define P_MID	CLI_P_MID
#define P_LOW	CLI_P_LOW

/* The frame being built and the view it belongs to (trends, glyph set). */
struct frame {
	struct cli_frame c;
	struct cli_view *v;
	int width;
};

#define ln_new(fr, prio)		cli_frame_line(&(fr)->c, prio)
#define ln_style(fr, l, sgr)		cli_line_style(&(fr)->c, l, sgr)
#define ln_glyph(fr, l, g)		cli_line_glyph(&(fr)->c, l, g)
#define ln_text(fr, l, s)		cli_line_text(&(fr)->c, l, s)
#define ln_printf(fr, l, ...)		cli_line_printf(&(fr)->c, l, __VA_ARGS__)
#define ln_pad(fr, l, col)		cli_line_pad(&(fr)->c, l, col)

static double age_ms(const struct cli_view_input *in)
{
	double since = 0;

	if (!in->feed || in->feed->age_ms < 0)
		return -1;
	if (in->ws.last_rx_mono_ns && in->now_mono_ns > in->ws.last_rx_mono_ns)
		since = (double)(in->now_mono_ns - in->ws.last_rx_mono_ns) / 1e6;
	return in->feed->age_ms + since;
}

static void title(struct frame *fr, const struct cli_view_input *in)
{
	struct cli_line *l = ln_new(fr, P_MUST);
	const char *state;
	char clock[16];
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	switch (in->ws.state) {
	case CLI_WS_CONNECTED:	state = in->ws.messages ? "live" : "connected"; break;
	case CLI_WS_WAITING:	state = "DISCONNECTED"; break;
	default:		state = "connecting"; break;
	}
	ln_style(fr, l, S_TITLE);
	ln_printf(fr, l, " zernel watch  %s  [%s]", in->url, state);
	/* Right-align the clock when there is room for it. */
	if (l && (int)strlen(clock) + 2 + l->cols < fr->width)
		ln_pad(fr, l, fr->width - (int)strlen(clock) - 1);
	ln_printf(fr, l, "%s ", clock);
	ln_pad(fr, l, fr->width);
}

static void connection(struct frame *fr, const struct cli_view_input *in)
{
	struct cli_line *l;
	char since[CLI_FMT_LEN];

	if (in->ws.state == CLI_WS_CONNECTED)
		return;
	l = ln_new(fr, P_MUST);
	ln_style(fr, l, S_ALERT);
	if (in->ws.state == CLI_WS_WAITING) {
		int64_t left = (int64_t)in->ws.retry_at_mono_ns - (int64_t)in->now_mono_ns;
		unsigned int secs = left > 0 ? (unsigned int)((left + 999999999) / 1000000000) : 0;

		ln_printf(fr, l, " disconnected, retrying in %us: %s", secs,
			  in->ws.error[0] ? in->ws.error : "no connection");
	} else {
		ln_printf(fr, l, " connecting to %s ...", in->url);
	}
	ln_pad(fr, l, fr->width);
	if (in->feed && in->ws.last_rx_mono_ns) {
		l = ln_new(fr, P_MUST);
		ln_style(fr, l, S_YELLOW);
		ln_printf(fr, l, " figures below are the last snapshot, received %s ago",
			  cli_fmt_dur(since, sizeof(since),
				      (double)(in->now_mono_ns - in->ws.last_rx_mono_ns)));
	}
}

static void health(struct frame *fr, const struct cli_view_input *in)
{
	const struct cli_feed *f = in->feed;
	struct cli_line *l = ln_new(fr, P_MUST);
	char a[CLI_FMT_LEN], b[CLI_FMT_LEN];
	double dropped = cli_feed_telemetry(f, CAT_ID_EVENTS_DROPPED);
	double ovf = cli_feed_telemetry(f, CAT_ID_TABLE_OVERFLOWS);
	double age = age_ms(in);

	if (f->collector_up == 0) {
		ln_style(fr, l, S_ALERT);
		ln_printf(fr, l, " collector DOWN: %s", f->stale_reason[0] ? f->stale_reason : f->status);
		ln_pad(fr, l, fr->width);
		l = ln_new(fr, P_MUST);
	} else {
		ln_style(fr, l, S_GREEN);
		ln_text(fr, l, " collector up");
	}
	ln_style(fr, l, S_RESET);
	if (f->mode[0])
		ln_printf(fr, l, " (%s%s%s)", f->mode, f->scenario[0] ? ": " : "", f->scenario);
	ln_text(fr, l, "  age ");
	/* A snapshot older than a few publishes means the collector is stuck. */
	if (age > 5000)
		ln_style(fr, l, "1;31");
	ln_text(fr, l, cli_fmt_dur(a, sizeof(a), age >= 0 ? age * 1e6 : -1));
	ln_style(fr, l, S_RESET);
	if (cli_feed_telemetry(f, CAT_ID_EVENTS) >= 0)
		ln_printf(fr, l, "  events %s",
			  cli_fmt_count(a, sizeof(a), cli_feed_telemetry(f, CAT_ID_EVENTS)));
	if (dropped >= 0) {
		if (dropped > 0)
			ln_style(fr, l, S_YELLOW);
		ln_printf(fr, l, "  dropped %s", cli_fmt_count(b, sizeof(b), dropped));
		ln_style(fr, l, S_RESET);
	}
	if (cli_feed_telemetry(f, CAT_ID_PROCESSES_TRACKED) >= 0)
		ln_printf(fr, l, "  procs %.0f", cli_feed_telemetry(f, CAT_ID_PROCESSES_TRACKED));
	if (ovf > 0) {
		ln_style(fr, l, S_YELLOW);
		ln_printf(fr, l, "  overflows %.0f", ovf);
		ln_style(fr, l, S_RESET);
	}
	if (f->generation >= 0)
		ln_printf(fr, l, "  gen %.0f", f->generation);
}

static void alerts(struct frame *fr, const struct cli_feed *f)
{
	size_t shown = 0, firing = cli_feed_firing(f);
	struct cli_line *l;

	for (size_t i = 0; i < f->n_alert; i++) {
		const struct cli_alert *a = &f->alert[i];
		int critical = strcmp(a->severity, "critical") == 0 || strcmp(a->severity, "page") == 0;

		if (!a->firing)
			continue;
		/* The first three always show; the rest when there is room. */
		l = ln_new(fr, shown < 3 ? P_MUST : P_HIGH);
		shown++;
		ln_style(fr, l, critical ? S_ALERT : S_WARN);
		ln_printf(fr, l, " %s ALERT %s [%s] %s", fr->v->utf8 ? "\u25b2" : "!", a->name,
			  a->severity[0] ? a->severity : "firing", a->summary);
		if (a->starts_at[0])
			ln_printf(fr, l, "  since %s", a->starts_at);
		ln_pad(fr, l, fr->width);
	}
	/* Pending: the condition holds but not yet for long enough; shown when there is room. */
	for (size_t i = 0; i < f->n_alert; i++) {
		const struct cli_alert *a = &f->alert[i];

		if (!a->pending)
			continue;
		l = ln_new(fr, P_MID);
		ln_style(fr, l, S_YELLOW);
		ln_printf(fr, l, "   pending %s [%s] %s", a->name,
			  a->severity[0] ? a->severity : "-", a->summary);
	}
	if (firing == 0) {
		l = ln_new(fr, P_MID);
		ln_style(fr, l, S_DIM);
		ln_text(fr, l, " alerts: none firing");
	}
}

static const char *usage_style(double frac)
{
	if (frac >= CLI_VIEW_OOM_FRACTION)
		return S_RED;
	if (frac >= 0.80)
		return S_YELLOW;
	return S_GREEN;
}

/* [#########....|.]: filled cells, the 95% mark, empty cells. */
static void bar(struct frame *fr, struct cli_line *l, double frac, int width)
{
	int filled = (int)lround(frac * width), mark = (int)floor(CLI_VIEW_OOM_FRACTION * width);
	const char *full = fr->v->utf8 ? "\u2588" : "#", *empty = fr->v->utf8 ? "\u2591" : ".";
	const char *tick = fr->v->utf8 ? "\u2502" : "|";

	if (filled > width)
		filled = width;
	ln_style(fr, l, S_RESET);
	ln_glyph(fr, l, "[");
	for (int i = 0; i < width; i++) {
		if (i == mark) {
			ln_style(fr, l, frac >= CLI_VIEW_OOM_FRACTION ? "1;31" : S_BOLD);
			ln_glyph(fr, l, tick);
		} else if (i < filled) {
			ln_style(fr, l, usage_style(frac));
			ln_glyph(fr, l, full);
		} else {
			ln_style(fr, l, S_DIM);
			ln_glyph(fr, l, empty);
		}
	}
	ln_style(fr, l, S_RESET);
	ln_glyph(fr, l, "]");
}

static void gpus(struct frame *fr, const struct cli_feed *f)
{
	char u[CLI_FMT_LEN], t[CLI_FMT_LEN], pk[CLI_FMT_LEN];
	struct cli_line *l = ln_new(fr, P_HIGH);
	/* "gpu 12 " + bar + "  61.2 GiB / 80.0 GiB  100%  OOM RISK  99 procs" */
	int bar_w = fr->width - 8 - 2 - 46;

	if (bar_w > 60)
		bar_w = 60 + (bar_w - 60) / 3;	/* wide terminals: room for figures */
	if (bar_w < 10)
		bar_w = 10;
	ln_style(fr, l, "1;36");
	ln_printf(fr, l, " GPU memory");
	ln_style(fr, l, S_DIM);
	ln_printf(fr, l, "  (%s = %.0f%% OOM threshold)", fr->v->utf8 ? "\u2502" : "|",
		  CLI_VIEW_OOM_FRACTION * 100);
	if (f->n_gpu == 0) {
		l = ln_new(fr, P_MUST);
		ln_text(fr, l, "  no GPU memory seen yet");
	}
	for (size_t i = 0; i < f->n_gpu; i++) {
		const struct cli_gpu *g = &f->gpu[i];
		double frac = g->total_bytes ? (double)g->used_bytes / (double)g->total_bytes : 0;
		int oom = g->total_bytes && frac >= CLI_VIEW_OOM_FRACTION;

		l = ln_new(fr, P_MUST);
		ln_style(fr, l, oom ? S_ALERT : S_BOLD);
		ln_printf(fr, l, " gpu%-3u", g->gpu_id);
		ln_style(fr, l, S_RESET);
		ln_text(fr, l, " ");
		bar(fr, l, frac, bar_w);
		if (g->total_bytes)
			ln_printf(fr, l, " %s / %s %3.0f%%", cli_fmt_bytes(u, sizeof(u), (double)g->used_bytes),
				  cli_fmt_bytes(t, sizeof(t), (double)g->total_bytes), frac * 100);
		else
			ln_printf(fr, l, " %s / total unknown", cli_fmt_bytes(u, sizeof(u), (double)g->used_bytes));
		if (oom) {
			ln_style(fr, l, S_ALERT);
			ln_text(fr, l, " OOM RISK");
			ln_style(fr, l, S_RESET);
		}
		ln_printf(fr, l, "  %u proc%s", g->processes, g->processes == 1 ? "" : "s");

		for (size_t j = 0; j < f->n_mem; j++) {
			const struct cli_mem *m = &f->mem[j];
			const struct cli_proc *p;

			if (m->gpu_id != g->gpu_id)
				continue;
			p = cli_feed_proc(f, m->pid);
			l = ln_new(fr, P_MID);
			ln_style(fr, l, S_DIM);
			ln_printf(fr, l, "       pid %-8u %-16s %10s  peak %s", m->pid,
				  p && p->comm[0] ? p->comm : "-",
				  cli_fmt_bytes(u, sizeof(u), (double)m->used_bytes),
				  cli_fmt_bytes(pk, sizeof(pk), (double)m->peak_bytes));
		}
	}
}

static void trend(struct frame *fr, struct cli_line *l, const struct cli_spark *s)
{
	char spark[4 * CLI_SPARK_POINTS];
	int room = l ? fr->width - l->cols - 3 : 0;

	if (room < 4 || s->n < 2)
		return;
	if (room > 60)
		room = 60;
	cli_spark_render(s, (size_t)room, fr->v->utf8, spark, sizeof(spark));
	ln_text(fr, l, "  ");
	ln_style(fr, l, S_CYAN);
	/* spark holds glyphs of one column each; write them as glyphs. */
	for (const char *p = spark; *p;) {
		char g[4] = { 0 };
		size_t n = ((unsigned char)*p >= 0x80) ? 3 : 1;

		memcpy(g, p, n);
		ln_glyph(fr, l, g);
		p += n;
	}
	ln_style(fr, l, S_RESET);
}

static void label(struct frame *fr, struct cli_line *l, const char *name)
{
	ln_style(fr, l, "1;36");
	ln_printf(fr, l, " %-16s", name);
	ln_style(fr, l, S_RESET);
}

static void cuda(struct frame *fr, const struct cli_feed *f)
{
	char a[CLI_FMT_LEN], b[CLI_FMT_LEN];
	struct cli_line *l = ln_new(fr, P_MUST);
	double launches = 0;

	for (size_t i = 0; i < f->n_proc; i++)
		launches += f->proc[i].launch.count > 0 ? f->proc[i].launch.count : 0;
	label(fr, l, "CUDA launch");
	ln_printf(fr, l, "p50 %-9s p99 ", cli_fmt_dur(a, sizeof(a), f->cuda_p50_ns));
	ln_style(fr, l, S_BOLD);
	ln_printf(fr, l, "%-9s", cli_fmt_dur(b, sizeof(b), f->cuda_p99_ns));
	ln_style(fr, l, S_RESET);
	ln_printf(fr, l, " n %-7s", cli_fmt_count(a, sizeof(a), launches));
	trend(fr, l, &fr->v->cuda_p99);
}

static void nccl(struct frame *fr, const struct cli_feed *f)
{
	char c[CLI_FMT_LEN], d50[CLI_FMT_LEN], d99[CLI_FMT_LEN], w50[CLI_FMT_LEN], w99[CLI_FMT_LEN];
	struct cli_line *l = ln_new(fr, P_MUST);
	int first = 1;

	label(fr, l, "NCCL");
	ln_printf(fr, l, "%-14s %7s  %-9s %-9s %-9s %-9s", "op", "calls", "p50", "p99",
		  "wait p50", "wait p99");
	for (size_t i = 0; i < f->n_nccl; i++) {
		const struct cli_nccl *n = &f->nccl[i];
		int is_ar = strcmp(n->op, "all_reduce") == 0;

		if (n->calls <= 0 && !is_ar)
			continue;
		/* all_reduce is the one a training step waits on: always shown. */
		l = ln_new(fr, is_ar ? P_MUST : P_MID);
		ln_printf(fr, l, " %-16s%-14s %7s  %-9s ", "", n->op, cli_fmt_count(c, sizeof(c), n->calls),
			  cli_fmt_dur(d50, sizeof(d50), n->duration.p50_ns));
		ln_style(fr, l, S_BOLD);
		ln_printf(fr, l, "%-9s", cli_fmt_dur(d99, sizeof(d99), n->duration.p99_ns));
		ln_style(fr, l, S_RESET);
		ln_printf(fr, l, " %-9s %-9s", cli_fmt_dur(w50, sizeof(w50), n->wait.p50_ns),
			  cli_fmt_dur(w99, sizeof(w99), n->wait.p99_ns));
		if (is_ar)
			trend(fr, l, &fr->v->nccl_p99);
		first = 0;
	}
	if (first) {
		l = ln_new(fr, P_MID);
		ln_printf(fr, l, " %-16sno collectives seen", "");
	}
}

static void dataloader(struct frame *fr, const struct cli_feed *f)
{
	char a[CLI_FMT_LEN], b[CLI_FMT_LEN];
	struct cli_line *l = ln_new(fr, P_MUST);
	const struct cli_proc *worst = NULL;

	for (size_t i = 0; i < f->n_proc; i++)
		if (f->proc[i].dataloader.p99_ns > 0 &&
		    (!worst || f->proc[i].dataloader.p99_ns > worst->dataloader.p99_ns))
			worst = &f->proc[i];
	label(fr, l, "DataLoader wait");
	ln_printf(fr, l, "p50 %-9s p99 ", cli_fmt_dur(a, sizeof(a), f->dataloader_p50_ns));
	ln_style(fr, l, S_BOLD);
	ln_printf(fr, l, "%-9s", cli_fmt_dur(b, sizeof(b), f->dataloader_p99_ns));
	ln_style(fr, l, S_RESET);
	if (worst)
		ln_printf(fr, l, " worst pid %u p99 %s", worst->pid,
			  cli_fmt_dur(a, sizeof(a), worst->dataloader.p99_ns));
	trend(fr, l, &fr->v->dataloader_p99);
}

/* Where the training threads' time went, every process together. */
static void threads(struct frame *fr, const struct cli_feed *f)
{
	static const char *const names[SHM_STATE_COUNT] = {
		"cpu", "runq", "input", "gpu", "coll", "lock", "sleep", "other",
	};
	double sum[SHM_STATE_COUNT] = { 0 }, total = 0;
	struct cli_line *l;

	for (size_t i = 0; i < f->n_proc; i++)
		for (unsigned int s = 0; s < SHM_STATE_COUNT; s++)
			sum[s] += f->proc[i].state_ns[s] > 0 ? f->proc[i].state_ns[s] : 0;
	for (unsigned int s = 0; s < SHM_STATE_COUNT; s++)
		total += sum[s];
	l = ln_new(fr, P_HIGH);
	label(fr, l, "Train threads");
	if (total <= 0) {
		ln_printf(fr, l, "-");
		return;
	}
	for (unsigned int s = 0; s < SHM_STATE_COUNT; s++)
		ln_printf(fr, l, "%s %.0f%%%s", names[s], 100.0 * sum[s] / total,
			  s + 1 < SHM_STATE_COUNT ? "  " : "");
}

static void sched(struct frame *fr, const struct cli_feed *f)
{
	char a[CLI_FMT_LEN], b[CLI_FMT_LEN], c[CLI_FMT_LEN], d[CLI_FMT_LEN];
	const struct cli_proc *rq = NULL, *fx = NULL;
	double preempted = 0, invol = 0, migr = 0, barrier = -1;
	struct cli_line *l = ln_new(fr, P_MUST);

	for (size_t i = 0; i < f->n_proc; i++) {
		const struct cli_proc *p = &f->proc[i];

		if (p->runq.p99_ns > 0 && (!rq || p->runq.p99_ns > rq->runq.p99_ns))
			rq = p;
		if (p->futex.p99_ns > 0 && (!fx || p->futex.p99_ns > fx->futex.p99_ns))
			fx = p;
		if (p->barrier.p99_ns > barrier)
			barrier = p->barrier.p99_ns;
		preempted += p->offcpu_preempted_ns > 0 ? p->offcpu_preempted_ns : 0;
		invol += p->involuntary_switches > 0 ? p->involuntary_switches : 0;
		migr += p->migrations > 0 ? p->migrations : 0;
	}
	label(fr, l, "Scheduler");
	ln_printf(fr, l, "runq p99 %-9s preempted %-8s invol %-7s migr %s",
		  cli_fmt_dur(a, sizeof(a), rq ? rq->runq.p99_ns : -1),
		  cli_fmt_dur(b, sizeof(b), preempted), cli_fmt_count(c, sizeof(c), invol),
		  cli_fmt_count(d, sizeof(d), migr));
	threads(fr, f);
	l = ln_new(fr, P_HIGH);
	label(fr, l, "Sync waits");
	ln_printf(fr, l, "futex p99 %-9s barrier p99 %-9s",
		  cli_fmt_dur(a, sizeof(a), fx ? fx->futex.p99_ns : -1),
		  cli_fmt_dur(b, sizeof(b), barrier));
	if (fx)
		ln_printf(fr, l, " (worst futex: pid %u %s)", fx->pid, fx->comm);
}


static void processes(struct frame *fr, const struct cli_feed *f)
{
	char m[CLI_FMT_LEN], l99[CLI_FMT_LEN], dl[CLI_FMT_LEN], fx[CLI_FMT_LEN], rq[CLI_FMT_LEN];
	char pre[CLI_FMT_LEN];
	struct cli_line *l;

	if (f->n_proc == 0)
		return;
	l = ln_new(fr, P_LOW);
	ln_style(fr, l, "1;36");
	ln_printf(fr, l, " %-8s %-15s %-18s %-9s %-9s %-9s %-9s %-9s %s", "pid", "comm",
		  "pod/rank", "gpu mem", "launch99", "dl p99", "futex99", "runq99", "preempted");
	for (size_t i = 0; i < f->n_proc; i++) {
		const struct cli_proc *p = &f->proc[i];
		char who[CLI_FEED_NAME_LEN + 32];

		l = ln_new(fr, P_LOW);
		cli_proc_who(who, sizeof(who), p, 18);
		ln_printf(fr, l, " %-8u %-15.15s %-18.18s %-9s %-9s %-9s %-9s %-9s %s", p->pid, p->comm,
			  who,
			  cli_fmt_bytes(m, sizeof(m), p->gpu_bytes),
			  cli_fmt_dur(l99, sizeof(l99), p->launch.p99_ns),
			  cli_fmt_dur(dl, sizeof(dl), p->dataloader.p99_ns),
			  cli_fmt_dur(fx, sizeof(fx), p->futex.p99_ns),
			  cli_fmt_dur(rq, sizeof(rq), p->runq.p99_ns),
			  cli_fmt_dur(pre, sizeof(pre), p->offcpu_preempted_ns));
	}
}

static void footer(struct frame *fr, const struct cli_view_input *in)
{
	struct cli_line *l = ln_new(fr, P_MUST);

	ln_style(fr, l, S_DIM);
	ln_printf(fr, l, " q quit   snapshots %llu", (unsigned long long)in->ws.messages);
	if (in->ws.connects > 1)
		ln_printf(fr, l, "   reconnects %llu", (unsigned long long)(in->ws.connects - 1));
	if (in->ws.oversize)
		ln_printf(fr, l, "   oversize dropped %llu", (unsigned long long)in->ws.oversize);
}

void cli_view_init(struct cli_view *v, int color, int utf8)
{
	memset(v, 0, sizeof(*v));
	v->color = color;
	v->utf8 = utf8;
}

void cli_view_push(struct cli_view *v, const struct cli_feed *f)
{
	const struct cli_nccl *ar = NULL;

	for (size_t i = 0; i < f->n_nccl; i++)
		if (strcmp(f->nccl[i].op, "all_reduce") == 0)
			ar = &f->nccl[i];
	cli_spark_push(&v->cuda_p99, f->cuda_p99_ns);
	cli_spark_push(&v->nccl_p99, ar ? ar->duration.p99_ns : f->nccl_allreduce_p99_ns);
	cli_spark_push(&v->dataloader_p99, f->dataloader_p99_ns);
	v->snapshots++;
}

int cli_view_render(struct cli_view *v, const struct cli_view_input *in, struct sbuf *out)
{
	struct frame fr = { .v = v };
	int rows = in->rows, err;

	if (rows < 1 || rows > CLI_VIEW_MAX_ROWS)
		rows = rows < 1 ? CLI_VIEW_MIN_ROWS : CLI_VIEW_MAX_ROWS;
	fr.width = in->cols < 1 ? CLI_VIEW_MIN_COLS : in->cols > CLI_VIEW_MAX_COLS ?
		   CLI_VIEW_MAX_COLS : in->cols;
	err = cli_frame_init(&fr.c, fr.width, v->color);
	if (err)
		return err;

	title(&fr, in);
	connection(&fr, in);
	if (in->feed) {
		health(&fr, in);
		alerts(&fr, in->feed);
		gpus(&fr, in->feed);
		cuda(&fr, in->feed);
		nccl(&fr, in->feed);
		dataloader(&fr, in->feed);
		sched(&fr, in->feed);
		processes(&fr, in->feed);
	} else {
		struct cli_line *l = ln_new(&fr, P_MUST);

		ln_text(&fr, l, " waiting for the first snapshot ...");
	}
	footer(&fr, in);
	err = cli_frame_emit(&fr.c, rows, out);
	cli_frame_free(&fr.c);
	return err;
}
