/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pycode.h.  Strings: compact str objects of every kind are read, and
 * named by their printable ASCII characters ('?' for the rest): files and
 * names of real code seldom hold others, and a '?' keeps the site.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collector/python/pycode.h"
#include "collector/python/pyline.h"
#include "collector/python/pymem.h"

#define LINETABLE_MAX	(64u << 10)	/* longer tables: line unknown */
#define CODE_UNIT	2u		/* bytes of one _Py_CODEUNIT */
#define STR_ASCII	(1u << 6)	/* PyASCIIObject.state.ascii */
#define STR_COMPACT	(1u << 5)	/* PyASCIIObject.state.compact */
#define STR_KIND(st)	(((st) >> 2) & 7u)	/* bytes a character */
#define STR_TEXT_MAX	256u		/* the longest text a caller takes */
/* A character's code is its low bytes, where the watched process runs on this CPU. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "str kinds are read little-endian");
_Static_assert(SHM_SITE_FILE_LEN <= STR_TEXT_MAX && SHM_SITE_FUNC_LEN <= STR_TEXT_MAX,
	       "a site's texts fit what is read of a str");

/*
 * A str object's text into out (len bytes, at most STR_TEXT_MAX), keeping
 * the end when too long.  Compact strings of every kind are read: one,
 * two or four bytes a character (Latin-1, UCS-2, UCS-4); a character
 * outside printable ASCII is shown as '?'.
 */
static int read_str(int mem, const struct py_layout *l, uint64_t obj, char *out, size_t len)
{
	uint8_t head[PY_STR_HEADER];
	uint64_t n, data, skip = 0;
	uint32_t state, kind;
	uint8_t buf[4 * STR_TEXT_MAX];

	if (!obj || l->str_compact_data > sizeof(head) || len < 5 || len > STR_TEXT_MAX)
		return -EINVAL;
	if (pymem_read(mem, obj, head, l->str_compact_data) != 0)
		return -EIO;
	n = py_u64_at(head, l->str_length);
	memcpy(&state, head + l->str_state, sizeof(state));
	kind = STR_KIND(state);
	if (!(state & STR_COMPACT) || (kind != 1 && kind != 2 && kind != 4) || n > (1u << 20) ||
	    ((state & STR_ASCII) && kind != 1))
		return -EPROTO;
	data = obj + ((state & STR_ASCII) ? l->str_ascii_data : l->str_compact_data);
	if (n > len - 1) {
		skip = n - (len - 4);
		n = len - 4;
	}
	if (pymem_read(mem, data + skip * kind, buf, n * kind) != 0)
		return -EIO;
	memset(out, 0, len);
	if (skip)
		memcpy(out, "...", 3);
	for (uint64_t i = 0; i < n; i++) {
		uint32_t c = 0;

		memcpy(&c, buf + i * kind, kind);	/* little-endian: the low bytes */
		out[(skip ? 3 : 0) + i] = (c >= 32 && c < 127) ? (char)c : '?';
	}
	return 0;
}

/* The line of the frame at instr, from the code object's table; 0 when unknown. */
static uint32_t code_line(int mem, const struct py_code_query *q)
{
	static uint8_t table[LINETABLE_MAX];
	const struct py_layout *l = &q->layout;
	uint64_t first_unit = q->code + l->code_units, tab, tab_len, addr;
	uint8_t tab_head[PY_BYTES_HEADER];
	int32_t firstlineno, lasti = (int32_t)(uint32_t)q->instr;
	int line;

	memcpy(&firstlineno, q->head + l->code_firstlineno, sizeof(firstlineno));
	if (firstlineno < 0)
		return 0;
	if (l->instr_kind == PY_INSTR_LASTI) {
		/* Before its first instruction a 3.10 frame is at its first line. */
		if (lasti < 0)
			return (uint32_t)firstlineno;
		addr = (uint64_t)lasti * CODE_UNIT;
	} else {
		if (q->instr < first_unit || (q->instr - first_unit) % CODE_UNIT)
			return 0;
		addr = q->instr - first_unit;
	}
	tab = py_u64_at(q->head, l->code_linetable);
	if (!tab || pymem_read(mem, tab, tab_head, l->bytes_data) != 0)
		return 0;
	tab_len = py_u64_at(tab_head, l->var_size);
	if (tab_len == 0 || tab_len > LINETABLE_MAX ||
	    pymem_read(mem, tab + l->bytes_data, table, tab_len) != 0)
		return 0;
	line = l->instr_kind == PY_INSTR_LASTI ? pyline_310(table, tab_len, firstlineno, addr)
					       : pyline_311(table, tab_len, firstlineno, addr);
	return line > 0 ? (uint32_t)line : 0;
}

int py_code_names(int mem, const struct py_code_query *q, struct py_code_names *out)
{
	const struct py_layout *l = &q->layout;

	memset(out, 0, sizeof(*out));
	if (!py_layout_fits(l))
		return -EINVAL;
	if (read_str(mem, l, py_u64_at(q->head, l->code_filename), out->file, sizeof(out->file)) != 0) {
		memset(out, 0, sizeof(*out));
		return -EPROTO;
	}
	if (read_str(mem, l, py_u64_at(q->head, l->code_qualname), out->func, sizeof(out->func)) != 0)
		snprintf(out->func, sizeof(out->func), "?");
	out->line = code_line(mem, q);
	return 0;
}

/* text ends inside its len bytes, every character before its end printable ASCII. */
static int printable(const char *text, size_t len)
{
	const char *end = memchr(text, '\0', len);

	if (!end)
		return 0;
	for (const char *c = text; c < end; c++)
		if (*c < 32 || *c > 126)
			return 0;
	return 1;
}

int py_code_names_admit(const struct py_code_names *n)
{
	return printable(n->file, sizeof(n->file)) && printable(n->func, sizeof(n->func)) ?
		0 : -EINVAL;
}
