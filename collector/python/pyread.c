/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pyread.h.  The collector reads each frame's code object head, and the
 * parser child (collector/python/pycode.h) parses what it points to: the
 * file and function names and the line table.  Their answers are kept by
 * code object and instruction, so a stall at a known line asks nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "collector/parser/parser.h"
#include "collector/python/pycode.h"
#include "collector/python/pyread.h"

#define CODE_HEADER	PY_CODE_HEADER

/*
 * Code objects named before, by (pid, address): a stall names the same
 * few code objects again and again, and reading one costs seven reads of
 * the other process.  An entry is used only when the code object still
 * holds the same file, name and line table objects at the same first
 * line: those are immutable and what the entry was made from.  The rest
 * of its header changes all the time (its reference count, the
 * interpreter's warm-up counters), so it is not compared.
 */
#define CODE_CACHE	1024u		/* entries */
#define CODE_WAYS	4u		/* where one may live: hot code objects rarely collide */
#define CODE_LINES	8u		/* instructions whose line an entry keeps */

struct code_key {
	uint64_t file, func, table;	/* the objects' addresses */
	int32_t firstlineno;
	uint32_t pad;
};

/*
 * Where an entry lives is kept apart from what it holds: the ways of a
 * set are compared for every frame of every stall, and an entry holds
 * its code object's head and texts, so a set's tags share two cache lines
 * and only the entry found is touched.
 */
struct code_tag {
	uint32_t pid;
	uint64_t code;
	uint64_t used;			/* when last looked up, to pick the way to reuse */
	uint64_t head_batch;		/* head read in this batch (0: never) */
};

struct code_entry {
	uint8_t head[CODE_HEADER];
	struct code_key key;
	char file[SHM_SITE_FILE_LEN];
	char func[SHM_SITE_FUNC_LEN];
	/* The lines of the instructions stalled at, the oldest replaced first. */
	uint64_t instr[CODE_LINES];
	uint32_t line[CODE_LINES];
	uint32_t n_lines, next_line;
};

static struct code_tag *code_tags;
static struct code_entry *code_entries;

/*
 * A batch is the records drained together.  They were all taken before
 * the batch is named, so a code object's head read for one of them names
 * the others as well as a read of their own would: a training loop's
 * stalls repeat the same stacks, and a batch of them then costs the other
 * process one read, not one per stall.
 */
static uint64_t batch = 1;

void pyread_next_batch(void)
{
	batch++;
}

static void code_key_of(const struct py_layout *l, const uint8_t *head, struct code_key *k)
{
	memset(k, 0, sizeof(*k));
	k->file = py_u64_at(head, l->code_filename);
	k->func = py_u64_at(head, l->code_qualname);
	k->table = py_u64_at(head, l->code_linetable);
	memcpy(&k->firstlineno, head + l->code_firstlineno, sizeof(k->firstlineno));
}

/* The first of the ways where (pid, code) may live, or -1 without a cache. */
static int32_t cache_set(uint32_t pid, uint64_t code)
{
	/*
	 * The pid goes in before the multiply: forked workers hold the same
	 * code objects at the same addresses, and must not take turns in a slot.
	 */
	uint64_t h = ((code >> 4) ^ ((uint64_t)pid << 32)) * 0x9e3779b97f4a7c15ull;

	if (!code_tags) {
		code_tags = calloc(CODE_CACHE, sizeof(*code_tags));
		code_entries = calloc(CODE_CACHE, sizeof(*code_entries));
		if (!code_tags || !code_entries) {
			free(code_tags);
			free(code_entries);
			code_tags = NULL;
			code_entries = NULL;
			return -1;
		}
	}
	return (int32_t)((h >> 32) % (CODE_CACHE / CODE_WAYS) * CODE_WAYS);
}

/* The head of (pid, code) read earlier in this batch, else NULL. */
static const uint8_t *batch_head(uint32_t pid, uint64_t code)
{
	int32_t set = cache_set(pid, code);

	for (int32_t w = 0; set >= 0 && w < (int32_t)CODE_WAYS; w++) {
		const struct code_tag *tag = &code_tags[set + w];

		if (tag->pid == pid && tag->code == code && tag->head_batch == batch)
			return code_entries[set + w].head;
	}
	return NULL;
}

