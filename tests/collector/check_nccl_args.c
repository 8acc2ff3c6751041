/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where the NCCL probes read their arguments (bpf/nccl_args.h), checked
 * against the calling conventions themselves: for every NCCL entry point
 * the NCCL family attaches a program of its object to, its
 * declaration in the CUDA toolkit's nccl.h is laid out by the System V
 * x86-64 and the AAPCS64 rules, and each argument the program reads must
 * be the parameter nccl.h names so, where the convention passes it, on
 * both.  The collective programs' reads come from the list the programs
 * are made from (ZN_COLLECTIVES); an entry point nccl.h does not declare
 * fails.  Unprivileged; reads the header.
 */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/nccl_args.h"
#include "collector/probes/probe_family.h"
#include "collector/probes/probe_loader.h"
#include "shm/shm_consts.h"
#include "tests/collector/tu_attach.h"
#include "tests/support/testutil.h"

/* An argument's class: an integer or pointer, or a structure over 16 bytes by value. */
enum arg_class { INT = 1, BIG };

#define BIG_BYTES	128	/* ncclUniqueId */
#define MAX_ARGS	8
#define NCCL_H		"/usr/local/cuda/include/nccl.h"

/* A function's parameters as nccl.h declares them. */
struct signature {
	char symbol[64];
	int n;
	enum arg_class args[MAX_ARGS];
	char names[MAX_ARGS][32];
};

/* What the collective programs read, from the list they are made from. */
struct coll_reads {
	const char *prog;
	int count, dtype, comm, stream;
};

