/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where the NCCL probes read their arguments (bpf/nccl_args.h), checked
 * against the calling conventions themselves: for every NCCL entry point
 * the probe table attaches a program of the NCCL object to, its C
 * signature (nccl.h, NCCL 2.28) is laid out by the System V x86-64 and the
 * AAPCS64 rules, and each argument a probe reads past the fifth, or passed
 * by value in memory, must be where the table says on both.  A probe
 * added without its signature here fails too.  Unprivileged, pure.
 */
#include <check.h>
#include <string.h>

#include "bpf/nccl_args.h"
#include "collector/probes/probe_loader.h"

/* An argument's class: an integer or pointer, or a structure over 16 bytes by value. */
enum arg_class { INT = 1, BIG };

#define BIG_BYTES	128	/* ncclUniqueId */
#define MAX_ARGS	8

/* One argument a probe reads where the first five registers do not hold it. */
struct read_at {
	int arg;		/* 1-based; 0 ends the list */
	unsigned int x86, arm64;
};

struct signature {
	const char *symbol;
	enum arg_class args[MAX_ARGS];	/* 0 ends the list */
	struct read_at reads[3];
};

/* ARG6 (bpf/nccl.bpf.c): the sixth integer register on both. */
#define ARG6	{ 6, ZN_LOC(ZN_IN_REG, 5), ZN_LOC(ZN_IN_REG, 5) }
#define ARG7	{ 7, ZN_X86_ARG7, ZN_ARM64_ARG7 }
#define ARG8	{ 8, ZN_X86_ARG8, ZN_ARM64_ARG8 }
#define ID3	{ 3, ZN_X86_INIT_ID, ZN_ARM64_INIT_ID }
#define RANK4	{ 4, ZN_X86_INIT_RANK, ZN_ARM64_INIT_RANK }

static const struct signature signatures[] = {
	/* (send, recv, count, datatype, op, comm, stream) */
	{ "ncclAllReduce", { INT, INT, INT, INT, INT, INT, INT }, { ARG6, ARG7 } },
	{ "ncclReduceScatter", { INT, INT, INT, INT, INT, INT, INT }, { ARG6, ARG7 } },
	/* (send, recv, count, datatype, root, comm, stream) */
	{ "ncclBroadcast", { INT, INT, INT, INT, INT, INT, INT }, { ARG6, ARG7 } },
	{ "ncclGather", { INT, INT, INT, INT, INT, INT, INT }, { ARG6, ARG7 } },
	{ "ncclScatter", { INT, INT, INT, INT, INT, INT, INT }, { ARG6, ARG7 } },
	/* (send, recv, count, datatype, op, root, comm, stream) */
	{ "ncclReduce", { INT, INT, INT, INT, INT, INT, INT, INT }, { ARG7, ARG8 } },
	/* (send, recv, count, datatype, comm, stream) */
	{ "ncclAllGather", { INT, INT, INT, INT, INT, INT }, { ARG6 } },
	{ "ncclAlltoAll", { INT, INT, INT, INT, INT, INT }, { ARG6 } },
	/* (buff, count, datatype, root or peer, comm, stream) */
	{ "ncclBcast", { INT, INT, INT, INT, INT, INT }, { ARG6 } },
	{ "ncclSend", { INT, INT, INT, INT, INT, INT }, { ARG6 } },
	{ "ncclRecv", { INT, INT, INT, INT, INT, INT }, { ARG6 } },
	{ "ncclGroupStart", { 0 }, { { 0 } } },
	{ "ncclGroupEnd", { 0 }, { { 0 } } },
	/* (comm *, nranks, ncclUniqueId, rank[, config]) */
	{ "ncclCommInitRank", { INT, INT, BIG, INT }, { ID3, RANK4 } },
	{ "ncclCommInitRankConfig", { INT, INT, BIG, INT, INT }, { ID3, RANK4 } },
	/* (comm *, nranks, rank, nId, commIds, config) */
	{ "ncclCommInitRankScalable", { INT, INT, INT, INT, INT, INT }, { { 0 } } },
	/* (comms, ndev, devlist) */
	{ "ncclCommInitAll", { INT, INT, INT }, { { 0 } } },
	/* (comm, color, key, newcomm, config); (comm, exclude, nexclude, newcomm, config, flags) */
	{ "ncclCommSplit", { INT, INT, INT, INT, INT }, { { 0 } } },
	{ "ncclCommShrink", { INT, INT, INT, INT, INT, INT }, { { 0 } } },
	{ "ncclCommFinalize", { INT }, { { 0 } } },
	{ "ncclCommDestroy", { INT }, { { 0 } } },
	{ "ncclCommAbort", { INT }, { { 0 } } },
	/* commAlloc(comm, parent, nranks, rank), libnccl-internal */
	{ "_ZL9commAllocP8ncclCommS0_ii", { INT, INT, INT, INT }, { { 0 } } },
};

static const struct signature *signature_of(const char *symbol)
{
	for (size_t i = 0; i < sizeof(signatures) / sizeof(signatures[0]); i++)
		if (strcmp(signatures[i].symbol, symbol) == 0)
			return &signatures[i];
	return NULL;
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

START_TEST(every_probed_nccl_argument_is_where_each_abi_puts_it)
{
	int checked = 0;

	for (size_t i = 0; i < sizeof(signatures) / sizeof(signatures[0]); i++) {
		const struct signature *s = &signatures[i];

		for (const struct read_at *r = s->reads; r->arg; r++) {
			char want[48], got[48];
			unsigned int x86 = sysv_loc(s, r->arg), arm64 = aapcs64_loc(r->arg);

			ck_assert_msg(x86 == r->x86, "%s argument %d on x86-64: the ABI puts it in %s, "
				      "the probe reads %s", s->symbol, r->arg,
				      loc_name(x86, want, sizeof(want)),
				      loc_name(r->x86, got, sizeof(got)));
			ck_assert_msg(arm64 == r->arm64, "%s argument %d on arm64: the ABI puts it "
				      "in %s, the probe reads %s", s->symbol, r->arg,
				      loc_name(arm64, want, sizeof(want)),
				      loc_name(r->arm64, got, sizeof(got)));
			checked++;
		}
	}
	/* The reads the probes make past the fifth register, and the by-value ids. */
	ck_assert_int_eq(checked, 21);
}
END_TEST

START_TEST(every_nccl_entry_probe_has_its_signature_here)
{
	int nccl = 0;

	for (size_t i = 0; i < probe_attach_count; i++) {
		const struct probe_attach *p = &probe_attach_table[i];

		if (p->obj != PROBE_OBJ_NCCL || p->how != PROBE_UPROBE ||
		    !(p->libs & PROBE_LIB_NCCL))
			continue;
		ck_assert_msg(signature_of(p->symbol) != NULL,
			      "%s (%s) is probed with no signature in this test", p->symbol, p->prog);
		nccl++;
	}
	ck_assert_int_ge(nccl, 20);
}
END_TEST

Suite *nccl_args_suite(void);
Suite *nccl_args_suite(void)
{
	Suite *s = suite_create("nccl_args");
	TCase *tc = tcase_create("abi");

	tcase_add_test(tc, every_probed_nccl_argument_is_where_each_abi_puts_it);
	tcase_add_test(tc, every_nccl_entry_probe_has_its_signature_here);
	suite_add_tcase(s, tc);
	return s;
}