/*
 * The slot of (pid, code) among the ways of its set, else the one to
 * reuse; -1 without a cache.  The tag still says what the slot held.
 */
static int32_t cache_slot(uint32_t pid, uint64_t code)
{
	int32_t set = cache_set(pid, code), victim;
	static uint64_t clock;

	if (set < 0)
		return -1;
	victim = set;
	for (int32_t w = set; w < set + (int32_t)CODE_WAYS; w++) {
		if (code_tags[w].pid == pid && code_tags[w].code == code) {
			victim = w;
			break;
		}
		if (code_tags[w].used < code_tags[victim].used)
			victim = w;
	}
	code_tags[victim].used = ++clock;
	return victim;
}

/* The line kept for instr in ce, or 0. */
static uint32_t kept_line(const struct code_entry *ce, uint64_t instr, int *found)
{
	for (uint32_t i = 0; i < ce->n_lines; i++) {
		if (ce->instr[i] == instr) {
			*found = 1;
			return ce->line[i];
		}
	}
	*found = 0;
	return 0;
}

static void keep_line(struct code_entry *ce, uint64_t instr, uint32_t line)
{
	uint32_t i = ce->n_lines < CODE_LINES ? ce->n_lines++ : ce->next_line++ % CODE_LINES;

	ce->instr[i] = instr;
	ce->line[i] = line;
}

/* What the parser child makes of frame f's code object, whose head is head. */
static int ask_child(int mem, const struct py_layout *l, const struct zev_py_frame *f,
		     const uint8_t *head, struct py_code_names *names)
{
	struct py_code_query q;

	memset(&q, 0, sizeof(q));
	q.layout = *l;
	q.code = f->code;
	q.instr = f->instr;
	memcpy(q.head, head, CODE_HEADER);
	return parser_py_code(mem, &q, names);
}

/*
 * The head of each frame's code object: from this batch's reads where one
 * was read already, the rest in one system call where the kernel allows
 * (process_vm_readv), else through mem one at a time.  The pid may name
 * another process by then; a read through mem (opened on the process
 * itself, which fails once it is gone) afterwards tells.
 */
static void read_heads(int mem, uint32_t pid, const struct zev_py_frame *frames, uint32_t n,
		       uint8_t (*heads)[CODE_HEADER], int *ok)
{
	struct iovec local[ZP_MAX_FRAMES], remote[ZP_MAX_FRAMES];
	uint32_t want[ZP_MAX_FRAMES], n_want = 0, done = 0;
	const uint8_t *known;
	uint8_t byte;
	ssize_t got;

	for (uint32_t i = 0; i < n; i++) {
		known = frames[i].code ? batch_head(pid, frames[i].code) : NULL;
		ok[i] = known != NULL;
		if (known) {
			memcpy(heads[i], known, CODE_HEADER);
			continue;
		}
		local[n_want].iov_base = heads[i];
		local[n_want].iov_len = CODE_HEADER;
		remote[n_want].iov_base = (void *)(uintptr_t)frames[i].code;
		remote[n_want].iov_len = CODE_HEADER;
		want[n_want++] = i;
	}
	if (!n_want)
		return;
	got = process_vm_readv((pid_t)pid, local, n_want, remote, n_want, 0);
	if (got > 0 && pymem_read(mem, frames[want[0]].code, &byte, 1) == 0)
		done = (uint32_t)((size_t)got / CODE_HEADER);
	for (uint32_t k = 0; k < n_want; k++) {
		uint32_t i = want[k];

		ok[i] = k < done || (frames[i].code &&
				     pymem_read(mem, frames[i].code, heads[i], CODE_HEADER) == 0);
	}
}

/* The head the entry in slot was checked against, for the rest of the batch. */
static void keep_head(int32_t slot, const uint8_t *head)
{
	struct code_entry *ce = &code_entries[slot];

	if (ce->head != head)
		memcpy(ce->head, head, CODE_HEADER);
	code_tags[slot].head_batch = batch;
}