#define COLL_READS(name, op, count_at, dtype_at, comm_at, stream_at) \
	{ "zn_" #name, count_at, dtype_at, comm_at, stream_at },
static const struct coll_reads coll_reads[] = { ZN_COLLECTIVES(COLL_READS) };

/* libnccl's internal commAlloc(comm, parent, nranks, rank): not in nccl.h; read in registers only. */
#define COMM_ALLOC	"_ZL9commAllocP8ncclCommS0_ii"

/*
 * symbol's declaration in nccl.h, "ncclResult_t  symbol(type name, ...);",
 * split into parameters: the last word of each is its name, and an
 * ncclUniqueId that is not a pointer is passed by value.  0, or -1 when
 * the header has no such declaration.
 */
static int nccl_h_signature(const char *header, const char *symbol, struct signature *sig)
{
	char want[80], params[1024];
	const char *p = header, *open, *close;
	size_t len;

	memset(sig, 0, sizeof(*sig));
	snprintf(sig->symbol, sizeof(sig->symbol), "%s", symbol);
	snprintf(want, sizeof(want), " %s(", symbol);
	/* The declaration: its line is "ncclResult_t", blanks, then the name (not pncclX). */
	for (; (p = strstr(p, want)); p++) {
		const char *line = p;

		while (line > header && line[-1] != '\n')
			line--;
		if (strncmp(line, "ncclResult_t", 12) == 0 &&
		    strspn(line + 12, " \t") == (size_t)(p + 1 - (line + 12)))
			break;
	}
	if (!p)
		return -1;
	open = p + strlen(want);
	close = strstr(open, ");");
	if (!close || (len = (size_t)(close - open)) >= sizeof(params))
		return -1;
	memcpy(params, open, len);
	params[len] = '\0';
	for (char *save = NULL, *par = strtok_r(params, ",", &save); par;
	     par = strtok_r(NULL, ",", &save)) {
		char *end = par + strlen(par), *word;

		while (end > par && !(isalnum((unsigned char)end[-1]) || end[-1] == '_'))
			end--;
		word = end;
		while (word > par && (isalnum((unsigned char)word[-1]) || word[-1] == '_'))
			word--;
		if (sig->n >= MAX_ARGS || word == end)
			return -1;
		*end = '\0';
		snprintf(sig->names[sig->n], sizeof(sig->names[0]), "%s", word);
		*word = '\0';
		sig->args[sig->n++] = strstr(par, "ncclUniqueId") && !strchr(par, '*') ? BIG : INT;
	}
	return 0;
}

/* The 1-based position of the parameter named name (or ending in it), 0 when none. */
static int position_of(const struct signature *sig, const char *name)
{
	for (int i = 0; i < sig->n; i++) {
		size_t n = strlen(sig->names[i]), k = strlen(name);

		if (n >= k && strcmp(sig->names[i] + n - k, name) == 0)
			return i + 1;
	}
	return 0;
}

static const struct coll_reads *coll_reads_of(const char *prog)
{
	for (size_t i = 0; i < sizeof(coll_reads) / sizeof(coll_reads[0]); i++)
		if (strcmp(coll_reads[i].prog, prog) == 0)
			return &coll_reads[i];
	return NULL;
}

static char *read_nccl_h(void)
{
	char *h = tu_read_file(NCCL_H, NULL);

	if (!h)
		tu_skip_missing("%s (the CUDA toolkit's NCCL header)", NCCL_H);
	return h;
}

/*
 * System V x86-64: integer arguments take rdi, rsi, rdx, rcx, r8, r9 in
 * turn, then 8-byte stack slots in order; a structure over 16 bytes is
 * of class MEMORY and goes to the stack slots whole, taking no register.
 */
static unsigned int sysv_loc(const struct signature *s, int arg)
{
	int reg = 0, slot = 0;

	for (int i = 0; i < arg - 1; i++) {
		if (s->args[i] == BIG)
			slot += BIG_BYTES / 8;
		else if (reg < 6)
			reg++;
		else
			slot++;
	}
	if (s->args[arg - 1] == BIG)
		return ZN_LOC(ZN_STACK_BYTES, slot);
	return reg < 6 ? ZN_LOC(ZN_IN_REG, reg) : ZN_LOC(ZN_ON_STACK, slot);
}

/*
 * AAPCS64: integer arguments take x0-x7 in turn, then the stack; a
 * composite over 16 bytes is copied by the caller and replaced by a
 * pointer to the copy (rule B.4), which is then an integer argument: every
 * argument here takes one register, whatever its class.
 */
static unsigned int aapcs64_loc(int arg)
{
	int reg = 0, slot = 0;

	for (int i = 0; i < arg - 1; i++) {
		if (reg < 8)
			reg++;
		else
			slot++;
	}
	return reg < 8 ? ZN_LOC(ZN_IN_REG, reg) : ZN_LOC(ZN_ON_STACK, slot);
}

static const char *loc_name(unsigned int loc, char *buf, size_t len)
{
	static const char *const kinds[] = { "register", "stack slot", "bytes at stack slot" };

	snprintf(buf, len, "%s %u", ZN_LOC_KIND(loc) < 3 ? kinds[ZN_LOC_KIND(loc)] : "?",
		 ZN_LOC_N(loc));
	return buf;
}

/* Argument arg of sig read at x86 and arm64: where each ABI puts it, or a failure naming it. */
static void assert_read(const struct signature *sig, const char *what, int arg, unsigned int x86,
			unsigned int arm64)
{
	char want[48], got[48];
	unsigned int abi_x86 = sysv_loc(sig, arg), abi_arm64 = aapcs64_loc(arg);

	ck_assert_msg(arg >= 1 && arg <= sig->n, "%s: no argument %d (%s)", sig->symbol, arg, what);
	ck_assert_msg(abi_x86 == x86, "%s %s (argument %d) on x86-64: the ABI puts it in %s, the "
		      "probe reads %s", sig->symbol, what, arg, loc_name(abi_x86, want, sizeof(want)),
		      loc_name(x86, got, sizeof(got)));
	ck_assert_msg(abi_arm64 == arm64, "%s %s (argument %d) on arm64: the ABI puts it in %s, "
		      "the probe reads %s", sig->symbol, what, arg,
		      loc_name(abi_arm64, want, sizeof(want)), loc_name(arm64, got, sizeof(got)));
}

/* A read by position: the header must name it as the probe takes it. */
static void assert_named(const struct signature *sig, const char *name, int arg)
{
	ck_assert_msg(position_of(sig, name) == arg, "%s: the probe reads argument %d as its %s; "
		      "nccl.h has it at %d", sig->symbol, arg, name, position_of(sig, name));
	assert_read(sig, name, arg, ZN_X86_ARG_LOC(arg), ZN_ARM64_ARG_LOC(arg));
}

/*
 * Every NCCL entry point a program of the NCCL object is attached to
 * (the families' rows), against its declaration in the CUDA toolkit's
 * nccl.h: the collective programs' count, datatype, comm and stream
 * (ZN_COLLECTIVES, which makes them) are the parameters so named, where
 * each convention passes them; the init programs' id and rank likewise.
 */
START_TEST(every_probed_nccl_argument_is_where_each_abi_puts_it)
{
	char *header = read_nccl_h();
	int colls = 0, inits = 0, others = 0;

	if (!header)
		return;
	for (size_t i = 0; i < tu_attach_count(); i++) {
		const struct probe_attach *p = &tu_attach_rows()[i];
		const struct coll_reads *r;
		struct signature sig;

		if (p->obj != PROBE_OBJ_NCCL || p->how != PROBE_UPROBE ||
		    !(p->libs & PROBE_LIB_NCCL) || strcmp(p->symbol, COMM_ALLOC) == 0)
			continue;
		ck_assert_msg(nccl_h_signature(header, p->symbol, &sig) == 0,
			      "%s (%s) is probed and nccl.h does not declare it", p->symbol, p->prog);
		if ((r = coll_reads_of(p->prog))) {
			assert_named(&sig, "count", r->count);
			assert_named(&sig, "datatype", r->dtype);
			assert_named(&sig, "comm", r->comm);
			assert_named(&sig, "stream", r->stream);
			colls++;
		} else if (strcmp(p->prog, "zn_init_rank") == 0) {
			ck_assert_int_eq(sig.args[2], BIG);
			ck_assert_int_eq(position_of(&sig, "rank"), 4);
			assert_read(&sig, "commId", 3, ZN_X86_INIT_ID, ZN_ARM64_INIT_ID);
			assert_read(&sig, "rank", 4, ZN_X86_INIT_RANK, ZN_ARM64_INIT_RANK);
			inits++;
		} else {
			/* The rest read only what BPF_KPROBE's five registers hold. */
			others++;
		}
	}
	free(header);
	/* Eleven collective calls (Bcast and Broadcast both), the two InitRank forms. */
	ck_assert_int_eq(colls, (int)(sizeof(coll_reads) / sizeof(coll_reads[0])));
	ck_assert_int_eq(inits, 2);
	ck_assert_int_ge(others, 9);
}
END_TEST

/* The parser of nccl.h itself, on a declaration whose answer is known. */
START_TEST(nccl_h_declarations_are_read_as_declared)
{
	char *header = read_nccl_h();
	struct signature sig;

	if (!header)
		return;
	ck_assert_int_eq(nccl_h_signature(header, "ncclReduce", &sig), 0);
	ck_assert_int_eq(sig.n, 8);
	ck_assert_str_eq(sig.names[0], "sendbuff");
	ck_assert_str_eq(sig.names[5], "root");
	ck_assert_str_eq(sig.names[7], "stream");
	ck_assert_int_eq(nccl_h_signature(header, "ncclCommInitRank", &sig), 0);
	ck_assert_int_eq(sig.n, 4);
	ck_assert_int_eq(sig.args[2], BIG);
	ck_assert_int_eq(sig.args[0], INT);
	ck_assert_int_eq(nccl_h_signature(header, "ncclNoSuchCall", &sig), -1);
	free(header);
}
END_TEST

Suite *nccl_args_suite(void);
Suite *nccl_args_suite(void)
{
	Suite *s = suite_create("nccl_args");
	TCase *tc = tcase_create("abi");

	tcase_add_test(tc, every_probed_nccl_argument_is_where_each_abi_puts_it);
	tcase_add_test(tc, nccl_h_declarations_are_read_as_declared);
	suite_add_tcase(s, tc);
	return s;
}