static int name_frame(int mem, const struct py_interp *pi, uint32_t pid,
		      const struct zev_py_frame *f, const uint8_t *head, struct stall_frame *out)
{
	const struct py_layout *l = &pi->layout;
	struct code_entry *ce = NULL;
	struct code_tag *tag = NULL;
	struct py_code_names names;
	struct code_key key;
	int32_t slot;
	int found;

	memset(out, 0, sizeof(*out));
	if (!f->code || !head)
		return -EIO;
	/* Freed and reused since the stall: not a code object any more. */
	if (py_u64_at(head, l->object_type) != pi->code_type)
		return -ESTALE;
	code_key_of(l, head, &key);
	slot = cache_slot(pid, f->code);
	if (slot >= 0) {
		ce = &code_entries[slot];
		tag = &code_tags[slot];
		if (tag->pid == pid && tag->code == f->code &&
		    memcmp(&ce->key, &key, sizeof(key)) == 0) {
			keep_head(slot, head);
			memcpy(out->file, ce->file, sizeof(out->file));
			memcpy(out->func, ce->func, sizeof(out->func));
			out->line = kept_line(ce, f->instr, &found);
			/* A line not asked yet: the texts are known, unasked the line stays 0. */
			if (!found && ask_child(mem, l, f, head, &names) == 0) {
				out->line = names.line;
				keep_line(ce, f->instr, names.line);
			}
			return 0;
		}
	}
	if (ask_child(mem, l, f, head, &names) != 0)
		return -EPROTO;
	memcpy(out->file, names.file, sizeof(out->file));
	memcpy(out->func, names.func, sizeof(out->func));
	out->line = names.line;
	if (ce) {
		tag->pid = pid;
		tag->code = f->code;
		ce->key = key;
		memcpy(ce->file, out->file, sizeof(ce->file));
		memcpy(ce->func, out->func, sizeof(ce->func));
		ce->n_lines = 0;
		ce->next_line = 0;
		keep_line(ce, f->instr, names.line);
		keep_head(slot, head);
	}
	return 0;
}

int pyread_is_library(const char *file)
{
	return file[0] == '<' || strstr(file, "/lib/python") || strstr(file, "/site-packages/") ||
	       strstr(file, "/dist-packages/");
}

int pyread_is_loader_next(const char *file, const char *func)
{
	static const char path[] = "/torch/utils/data/dataloader.py";
	size_t len = strlen(file), flen = strlen(func);

	/* 3.11 on: _BaseDataLoaderIter.__next__ (qualified); 3.10: __next__. */
	return len >= sizeof(path) - 1 && !strcmp(file + len - (sizeof(path) - 1), path) &&
	       (!strcmp(func, "__next__") ||
		(flen > 9 && !strcmp(func + flen - 9, ".__next__")));
}

int pyread_where(int mem, const struct py_interp *pi, const struct zev_py_stall *rec,
		 struct stall_where *out, uint64_t *loader_code)
{
	static uint8_t heads[ZP_MAX_FRAMES][CODE_HEADER];
	uint32_t n = rec->nframes < ZP_MAX_FRAMES ? rec->nframes : ZP_MAX_FRAMES;
	int ok[ZP_MAX_FRAMES], named = 0;
	struct zev_py_frame frames[ZP_MAX_FRAMES];
	struct stall_frame f;

	memset(out, 0, sizeof(*out));
	*loader_code = 0;
	/* The walk copies a frame's code pointer as it is, tag bits and all. */
	for (uint32_t i = 0; i < n; i++) {
		frames[i] = rec->frames[i];
		frames[i].code &= ~(uint64_t)pi->layout.code_tag_bits;
	}
	read_heads(mem, rec->hdr.pid, frames, n, heads, ok);
	out->native_stack = rec->native_stack < 0 ? -1 : rec->native_stack;
	out->flags = rec->truncated ? SHM_SITE_TRUNCATED : 0;
	/* Innermost first: stop at the user's own frame, reading no more. */
	for (uint32_t i = 0; i < n; i++) {
		if (name_frame(mem, pi, rec->hdr.pid, &frames[i], ok[i] ? heads[i] : NULL,
			       &f) != 0) {
			if (!named)
				return -ESTALE;
			continue;
		}
		if (!named++) {
			out->leaf = f;
			out->site = f;
		}
		if (!*loader_code && pyread_is_loader_next(f.file, f.func))
			*loader_code = rec->frames[i].code;
		if (!pyread_is_library(f.file)) {
			out->site = f;
			break;
		}
	}
	return named ? 0 : -ENOENT;
}
